//! Handing received datagrams over: a burst's datagrams go, in arrival
//! order, to socket queues (queue mode) or to the handler (inline mode),
//! consecutive datagrams of one socket in one call, the whole burst in one
//! call or each datagram alone, as the handler asks; ICMP errors and TCP
//! events of the burst follow. A datagram to a broadcast address or a
//! group goes to every socket that hears it, each other than the lookup's
//! pick in a copy (`deliver_to_all`, out of line).
//!
//! Invariants: every datagram is handed over or dropped and counted; each
//! datagram carries its socket and the poll's time when handed over; a
//! queue that got datagrams or an error is woken (its receivers, if any
//! sleep) once per poll, or at once when the poll's list of queues to wake,
//! one burst's worth, is full.

use super::poll::Poll;
use super::transmit::Out;
use super::udp::{copy_datagram, other_hearers, try_udp, try_udp6, BurstView, Fast};
use super::{Batch, Core, InlineHandler, LcoreContext, RX_BURST};
use crate::counters::{Counters, DropReason, Stat};
use crate::port::{Buf, Port};
use crate::socket::SocketQueue;
use crate::time::Instant;
use crate::udp::{Datagram, SocketId};
use arrayvec::ArrayVec;
use std::sync::Arc;

/// Datagrams of a burst waiting to be handed over, and the queues to wake.
pub(super) struct Delivery<B: Buf> {
    /// Consecutive datagrams for `socket`.
    batch: Batch<B>,
    /// A whole burst's datagrams for inline sockets, across sockets (for
    /// handlers with [`InlineHandler::WHOLE_BURSTS`]).
    burst: Batch<B>,
    socket: Option<SocketId>,
    to_wake: ArrayVec<u32, RX_BURST>,
}

impl<B: Buf> Delivery<B> {
    pub(super) fn new() -> Delivery<B> {
        Delivery {
            batch: ArrayVec::new(),
            burst: ArrayVec::new(),
            socket: None,
            to_wake: ArrayVec::new(),
        }
    }

    /// Notes `queue` (socket `index`'s) to be woken after the poll. The
    /// list holds one burst's sockets; a poll over several links can
    /// deliver to more, and a queue that finds the list full is woken at
    /// once rather than left with a receiver asleep over its datagrams.
    #[inline]
    fn wake_later(&mut self, queue: &SocketQueue<B>, index: u32) {
        if !self.to_wake.contains(&index) && self.to_wake.try_push(index).is_err() {
            queue.wake();
        }
    }

    /// Wakes the receivers of every queue that got datagrams or an error
    /// this poll (once each). By reference: moving the delivery would copy
    /// its two batches (a few kilobytes) once per poll.
    pub(super) fn wake_queues(&self, queues: &[Option<Arc<SocketQueue<B>>>]) {
        for &index in &self.to_wake {
            if let Some(Some(queue)) = queues.get(index as usize) {
                queue.wake();
            }
        }
    }
}

/// Receives one burst from `link` and hands its datagrams over as they
/// come, in arrival order: each alone to a handler that takes them so
/// (`InlineHandler::EACH_DATAGRAM`), otherwise consecutive ones for the
/// same socket together. Returns the number of frames received. Inlined into its one
/// caller, the poll, whatever else the poll holds: the per-packet loop keeps
/// the poll's state in registers.
#[inline(always)]
pub(super) fn receive_burst<B: Buf, P: Port<Buf = B>, H: InlineHandler<B>>(
    ctx: &mut LcoreContext<'_, P>,
    queues: &[Option<Arc<SocketQueue<B>>>],
    link: usize,
    handler: &mut H,
    delivery: &mut Delivery<B>,
) -> usize {
    let mut burst: ArrayVec<B, RX_BURST> = ArrayVec::new();
    let Some(port) = ctx.out.port(link) else {
        return 0;
    };
    let received = port.rx_burst(&mut burst, RX_BURST);
    let view = BurstView::of(ctx.core, link);
    // What the fast paths took, counted once per burst.
    let (mut fast4, mut fast6) = (0u64, 0u64);
    for buf in burst.drain(..) {
        // A link the snapshot does not know takes the general path.
        let Some(view) = &view else {
            deliver_general(ctx, queues, handler, delivery, link, buf);
            continue;
        };
        // Each fast path hands over in its own arm, the datagram kept in
        // registers on its way to the handler or the batch.
        let general = match try_udp(ctx.core, view, link, buf) {
            Fast::Deliver(socket, datagram) => {
                fast4 += 1;
                deliver(ctx, queues, handler, delivery, socket, datagram);
                continue;
            }
            Fast::NotUdp4(buf) => match try_udp6(ctx.core, view, link, buf) {
                Fast::Deliver(socket, datagram) => {
                    fast6 += 1;
                    deliver(ctx, queues, handler, delivery, socket, datagram);
                    continue;
                }
                Fast::General(buf) | Fast::NotUdp4(buf) => buf,
            },
            Fast::General(buf) => buf,
        };
        deliver_general(ctx, queues, handler, delivery, link, general);
    }
    if fast4 + fast6 > 0 {
        count_fast(&ctx.core.lcore.counters, fast4, fast6);
    }
    if let Some(socket) = delivery.socket.take() {
        hand_over(ctx, queues, socket, handler, delivery);
    }
    if H::WHOLE_BURSTS && !delivery.burst.is_empty() {
        handler.on_burst(&mut delivery.burst, ctx);
        delivery.burst.clear();
    }
    if !ctx.core.lcore.socket_errors.is_empty() {
        report_errors(ctx, queues, handler, delivery);
    }
    if !ctx.core.tcp.events.is_empty() {
        report_tcp(ctx.core, &mut ctx.out, ctx.now, handler);
    }
    received
}

/// Takes a frame the fast paths did not through the general path, and
/// hands over what it delivers.
#[inline(always)]
fn deliver_general<B: Buf, P: Port<Buf = B>, H: InlineHandler<B>>(
    ctx: &mut LcoreContext<'_, P>,
    queues: &[Option<Arc<SocketQueue<B>>>],
    handler: &mut H,
    delivery: &mut Delivery<B>,
    link: usize,
    buf: B,
) {
    let mut delivered = None;
    Poll::new(ctx.core, &mut ctx.out, ctx.now).receive_frame(link, buf, &mut delivered);
    if let Some((socket, datagram)) = delivered {
        if datagram.to_broadcast {
            return deliver_to_all(ctx, queues, handler, delivery, socket, datagram);
        }
        deliver(ctx, queues, handler, delivery, socket, datagram);
    }
}

/// Hands a datagram sent to a broadcast address or a group to every socket
/// that hears it: a copy to each of the others (at most
/// `BROADCAST_RECEIVERS` in all; a copy without a buffer, and each socket
/// past the bound, is a counted drop), then the datagram itself to
/// `socket`, the one the lookup picked. Out of line: never for unicast.
#[cold]
#[inline(never)]
fn deliver_to_all<B: Buf, P: Port<Buf = B>, H: InlineHandler<B>>(
    ctx: &mut LcoreContext<'_, P>,
    queues: &[Option<Arc<SocketQueue<B>>>],
    handler: &mut H,
    delivery: &mut Delivery<B>,
    socket: SocketId,
    datagram: Datagram<B>,
) {
    let (others, left_out) = other_hearers(ctx.core, &datagram, socket);
    for _ in 0..left_out {
        ctx.core
            .lcore
            .counters
            .count_drop(DropReason::UdpFanoutLimit);
    }
    let link = usize::from(datagram.link);
    for other in others {
        let Some(copy) = (ctx.out.port(link)).and_then(|port| copy_datagram(port, &datagram))
        else {
            ctx.core
                .lcore
                .counters
                .count_drop(DropReason::UdpCopyNoBuffer);
            continue;
        };
        ctx.core.lcore.counters.count(Stat::UdpInDatagrams);
        deliver(ctx, queues, handler, delivery, other, copy);
    }
    deliver(ctx, queues, handler, delivery, socket, datagram);
}

/// Counts what the fast paths took of a burst: `v4` datagrams over IPv4
/// and `v6` over IPv6, each received as a frame, an IP packet delivered up
/// and a UDP datagram (as the general path counts them one by one).
#[inline(never)]
fn count_fast(counters: &Counters, v4: u64, v6: u64) {
    counters.add(Stat::EthInFrames, v4 + v6);
    counters.add(Stat::UdpInDatagrams, v4 + v6);
    counters.add(Stat::IpInReceives, v4);
    counters.add(Stat::IpInDelivers, v4);
    counters.add(Stat::Ip6InReceives, v6);
    counters.add(Stat::Ip6InDelivers, v6);
}

/// Hands the TCP events of a burst (or of the timers) to the handler, once
/// each; events the handler's own calls cause wait for the next poll.
#[inline(never)]
pub(super) fn report_tcp<B: Buf, P: Port<Buf = B>, H: InlineHandler<B>>(
    core: &mut Core<B>,
    out: &mut Out<'_, P>,
    now: Instant,
    handler: &mut H,
) {
    // The list is taken for the calls (they may add events for the next
    // poll) and its allocation handed back after.
    let mut events = core::mem::take(&mut core.tcp.events);
    for &(conn, event) in &events {
        let mut ctx = LcoreContext {
            core,
            out: out.reborrow(),
            now,
        };
        handler.on_tcp(conn, event, &mut ctx);
    }
    events.clear();
    if core.tcp.events.is_empty() {
        core.tcp.events = events;
    }
}

/// Hands the burst's ICMP errors to their sockets: recorded in the queue
/// (queue mode; its receivers are woken after the poll) or passed to the
/// handler (inline mode).
#[inline(never)]
fn report_errors<B: Buf, P: Port<Buf = B>, H: InlineHandler<B>>(
    ctx: &mut LcoreContext<'_, P>,
    queues: &[Option<Arc<SocketQueue<B>>>],
    handler: &mut H,
    delivery: &mut Delivery<B>,
) {
    let errors = core::mem::take(&mut ctx.core.lcore.socket_errors);
    for (socket, error) in errors {
        ctx.core
            .lcore
            .counters
            .count(crate::counters::Stat::IcmpErrorsToSockets);
        let index = socket.index();
        match queues.get(index as usize) {
            Some(Some(queue)) => {
                queue.set_error(socket, error);
                delivery.wake_later(queue, index);
            }
            _ => handler.on_error(socket, error, ctx),
        }
    }
}

/// Adds a datagram to the batch of consecutive datagrams for one socket,
/// handing the previous socket's batch over first if this one differs; for
/// an inline socket, hands it to the handler at once
/// ([`InlineHandler::EACH_DATAGRAM`]) or adds it to the burst's batch
/// ([`InlineHandler::WHOLE_BURSTS`]) if the handler asks.
#[inline(always)]
fn deliver<B: Buf, P: Port<Buf = B>, H: InlineHandler<B>>(
    ctx: &mut LcoreContext<'_, P>,
    queues: &[Option<Arc<SocketQueue<B>>>],
    handler: &mut H,
    delivery: &mut Delivery<B>,
    socket: SocketId,
    mut datagram: Datagram<B>,
) {
    datagram.socket = socket;
    datagram.received_at = ctx.now;
    let inline_burst = H::EACH_DATAGRAM || H::WHOLE_BURSTS;
    if inline_burst && !matches!(queues.get(socket.index() as usize), Some(Some(_))) {
        if H::EACH_DATAGRAM {
            return handler.on_datagram(datagram, ctx);
        }
        // A burst's frames fit; copies of a broadcast may not.
        if let Err(full) = delivery.burst.try_push(datagram) {
            hand_over_burst(ctx, handler, delivery, full.element());
        }
        return;
    }
    if delivery.socket != Some(socket) {
        if let Some(previous) = delivery.socket {
            hand_over(ctx, queues, previous, handler, delivery);
        }
        delivery.socket = Some(socket);
    }
    // A batch holds a whole burst, so there is always room.
    if delivery.batch.try_push(datagram).is_err() {
        ctx.core.lcore.counters.count_drop(DropReason::UdpQueueFull);
    }
}

/// Hands a full burst batch to the handler ([`InlineHandler::WHOLE_BURSTS`])
/// before `datagram` starts the next: copies of broadcasts can outnumber
/// the frames of a burst. Out of line: a burst's own frames always fit.
#[cold]
#[inline(never)]
fn hand_over_burst<B: Buf, P: Port<Buf = B>, H: InlineHandler<B>>(
    ctx: &mut LcoreContext<'_, P>,
    handler: &mut H,
    delivery: &mut Delivery<B>,
    datagram: Datagram<B>,
) {
    handler.on_burst(&mut delivery.burst, ctx);
    delivery.burst.clear();
    delivery.burst.push(datagram);
}

/// Hands one socket's consecutive datagrams over: to its queue (queue mode;
/// the queue is noted in `to_wake`, woken once after the poll) or to one
/// handler call (inline mode). Leaves the batch empty. Inlined at both call
/// sites: with traffic spread over many sockets it runs once per packet.
#[inline(always)]
fn hand_over<B: Buf, P: Port<Buf = B>, H: InlineHandler<B>>(
    ctx: &mut LcoreContext<'_, P>,
    queues: &[Option<Arc<SocketQueue<B>>>],
    socket: SocketId,
    handler: &mut H,
    delivery: &mut Delivery<B>,
) {
    let index = socket.index();
    match queues.get(index as usize) {
        Some(Some(queue)) => {
            let (pushed, dropped) = queue.push_all(delivery.batch.drain(..));
            for _ in 0..dropped {
                ctx.core.lcore.counters.count_drop(DropReason::UdpQueueFull);
            }
            if pushed > 0 {
                delivery.wake_later(queue, index);
            }
        }
        _ => handler.on_datagrams(socket, &mut delivery.batch, ctx),
    }
    delivery.batch.clear();
}
