//! TCP: every connection (handshakes in progress and TIME-WAIT included)
//! with its state and buffer fill, every listener with its queues, and the
//! stack's buffer memory.

use crate::iface::tcp::TcpCore;
use crate::iface::{ConnId, Interface};
use crate::port::Buf;
pub use crate::tcp::endpoint::TcpListenerInfo;
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
    /// The receive window's size now (auto-tuning grows it up to
    /// `TcpConfig::recv_buffer`).
    pub recv_window: usize,
    /// Bytes of ring storage it holds (0 while idle at its starting sizes).
    pub buffer_bytes: usize,
    /// Retransmissions, congestion window, RTT, MSS.
    pub stats: ConnStats,
    /// The pipeline (polling lcore, by `Interface::index`) that owns it.
    pub lcore: usize,
}

/// The stack's TCP buffer memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpBufferMemory {
    /// Bytes of ring storage that exist now (in use or pooled).
    pub used: usize,
    /// The most there may be.
    pub limit: usize,
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

    /// TCP buffer memory: bytes of ring storage the stack holds now
    /// (connections' rings and the lcore's pool of freed ones), and the
    /// most it may (`TcpConfig::buffer_memory`).
    pub fn tcp_buffer_memory(&self) -> TcpBufferMemory {
        let budget = self.core.tcp.pool.budget();
        TcpBufferMemory {
            used: budget.used(),
            limit: budget.limit(),
        }
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
        recv_window: conn.recv_window(),
        buffer_bytes: conn.buffer_bytes(),
        stats: conn.stats(),
        lcore: usize::from(tcp.owner),
    }
}
