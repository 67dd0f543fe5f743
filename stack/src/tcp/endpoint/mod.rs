//! TCP's endpoint on the lcore: the connection slab, the listeners, the
//! queue pump that serves application threads, segment input, the timers
//! and the pacing heap. Segments from the IP layer go to their connection
//! (the shared [`ConnTable`], read without locks) or to a listener (a SYN
//! makes a connection in SYN-RECEIVED); segments for nothing get a reset.
//! What connections send is framed here (TCP header and checksum) and
//! handed to the IP layer through [`SegmentOut`], a small trait the
//! endpoint is generic over (no `dyn` per segment); their deadlines sit in
//! a timer wheel walked every poll, and what the application should hear
//! (accepted, readable, closed) is queued as events the handler gets after
//! the burst (inline mode).
//!
//! Invariants: a [`ConnId`] names a slot and its generation, so a stale id
//! finds nothing; every connection in the slab is in the connection table
//! under its 4-tuple (a connect's placeholder entry is replaced before
//! anything can look it up); a listener's place is reused only once no
//! handshake it started is pending.
//!
//! Files: this one holds the types and the slab; [`ip`] the interface to
//! IP; `activity` the bookkeeping after any activity on a connection
//! (what it owes, its timer, its events), the deferred list, the pacing
//! heap and the timers; `segment` receives and frames segments; `open`
//! listens and connects; `queue` serves application threads (queue mode)
//! through the queues of [`stream`]; `icmp` takes ICMP errors about our
//! segments (path MTU discovery, unreachable peers).

use crate::bind_views::{key_of, overlap, views, Views};
use crate::counters::{Counters, DropReason, Stat};
use crate::keys::Keys;
use crate::port::{Buf, ChecksumStatus};
use crate::tcp::challenge::ChallengeAckLimit;
use crate::tcp::conn::{ts_clock, window_shift_for, DEFAULT_MSS};
use crate::tcp::cookie::{self, SynCookies};
use crate::tcp::ecn;
use crate::tcp::ids::GENERATION_MASK;
use crate::tcp::table::{ConnTable, ConnectMode, FourTuple, Placed, PortSearch, TableValue};
use crate::tcp::wheel::TimerWheel;
use crate::tcp::{
    BufferBudget, BufferPool, Connection, LossEvents, Refusal, Seq, State, TcpConfig, TcpError,
    Verdict,
};
use crate::time::{Duration, Instant};
use crate::wire::checksum;
use crate::wire::ipv4::protocol;
use crate::wire::ipv6::{next_header, pseudo_header};
use crate::wire::tcp::{flags, TcpOptions, TcpPacket, TcpRepr, HEADER_LEN as TCP_LEN};
use crate::wire::Ecn;
use core::cmp::Reverse;
use core::net::{IpAddr, SocketAddr};
use std::collections::BinaryHeap;
use std::sync::Arc;
use stream::{error_code, AcceptQueue, StreamQueue, CLOSED, DROPPED, EOF, OPEN, SHUTDOWN, UNREAD};

mod activity;
mod icmp;
pub(crate) mod ip;
mod open;
mod queue;
mod segment;
pub(crate) mod stream;

pub(crate) use icmp::{IcmpKind, IcmpQuote};
pub(crate) use ip::{PeerRoute, SegmentOut};
use segment::mss_for;
pub(crate) use segment::{Steer, TcpIn};

use crate::tcp::ids::ConnRef;
pub use crate::tcp::ids::{ConnId, ListenError, ListenOptions, ListenerId, TcpEvent};

/// A TCP listener (inline or queue mode), as the console shows it.
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

struct Listener<B: Buf> {
    local: SocketAddr,
    /// Part of an SO_REUSEPORT group.
    reuse_port: bool,
    /// IPV6_V6ONLY: `[::]` hears no IPv4.
    v6_only: bool,
    /// Queue mode: accepted connections go here for application threads.
    accept: Option<Arc<AcceptQueue<B>>>,
    /// Connections in SYN-RECEIVED at most (0: closed).
    backlog: usize,
    pending: usize,
    /// When the listener last answered a SYN with a cookie: ACKs are
    /// checked for cookies only within [`COOKIE_WINDOW`] of it, so a
    /// listener that never overflowed gives a forger nothing to guess.
    cookie_sent: Option<Instant>,
    /// Bumped each time the place is reused, so old ids go stale.
    generation: u32,
}

/// How long after its last cookie a listener still checks ACKs for one:
/// two cookie periods, the longest a cookie stays valid.
const COOKIE_WINDOW: Duration = Duration::from_secs(128);

impl<B: Buf> Listener<B> {
    /// Whether it sent a SYN cookie within [`COOKIE_WINDOW`].
    fn cookies_recent(&self, now: Instant) -> bool {
        self.cookie_sent
            .is_some_and(|at| now.saturating_duration_since(at) <= COOKIE_WINDOW)
    }

    fn id(&self, index: usize) -> ListenerId {
        ListenerId {
            index: index as u32,
            generation: self.generation,
        }
    }
}

struct Slot<B: Buf, H> {
    conn: Connection,
    /// Queue mode: the application thread's side.
    stream: Option<Arc<StreamQueue<B>>>,
    /// Queue mode: a buffer from the application only partly taken into
    /// the send buffer: (buffer, bytes taken).
    tx_partial: Option<(B, usize)>,
    /// The next hop its segments take, while valid.
    hop: Option<H>,
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
    /// Inline mode: a write took less than it was given; the handler hears
    /// `Readable` once half the send buffer is free again.
    write_blocked: bool,
    /// In [`Endpoint::deferred`]: its bookkeeping (and what it owes) waits
    /// for the end of the receive burst.
    deferred: bool,
    /// In [`Endpoint::paced`]: pacing holds its next data segment.
    paced: bool,
}

impl<B: Buf, H> Slot<B, H> {
    /// A connection listener `l` made for a peer on `tuple`: from a SYN
    /// (quiet until it opens) or from a SYN cookie's ACK.
    fn passive(
        conn: Connection,
        tuple: FourTuple,
        l: usize,
        scope: u32,
        quiet: bool,
    ) -> Slot<B, H> {
        Slot {
            conn,
            stream: None,
            tx_partial: None,
            hop: None,
            tuple,
            listener: Some(l),
            armed: None,
            quiet,
            scope,
            active: false,
            announced: false,
            marked_time_wait: false,
            write_blocked: false,
            deferred: false,
            paced: false,
        }
    }
}

/// The lcore's TCP endpoint: its connections (with the next hop each
/// remembers, `H`: [`SegmentOut::Hop`]), listeners and timers.
pub(crate) struct Endpoint<B: Buf, H> {
    pub(crate) config: TcpConfig,
    slots: Vec<Option<Slot<B, H>>>,
    generations: Vec<u32>,
    free: Vec<u32>,
    /// The stack's connection table, shared by every pipeline's endpoint.
    pub(crate) table: Arc<ConnTable<ConnRef>>,
    /// This endpoint's pipeline: the owner its table entries name.
    pub(crate) owner: u8,
    listeners: Vec<Listener<B>>,
    /// Connections' deadlines (an entry per arming; stale ones are
    /// skipped).
    timers: TimerWheel<ConnId>,
    /// Entries the wheel hands back per poll (reused).
    due: Vec<(Instant, ConnId)>,
    pub(crate) events: Vec<(ConnId, TcpEvent)>,
    /// SipHash keys of ISNs (RFC 6528) and timestamp offsets (RFC 7323
    /// 5.4), and of the reuseport flow hash.
    isn_key: [u64; 2],
    ts_key: [u64; 2],
    /// SYN cookies for listeners whose backlog is full.
    pub(crate) cookies: SynCookies,
    flow_key: [u64; 2],
    /// RFC 5961 7: the stack's challenge ACKs a second.
    challenge_limit: ChallengeAckLimit,
    /// Ports connects pick from.
    pub(crate) ephemeral: (u16, u16),
    /// The lcore's ring storage, over the stack's buffer-memory budget.
    pub(crate) pool: BufferPool,
    /// Established connections that took segments in this receive burst:
    /// what they owe goes out once the burst is done, so that one ACK
    /// answers all their segments in it (as GRO gives Linux) and their
    /// data leaves in one transmit burst.
    deferred: Vec<ConnId>,
    /// Connections whose pacing holds a data segment, soonest release
    /// first: looked at every poll, as the timer wheel's millisecond is
    /// coarser than pacing's gaps.
    paced: BinaryHeap<Reverse<(Instant, u32, u32)>>,
    /// A packet buffer (and the link whose pool it came from; `None`: the
    /// pool taken without a route) that a flush took but had nothing to put
    /// in: the next flush on that link uses it instead of a pool round trip.
    held_tx: Option<(Option<usize>, B)>,
}

/// The connection table every pipeline's endpoint of a stack configured
/// with `config` and `keys` shares.
pub(crate) fn shared_table(config: &TcpConfig, keys: &Keys) -> Arc<ConnTable<ConnRef>> {
    Arc::new(ConnTable::new(config.conn_buckets, keys.flow, keys.ports))
}

/// Most bytes of freed ring storage an lcore keeps for its next rings.
const POOL_KEEP: usize = 32 << 20;

impl<B: Buf, H> core::fmt::Debug for Endpoint<B, H> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Endpoint")
            .field("connections", &(self.slots.len() - self.free.len()))
            .field("listeners", &self.listeners.len())
            .finish()
    }
}

/// Room kept in front of a segment's payload for its headers.
const HEADROOM: usize = 14 + 40 + 60;

impl<B: Buf, H: Copy> Endpoint<B, H> {
    /// An endpoint with no connections or listeners, keyed by `keys`.
    /// Pipeline `owner`'s endpoint over the shared connection `table`.
    pub(crate) fn new(
        config: TcpConfig,
        keys: &Keys,
        table: Arc<ConnTable<ConnRef>>,
        owner: u8,
    ) -> Endpoint<B, H> {
        let pool = BufferPool::new(
            BufferBudget::new(config.buffer_memory),
            POOL_KEEP.min(config.buffer_memory / 8),
        );
        let ephemeral = config.ephemeral_ports;
        let challenge_limit = ChallengeAckLimit::new(config.challenge_ack_limit, keys.jitter);
        Endpoint {
            config,
            slots: Vec::new(),
            generations: Vec::new(),
            free: Vec::new(),
            table,
            owner,
            listeners: Vec::new(),
            timers: TimerWheel::new(),
            due: Vec::new(),
            events: Vec::new(),
            isn_key: keys.isn,
            ts_key: keys.ts_offset,
            cookies: SynCookies::new(keys.syn_cookie),
            flow_key: [keys.flow.rotate_left(17), keys.flow],
            challenge_limit,
            ephemeral,
            pool,
            deferred: Vec::new(),
            paced: BinaryHeap::new(),
            held_tx: None,
        }
    }

    /// Connection `id`'s slot and the lcore's buffer pool, together.
    fn slot_and_pool(&mut self, id: ConnId) -> Option<(&mut Slot<B, H>, &mut BufferPool)> {
        let index = id.index as usize;
        if self.generations.get(index) != Some(&id.generation) {
            return None;
        }
        let slot = self.slots.get_mut(index)?.as_mut()?;
        Some((slot, &mut self.pool))
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

    /// The addresses and ports of connection `id` (ours, the peer's).
    pub(crate) fn tuple(&self, id: ConnId) -> Option<FourTuple> {
        let index = id.index as usize;
        if self.generations.get(index) != Some(&id.generation) {
            return None;
        }
        self.slots.get(index)?.as_ref().map(|s| s.tuple)
    }

    fn slot(&mut self, id: ConnId) -> Option<&mut Slot<B, H>> {
        let index = id.index as usize;
        if self.generations.get(index) != Some(&id.generation) {
            return None;
        }
        self.slots.get_mut(index)?.as_mut()
    }

    /// Whether the stack holds `max_connections` connections already.
    fn at_connection_limit(&self) -> bool {
        self.slots.len() - self.free.len() >= self.config.max_connections
    }

    fn add(&mut self, slot: Slot<B, H>) -> ConnId {
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
            let ours = ConnRef::new(self.owner, id, slot.marked_time_wait);
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
            self.generations[index] = self.generations[index].wrapping_add(1) & GENERATION_MASK;
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
        Seq((now.as_nanos() / 4000) as u32) + (keyed(self.isn_key, tuple) as u32)
    }

    /// The connection's timestamp offset (RFC 7323 5.4, as Linux's
    /// tsoffset): a keyed hash of the 4-tuple under a key of its own, so a
    /// peer learns nothing from TSval beside the ISS, and a reopened
    /// 4-tuple keeps its offset (its timestamps keep growing, which the
    /// peer's TIME-WAIT checks rely on).
    fn ts_offset(&self, tuple: &FourTuple) -> u32 {
        keyed(self.ts_key, tuple) as u32
    }

    /// The listener for a segment to `local`, as Linux's scoring picks it:
    /// our exact address first (for IPv4, an IPv4 listener before one on
    /// the IPv4-mapped address), then the family's wildcard, then, for
    /// IPv4, a dual-stack `[::]`.
    fn listener_for(&self, tuple: &FourTuple) -> Option<usize> {
        let local = tuple.local;
        let port = local.port();
        let v4 = local.is_ipv4();
        let at_level = |level: usize, l: &Listener<B>| {
            let ip = l.local.ip();
            match level {
                0 => ip == local.ip(),
                1 => v4 && l.local.is_ipv6() && ip.to_canonical() == local.ip(),
                2 if v4 => ip.to_canonical() == IpAddr::V4(core::net::Ipv4Addr::UNSPECIFIED),
                2 => l.local.is_ipv6() && ip.is_unspecified(),
                _ => v4 && l.local.is_ipv6() && ip.is_unspecified() && !l.v6_only,
            }
        };
        for level in 0..4 {
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

    /// True if listener `l` hands connections to application threads and
    /// its accept queue is full (the lcore is its only producer, so room
    /// seen here is still there when it pushes).
    fn accept_queue_full(&self, l: usize) -> bool {
        self.listeners
            .get(l)
            .and_then(|l| l.accept.as_ref())
            .is_some_and(|q| q.streams.is_full())
    }

    /// [`Endpoint::listener_for`], if it can take a SYN: its backlog of
    /// handshakes and its accept queue have room.
    fn listener_with_room(&self, tuple: &FourTuple) -> Option<usize> {
        let l = self.listener_for(tuple)?;
        let listener = &self.listeners[l];
        (listener.pending < listener.backlog && !self.accept_queue_full(l)).then_some(l)
    }

    /// A keyed hash of a 4-tuple (reuseport member selection).
    fn flow_hash(&self, tuple: &FourTuple) -> u64 {
        keyed(self.flow_key, tuple)
    }

    /// Every connection (handshakes and TIME-WAIT included): its id,
    /// addresses and state machine. Control path only (consoles).
    pub(crate) fn each_connection(
        &self,
    ) -> impl Iterator<Item = (ConnId, FourTuple, &Connection)> + '_ {
        let generations = &self.generations;
        (self.slots.iter().enumerate()).filter_map(move |(index, slot)| {
            let slot = slot.as_ref()?;
            let id = ConnId {
                index: index as u32,
                generation: *generations.get(index)?,
            };
            Some((id, slot.tuple, &slot.conn))
        })
    }

    /// Every open listener with its queue depths. Control path only.
    pub(crate) fn each_listener(&self) -> impl Iterator<Item = TcpListenerInfo> + '_ {
        let open = self.listeners.iter().filter(|l| l.backlog > 0);
        open.map(|l| TcpListenerInfo {
            local: l.local,
            backlog: l.backlog,
            handshakes: l.pending,
            accept_queued: l.accept.as_ref().map_or(0, |q| q.streams.len()),
        })
    }
}

/// SipHash-2-4 of a 4-tuple under `key` (once per handshake, not per
/// segment).
fn keyed(key: [u64; 2], tuple: &FourTuple) -> u64 {
    use core::hash::{Hash, Hasher};
    #[allow(deprecated)]
    let mut hasher = std::hash::SipHasher::new_with_keys(key[0], key[1]);
    tuple.hash(&mut hasher);
    hasher.finish()
}
