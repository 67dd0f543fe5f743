//! The session table of a media relay: sessions of two legs (A and B), each
//! leg an RTP socket and, unless RTP and RTCP share it (rtcp-mux, RFC
//! 5761), an RTCP socket; and the map from a receiving socket to its
//! session, leg and channel.
//!
//! The map is dense: a `Vec` indexed by [`SocketId::index`] (the UDP table
//! hands out small indices and reuses closed ones) of one 8-byte record per
//! socket: the session slot, leg and channel packed in 32 bits, and the
//! other leg's RTP socket (where a relay sends this socket's media on
//! from). A lookup is one bounds check, one load and one more for the
//! session: no hashing per packet. The per-packet lookup
//! ([`SessionTable::lookup_hot`]) reads only the record and the session's
//! state; the slot's bookkeeping (generation, sockets) is read when asked
//! for ([`HotEndpoint`]).
//! Sessions live in a slab of slots reused after removal; a [`SessionId`]
//! carries its slot's generation, so an id of a removed session never
//! reaches the session that took its slot.
//!
//! Layout: each slot's bookkeeping (generation, whether it is in use, the
//! legs' sockets: 32 bytes, two to a cache line) lives in one dense array
//! and the sessions' states in another, so a lookup reads the map record,
//! (for [`SessionTable::lookup_mut`]) the slot's 32 bytes, and then only
//! the lines of the state the caller touches (no `Option` tag hidden
//! somewhere inside the state).
//!
//! Invariants: a socket maps to at most one (session, leg, channel); every
//! socket of a live session maps back to it, with the other leg's RTP
//! socket beside it, and removing the session unmaps them all. Inserting never leaves a half-mapped session behind: a
//! socket already in use refuses the whole insert. Control-path calls
//! ([`SessionTable::insert`], [`SessionTable::remove`]) may allocate; the
//! per-packet ones ([`SessionTable::lookup`], [`SessionTable::lookup_mut`],
//! [`SessionTable::get_mut`]) never do.

use dpstack_stack::udp::SocketId;

/// One side of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Leg {
    /// The first leg (e.g. the caller's).
    A,
    /// The second leg (e.g. the callee's).
    B,
}

impl Leg {
    /// The other leg: where a relay forwards what this one receives.
    pub const fn other(self) -> Leg {
        match self {
            Leg::A => Leg::B,
            Leg::B => Leg::A,
        }
    }

    /// In an array of per-leg state, this leg's entry and the other's.
    #[inline]
    pub fn split<T>(self, per_leg: &mut [T; 2]) -> (&mut T, &mut T) {
        let [a, b] = per_leg;
        match self {
            Leg::A => (a, b),
            Leg::B => (b, a),
        }
    }

    /// 0 for A, 1 for B (for arrays of per-leg state).
    pub const fn index(self) -> usize {
        match self {
            Leg::A => 0,
            Leg::B => 1,
        }
    }
}

/// RTP or RTCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Channel {
    /// The RTP socket (which also carries RTCP under rtcp-mux).
    Rtp,
    /// The separate RTCP socket.
    Rtcp,
}

/// The sockets of one leg.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LegSockets {
    /// The RTP socket (bound to the even port).
    pub rtp: SocketId,
    /// The RTCP socket (the odd port), or `None` for rtcp-mux.
    pub rtcp: Option<SocketId>,
}

impl LegSockets {
    /// The socket that sends on `channel`: the RTCP socket, or the RTP one
    /// for RTP and under rtcp-mux.
    pub fn sender(&self, channel: Channel) -> SocketId {
        match (channel, self.rtcp) {
            (Channel::Rtcp, Some(rtcp)) => rtcp,
            _ => self.rtp,
        }
    }

    /// True if RTCP shares the RTP socket.
    pub fn is_mux(&self) -> bool {
        self.rtcp.is_none()
    }
}

/// A session's handle: its slot and that slot's generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId {
    slot: u32,
    generation: u32,
}

impl SessionId {
    /// The slot (dense, reused after removal; for arrays kept beside the
    /// table).
    pub fn index(self) -> u32 {
        self.slot
    }
}

/// Where a socket belongs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoint {
    /// The session.
    pub session: SessionId,
    /// The leg.
    pub leg: Leg,
    /// The channel.
    pub channel: Channel,
}

/// Why an insert failed (nothing was inserted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableError {
    /// The socket already belongs to a session, or appears twice in the
    /// insert.
    SocketInUse(SocketId),
    /// The socket index is beyond what the map packs (2^26, the UDP
    /// table's limit too).
    SocketOutOfRange(SocketId),
    /// The table holds 2^30 sessions.
    Full,
}

impl core::fmt::Display for TableError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            TableError::SocketInUse(s) => write!(f, "socket {} already has a session", s.index()),
            TableError::SocketOutOfRange(s) => write!(f, "socket index {} too large", s.index()),
            TableError::Full => f.write_str("the session table is full"),
        }
    }
}

impl std::error::Error for TableError {}

/// A map entry with no session.
const UNMAPPED: u32 = u32::MAX;

/// A socket's record in the map.
#[derive(Debug, Clone, Copy)]
struct Mapped {
    /// Slot, leg and channel ([`pack`]), or [`UNMAPPED`].
    entry: u32,
    /// The other leg's RTP socket (meaningless when unmapped).
    forward_from: SocketId,
}
/// Largest socket index the map takes.
const MAX_SOCKETS: u32 = 1 << 26;
/// Sessions the table holds at most (slot numbers use 30 bits).
const MAX_SESSIONS: usize = 1 << 30;

fn pack(slot: u32, leg: Leg, channel: Channel) -> u32 {
    slot << 2 | (leg.index() as u32) << 1 | u32::from(channel == Channel::Rtcp)
}

fn unpack(entry: u32) -> (u32, Leg, Channel) {
    let leg = if entry & 2 == 0 { Leg::A } else { Leg::B };
    let channel = if entry & 1 == 0 {
        Channel::Rtp
    } else {
        Channel::Rtcp
    };
    (entry >> 2, leg, channel)
}

/// A slot's bookkeeping.
#[derive(Debug, Clone, Copy)]
struct Slot {
    generation: u32,
    /// The session's legs' sockets, while it exists.
    legs: Option<[LegSockets; 2]>,
}

/// A looked-up socket: where it belongs, the session's sockets and its
/// state.
#[derive(Debug)]
pub struct Entry<'a, T> {
    /// The session, leg and channel of the socket.
    pub endpoint: Endpoint,
    /// The sockets of both legs (by [`Leg::index`]), in the table (not
    /// copied out per packet).
    pub legs: &'a [LegSockets; 2],
    /// The session's state.
    pub value: &'a mut T,
}

/// A looked-up socket as the per-packet path sees it
/// ([`SessionTable::lookup_hot`]): where it belongs and the session's
/// state, with the slot's bookkeeping left unread until asked for.
#[derive(Debug)]
pub struct Hot<'a, T> {
    /// Where the socket belongs.
    pub at: HotEndpoint<'a>,
    /// The session's state.
    pub value: &'a mut T,
}

/// A socket's leg and channel, the other leg's RTP socket, and (read when
/// asked for) its session's id and sockets. 16 bytes: passed in two
/// registers.
#[derive(Debug, Clone, Copy)]
pub struct HotEndpoint<'a> {
    /// The slot's bookkeeping (not read by the lookup).
    slot: &'a Slot,
    /// Slot, leg and channel ([`pack`]).
    entry: u32,
    /// The other leg's RTP socket: where a relay sends media on from.
    pub forward_from: SocketId,
}

impl<'a> HotEndpoint<'a> {
    /// The leg.
    #[inline]
    pub fn leg(&self) -> Leg {
        unpack(self.entry).1
    }

    /// The channel.
    #[inline]
    pub fn channel(&self) -> Channel {
        unpack(self.entry).2
    }

    /// The session's sockets (by [`Leg::index`]). Reads the slot's line.
    pub fn legs(&self) -> Option<&'a [LegSockets; 2]> {
        self.slot.legs.as_ref()
    }

    /// The session, leg and channel. Reads the slot's line.
    pub fn endpoint(&self) -> Endpoint {
        let (slot, leg, channel) = unpack(self.entry);
        Endpoint {
            session: SessionId {
                slot,
                generation: self.slot.generation,
            },
            leg,
            channel,
        }
    }
}

/// Sessions and the socket map. See the module documentation.
#[derive(Debug, Clone)]
pub struct SessionTable<T> {
    /// By socket index; grown by inserts (within the reserved capacity
    /// without allocating).
    map: Vec<Mapped>,
    slots: Vec<Slot>,
    /// By slot: the state of the session in it (a free slot keeps a
    /// default one until it is reused).
    values: Vec<T>,
    free: Vec<u32>,
    len: usize,
}

impl<T> Default for SessionTable<T> {
    fn default() -> Self {
        SessionTable::new()
    }
}

impl<T> SessionTable<T> {
    /// An empty table.
    pub fn new() -> SessionTable<T> {
        SessionTable {
            map: Vec::new(),
            slots: Vec::new(),
            values: Vec::new(),
            free: Vec::new(),
            len: 0,
        }
    }

    /// An empty table with room for `sessions` sessions and socket indices
    /// below `sockets` (inserts within that allocate nothing).
    pub fn with_capacity(sessions: usize, sockets: usize) -> SessionTable<T> {
        SessionTable {
            map: Vec::with_capacity(sockets.min(MAX_SOCKETS as usize)),
            slots: Vec::with_capacity(sessions),
            values: Vec::with_capacity(sessions),
            free: Vec::new(),
            len: 0,
        }
    }

    /// Makes room for `sessions` more sessions and socket indices below
    /// `sockets` (control path).
    pub fn reserve(&mut self, sessions: usize, sockets: usize) {
        let more = sessions.saturating_sub(self.free.len());
        self.slots.reserve(more);
        self.values.reserve(more);
        let sockets = sockets.min(MAX_SOCKETS as usize);
        self.map.reserve(sockets.saturating_sub(self.map.len()));
    }

    /// Slots in use or free: [`SessionId::index`] is below this.
    pub fn slot_count(&self) -> u32 {
        // At most MAX_SESSIONS (2^30) slots.
        self.slots.len() as u32
    }

    /// The session in `slot`, if there is one: its sockets and state (for
    /// walking the sessions a few at a time, e.g. timers).
    pub fn slot_mut(&mut self, slot: u32) -> Option<([LegSockets; 2], &mut T)> {
        let legs = self.slots.get(slot as usize)?.legs?;
        Some((legs, self.values.get_mut(slot as usize)?))
    }

    /// Sessions in the table.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if there is no session.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn sockets_of(legs: &[LegSockets; 2]) -> impl Iterator<Item = (SocketId, Leg, Channel)> + '_ {
        [Leg::A, Leg::B].into_iter().flat_map(move |leg| {
            let l = legs[leg.index()];
            [(Some(l.rtp), Channel::Rtp), (l.rtcp, Channel::Rtcp)]
                .into_iter()
                .filter_map(move |(s, c)| s.map(|s| (s, leg, c)))
        })
    }

    /// Adds a session with the sockets of legs A and B; every socket must
    /// be new to the table and appear once.
    pub fn insert(&mut self, legs: [LegSockets; 2], value: T) -> Result<SessionId, TableError> {
        for (n, (socket, _, _)) in Self::sockets_of(&legs).enumerate() {
            if socket.index() >= MAX_SOCKETS {
                return Err(TableError::SocketOutOfRange(socket));
            }
            let again = Self::sockets_of(&legs).take(n).any(|(s, _, _)| s == socket);
            if again || self.lookup(socket).is_some() {
                return Err(TableError::SocketInUse(socket));
            }
        }
        let slot = match self.free.pop() {
            Some(slot) => {
                // The slot's previous state goes now.
                if let Some(old) = self.values.get_mut(slot as usize) {
                    *old = value;
                }
                slot
            }
            None if self.slots.len() >= MAX_SESSIONS => return Err(TableError::Full),
            None => {
                self.slots.push(Slot {
                    generation: 0,
                    legs: None,
                });
                self.values.push(value);
                (self.slots.len() - 1) as u32
            }
        };
        for (socket, leg, channel) in Self::sockets_of(&legs) {
            let index = socket.index() as usize;
            let forward_from = legs[leg.other().index()].rtp;
            if self.map.len() <= index {
                let unmapped = Mapped {
                    entry: UNMAPPED,
                    forward_from,
                };
                self.map.resize(index + 1, unmapped);
            }
            self.map[index] = Mapped {
                entry: pack(slot, leg, channel),
                forward_from,
            };
        }
        let entry = &mut self.slots[slot as usize];
        entry.legs = Some(legs);
        self.len += 1;
        Ok(SessionId {
            slot,
            generation: entry.generation,
        })
    }

    /// Removes a session: its sockets are unmapped (closing them is the
    /// caller's business) and its state and sockets handed back (a default
    /// state stays in the slot until it is reused).
    pub fn remove(&mut self, id: SessionId) -> Option<([LegSockets; 2], T)>
    where
        T: Default,
    {
        let slot = self.slots.get_mut(id.slot as usize)?;
        if slot.generation != id.generation {
            return None;
        }
        let legs = slot.legs.take()?;
        slot.generation = slot.generation.wrapping_add(1);
        let value = core::mem::take(self.values.get_mut(id.slot as usize)?);
        for (socket, _, _) in Self::sockets_of(&legs) {
            if let Some(mapped) = self.map.get_mut(socket.index() as usize) {
                mapped.entry = UNMAPPED;
            }
        }
        self.free.push(id.slot);
        self.len -= 1;
        Some((legs, value))
    }

    /// Where `socket` belongs. Per packet (per batch): O(1).
    #[inline]
    pub fn lookup(&self, socket: SocketId) -> Option<Endpoint> {
        let entry = self.map.get(socket.index() as usize)?.entry;
        if entry == UNMAPPED {
            return None;
        }
        let (slot, leg, channel) = unpack(entry);
        let generation = self.slots.get(slot as usize)?.generation;
        Some(Endpoint {
            session: SessionId { slot, generation },
            leg,
            channel,
        })
    }

    /// Where `socket` belongs, with its session's sockets and state. Per
    /// packet (per batch): O(1).
    #[inline]
    pub fn lookup_mut(&mut self, socket: SocketId) -> Option<Entry<'_, T>> {
        let entry = self.map.get(socket.index() as usize)?.entry;
        if entry == UNMAPPED {
            return None;
        }
        let (slot, leg, channel) = unpack(entry);
        let s = self.slots.get(slot as usize)?;
        let generation = s.generation;
        let legs = s.legs.as_ref()?;
        Some(Entry {
            endpoint: Endpoint {
                session: SessionId { slot, generation },
                leg,
                channel,
            },
            legs,
            value: self.values.get_mut(slot as usize)?,
        })
    }

    /// Where `socket` belongs and its session's state, reading only the
    /// socket's map record and the state: the per-packet lookup (the
    /// session's id and sockets are read from [`HotEndpoint`] only when
    /// asked for). O(1).
    #[inline]
    pub fn lookup_hot(&mut self, socket: SocketId) -> Option<Hot<'_, T>> {
        let Mapped {
            entry,
            forward_from,
        } = *self.map.get(socket.index() as usize)?;
        if entry == UNMAPPED {
            return None;
        }
        let slot = unpack(entry).0 as usize;
        let value = self.values.get_mut(slot)?;
        Some(Hot {
            at: HotEndpoint {
                slot: self.slots.get(slot)?,
                entry,
                forward_from,
            },
            value,
        })
    }

    /// A session's state.
    pub fn get(&self, id: SessionId) -> Option<&T> {
        self.legs(id)?;
        self.values.get(id.slot as usize)
    }

    /// A session's state, writable.
    pub fn get_mut(&mut self, id: SessionId) -> Option<&mut T> {
        self.legs(id)?;
        self.values.get_mut(id.slot as usize)
    }

    /// A session's sockets (by [`Leg::index`]).
    pub fn legs(&self, id: SessionId) -> Option<[LegSockets; 2]> {
        let slot = self.slots.get(id.slot as usize)?;
        let legs = slot.legs?;
        (slot.generation == id.generation).then_some(legs)
    }

    /// The sessions, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = (SessionId, &[LegSockets; 2], &T)> + '_ {
        let values = self.values.iter();
        self.slots
            .iter()
            .zip(values)
            .enumerate()
            .filter_map(|(slot, (s, value))| {
                let legs = s.legs.as_ref()?;
                let id = SessionId {
                    slot: slot as u32,
                    generation: s.generation,
                };
                Some((id, legs, value))
            })
    }

    /// The sessions' states, writable, in slot order.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (SessionId, &mut T)> + '_ {
        let values = self.values.iter_mut();
        self.slots
            .iter()
            .zip(values)
            .enumerate()
            .filter_map(|(slot, (s, value))| {
                s.legs?;
                let id = SessionId {
                    slot: slot as u32,
                    generation: s.generation,
                };
                Some((id, value))
            })
    }
}

#[cfg(test)]
mod tests;
