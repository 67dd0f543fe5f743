//! Socket groups: many queue-mode UDP sockets sharing one receive queue, so
//! an application thread receives across thousands of sockets in one call,
//! with no `epoll` and no per-socket queue to visit (a media server's
//! RTP/RTCP ports). Each datagram names its socket
//! ([`Datagram::socket`]), source and receive time
//! ([`Datagram::received_at`]).
//!
//! - **Receive**: the lcore pushes each burst's datagrams for the group's
//!   sockets into the shared queue and wakes a sleeping receiver once per
//!   poll, as for a single socket.
//! - **Send**: [`UdpGroup::send_batch`] queues many datagrams, each from a
//!   member socket; [`UdpGroup::forward`] sends a received datagram on in
//!   its own buffer (a relay's forward, no copy).
//!
//! A relay thread forwarding between two members (the lcore polls the
//! interface elsewhere):
//!
//! ```no_run
//! # use dpstack_stack::port::memory::MemPool;
//! # use dpstack_stack::socket::{SocketError, StackHandle};
//! # use dpstack_stack::udp::BindOptions;
//! # use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
//! # fn relay(handle: StackHandle<MemPool>, peer_a: SocketAddr, peer_b: SocketAddr)
//! #     -> Result<(), SocketError> {
//! let ip = Ipv4Addr::new(10, 0, 0, 1);
//! let group = handle.udp_group(65_536);
//! let (a, _) = group.bind(SocketAddrV4::new(ip, 30000), BindOptions::default())?;
//! let (b, _) = group.bind(SocketAddrV4::new(ip, 30002), BindOptions::default())?;
//! let mut got = Vec::with_capacity(256);
//! loop {
//!     group.recv_batch(&mut got, 256, None)?;
//!     for datagram in got.drain(..) {
//!         let _arrival = datagram.received_at(); // for the leg's jitter
//!         let (from, to) = if datagram.socket() == a { (b, peer_b) } else { (a, peer_a) };
//!         let _ = group.forward(datagram, from, to);
//!     }
//! }
//! # }
//! ```
//!
//! Invariants: membership changes only on the control path (bind, close),
//! under the group's own lock, never on the lcore's; every member is closed
//! when the group is dropped; a full queue drops and counts, it never
//! blocks the lcore.

use super::queue::{bind_queue, queue_close, queue_forward, queue_send, send_all, RecvError};
use super::{BufPool, Shared, SocketError, SocketQueue, StackHandle};
use crate::udp::{BindOptions, Datagram, SocketId};
use core::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// UDP sockets sharing one receive queue, used from application threads.
/// Dropping the group closes every member.
#[derive(Debug)]
pub struct UdpGroup<P: BufPool> {
    queue: Arc<SocketQueue<P::Buf>>,
    shared: Arc<Shared<P::Buf>>,
    pool: Arc<P>,
    members: Mutex<Vec<SocketId>>,
}

impl<P: BufPool> StackHandle<P> {
    /// An empty socket group whose shared receive queue holds `capacity`
    /// datagrams (size it for the group's sockets' burst, e.g. 50 packets
    /// per second per RTP socket times the longest pause of the reader).
    pub fn udp_group(&self, capacity: usize) -> UdpGroup<P> {
        UdpGroup {
            queue: Arc::new(SocketQueue::new(capacity)),
            shared: Arc::clone(&self.shared),
            pool: Arc::clone(&self.pool),
            members: Mutex::new(Vec::new()),
        }
    }
}

impl<P: BufPool> UdpGroup<P> {
    /// Binds a member socket (port 0: an ephemeral port); returns its id
    /// and bound address.
    pub fn bind(
        &self,
        local: impl Into<SocketAddr>,
        options: BindOptions,
    ) -> Result<(SocketId, SocketAddr), SocketError> {
        let (id, local) = bind_queue(&self.shared, local.into(), options, &self.queue)?;
        self.lock_members().push(id);
        Ok((id, local))
    }

    /// Closes a member socket; false if it is not one. Datagrams it
    /// received before stay in the queue.
    pub fn close(&self, socket: SocketId) -> bool {
        let mut members = self.lock_members();
        let Some(at) = members.iter().position(|&m| m == socket) else {
            return false;
        };
        members.swap_remove(at);
        queue_close(&self.shared, socket);
        true
    }

    /// The member sockets, in no particular order.
    pub fn members(&self) -> Vec<SocketId> {
        self.lock_members().clone()
    }

    /// Only exchange datagrams with `remote` on `socket` from now on (as
    /// [`super::UdpSocket::connect`]; after NAT latching, for instance).
    pub fn connect(
        &self,
        socket: SocketId,
        remote: impl Into<SocketAddr>,
    ) -> Result<(), SocketError> {
        self.check_member(socket)?;
        self.shared
            .commands
            .push(super::Command::Connect {
                socket,
                remote: remote.into(),
            })
            .map_err(|_| SocketError::Busy)
    }

    /// Moves up to `max` datagrams received on any member into `out`
    /// (zero-copy, in arrival order), waiting up to `timeout` (`None`:
    /// forever) for the first. Returns how many. An ICMP error for a
    /// connected member comes as [`SocketError::PeerOn`], naming it.
    pub fn recv_batch(
        &self,
        out: &mut Vec<Datagram<P::Buf>>,
        max: usize,
        timeout: Option<Duration>,
    ) -> Result<usize, SocketError> {
        self.queue
            .recv_into(out, max, timeout)
            .map_err(|e| match e {
                RecvError::Peer(index, error) => {
                    let socket = self
                        .lock_members()
                        .iter()
                        .copied()
                        .find(|s| s.index() == index);
                    match socket {
                        Some(socket) => SocketError::PeerOn(socket, error),
                        None => SocketError::Peer(error),
                    }
                }
                RecvError::TimedOut => SocketError::TimedOut,
            })
    }

    /// Sends `payload` from `socket` to `dst` (copied into a pool buffer;
    /// headers and transmission on the lcore). Sends do not check
    /// membership (a linear search per datagram): any bound socket of the
    /// interface may be named; the lcore drops and counts sends from a
    /// closed one.
    pub fn send_to(
        &self,
        socket: SocketId,
        payload: &[u8],
        dst: impl Into<SocketAddr>,
    ) -> Result<usize, SocketError> {
        queue_send(&self.shared, &*self.pool, socket, payload, dst.into())
    }

    /// Sends each `(socket, dst, payload)` (batch send across members).
    /// Returns how many were queued; stops at the first that cannot be (no
    /// buffer, queue full), which is the error if it is the first.
    pub fn send_batch<'d>(
        &self,
        datagrams: impl IntoIterator<Item = (SocketId, SocketAddr, &'d [u8])>,
    ) -> Result<usize, SocketError> {
        send_all(datagrams.into_iter().map(|(socket, dst, payload)| {
            queue_send(&self.shared, &*self.pool, socket, payload, dst)
        }))
    }

    /// Sends a received datagram's payload on from member `from` to `dst`
    /// in its own buffer (no copy; the lcore rebuilds the headers).
    pub fn forward(
        &self,
        datagram: Datagram<P::Buf>,
        from: SocketId,
        dst: impl Into<SocketAddr>,
    ) -> Result<usize, SocketError> {
        queue_forward(&self.shared, &*self.pool, from, datagram, dst.into())
    }

    /// Datagrams waiting to be read.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Datagrams dropped because the shared queue was full.
    pub fn dropped(&self) -> u64 {
        self.queue.dropped()
    }

    /// Threads blocked in a receive on the group right now.
    pub fn blocked_readers(&self) -> usize {
        self.queue.sleepers()
    }

    fn check_member(&self, socket: SocketId) -> Result<(), SocketError> {
        if self.lock_members().contains(&socket) {
            Ok(())
        } else {
            Err(SocketError::NotMember)
        }
    }

    fn lock_members(&self) -> std::sync::MutexGuard<'_, Vec<SocketId>> {
        self.members.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<P: BufPool> Drop for UdpGroup<P> {
    fn drop(&mut self) {
        for socket in self.lock_members().drain(..) {
            queue_close(&self.shared, socket);
        }
    }
}
