//! The console's services on the stack lcore (`udp-echo start PORT`,
//! `tcp-echo start PORT`): the handler the lcore polls with. Every UDP
//! socket the console binds is an echo socket, so each datagram goes back
//! from its own buffer; every listener is an echo listener, so each
//! connection's bytes go back until the peer closes, then we close.
//!
//! It also keeps the ids of the open TCP connections (from their
//! `Accepted` to their `Closed` event) for `show sockets` and `show tcp`:
//! that list changes once per connection, never per packet.

use dpstack::stack::iface::{Batch, ConnId, ListenerId, TcpEvent, UdpContext, UdpHandler};
use dpstack::stack::port::{Buf, Port};
use dpstack::stack::udp::SocketId;
use std::net::SocketAddr;

/// An echo service the console started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    /// A UDP echo socket.
    Udp(SocketId, SocketAddr),
    /// A TCP echo listener.
    Tcp(ListenerId, SocketAddr),
}

impl Service {
    /// The port it serves.
    pub fn port(&self) -> u16 {
        match self {
            Service::Udp(_, local) | Service::Tcp(_, local) => local.port(),
        }
    }
}

/// The handler. See the module documentation.
pub struct Services {
    /// The services started, in order.
    pub started: Vec<Service>,
    /// Open TCP connections (accepted, not yet closed).
    pub connections: Vec<ConnId>,
    scratch: Box<[u8; 16384]>,
}

impl Services {
    /// No service.
    pub fn new() -> Services {
        Services {
            started: Vec::new(),
            connections: Vec::new(),
            scratch: Box::new([0; 16384]),
        }
    }
}

impl<B: Buf> UdpHandler<B> for Services {
    #[inline]
    fn on_datagrams<P: Port<Buf = B>>(
        &mut self,
        _socket: SocketId,
        batch: &mut Batch<B>,
        ctx: &mut UdpContext<'_, P>,
    ) {
        for datagram in batch.drain(..) {
            ctx.reply(datagram);
        }
    }

    fn on_tcp<P: Port<Buf = B>>(
        &mut self,
        conn: ConnId,
        event: TcpEvent,
        ctx: &mut UdpContext<'_, P>,
    ) {
        match event {
            TcpEvent::Accepted(_) => self.connections.push(conn),
            TcpEvent::Closed(_) => {
                self.connections.retain(|&c| c != conn);
                return;
            }
            TcpEvent::Connected | TcpEvent::Readable => {}
        }
        // Echo what the send buffer takes; the rest waits (the receive
        // window closes: backpressure, not unbounded buffering).
        loop {
            let (room, ready) = ctx.tcp_room(conn);
            let n = room.min(ready).min(self.scratch.len());
            if n == 0 {
                break;
            }
            let Ok(got) = ctx.tcp_recv(conn, &mut self.scratch[..n]) else {
                break;
            };
            if ctx.tcp_send(conn, &self.scratch[..got]).is_err() {
                break;
            }
        }
        if ctx.tcp_at_eof(conn) {
            ctx.tcp_close(conn);
        }
    }
}
