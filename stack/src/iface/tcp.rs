//! TCP in the pipeline: only the glue. The endpoint itself (connections,
//! listeners, the queue pump, timers) lives in `crate::tcp::endpoint` and
//! reaches IP through the `SegmentOut` trait, which [`IpOut`] implements
//! over the pipeline's state; here a received segment or an ICMP error is
//! handed to the endpoint, and the poll's and the application's calls are
//! passed on, each with the IP layer beside it.
//!
//! The endpoint sits in [`Core`] (as [`TcpCore`]) and is lent out of it for
//! each call, so that it and the rest of the pipeline's state can be
//! borrowed apart: the IP layer it is given is `Core` without it. Lending
//! moves one pointer out and back. Invariant: the endpoint is back in place
//! whenever a call here returns, and nothing the IP layer does for it
//! reaches TCP again.

use super::ip_out::{CachedHop, IpOut};
use super::steering::STEERED_PER_POLL;
use super::transmit::Out;
use super::{is_ours, Core};
use crate::counters::{DropReason, Stat};
use crate::keys::Keys;
use crate::port::{Buf, Port};
use crate::socket::tcp::{AcceptQueue, StreamQueue};
use crate::tcp::ids::ConnRef;
use crate::tcp::table::ConnTable;
use crate::tcp::{BufferPool, Connection, TcpConfig, TcpError};
use crate::time::Instant;
use crate::udp::PeerError;
use core::net::SocketAddr;
use core::ops::{Deref, DerefMut};
use std::sync::Arc;

pub(crate) use crate::tcp::endpoint::{IcmpKind, IcmpQuote, Steer, TcpIn};
pub use crate::tcp::ids::{ConnId, ListenError, ListenOptions, ListenerId, TcpEvent};

/// The endpoint with the next hops the IP layer gives it.
type Endpoint<B> = crate::tcp::endpoint::Endpoint<B, CachedHop>;

/// Why the endpoint was missing: it is lent only inside this module's calls.
const LENT: &str = "TCP's endpoint is lent out only during a call of iface::tcp";

/// The lcore's TCP endpoint, as the pipeline's state holds it (see the
/// module documentation); it reads as the endpoint itself.
pub(crate) struct TcpCore<B: Buf>(Option<Box<Endpoint<B>>>);

impl<B: Buf> TcpCore<B> {
    /// Pipeline `owner`'s endpoint over the stack's connection `table`.
    pub(crate) fn new(
        config: TcpConfig,
        keys: &Keys,
        table: Arc<ConnTable<ConnRef>>,
        owner: u8,
    ) -> TcpCore<B> {
        TcpCore(Some(Box::new(Endpoint::new(config, keys, table, owner))))
    }
}

pub(crate) use crate::tcp::endpoint::shared_table;

impl<B: Buf> Deref for TcpCore<B> {
    type Target = Endpoint<B>;

    fn deref(&self) -> &Endpoint<B> {
        self.0.as_deref().expect(LENT)
    }
}

impl<B: Buf> DerefMut for TcpCore<B> {
    fn deref_mut(&mut self) -> &mut Endpoint<B> {
        self.0.as_deref_mut().expect(LENT)
    }
}

impl<B: Buf> core::fmt::Debug for TcpCore<B> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match &self.0 {
            Some(endpoint) => endpoint.fmt(f),
            None => f.write_str("TcpCore(lent)"),
        }
    }
}

/// Runs `call` with the endpoint lent out of `core` and the IP layer (the
/// rest of `core`, and `out`) beside it.
#[inline]
fn lend<P: Port, T>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    call: impl FnOnce(&mut Endpoint<P::Buf>, &mut IpOut<'_, '_, '_, P>) -> T,
) -> T {
    let mut endpoint = core.tcp.0.take().expect(LENT);
    let result = call(
        &mut endpoint,
        &mut IpOut {
            core: &mut *core,
            out,
        },
    );
    core.tcp.0 = Some(endpoint);
    result
}

/// A TCP segment for us, from the IPv4 or IPv6 layer (a free function,
/// not a `Poll` method: `Core` holds the endpoint through this module, so
/// this module must not import the per-poll context built over `Core`).
#[inline]
pub(crate) fn input<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    buf: P::Buf,
    segment: TcpIn,
) {
    if let Some(steer) = lend(core, out, |tcp, ip| tcp.input(ip, now, buf, segment)) {
        hand_over(core, steer);
    }
}

/// Hands a segment to the pipeline that owns its connection (see
/// `super::steering`).
#[cold]
fn hand_over<B: Buf>(core: &mut Core<B>, steer: Steer<B>) {
    let Steer {
        owner,
        buf,
        segment,
    } = steer;
    match core.shared.steering.push(owner, (buf, segment)) {
        Ok(()) => core.lcore.counters.count(Stat::TcpSteeredOut),
        Err(_) => core.lcore.counters.count_drop(DropReason::TcpSteerRingFull),
    }
}

/// The segments other pipelines handed to this one (bounded per poll).
#[inline]
pub(crate) fn take_steered<P: Port>(core: &mut Core<P::Buf>, out: &mut Out<'_, P>, now: Instant) {
    let index = usize::from(core.lcore.index);
    for _ in 0..STEERED_PER_POLL {
        let Some((buf, segment)) = core.shared.steering.pop(index) else {
            return;
        };
        core.lcore.counters.count(Stat::TcpSteeredIn);
        input(core, out, now, buf, segment);
    }
}

impl From<PeerError> for IcmpKind {
    fn from(error: PeerError) -> IcmpKind {
        match error {
            PeerError::TooBig { mtu } => IcmpKind::TooBig(mtu as usize),
            PeerError::Refused => IcmpKind::Unreachable(TcpError::Refused),
            PeerError::Unreachable => IcmpKind::Unreachable(TcpError::Unreachable),
            PeerError::TimeExceeded | PeerError::ParameterProblem => IcmpKind::Soft,
        }
    }
}

/// An ICMP(v6) error quoting one of our TCP segments.
pub(crate) fn icmp_error<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    quote: IcmpQuote,
    kind: IcmpKind,
) {
    lend(core, out, |tcp, ip| tcp.icmp_error(ip, now, quote, kind));
}

/// The end of a receive burst: connections whose segments were deferred.
pub(crate) fn run_deferred<P: Port>(core: &mut Core<P::Buf>, out: &mut Out<'_, P>, now: Instant) {
    lend(core, out, |tcp, ip| tcp.run_deferred(ip, now));
}

/// Connections whose pacing release time has come.
pub(crate) fn run_paced<P: Port>(core: &mut Core<P::Buf>, out: &mut Out<'_, P>, now: Instant) {
    lend(core, out, |tcp, ip| tcp.run_paced(ip, now));
}

/// The connections' timers that are due.
pub(crate) fn run_timers<P: Port>(core: &mut Core<P::Buf>, out: &mut Out<'_, P>, now: Instant) {
    lend(core, out, |tcp, ip| tcp.run_timers(ip, now));
}

/// The application's call on connection `id`, then what it owes.
pub(crate) fn with_conn<P: Port, T>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    id: ConnId,
    call: impl FnOnce(&mut Connection, &mut BufferPool) -> T,
) -> Option<T> {
    lend(core, out, |tcp, ip| tcp.with_conn(ip, now, id, call))
}

/// The application's write on connection `id` (inline).
pub(crate) fn send<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    id: ConnId,
    data: &[u8],
) -> Result<usize, TcpError> {
    lend(core, out, |tcp, ip| tcp.send(ip, now, id, data))
}

/// Opens a connection to `remote` (inline).
pub(crate) fn connect<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    remote: SocketAddr,
) -> Result<ConnId, TcpError> {
    lend(core, out, |tcp, ip| tcp.connect(ip, now, remote))
}

/// Listens on `local` (inline); returns the listener's index.
pub(crate) fn listen<B: Buf>(
    core: &mut Core<B>,
    local: SocketAddr,
    backlog: usize,
    options: ListenOptions,
) -> Result<usize, ListenError> {
    let (local4, links) = (&core.shared.local, &core.shared.links);
    let ours = |ip| is_ours(local4, links, ip);
    core.tcp.listen(ours, local, backlog, options)
}

/// The id of the listener at `at`.
pub(crate) fn listener_id<B: Buf>(core: &Core<B>, at: usize) -> ListenerId {
    core.tcp.listener_id(at)
}

/// Closes inline listener `id`; false if it was already closed.
pub(crate) fn unlisten_inline<B: Buf>(core: &mut Core<B>, id: ListenerId) -> bool {
    core.tcp.unlisten_inline(id)
}

/// Queue mode: listens on `local`; accepted connections go to `queue`.
pub(crate) fn listen_queued<B: Buf>(
    core: &mut Core<B>,
    local: SocketAddr,
    backlog: usize,
    options: ListenOptions,
    queue: Arc<AcceptQueue<B>>,
) -> Result<(), ListenError> {
    let (local4, links) = (&core.shared.local, &core.shared.links);
    let ours = |ip| is_ours(local4, links, ip);
    core.tcp
        .listen_queued(ours, local, (backlog, options), queue)
}

/// Queue mode: stops listening on `local`.
pub(crate) fn unlisten<B: Buf>(core: &mut Core<B>, local: SocketAddr, queue: &Arc<AcceptQueue<B>>) {
    core.tcp.unlisten(local, queue);
}

/// Queue mode: opens a connection to `remote` for an application thread.
pub(crate) fn connect_queued<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    remote: SocketAddr,
    stream: Arc<StreamQueue<P::Buf>>,
) -> Result<(), TcpError> {
    lend(core, out, |tcp, ip| {
        tcp.connect_queued(ip, now, remote, stream)
    })
}

/// Looks at the streams application threads touched since the last poll.
pub(crate) fn attend<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    shared: &crate::socket::Shared<P::Buf>,
) {
    let queues = (&shared.attention, &shared.attend_all);
    lend(core, out, |tcp, ip| tcp.attend(ip, now, queues));
}
