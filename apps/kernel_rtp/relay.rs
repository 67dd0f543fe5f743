//! The kernel relay's event loop: one loopback socket per port (session
//! `i`: leg A RTP on `P+4i`, RTCP `P+4i+1`, leg B `P+4i+2`/`P+4i+3`), one
//! epoll (level-triggered), each ready socket read with one `recvmmsg` of
//! up to [`RECV_BATCH`] datagrams (more wait for the next `epoll_wait`),
//! each datagram decided by [`Session::receive`] and sent with `sendto`
//! from the other leg's socket: every datagram of a batch leaves from the
//! same socket only by chance, so `sendmmsg` would send one at a time.
//!
//! The receive timestamp is one `CLOCK_MONOTONIC` read per `recvmmsg`
//! (vDSO, no system call), shared by the datagrams of that call, as
//! dpstack shares one TSC read per rx burst.
//!
//! Invariants: no allocation, lock or log line per packet; every datagram
//! read is either sent on or counted once by [`RelayDrop`] reason and on
//! its leg; `recv_errors` counts failed `recvmmsg` calls (e.g. a pending
//! ICMP error), which carry no datagram.

use crate::logic::{count, endpoint_of, socket_index, RelayOptions, Session};
use crate::sockets::SocketSet;
use dpstack::media::relay::{Drops, RelayDrop};
use dpstack::stack::time::Instant;
use dpstack_kernel_ref::{recv_nowait, set_tos, Batch};
use nix::sys::epoll::EpollEvent;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Most datagrams one `recvmmsg` takes from a socket.
pub const RECV_BATCH: usize = 8;

/// Events one `epoll_wait` returns at most.
const EVENTS: usize = 256;

/// What `relay` needs to build the sessions.
#[derive(Debug, Clone, Copy)]
pub struct RelayConfig {
    /// Sessions.
    pub sessions: usize,
    /// Leg A's RTP port of session 0.
    pub port_base: u16,
    /// Leg A / leg B of session `i` expects its peer at `IP:PORT+2i`.
    pub peer_bases: [Option<SocketAddrV4>; 2],
    /// DSCP of everything the sockets send.
    pub dscp: u8,
    /// Latching and clock rate.
    pub options: RelayOptions,
}

/// The relay: its sockets and sessions.
pub struct KernelRelay {
    sockets: SocketSet,
    sessions: Vec<Session>,
    options: RelayOptions,
    /// Drops by reason.
    pub drops: Drops,
    /// Failed `recvmmsg` calls.
    pub recv_errors: u64,
    origin: std::time::Instant,
}

/// The peer of session `i` given the base `IP:PORT` (`PORT + 2i`).
pub fn peer_of(base: SocketAddrV4, i: usize) -> Result<SocketAddr, String> {
    u16::try_from(usize::from(base.port()) + 2 * i)
        .map(|port| SocketAddr::V4(SocketAddrV4::new(*base.ip(), port)))
        .map_err(|_| format!("peer base {base}: session {i}'s peer port is beyond 65535"))
}

impl KernelRelay {
    /// Binds every session's four sockets on 127.0.0.1.
    pub fn build(config: &RelayConfig) -> Result<KernelRelay, String> {
        let ports = 4 * config.sessions;
        let last = usize::from(config.port_base) + ports;
        if config.port_base % 2 != 0 || config.port_base == 0 || last > 65536 {
            return Err(format!(
                "{} sessions from port {} need ports up to {}: give an even base so that \
                 they end at 65535 or below",
                config.sessions,
                config.port_base,
                last - 1
            ));
        }
        let mut sessions = Vec::with_capacity(config.sessions);
        for i in 0..config.sessions {
            let peer = |base: Option<SocketAddrV4>| base.map(|b| peer_of(b, i)).transpose();
            let peers = [peer(config.peer_bases[0])?, peer(config.peer_bases[1])?];
            sessions.push(Session::new(&config.options, peers));
        }
        let addrs =
            (0..ports).map(|k| SocketAddrV4::new(Ipv4Addr::LOCALHOST, config.port_base + k as u16));
        let tos = config.dscp << 2;
        let sockets = SocketSet::bind(addrs, |s| set_tos(s, tos))?;
        Ok(KernelRelay {
            sockets,
            sessions,
            options: config.options,
            drops: [0; RelayDrop::ALL.len()],
            recv_errors: 0,
            origin: std::time::Instant::now(),
        })
    }

    /// The sessions.
    pub fn sessions(&self) -> &[Session] {
        &self.sessions
    }

    /// Relays until `stop` is set, calling `report` every `period`.
    pub fn run(
        &mut self,
        stop: &AtomicBool,
        period: Option<Duration>,
        mut report: impl FnMut(&KernelRelay),
    ) -> Result<(), String> {
        let mut events = [EpollEvent::empty(); EVENTS];
        let mut batch = Batch::default();
        let mut next_report = period.map(|p| std::time::Instant::now() + p);
        while !stop.load(Ordering::Relaxed) {
            let timeout = match next_report {
                Some(at) => at
                    .saturating_duration_since(std::time::Instant::now())
                    .min(Duration::from_millis(100)),
                None => Duration::from_millis(100),
            };
            let ready = self.sockets.wait(&mut events, timeout)?;
            for event in &events[..ready] {
                self.serve(event.data() as usize, &mut batch);
            }
            if let (Some(at), Some(p)) = (next_report, period) {
                let now = std::time::Instant::now();
                if now >= at {
                    report(self);
                    next_report = Some(now + p);
                }
            }
        }
        Ok(())
    }

    /// Reads one batch from socket `index` and relays it.
    #[inline]
    fn serve(&mut self, index: usize, batch: &mut Batch) {
        let Some(socket) = self.sockets.get(index) else {
            return;
        };
        let n = match recv_nowait::<RECV_BATCH>(socket, batch) {
            Ok(n) => n,
            Err(_) => {
                self.recv_errors = self.recv_errors.saturating_add(1);
                return;
            }
        };
        if n == 0 {
            return;
        }
        let nanos = u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let now = Instant::from_nanos(nanos);
        let (s, leg, channel) = endpoint_of(index);
        let Some(session) = self.sessions.get_mut(s) else {
            return;
        };
        for i in 0..n {
            let (payload, source) = batch.get(i);
            if batch.is_truncated(i) {
                count(&mut self.drops, RelayDrop::NotRtp, 1);
                session.dropped(leg);
                continue;
            }
            let source = SocketAddr::V4(source);
            match session.receive(leg, channel, payload, source, now, &self.options) {
                Ok(forward) => {
                    let out = socket_index(s, forward.leg, forward.channel);
                    let sent = self
                        .sockets
                        .get(out)
                        .is_some_and(|out| out.send_to(payload, forward.dst).is_ok());
                    if sent {
                        session.sent(leg, forward.kind);
                    } else {
                        count(&mut self.drops, RelayDrop::SendFailed, 1);
                        session.send_failed(leg);
                    }
                }
                Err(reason) => count(&mut self.drops, reason, 1),
            }
        }
    }
}
