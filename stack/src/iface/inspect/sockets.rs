//! UDP sockets: every bound socket with its peer, the pipeline it is pinned
//! to if it is and, for queue-mode sockets, the datagrams waiting in its
//! queue.

use crate::iface::Interface;
use crate::port::Buf;
use crate::udp::SocketId;
use core::net::SocketAddr;

/// A UDP socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpSocketInfo {
    /// Its id.
    pub id: SocketId,
    /// The address it is bound to.
    pub local: SocketAddr,
    /// The peer it is connected to, if it is.
    pub remote: Option<SocketAddr>,
    /// True for a queue-mode socket (application threads read it); inline
    /// sockets hand datagrams to the handler at once and queue nothing.
    pub queue_mode: bool,
    /// Datagrams waiting in its receive queue for an application thread (a
    /// socket group's members share one queue: each shows the group's).
    /// Always 0 for inline sockets.
    pub queued: usize,
    /// The pipeline (lcore) it is pinned to
    /// ([`crate::udp::BindOptions::incoming_lcore`]), if it is.
    pub incoming_lcore: Option<u16>,
}

impl<B: Buf> Interface<B> {
    /// UDP socket `id`, while it is bound.
    pub fn udp_socket_info(&self, id: SocketId) -> Option<UdpSocketInfo> {
        let udp = &self.core.shared.latest().udp;
        let local = udp.local_socket_addr(id)?;
        Some(self.udp_view(id, local, udp.remote_addr(id)))
    }

    /// Every bound UDP socket (the console's, the applications', inline
    /// and queue-mode alike), in id order.
    pub fn udp_sockets(&self) -> Vec<UdpSocketInfo> {
        (self.core.shared.latest().udp.sockets())
            .map(|(id, local, remote)| self.udp_view(id, local, remote))
            .collect()
    }

    fn udp_view(
        &self,
        id: SocketId,
        local: SocketAddr,
        remote: Option<SocketAddr>,
    ) -> UdpSocketInfo {
        let shared = self.core.shared.latest();
        let queue = (shared.queues)
            .get(id.index() as usize)
            .and_then(Option::as_ref);
        UdpSocketInfo {
            id,
            local,
            remote,
            queue_mode: queue.is_some(),
            queued: queue.map_or(0, |q| q.len()),
            incoming_lcore: (shared.udp.options(id)).and_then(|o| o.incoming_lcore),
        }
    }
}
