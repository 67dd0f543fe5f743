//! The console's services on a stack lcore (`udp-echo start PORT`,
//! `tcp-echo start PORT`): the handler each pipeline polls with, one per
//! pipeline. A datagram for a UDP echo socket goes back from its own
//! buffer; every listener is an echo listener, so each connection's bytes
//! go back until the peer closes, then we close. (`show sockets` and `show
//! tcp` read the stack's own tables, so the handler keeps no list of
//! connections.)
//!
//! Invariant: `started` lists the same services on every pipeline: a UDP
//! echo socket (bound once, shared) by the same id on each, a TCP echo
//! listener by each pipeline's own listener (listeners are per pipeline).
//! A datagram for a socket no service of this pipeline names (the RTP
//! relay's, which runs on the home pipeline only) is dropped.

use dpstack::stack::iface::{Batch, ConnId, InlineHandler, LcoreContext, ListenerId, TcpEvent};
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
    /// The RTP relay (`rtp-relay start`), handed its sockets' batches.
    pub rtp: Option<super::rtp::RtpService>,
    scratch: Box<[u8; 16384]>,
}

impl Services {
    /// No service.
    pub fn new() -> Services {
        Services {
            started: Vec::new(),
            rtp: None,
            scratch: Box::new([0; 16384]),
        }
    }

    /// True if `socket` is a UDP echo socket (one look per burst).
    #[inline]
    fn echoes(&self, socket: SocketId) -> bool {
        (self.started.iter()).any(|s| matches!(s, Service::Udp(id, _) if *id == socket))
    }
}

impl<B: Buf> InlineHandler<B> for Services {
    #[inline]
    fn on_datagrams<P: Port<Buf = B>>(
        &mut self,
        socket: SocketId,
        batch: &mut Batch<B>,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        if let Some(rtp) = self.rtp.as_mut().filter(|r| r.relay.owns(socket)) {
            return rtp.relay.on_datagrams(socket, batch, ctx);
        }
        if !self.echoes(socket) {
            batch.clear();
            return;
        }
        for datagram in batch.drain(..) {
            ctx.reply(datagram);
        }
    }

    #[inline]
    fn on_poll<P: Port<Buf = B>>(&mut self, ctx: &mut LcoreContext<'_, P>) {
        if let Some(rtp) = &mut self.rtp {
            rtp.relay.on_poll(ctx);
        }
    }

    fn on_tcp<P: Port<Buf = B>>(
        &mut self,
        conn: ConnId,
        event: TcpEvent,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        if let TcpEvent::Closed(_) = event {
            return;
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
