//! The `sink` side: leg B's peers. One loopback socket per peer port
//! (`Q+2i` for session `i`, as `--b-peer-base` gives the relay), drained
//! with epoll and `recvmmsg`, counting datagrams and those that are RTP.
//! Binding the peers keeps the relay's sends from meeting closed ports
//! (whose ICMP errors would land on the relay's sockets).
//!
//! Invariant: `received` counts every datagram read; `rtp` those that
//! classify as RTP.

use crate::sockets::SocketSet;
use dpstack::media::rtp::{classify, Kind};
use dpstack_kernel_ref::{recv_nowait, set_recv_buffer, Batch};
use nix::sys::epoll::EpollEvent;
use std::net::SocketAddrV4;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// What the sink read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SinkCounts {
    /// Datagrams.
    pub received: u64,
    /// Of which RTP.
    pub rtp: u64,
}

/// Binds the sink's sockets: `count` ports from `base`, `step` apart.
pub fn bind(
    base: SocketAddrV4,
    count: usize,
    step: u16,
    rcvbuf: Option<usize>,
) -> Result<SocketSet, String> {
    let last = usize::from(base.port()) + usize::from(step) * count.saturating_sub(1);
    if last > 65535 {
        return Err(format!(
            "{count} sink ports from {base}, {step} apart, go beyond 65535"
        ));
    }
    let addrs = (0..count).map(|i| SocketAddrV4::new(*base.ip(), base.port() + step * i as u16));
    SocketSet::bind(addrs, |socket| match rcvbuf {
        Some(bytes) => set_recv_buffer(socket, bytes),
        None => Ok(()),
    })
}

/// Drains `sockets` until `stop` is set, calling `report` every `period`.
pub fn run(
    sockets: &SocketSet,
    stop: &AtomicBool,
    period: Option<Duration>,
    mut report: impl FnMut(&SinkCounts),
) -> Result<SinkCounts, String> {
    let mut counts = SinkCounts::default();
    let mut events = [EpollEvent::empty(); 256];
    let mut batch = Batch::default();
    let mut next_report = period.map(|p| std::time::Instant::now() + p);
    while !stop.load(Ordering::Relaxed) {
        let ready = sockets.wait(&mut events, Duration::from_millis(100))?;
        for event in &events[..ready] {
            let Some(socket) = sockets.get(event.data() as usize) else {
                continue;
            };
            let n = recv_nowait::<64>(socket, &mut batch).unwrap_or(0);
            for i in 0..n {
                counts.received += 1;
                if classify(batch.get(i).0) == Kind::Rtp {
                    counts.rtp += 1;
                }
            }
        }
        if let (Some(at), Some(p)) = (next_report, period) {
            let now = std::time::Instant::now();
            if now >= at {
                report(&counts);
                next_report = Some(now + p);
            }
        }
    }
    Ok(counts)
}
