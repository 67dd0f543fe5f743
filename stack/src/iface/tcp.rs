//! TCP on the lcore: segments from the IPv4 and IPv6 receive paths go to
//! their connection (the shared [`ConnTable`], read without locks) or to a
//! listener (a SYN makes a connection in SYN-RECEIVED); segments for
//! nothing get a reset. Connections live in a slab owned by the lcore; what
//! they send is framed here (TCP header, checksum, then `ip_out`), their
//! deadlines sit in a timer wheel walked every poll, and what the application
//! should hear (accepted, readable, closed) is queued as events the
//! handler gets after the burst (inline mode).
//!
//! Slow path for now: one route lookup per segment sent, software
//! checksums.

use super::ip_out;
use super::tx::Out;
use super::Core;
use crate::counters::{DropReason, Stat};
use crate::port::{Buf, ChecksumStatus, Port};
use crate::socket::tcp::{error_code, AcceptQueue, StreamQueue, CLOSED, EOF, OPEN, SHUTDOWN};
use crate::tcp::table::{ConnTable, ConnectMode, FourTuple, TableValue};
use crate::tcp::wheel::TimerWheel;
use crate::tcp::{Buffers, Connection, Seq, State, TcpConfig, TcpError};
use crate::time::Instant;
use crate::wire::checksum;
use crate::wire::ipv4::protocol;
use crate::wire::ipv6::{next_header, pseudo_header};
use crate::wire::tcp::{flags, TcpOptions, TcpPacket, TcpRepr, HEADER_LEN as TCP_LEN};
use core::net::{IpAddr, SocketAddr};
use std::sync::Arc;

/// A connection, as handlers and the interface name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConnId {
    index: u32,
    generation: u32,
}

/// What happened to a connection, for the handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcpEvent {
    /// A listener's handshake completed: the connection is open.
    Accepted,
    /// Our connect completed.
    Connected,
    /// Data (or the end of the peer's stream) can be read, or room opened
    /// to write.
    Readable,
    /// The connection is gone (its id is no longer valid): `None` after an
    /// orderly close, else why.
    Closed(Option<TcpError>),
}

/// Why a listen failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListenError {
    /// Something already listens there.
    AddrInUse,
    /// Not one of our addresses.
    AddrNotAvailable,
}

impl core::fmt::Display for ListenError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            ListenError::AddrInUse => "address in use",
            ListenError::AddrNotAvailable => "address not available",
        })
    }
}

impl std::error::Error for ListenError {}

/// The table's value: the connection's slot and generation, and whether
/// it is in TIME-WAIT (bit 63).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnRef(u64);

impl ConnRef {
    fn new(id: ConnId, time_wait: bool) -> ConnRef {
        ConnRef(
            u64::from(id.index)
                | u64::from(id.generation) << 32 & !(1 << 63)
                | u64::from(time_wait) << 63,
        )
    }

    fn id(self) -> ConnId {
        ConnId {
            index: self.0 as u32,
            generation: ((self.0 >> 32) & 0x7fff_ffff) as u32,
        }
    }
}

impl TableValue for ConnRef {
    fn in_time_wait(&self) -> bool {
        self.0 >> 63 == 1
    }
}

struct Listener<B: Buf> {
    local: SocketAddr,
    /// Part of an SO_REUSEPORT group.
    reuse_port: bool,
    /// Queue mode: accepted connections go here for application threads.
    accept: Option<Arc<AcceptQueue<B>>>,
    /// Connections in SYN-RECEIVED at most.
    backlog: usize,
    pending: usize,
}

struct Slot<B: Buf> {
    conn: Connection,
    /// Queue mode: the application thread's side.
    stream: Option<Arc<StreamQueue<B>>>,
    /// Queue mode: a buffer from the application only partly taken into
    /// the send buffer: (buffer, bytes taken).
    tx_partial: Option<(B, usize)>,
    /// The next hop its segments take, while valid.
    hop: Option<ip_out::CachedHop>,
    tuple: FourTuple,
    /// The listener that made it (until its handshake completes).
    listener: Option<usize>,
    /// The earliest deadline in the timer wheel for it.
    armed: Option<Instant>,
    /// Readable was reported and nothing new arrived since.
    quiet: bool,
    /// The link-local scope (link) of an IPv6 link-local peer.
    scope: u32,
    /// We opened it (a connect): its opening and failure are reported.
    active: bool,
    /// Accepted or Connected was reported.
    announced: bool,
    /// Its table entry says TIME-WAIT.
    marked_time_wait: bool,
}

/// The lcore's TCP state.
pub(crate) struct TcpCore<B: Buf> {
    pub(crate) config: TcpConfig,
    slots: Vec<Option<Slot<B>>>,
    generations: Vec<u32>,
    free: Vec<u32>,
    pub(crate) table: Arc<ConnTable<ConnRef>>,
    listeners: Vec<Listener<B>>,
    /// Connections' deadlines (an entry per arming; stale ones are
    /// skipped).
    timers: TimerWheel<ConnId>,
    /// Entries the wheel hands back per poll (reused).
    due: Vec<(Instant, ConnId)>,
    pub(crate) events: Vec<(ConnId, TcpEvent)>,
    secret: u64,
    /// Ports connects pick from.
    pub(crate) ephemeral: (u16, u16),
    /// Buffer storage of finished connections, for the next ones.
    spare: Vec<Buffers>,
}

/// Most spare buffer pairs kept.
const SPARE_BUFFERS: usize = 256;

impl<B: Buf> core::fmt::Debug for TcpCore<B> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TcpCore")
            .field("connections", &(self.slots.len() - self.free.len()))
            .field("listeners", &self.listeners.len())
            .finish()
    }
}

/// Room kept in front of a segment's payload for its headers.
const HEADROOM: usize = 14 + 40 + 60;

impl<B: Buf> TcpCore<B> {
    pub(crate) fn new(config: TcpConfig, secret: u64) -> TcpCore<B> {
        let ephemeral = config.ephemeral_ports;
        TcpCore {
            config,
            slots: Vec::new(),
            generations: Vec::new(),
            free: Vec::new(),
            table: Arc::new(ConnTable::new(65536, secret ^ 0x7c9f_31a2_5d04_e6b8)),
            listeners: Vec::new(),
            timers: TimerWheel::new(),
            due: Vec::new(),
            events: Vec::new(),
            secret,
            ephemeral,
            spare: Vec::new(),
        }
    }

    /// Storage for a new connection: recycled if there is some.
    fn buffers(&mut self) -> Buffers {
        self.spare
            .pop()
            .unwrap_or_else(|| Buffers::new(&self.config))
    }

    /// The connection `id` names, if it still exists.
    pub(crate) fn conn(&mut self, id: ConnId) -> Option<&mut Connection> {
        self.slot(id).map(|s| &mut s.conn)
    }

    /// The connection `id` names, read-only.
    pub(crate) fn peek(&self, id: ConnId) -> Option<&Connection> {
        let index = id.index as usize;
        if self.generations.get(index) != Some(&id.generation) {
            return None;
        }
        self.slots.get(index)?.as_ref().map(|s| &s.conn)
    }

    fn slot(&mut self, id: ConnId) -> Option<&mut Slot<B>> {
        let index = id.index as usize;
        if self.generations.get(index) != Some(&id.generation) {
            return None;
        }
        self.slots.get_mut(index)?.as_mut()
    }

    fn add(&mut self, slot: Slot<B>) -> ConnId {
        let index = match self.free.pop() {
            Some(index) => index,
            None => {
                self.slots.push(None);
                self.generations.push(0);
                (self.slots.len() - 1) as u32
            }
        };
        self.slots[index as usize] = Some(slot);
        ConnId {
            index,
            generation: self.generations[index as usize],
        }
    }

    fn remove(&mut self, id: ConnId) {
        let index = id.index as usize;
        if let Some(Some(slot)) = self.slots.get(index) {
            // A connect may have taken a TIME-WAIT entry over: remove it
            // only if it is still ours.
            let ours = ConnRef::new(id, slot.marked_time_wait);
            self.table.remove_if(&slot.tuple, ours);
        }
        self.free_slot(id);
    }

    /// Frees the slot of `id` (its table entry is not touched).
    fn free_slot(&mut self, id: ConnId) {
        let index = id.index as usize;
        if self.generations.get(index) != Some(&id.generation) {
            return;
        }
        if let Some(entry) = self.slots.get_mut(index).filter(|e| e.is_some()) {
            *entry = None;
            self.generations[index] = self.generations[index].wrapping_add(1) & 0x7fff_ffff;
            self.free.push(index as u32);
        }
    }

    /// May a connect take over TIME-WAIT connection `id`'s 4-tuple? If the
    /// new connection's ISN lies beyond everything the old one sent (RFC
    /// 6191's rule: its old duplicates cannot pass for new data; our ISNs
    /// grow with a 4 µs clock, so a short connection qualifies within a
    /// millisecond), or, with timestamps, once it has waited a second (as
    /// Linux's tcp_tw_reuse).
    pub(crate) fn may_reuse(&self, id: ConnId, now: Instant) -> bool {
        let index = id.index as usize;
        if self.generations.get(index) != Some(&id.generation) {
            return true; // already gone
        }
        let Some(Some(slot)) = self.slots.get(index) else {
            return true;
        };
        let conn = &slot.conn;
        if conn.state != State::TimeWait {
            return false;
        }
        let entered = conn.time_wait_at.map(|end| {
            Instant::from_nanos(
                end.as_nanos()
                    .saturating_sub(conn.time_wait.as_nanos() as u64),
            )
        });
        let waited = entered.is_some_and(|t| {
            now.saturating_duration_since(t) >= core::time::Duration::from_secs(1)
        });
        self.isn(&slot.tuple, now) > conn.snd_max || (conn.timestamps.is_some() && waited)
    }

    /// True if a listener holds local port `port` (connects skip it).
    pub(crate) fn listens_on(&self, port: u16) -> bool {
        self.listeners.iter().any(|l| l.local.port() == port)
    }

    /// An ISN per RFC 6528: a 4-microsecond clock plus a keyed hash of the
    /// connection's addresses.
    fn isn(&self, tuple: &FourTuple, now: Instant) -> Seq {
        use core::hash::{Hash, Hasher};
        #[allow(deprecated)]
        let mut hasher = std::hash::SipHasher::new_with_keys(self.secret, !self.secret);
        tuple.hash(&mut hasher);
        Seq((now.as_nanos() / 4000) as u32) + (hasher.finish() as u32)
    }

    /// The listener for a segment to `local`: exact address first, then the
    /// wildcard of its family, then an IPv6 wildcard for IPv4.
    fn listener_for(&self, tuple: &FourTuple) -> Option<usize> {
        let local = tuple.local;
        let port = local.port();
        let v6_any = IpAddr::V6(core::net::Ipv6Addr::UNSPECIFIED);
        // Most specific first: our exact address, the family's wildcard,
        // then `[::]` for IPv4.
        let at_level = |level: usize, l: &Listener<B>| match level {
            0 => l.local.ip() == local.ip(),
            1 => l.local.ip().is_unspecified() && l.local.is_ipv4() == local.is_ipv4(),
            _ => local.is_ipv4() && l.local.ip() == v6_any,
        };
        for level in 0..3 {
            let matches = |l: &Listener<B>| at_level(level, l);
            let group = || {
                self.listeners
                    .iter()
                    .enumerate()
                    .filter(|(_, l)| l.local.port() == port && l.backlog > 0 && matches(l))
            };
            let members = group().count();
            if members == 0 {
                continue;
            }
            // An SO_REUSEPORT group: a keyed hash of the 4-tuple picks the
            // member, so a flow always meets the same one.
            let pick = if members == 1 {
                0
            } else {
                (self.flow_hash(tuple) % members as u64) as usize
            };
            return group().nth(pick).map(|(i, _)| i);
        }
        None
    }

    /// A keyed hash of a 4-tuple (reuseport member selection).
    fn flow_hash(&self, tuple: &FourTuple) -> u64 {
        use core::hash::{Hash, Hasher};
        #[allow(deprecated)]
        let mut hasher =
            std::hash::SipHasher::new_with_keys(self.secret.rotate_left(17), self.secret);
        tuple.hash(&mut hasher);
        hasher.finish()
    }
}

/// Starts listening on `local` (port and address; an unspecified address
/// takes every address, an IPv6 one both families). With `reuse_port`,
/// several listeners may share `local` (SO_REUSEPORT): each connection goes
/// to one of them by a keyed hash of its 4-tuple.
pub(crate) fn listen<B: Buf>(
    core: &mut Core<B>,
    local: SocketAddr,
    backlog: usize,
    reuse_port: bool,
) -> Result<(), ListenError> {
    if !local.ip().is_unspecified() && !super::is_ours(&core.local, &core.links, local.ip()) {
        return Err(ListenError::AddrNotAvailable);
    }
    if core
        .tcp
        .listeners
        .iter()
        .any(|l| l.local == local && !(reuse_port && l.reuse_port))
    {
        return Err(ListenError::AddrInUse);
    }
    core.tcp.listeners.push(Listener {
        local,
        accept: None,
        backlog: backlog.max(1),
        pending: 0,
        reuse_port,
    });
    Ok(())
}

/// Queue mode: listens on `local`; accepted connections go to `queue`.
pub(crate) fn listen_queued<B: Buf>(
    core: &mut Core<B>,
    local: SocketAddr,
    backlog: usize,
    reuse_port: bool,
    queue: Arc<AcceptQueue<B>>,
) -> Result<(), ListenError> {
    listen(core, local, backlog, reuse_port)?;
    if let Some(listener) = core.tcp.listeners.last_mut() {
        listener.accept = Some(queue);
    }
    Ok(())
}

/// Stops listening on `local` (connections in progress carry on).
pub(crate) fn unlisten<B: Buf>(core: &mut Core<B>, local: SocketAddr, queue: &Arc<AcceptQueue<B>>) {
    let ours = |l: &Listener<B>| l.accept.as_ref().is_some_and(|q| Arc::ptr_eq(q, queue));
    if let Some(at) = core
        .tcp
        .listeners
        .iter()
        .position(|l| l.local == local && ours(l))
    {
        // Keep indexes stable for connections still in their handshake.
        let listener = &mut core.tcp.listeners[at];
        listener.accept = None;
        listener.local = SocketAddr::new(local.ip(), 0);
        listener.backlog = 0;
    }
}

/// Queue mode: opens a connection to `remote` for an application thread.
pub(crate) fn connect_queued<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    remote: SocketAddr,
    stream: Arc<StreamQueue<P::Buf>>,
) -> Result<(), TcpError> {
    *stream.peer.lock().unwrap_or_else(|e| e.into_inner()) = Some(remote);
    let id = connect_with(core, out, now, remote, Some(stream))?;
    let _ = id;
    Ok(())
}

/// Looks at the streams application threads touched since the last poll.
pub(crate) fn attend<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    shared: &crate::socket::Shared<P::Buf>,
) {
    if shared
        .attend_all
        .swap(false, core::sync::atomic::Ordering::AcqRel)
    {
        let all: Vec<ConnId> = (0..core.tcp.slots.len())
            .filter(|&i| {
                core.tcp.slots[i]
                    .as_ref()
                    .is_some_and(|s| s.stream.is_some())
            })
            .map(|i| ConnId {
                index: i as u32,
                generation: core.tcp.generations[i],
            })
            .collect();
        for id in all {
            after_activity(core, out, now, id);
        }
    }
    for _ in 0..1024 {
        let Some(id) = shared.attention.pop() else {
            return;
        };
        after_activity(core, out, now, id);
    }
}

/// Queue mode: moves received bytes into buffers for the application (while
/// its queue has room), takes what it wrote into the send buffer (while
/// that has room), and passes its shutdown on.
fn pump<P: Port>(core: &mut Core<P::Buf>, out: &mut Out<'_, P>, id: ConnId) {
    let Some(stream) = core.tcp.slot(id).and_then(|s| s.stream.clone()) else {
        return;
    };
    let mut woke = false;
    while core.tcp.slot(id).is_some_and(|s| s.conn.recv_ready() > 0) && !stream.rx.is_full() {
        let Some(mut buf) = out.alloc(0) else {
            break;
        };
        let room = buf.tailroom().min(4096);
        let Some(area) = buf.append(room) else {
            break;
        };
        let Some(slot) = core.tcp.slot(id) else {
            return;
        };
        let n = slot.conn.recv(area).unwrap_or(0);
        buf.trim(room - n);
        if n == 0 || stream.rx.push(buf).is_err() {
            break;
        }
        woke = true;
    }
    let Some(slot) = core.tcp.slot(id) else {
        return;
    };
    if slot.conn.at_eof() && !stream.has(EOF) {
        stream.set(EOF);
        woke = true;
    }
    loop {
        let (buf, taken) = match slot.tx_partial.take() {
            Some(partial) => partial,
            None => match stream.tx.pop() {
                Some(buf) => {
                    woke = true; // room in the queue for the writer
                    (buf, 0)
                }
                None => break,
            },
        };
        let n = slot.conn.send(&buf.data()[taken..]).unwrap_or(0);
        if taken + n < buf.len() {
            slot.tx_partial = Some((buf, taken + n));
            break;
        }
    }
    let drained = slot.tx_partial.is_none() && stream.tx.is_empty();
    if stream.has(SHUTDOWN) && drained && slot.conn.may_send() {
        slot.conn.close();
    }
    if woke {
        stream.waker.wake();
    }
}

/// A TCP segment for us, from the IPv4 or IPv6 layer: `segment` is its
/// range in `buf`, `scope` the arrival link for link-local IPv6 peers.
#[allow(clippy::too_many_arguments)]
pub(crate) fn input<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    buf: P::Buf,
    (src, dst): (IpAddr, IpAddr),
    segment: core::ops::Range<usize>,
    scope: u32,
    offload: ChecksumStatus,
) {
    core.counters.count(Stat::TcpInSegs);
    let bytes = &buf.data()[segment.clone()];
    let pseudo = pseudo(src, dst, bytes.len());
    let Ok(packet) = TcpPacket::new_checked(bytes) else {
        return core.counters.count_drop(DropReason::TcpMalformed);
    };
    if offload != ChecksumStatus::Good && !packet.verify_checksum(pseudo) {
        return core.counters.count_drop(DropReason::TcpBadChecksum);
    }
    let Ok(repr) = TcpRepr::parse(&packet) else {
        return core.counters.count_drop(DropReason::TcpMalformed);
    };
    let payload = packet.payload();
    let tuple = FourTuple {
        local: SocketAddr::new(dst, repr.dst_port),
        remote: SocketAddr::new(src, repr.src_port),
    };
    if let Some(id) = core.tcp.table.lookup(&tuple).map(ConnRef::id) {
        if core.tcp.slot(id).is_some() {
            let slot = core.tcp.slot(id).expect("checked");
            slot.conn.on_segment(&repr, payload, now);
            slot.quiet = false;
            drop(buf);
            return after_activity(core, out, now, id);
        }
    }
    // No connection: a listener takes a SYN; anything else is refused.
    let syn_only = repr.flags & (flags::SYN | flags::ACK | flags::RST) == flags::SYN;
    if let (true, Some(l)) = (syn_only, core.tcp.listener_for(&tuple)) {
        let listener = &mut core.tcp.listeners[l];
        if listener.pending >= listener.backlog {
            return core.counters.count_drop(DropReason::TcpListenOverflow);
        }
        listener.pending += 1;
        let iss = core.tcp.isn(&tuple, now);
        let mss = mss_for(core, tuple.local.ip());
        let ts_offset = (core.tcp.secret >> 7) as u32 ^ iss.0;
        let buffers = core.tcp.buffers();
        let start = (iss, mss, ts_offset);
        let conn = Connection::accept_with(&core.tcp.config, &repr, start, now, buffers);
        let id = core.tcp.add(Slot {
            conn,
            stream: None,
            tx_partial: None,
            hop: None,
            tuple,
            listener: Some(l),
            armed: None,
            quiet: true,
            scope,
            active: false,
            announced: false,
            marked_time_wait: false,
        });
        if core
            .tcp
            .table
            .insert(tuple, ConnRef::new(id, false))
            .is_err()
        {
            core.tcp.listeners[l].pending -= 1;
            core.tcp.remove(id);
            return core.counters.count_drop(DropReason::TcpMalformed);
        }
        core.counters.count(Stat::TcpPassiveOpens);
        drop(buf);
        return after_activity(core, out, now, id);
    }
    core.counters.count_drop(DropReason::TcpNoSocket);
    if repr.flags & flags::RST == 0 {
        send_reset(core, out, now, &tuple, &repr, payload.len(), scope);
    }
}

/// The pseudo-header sum of a segment of `len` bytes.
fn pseudo(src: IpAddr, dst: IpAddr, len: usize) -> u64 {
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            checksum::pseudo_header_v4(s, d, protocol::TCP, len as u16)
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => pseudo_header(s, d, next_header::TCP, len as u32),
        _ => 0,
    }
}

/// The MSS we announce from `local`'s link MTU.
fn mss_for<B: Buf>(core: &Core<B>, local: IpAddr) -> u16 {
    let mtu = core.links.first().map_or(1500, |l| l.mtu);
    let ip = if local.is_ipv4() { 20 } else { 40 };
    (mtu.saturating_sub(ip + TCP_LEN)).clamp(536, 65535) as u16
}

/// RFC 9293 3.10.7.1: a reset for a segment to no connection.
fn send_reset<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    tuple: &FourTuple,
    seg: &TcpRepr,
    payload_len: usize,
    scope: u32,
) {
    let (seq, ack, bits) = if seg.flags & flags::ACK != 0 {
        (seg.ack, 0, flags::RST)
    } else {
        let len = payload_len as u32
            + u32::from(seg.flags & flags::SYN != 0)
            + u32::from(seg.flags & flags::FIN != 0);
        (0, seg.seq.wrapping_add(len), flags::RST | flags::ACK)
    };
    let repr = TcpRepr {
        src_port: tuple.local.port(),
        dst_port: tuple.remote.port(),
        seq,
        ack,
        flags: bits,
        window: 0,
        options: TcpOptions::default(),
    };
    core.counters.count(Stat::TcpOutRsts);
    let _ = emit(core, out, now, tuple, scope, &repr, &[]);
}

/// Frames and sends one segment (header from `repr`, then `payload`).
fn emit<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    tuple: &FourTuple,
    scope: u32,
    repr: &TcpRepr,
    payload: &[u8],
) -> Result<(), super::SendError> {
    let link = ip_out::link_for(core, tuple.local.ip(), tuple.remote.ip(), scope).unwrap_or(0);
    let Some(mut buf) = out.alloc(link) else {
        core.counters.count_drop(DropReason::TxNoBuffer);
        return Err(super::SendError::NoBuffer);
    };
    let header_len = repr.header_len();
    let Some(room) = buf.append(header_len + payload.len()) else {
        core.counters.count_drop(DropReason::TxNoBuffer);
        return Err(super::SendError::TooLarge);
    };
    repr.emit(&mut room[..header_len]);
    room[header_len..].copy_from_slice(payload);
    finish(core, out, now, tuple, scope, buf).map(|_| ())
}

/// Fills the checksum of the segment that is all of `buf` and sends it.
fn finish<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    tuple: &FourTuple,
    scope: u32,
    mut buf: P::Buf,
) -> Result<Option<ip_out::CachedHop>, super::SendError> {
    let (src, dst) = (tuple.local.ip(), tuple.remote.ip());
    let len = buf.len();
    TcpPacket::new_unchecked(buf.data_mut()).fill_checksum(pseudo(src, dst, len));
    core.counters.count(Stat::TcpOutSegs);
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            ip_out::send_ipv4(core, out, now, (s, d), protocol::TCP, buf)
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            ip_out::send_ipv6(core, out, now, (s, d, scope), next_header::TCP, buf)
        }
        _ => Err(super::SendError::NoRoute),
    }
}

/// [`finish`] for a connection's segment: through its remembered next hop
/// while that holds (no route or neighbour lookup), else the full way,
/// remembering the hop found.
fn finish_for<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    id: ConnId,
    (tuple, scope): (&FourTuple, u32),
    mut buf: P::Buf,
) {
    let hop = core.tcp.slot(id).and_then(|s| s.hop);
    let (src, dst) = (tuple.local.ip(), tuple.remote.ip());
    if hop.is_some() {
        let len = buf.len();
        TcpPacket::new_unchecked(buf.data_mut()).fill_checksum(pseudo(src, dst, len));
        let protocol = if dst.is_ipv4() {
            protocol::TCP
        } else {
            next_header::TCP
        };
        match ip_out::send_cached(core, out, hop, (src, dst), protocol, buf) {
            Ok(_) => {
                core.counters.count(Stat::TcpOutSegs);
                return;
            }
            // Stale: the full way (which fills the checksum afresh).
            Err(back) => buf = back,
        }
    }
    let found = finish(core, out, now, tuple, scope, buf).ok().flatten();
    if let Some(slot) = core.tcp.slot(id) {
        slot.hop = found;
    }
}

/// Sends what connection `id` owes, straight from its buffers into
/// packet buffers.
pub(crate) fn flush<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    id: ConnId,
) {
    let Some(slot) = core.tcp.slot(id) else {
        return;
    };
    let (tuple, scope, hop) = (slot.tuple, slot.scope, slot.hop);
    // The pool of the link the segments leave through: the remembered
    // hop's, else the route's.
    let link = match hop {
        Some(hop) => hop.link(),
        None => ip_out::link_for(core, tuple.local.ip(), tuple.remote.ip(), scope).unwrap_or(0),
    };
    loop {
        let Some(mut buf) = out.alloc(link) else {
            return core.counters.count_drop(DropReason::TxNoBuffer);
        };
        let Some(slot) = core.tcp.slot(id) else {
            return;
        };
        let mss = usize::from(slot.conn.mss());
        let Some(area) = buf.append(HEADROOM + mss) else {
            return core.counters.count_drop(DropReason::TxNoBuffer);
        };
        let Some((repr, len)) = slot.conn.poll_transmit(now, &mut area[HEADROOM..]) else {
            return;
        };
        let header_len = repr.header_len();
        let start = HEADROOM - header_len;
        repr.emit(&mut area[start..HEADROOM]);
        let excess = buf.len() - (HEADROOM + len);
        buf.trim(excess);
        buf.adjust(start);
        if repr.flags & flags::RST != 0 {
            core.counters.count(Stat::TcpOutRsts);
        }
        finish_for(core, out, now, id, (&tuple, scope), buf);
    }
}

/// After a segment, a timer or an application call touched connection
/// `id`: send what it owes, re-arm its timer, report what the handler
/// should hear, and free it once closed (or keep it in TIME-WAIT).
pub(crate) fn after_activity<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    id: ConnId,
) {
    pump(core, out, id);
    flush(core, out, now, id);
    let tcp = &mut core.tcp;
    let Some(slot) = tcp.slot(id) else {
        return;
    };
    let state = slot.conn.state();
    let mut from_listener = None;
    if let Some(l) = slot.listener {
        if state != State::SynReceived {
            slot.listener = None;
            from_listener = Some(l);
            if let Some(listener) = tcp.listeners.get_mut(l) {
                listener.pending = listener.pending.saturating_sub(1);
            }
        }
    }
    let Some(slot) = tcp.slot(id) else {
        return;
    };
    let opened = !matches!(state, State::SynSent | State::SynReceived | State::Closed);
    if opened && !slot.announced {
        slot.announced = true;
        let active = slot.active;
        let tuple = slot.tuple;
        let queued = from_listener
            .and_then(|l| tcp.listeners.get(l))
            .and_then(|l| l.accept.clone());
        match (&tcp.slot(id).and_then(|s| s.stream.clone()), queued) {
            (Some(stream), _) => {
                // A connect from an application thread completed.
                stream.set(OPEN);
                stream.waker.wake();
            }
            (None, Some(queue)) if !active => {
                // Queue mode: the application accepts it from its queue.
                let stream = Arc::new(StreamQueue::new());
                *stream.id.lock().unwrap_or_else(|e| e.into_inner()) = Some(id);
                *stream.peer.lock().unwrap_or_else(|e| e.into_inner()) = Some(tuple.remote);
                stream.set(OPEN);
                if queue.streams.push(Arc::clone(&stream)).is_ok() {
                    if let Some(slot) = tcp.slot(id) {
                        slot.stream = Some(stream);
                    }
                    queue.waker.wake();
                } else {
                    core.counters.count_drop(DropReason::TcpListenOverflow);
                    if let Some(slot) = core.tcp.slot(id) {
                        slot.conn.abort();
                    }
                    return after_activity(core, out, now, id);
                }
            }
            _ => {
                let event = if active {
                    TcpEvent::Connected
                } else {
                    TcpEvent::Accepted
                };
                tcp.events.push((id, event));
            }
        }
    }
    let tcp = &mut core.tcp;
    let Some(slot) = tcp.slot(id) else {
        return;
    };
    if slot.stream.is_some() && opened {
        // Data may have arrived with the handshake: move it now.
        slot.quiet = true;
    }
    if let Some(buffers) = slot.conn.release_buffers() {
        if tcp.spare.len() < SPARE_BUFFERS {
            tcp.spare.push(buffers);
        }
    }
    let Some(slot) = tcp.slot(id) else {
        return;
    };
    if state == State::Closed {
        let error = slot.conn.error();
        let report = slot.announced || slot.active;
        if let Some(stream) = slot.stream.take() {
            stream
                .error
                .store(error_code(error), core::sync::atomic::Ordering::Release);
            stream.set(CLOSED);
            stream.waker.wake();
            tcp.remove(id);
            return;
        }
        tcp.remove(id);
        if report {
            tcp.events.push((id, TcpEvent::Closed(error)));
        }
        return;
    }
    let queue_mode = slot.stream.is_some();
    let readable = !queue_mode
        && !slot.quiet
        && slot.announced
        && (slot.conn.recv_ready() > 0 || slot.conn.at_eof());
    if readable {
        slot.quiet = true;
    }
    let tuple = slot.tuple;
    if readable {
        tcp.events.push((id, TcpEvent::Readable));
    }
    if state == State::TimeWait && !tcp.slot(id).is_some_and(|s| s.marked_time_wait) {
        tcp.table.update(&tuple, ConnRef::new(id, true));
        if let Some(slot) = tcp.slot(id) {
            slot.marked_time_wait = true;
        }
    }
    let Some(slot) = tcp.slot(id) else {
        return;
    };
    if let Some(deadline) = slot.conn.next_deadline() {
        if slot.armed.is_none_or(|armed| deadline < armed) {
            slot.armed = Some(deadline);
            tcp.timers.insert(deadline, id);
        }
    }
}

/// Runs the connections' timers that are due.
pub(crate) fn run_timers<P: Port>(core: &mut Core<P::Buf>, out: &mut Out<'_, P>, now: Instant) {
    if core.tcp.timers.is_empty() {
        return;
    }
    let mut due = core::mem::take(&mut core.tcp.due);
    core.tcp.timers.expire(now, &mut due);
    for (deadline, id) in due.drain(..) {
        let Some(slot) = core.tcp.slot(id) else {
            continue;
        };
        if slot.armed == Some(deadline) {
            slot.armed = None;
        }
        slot.conn.on_timer(now);
        slot.quiet = false;
        after_activity(core, out, now, id);
    }
    core.tcp.due = due;
}

/// Opens a connection to `remote` (inline): the route gives the source
/// address, the table a free port.
pub(crate) fn connect<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    remote: SocketAddr,
) -> Result<ConnId, TcpError> {
    connect_with(core, out, now, remote, None)
}

/// [`connect`], for an application thread's `stream` in queue mode.
fn connect_with<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    remote: SocketAddr,
    stream: Option<Arc<StreamQueue<P::Buf>>>,
) -> Result<ConnId, TcpError> {
    let scope = match remote {
        SocketAddr::V6(v6) => v6.scope_id(),
        SocketAddr::V4(_) => 0,
    };
    let local_ip = match remote.ip() {
        IpAddr::V4(dst) => IpAddr::V4(
            core.routes
                .next_hop(dst)
                .ok_or(TcpError::NotConnected)?
                .source,
        ),
        IpAddr::V6(dst) => {
            let path = super::tx6::path6(
                core,
                core::net::Ipv6Addr::UNSPECIFIED,
                &core::net::SocketAddrV6::new(dst, 0, 0, scope),
            )
            .ok_or(TcpError::NotConnected)?;
            IpAddr::V6(path.source)
        }
    };
    let placeholder = ConnRef::new(
        ConnId {
            index: u32::MAX,
            generation: 0,
        },
        false,
    );
    let range = core.tcp.ephemeral;
    let table = Arc::clone(&core.tcp.table);
    let tcp = &core.tcp;
    let (port, replaced) = table
        .connect(
            local_ip,
            remote,
            range,
            placeholder,
            ConnectMode::RcuFirst,
            |v| v.in_time_wait() && tcp.may_reuse(v.id(), now),
            |port| tcp.listens_on(port),
        )
        .map_err(|_| TcpError::AddressNotAvailable)?;
    if let Some(old) = replaced {
        // A TIME-WAIT connection's 4-tuple was reused: it ends now.
        core.tcp.free_slot(old.id());
    }
    let tuple = FourTuple {
        local: SocketAddr::new(local_ip, port),
        remote,
    };
    let iss = core.tcp.isn(&tuple, now);
    let mss = mss_for(core, local_ip);
    let ts_offset = (core.tcp.secret >> 9) as u32 ^ iss.0;
    let buffers = core.tcp.buffers();
    let ports = (port, remote.port());
    let conn = Connection::connect_with(&core.tcp.config, ports, iss, mss, ts_offset, buffers);
    if let Some(stream) = &stream {
        // Its id is set below, before anything can need it.
        let _ = stream;
    }
    let id = core.tcp.add(Slot {
        conn,
        stream: stream.clone(),
        tx_partial: None,
        hop: None,
        tuple,
        listener: None,
        armed: None,
        quiet: true,
        scope,
        active: true,
        announced: false,
        marked_time_wait: false,
    });
    core.tcp.table.update(&tuple, ConnRef::new(id, false));
    if let Some(stream) = &stream {
        *stream.id.lock().unwrap_or_else(|e| e.into_inner()) = Some(id);
    }
    core.counters.count(Stat::TcpActiveOpens);
    after_activity(core, out, now, id);
    Ok(id)
}

/// The application's calls on a connection (inline, or through the
/// interface), each followed by what the connection then owes.
pub(crate) fn with_conn<P: Port, T>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    id: ConnId,
    call: impl FnOnce(&mut Connection) -> T,
) -> Option<T> {
    let slot = core.tcp.slot(id)?;
    let result = call(&mut slot.conn);
    slot.quiet = false;
    after_activity(core, out, now, id);
    Some(result)
}
