//! What applications see of the lcore in inline mode: the [`InlineHandler`]
//! an interface calls on the polling lcore with received datagrams, TCP
//! events and a per-poll tick, and the [`LcoreContext`] through which a
//! handler sends, replies, forwards and works its TCP connections while it
//! runs. (Queue mode, for application threads, is `socket/`.)
//!
//! Invariants: a context lives only for one handler call and borrows the
//! interface's state and the poll's transmit batches, so whatever a
//! handler sends leaves in the poll's bursts; the context's time is the
//! poll's (`now`), never a clock read.

use super::transmit::Out;
use super::{canonical_dst, tcp, udp, ConnId, Core, SendError, TcpEvent};
use crate::counters::Counters;
use crate::port::{Buf, Port, DEFAULT_BURST};
use crate::tcp::TcpError;
use crate::time::{Duration, Instant};
use crate::udp::{Datagram, PeerError, SocketId};
use arrayvec::ArrayVec;
use core::net::SocketAddr;

/// Packets received per port per poll.
pub const RX_BURST: usize = DEFAULT_BURST;

/// Datagrams handed to a handler at once (consecutive datagrams of a burst
/// for one socket).
pub type Batch<B> = ArrayVec<Datagram<B>, RX_BURST>;

/// Receives datagrams in inline mode, on the lcore.
pub trait InlineHandler<B: Buf> {
    /// Called with consecutive datagrams of a burst for one socket, in
    /// arrival order. Datagrams left in `batch` are freed afterwards; a
    /// handler that does not override it (a TCP-only one) frees them all.
    fn on_datagrams<P: Port<Buf = B>>(
        &mut self,
        socket: SocketId,
        batch: &mut Batch<B>,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        let _ = (socket, batch, ctx);
    }

    /// `true` to take each rx burst's datagrams for inline sockets in one
    /// [`InlineHandler::on_burst`] call across sockets (batch receive, as a
    /// media server with thousands of sockets wants: one call per burst,
    /// each datagram naming its socket, source and receive time), instead
    /// of one [`InlineHandler::on_datagrams`] call per run of one socket's
    /// datagrams. A compile-time choice: the per-packet path tests a
    /// constant.
    const WHOLE_BURSTS: bool = false;

    /// With [`InlineHandler::WHOLE_BURSTS`]: the datagrams of one rx burst for
    /// inline sockets, across sockets, in arrival order (copies of a
    /// broadcast for several sockets may outnumber the burst's frames: the
    /// rest then come in a further call); each names its
    /// socket ([`Datagram::socket`]), source ([`Datagram::src`]) and
    /// receive time ([`Datagram::received_at`]). Datagrams left in `batch`
    /// are freed afterwards. Unless overridden, each run of one socket's
    /// datagrams goes to [`InlineHandler::on_datagrams`].
    fn on_burst<P: Port<Buf = B>>(&mut self, batch: &mut Batch<B>, ctx: &mut LcoreContext<'_, P>) {
        let mut run = Batch::new();
        let mut datagrams = batch.drain(..).peekable();
        while let Some(first) = datagrams.next() {
            let socket = first.socket();
            run.push(first);
            while let Some(next) = datagrams.next_if(|d| d.socket() == socket) {
                run.push(next);
            }
            self.on_datagrams(socket, &mut run, ctx);
            run.clear();
        }
    }

    /// `true` to take each datagram for an inline socket as soon as the
    /// receive path has it, in one [`InlineHandler::on_datagram`] call, in
    /// arrival order, instead of batches per socket or per burst. For a
    /// handler that answers each datagram on its own (an echo, a
    /// reflector): the datagram then goes from the fast path to the handler
    /// in registers, never stored in a batch and read back. Takes
    /// precedence over [`InlineHandler::WHOLE_BURSTS`]. A compile-time
    /// choice: the per-packet path tests a constant.
    const EACH_DATAGRAM: bool = false;

    /// With [`InlineHandler::EACH_DATAGRAM`]: one datagram for an inline
    /// socket ([`Datagram::socket`] names it). Unless overridden, it goes
    /// to [`InlineHandler::on_datagrams`] as a batch of one.
    fn on_datagram<P: Port<Buf = B>>(
        &mut self,
        datagram: Datagram<B>,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        let socket = datagram.socket();
        let mut batch = Batch::new();
        batch.push(datagram);
        self.on_datagrams(socket, &mut batch, ctx);
    }

    /// Called when an ICMP(v6) error concerns a connected socket (port
    /// unreachable, packet too big, ...). Ignored unless overridden.
    fn on_error<P: Port<Buf = B>>(
        &mut self,
        socket: SocketId,
        error: PeerError,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        let _ = (socket, error, ctx);
    }

    /// Called when something happened to a TCP connection (inline mode):
    /// accepted, connected, readable, closed. Ignored unless overridden
    /// (data then waits in the connection's buffer; its window closes).
    fn on_tcp<P: Port<Buf = B>>(
        &mut self,
        conn: ConnId,
        event: TcpEvent,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        let _ = (conn, event, ctx);
    }

    /// Called once per poll, after the burst and the timers, before the
    /// poll's transmit flush: where an application sends on its own clock
    /// (paced datagrams, filling TCP send buffers, its timeouts), with
    /// `ctx.now()` as the time. Nothing unless overridden.
    #[inline]
    fn on_poll<P: Port<Buf = B>>(&mut self, ctx: &mut LcoreContext<'_, P>) {
        let _ = ctx;
    }
}

/// A handler that drops everything (for stacks that only answer ARP/ICMP).
#[derive(Debug, Default)]
pub struct DropDatagrams;

impl<B: Buf> InlineHandler<B> for DropDatagrams {}

/// What a handler may do while it runs on the lcore.
pub struct LcoreContext<'a, P: Port> {
    pub(crate) core: &'a mut Core<P::Buf>,
    pub(crate) out: Out<'a, P>,
    pub(crate) now: Instant,
}

impl<P: Port> LcoreContext<'_, P> {
    /// Sends `datagram`'s payload back to its sender, from the address it
    /// was sent to, through the port it came in on, reusing its buffer
    /// (zero-copy).
    #[inline(always)]
    pub fn reply(&mut self, datagram: Datagram<P::Buf>) {
        udp::reply_udp_in_place(self.core, &mut self.out, datagram);
    }

    /// Sends `payload` from `socket` to `dst` (a new buffer; headers added;
    /// the route picks the port).
    pub fn send_to(
        &mut self,
        socket: SocketId,
        dst: impl Into<SocketAddr>,
        payload: &[u8],
    ) -> Result<(), SendError> {
        udp::send_any(
            self.core,
            &mut self.out,
            self.now,
            socket,
            dst.into(),
            payload,
        )
    }

    /// Sends each `(dst, payload)` from `socket` (batch send: one call for
    /// many datagrams; they leave in this poll's transmit bursts). Returns
    /// how many were sent; a datagram that cannot be sent (no route, no
    /// buffer, unresolved neighbour) is skipped and counted by reason in
    /// the interface's counters, as [`LcoreContext::send_to`] counts it.
    pub fn send_batch<'d>(
        &mut self,
        socket: SocketId,
        datagrams: impl IntoIterator<Item = (SocketAddr, &'d [u8])>,
    ) -> usize {
        let mut sent = 0;
        for (dst, payload) in datagrams {
            if self.send_to(socket, dst, payload).is_ok() {
                sent += 1;
            }
        }
        sent
    }

    /// Forwards `datagram`'s payload from socket `from` to `dst`, as
    /// [`LcoreContext::send_to`] would send it (the route picks the link;
    /// source: `from`'s address and port; `from`'s TOS byte), but in the
    /// datagram's own buffer: the headers are rewritten in place and the
    /// payload stays where it is (counted as `UdpForwardedInPlace`). Only
    /// a change of family (an IPv4 datagram to an IPv6 peer, or back)
    /// copies the payload into a new buffer (counted as
    /// `UdpForwardCopies`). Per packet: no allocation. Inlined, so that
    /// IPv4 to IPv4, the common case, goes straight to the IPv4 forward
    /// (the datagram not copied once more on the way).
    #[inline(always)]
    pub fn forward(
        &mut self,
        datagram: Datagram<P::Buf>,
        from: SocketId,
        dst: impl Into<SocketAddr>,
    ) -> Result<(), SendError> {
        let dst = dst.into();
        // IPv4 to IPv4, the common case, first: no canonical copy.
        if let (false, SocketAddr::V4(dst)) = (datagram.v6, dst) {
            return udp::forward_udp(self.core, &mut self.out, self.now, datagram, from, dst);
        }
        self.forward_other(datagram, from, dst)
    }

    /// [`LcoreContext::forward`] for all but IPv4 to IPv4: IPv6 to IPv6 (or
    /// to an IPv4-mapped address), or a change of family. Inlined: taking
    /// the datagram out of line would keep every caller's datagram in
    /// memory, IPv4 forwards included.
    #[inline(always)]
    fn forward_other(
        &mut self,
        datagram: Datagram<P::Buf>,
        from: SocketId,
        dst: SocketAddr,
    ) -> Result<(), SendError> {
        match (datagram.v6, canonical_dst(dst)) {
            (false, SocketAddr::V4(dst)) => {
                udp::forward_udp(self.core, &mut self.out, self.now, datagram, from, dst)
            }
            (true, SocketAddr::V6(dst)) => {
                udp::forward_udp6(self.core, &mut self.out, self.now, datagram, from, dst)
            }
            (_, dst) => {
                self.core
                    .lcore
                    .counters
                    .count(crate::counters::Stat::UdpForwardCopies);
                let payload = datagram.payload();
                udp::send_any(self.core, &mut self.out, self.now, from, dst, payload)
            }
        }
    }

    /// Connects a UDP socket to `remote` from the lcore (as
    /// [`Interface::udp_connect`]): it then only receives from `remote`
    /// (at the route's source address, if it was bound to ANY, as in
    /// Linux) and its sends there keep their route. False if the socket
    /// does not exist or `remote` is of a family it does not hear.
    pub fn udp_connect(&mut self, socket: SocketId, remote: impl Into<SocketAddr>) -> bool {
        super::udp_connect(self.core, socket, remote.into())
    }

    /// The interface's counters.
    pub fn counters(&self) -> &Counters {
        &self.core.lcore.counters
    }

    /// Reads from a TCP connection into `buf` (`Ok(0)`: nothing yet, or
    /// the end of the stream once [`LcoreContext::tcp_at_eof`]).
    pub fn tcp_recv(&mut self, conn: ConnId, buf: &mut [u8]) -> Result<usize, TcpError> {
        tcp::with_conn(self.core, &mut self.out, self.now, conn, |c, pool| {
            c.recv(buf, pool)
        })
        .unwrap_or(Err(TcpError::NotConnected))
    }

    /// Queues what fits of `data` on a TCP connection (0 when its send
    /// buffer is full). If it took less than all, [`TcpEvent::Readable`]
    /// follows once half the send buffer is free again.
    /// [`TcpError::NoBufferMemory`] is not fatal: the stack's buffer memory
    /// is spent for now.
    pub fn tcp_send(&mut self, conn: ConnId, data: &[u8]) -> Result<usize, TcpError> {
        tcp::send(self.core, &mut self.out, self.now, conn, data)
    }

    /// Room in a connection's send buffer, and bytes ready to read.
    pub fn tcp_room(&mut self, conn: ConnId) -> (usize, usize) {
        self.core
            .tcp
            .conn(conn)
            .map_or((0, 0), |c| (c.send_room(), c.recv_ready()))
    }

    /// A connection's local and remote address, while it exists.
    pub fn tcp_addresses(&self, conn: ConnId) -> Option<(SocketAddr, SocketAddr)> {
        self.core.tcp.tuple(conn).map(|t| (t.local, t.remote))
    }

    /// A connection's figures (retransmissions, congestion window, RTT).
    pub fn tcp_info(&self, conn: ConnId) -> Option<crate::tcp::ConnStats> {
        self.core.tcp.peek(conn).map(|c| c.stats())
    }

    /// True once the peer closed its side and everything was read.
    pub fn tcp_at_eof(&mut self, conn: ConnId) -> bool {
        self.core.tcp.conn(conn).is_some_and(|c| c.at_eof())
    }

    /// Closes our side of a connection (a FIN after the queued data).
    pub fn tcp_close(&mut self, conn: ConnId) {
        tcp::with_conn(self.core, &mut self.out, self.now, conn, |c, _| c.close());
    }

    /// Turns keepalive on (probe after `idle` without hearing from the
    /// peer) or off for a connection.
    pub fn tcp_set_keepalive(&mut self, conn: ConnId, idle: Option<Duration>) {
        let now = self.now;
        tcp::with_conn(self.core, &mut self.out, now, conn, |c, _| {
            c.set_keepalive(idle, now)
        });
    }

    /// Aborts a connection with a reset.
    pub fn tcp_abort(&mut self, conn: ConnId) {
        tcp::with_conn(self.core, &mut self.out, self.now, conn, |c, _| c.abort());
    }

    /// Opens a TCP connection to `remote`.
    pub fn tcp_connect(&mut self, remote: SocketAddr) -> Result<ConnId, TcpError> {
        tcp::connect(self.core, &mut self.out, self.now, remote)
    }

    /// The time of this poll.
    pub fn now(&self) -> Instant {
        self.now
    }
}
