//! The `send` side: G.711-like RTP for many sessions (PCMU, payload type
//! 0, 160-byte payloads every 20 ms of media: 172-byte datagrams, 214-byte
//! Ethernet frames), session after session in turn, so at 500,000 pps each
//! of 10,000 sessions gets its 50 pps. Session `i`'s stream (SSRC
//! `0x5000_0000 + i`, sequence numbers from `4099 i mod 65536`, timestamps
//! from `1000 i`, both advancing by 1 and 160 per packet) goes to leg A's
//! RTP port of session `i`, `P+4i`. Sent with `sendmmsg` in batches of up
//! to [`MAX_BATCH`], paced to a rate or as fast as the kernel takes them.
//!
//! Invariants: a session's sequence number and timestamp advance only for
//! packets the kernel took, so a short `sendmmsg` leaves no gap; nothing
//! is allocated per packet.

use dpstack::media::rtp::RtpHeader;
use dpstack_kernel_ref::{send_batch, MAX_BATCH};
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// RTP header plus 160 bytes of PCMU.
pub const DATAGRAM_LEN: usize = 12 + PAYLOAD_LEN;

/// 20 ms of 8 kHz PCMU.
pub const PAYLOAD_LEN: usize = 160;

/// One session's stream state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stream {
    /// The SSRC.
    pub ssrc: u32,
    /// The next sequence number.
    pub seq: u16,
    /// The next timestamp.
    pub timestamp: u32,
}

impl Stream {
    /// Session `i`'s stream at its start.
    pub fn new(i: usize) -> Stream {
        Stream {
            ssrc: 0x5000_0000u32.wrapping_add(i as u32),
            seq: (i as u32).wrapping_mul(4099) as u16,
            timestamp: (i as u32).wrapping_mul(1000),
        }
    }

    /// Writes the next packet into `out` and advances.
    pub fn write_next(&mut self, out: &mut [u8; DATAGRAM_LEN]) {
        let header = RtpHeader {
            payload_type: 0,
            seq: self.seq,
            timestamp: self.timestamp,
            ssrc: self.ssrc,
            ..RtpHeader::default()
        };
        // 12 bytes into a 172-byte buffer: emit cannot fail.
        let _ = header.emit(out);
        self.seq = self.seq.wrapping_add(1);
        self.timestamp = self.timestamp.wrapping_add(PAYLOAD_LEN as u32);
    }

    /// Undoes the last [`Stream::write_next`].
    pub fn unwrite(&mut self) {
        self.seq = self.seq.wrapping_sub(1);
        self.timestamp = self.timestamp.wrapping_sub(PAYLOAD_LEN as u32);
    }
}

/// What to send.
#[derive(Debug, Clone, Copy)]
pub struct SendConfig {
    /// Sessions.
    pub sessions: usize,
    /// Leg A's RTP port of session 0 (session `i`: `+4i`).
    pub port_base: u16,
    /// Packets per second (0: as fast as possible).
    pub pps: u64,
    /// How long.
    pub duration: Duration,
    /// Datagrams per `sendmmsg`.
    pub batch: usize,
}

/// Sends until the time is up or `stop` is set; returns the packets the
/// kernel took. `report(sent)` runs every `period`.
pub fn send(
    config: &SendConfig,
    socket: &UdpSocket,
    stop: &AtomicBool,
    period: Option<Duration>,
    mut report: impl FnMut(u64),
) -> Result<u64, String> {
    let sessions = config.sessions.max(1);
    let batch = config.batch.clamp(1, MAX_BATCH);
    let mut streams: Vec<Stream> = (0..sessions).map(Stream::new).collect();
    let targets: Vec<SocketAddrV4> = (0..sessions)
        .map(|i| {
            u16::try_from(usize::from(config.port_base) + 4 * i)
                .map(|port| SocketAddrV4::new(Ipv4Addr::LOCALHOST, port))
                .map_err(|_| format!("session {i}'s port is beyond 65535"))
        })
        .collect::<Result<_, _>>()?;
    let mut buffers = vec![[0u8; DATAGRAM_LEN]; MAX_BATCH];
    for buffer in &mut buffers {
        buffer[12..].fill(0xff); // PCMU silence
    }
    let mut peers = [targets[0]; MAX_BATCH];
    let mut owners = [0usize; MAX_BATCH];
    let start = Instant::now();
    let mut next_report = period.map(|p| start + p);
    let mut sent = 0u64;
    let mut next_session = 0usize;
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        let elapsed = now.duration_since(start);
        if elapsed >= config.duration {
            break;
        }
        if let (Some(at), Some(p)) = (next_report, period) {
            if now >= at {
                report(sent);
                next_report = Some(now + p);
            }
        }
        let mut n = batch;
        if config.pps > 0 {
            let due = (elapsed.as_secs_f64() * config.pps as f64) as u64;
            if due <= sent {
                // Sleep about until the next batch is due.
                let wait = batch as f64 / config.pps as f64;
                std::thread::sleep(Duration::from_secs_f64(wait.min(0.001)));
                continue;
            }
            n = n.min((due - sent) as usize);
        }
        for j in 0..n {
            let s = (next_session + j) % sessions;
            streams[s].write_next(&mut buffers[j]);
            peers[j] = targets[s];
            owners[j] = s;
        }
        let payloads: [&[u8]; MAX_BATCH] = std::array::from_fn(|j| &buffers[j][..]);
        let taken = send_batch(socket, &payloads[..n], &peers[..n]).unwrap_or(0);
        for j in (taken..n).rev() {
            streams[owners[j]].unwrite();
        }
        if taken == 0 {
            std::thread::sleep(Duration::from_micros(100));
        }
        next_session = (next_session + taken) % sessions;
        sent += taken as u64;
    }
    Ok(sent)
}
