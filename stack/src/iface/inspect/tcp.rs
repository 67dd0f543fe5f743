//! TCP: every connection (handshakes in progress and TIME-WAIT included)
//! with its state and buffer fill, and every listener with its queues.

use crate::iface::tcp::TcpCore;
use crate::iface::{ConnId, Interface};
use crate::port::Buf;
use crate::tcp::table::FourTuple;
use crate::tcp::{ConnStats, Connection, State};
use core::net::SocketAddr;

/// A TCP connection.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TcpConnInfo {
    /// Its id.
    pub id: ConnId,
    /// Our address and port.
    pub local: SocketAddr,
    /// The peer's.
    pub remote: SocketAddr,
    /// Its state.
    pub state: State,
    /// Bytes in the send buffer (not yet sent or not yet acknowledged).
    pub send_queued: usize,
    /// Bytes received and not yet read.
    pub recv_queued: usize,
    /// Retransmissions, congestion window, RTT, MSS.
    pub stats: ConnStats,
}

/// A TCP listener (inline or queue mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpListenerInfo {
    /// The address it listens on.
    pub local: SocketAddr,
    /// Most handshakes it keeps in progress at once.
    pub backlog: usize,
    /// Handshakes in progress (connections in SYN-RECEIVED).
    pub handshakes: usize,
    /// Queue mode: connections accepted and not yet taken by the
    /// application (0 for inline listeners, whose handler takes each at
    /// once).
    pub accept_queued: usize,
}

impl<B: Buf> Interface<B> {
    /// TCP connection `id`, while it exists (TIME-WAIT included).
    pub fn tcp_conn_info(&self, id: ConnId) -> Option<TcpConnInfo> {
        let tcp = &self.core.tcp;
        let (conn, tuple) = (tcp.peek(id)?, tcp.tuple(id)?);
        Some(conn_view(tcp, id, tuple, conn))
    }

    /// Every TCP connection, handshakes in progress and TIME-WAIT included,
    /// by local then remote address.
    pub fn tcp_connections(&self) -> Vec<TcpConnInfo> {
        let tcp = &self.core.tcp;
        let mut all: Vec<TcpConnInfo> = (tcp.each_connection())
            .map(|(id, tuple, conn)| conn_view(tcp, id, tuple, conn))
            .collect();
        all.sort_by_key(|c| (c.local, c.remote));
        all
    }

    /// Every open TCP listener, by local address.
    pub fn tcp_listeners(&self) -> Vec<TcpListenerInfo> {
        let mut all: Vec<TcpListenerInfo> = self.core.tcp.each_listener().collect();
        all.sort_by_key(|l| l.local);
        all
    }
}

fn conn_view<B: Buf>(
    tcp: &TcpCore<B>,
    id: ConnId,
    tuple: FourTuple,
    conn: &Connection,
) -> TcpConnInfo {
    TcpConnInfo {
        id,
        local: tuple.local,
        remote: tuple.remote,
        state: conn.state(),
        send_queued: tcp.config.send_buffer.saturating_sub(conn.send_room()),
        recv_queued: conn.recv_ready(),
        stats: conn.stats(),
    }
}
