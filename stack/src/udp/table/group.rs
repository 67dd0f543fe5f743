//! SO_REUSEPORT groups of the UDP table: the sockets that share one address
//! (and device, and IPV6_V6ONLY setting), and which member a datagram goes to.
//!
//! A keyed hash of the datagram's 4-tuple picks the member, so a flow stays
//! on one member. A member may be pinned to a pipeline (lcore) with
//! [`super::BindOptions::incoming_lcore`], as Linux's SO_INCOMING_CPU: a
//! datagram that arrives on a pipeline some unconnected members are pinned
//! to goes to one of them (by the hash when there are several), as Linux's
//! `reuseport_select_sock_by_hash` prefers a socket whose incoming CPU is the
//! current one; on any other pipeline the hash picks among all members as
//! without pins (members pinned elsewhere included, as Linux falls back to
//! the first valid socket). Connected members are never picked by hash:
//! they win their own flows by score (see `UdpTable::pick_in_group`).
//!
//! Invariants: `pinned` holds the unconnected pinned members ordered by
//! pipeline (bind order within one), and `by_lcore[k]` is the range of
//! `pinned` that pipeline k's members take; the ranges follow each other in
//! pipeline order and the last is not empty, so `by_lcore` is empty while
//! no unconnected member is pinned and a group without pins pays one
//! length compare per datagram. `connected` counts the connected members.
//! Pins take two flat lists of plain values (no nested or per-pipeline
//! vectors), so a group's drop and clone code stays a few deallocations.

use super::SocketId;

/// One SO_REUSEPORT group. See the module documentation.
#[derive(Debug, Clone, Default)]
pub(super) struct ReuseportGroup {
    members: Vec<SocketId>,
    connected: usize,
    /// The unconnected pinned members, by pipeline.
    pinned: Vec<SocketId>,
    /// By pipeline index: where its members lie in `pinned`.
    by_lcore: Vec<Span>,
}

/// A range of [`ReuseportGroup::pinned`].
#[derive(Debug, Clone, Copy, Default)]
struct Span {
    start: u32,
    len: u32,
}

/// Maps a 32-bit hash onto `0..len` by multiply-shift (no division).
#[inline]
fn scale(hash: u32, len: usize) -> usize {
    ((u64::from(hash) * len as u64) >> 32) as usize
}

impl ReuseportGroup {
    /// Adds an unconnected member, pinned to pipeline `pin` if given.
    pub(super) fn join(&mut self, id: SocketId, pin: Option<u16>) {
        self.members.push(id);
        let Some(lcore) = pin.map(usize::from) else {
            return;
        };
        if self.by_lcore.len() <= lcore {
            let end = Span {
                start: self.pinned.len() as u32,
                len: 0,
            };
            self.by_lcore.resize(lcore + 1, end);
        }
        let span = &mut self.by_lcore[lcore];
        self.pinned.insert((span.start + span.len) as usize, id);
        span.len += 1;
        for later in &mut self.by_lcore[lcore + 1..] {
            later.start += 1;
        }
    }

    /// Member `id` connected: from now on it wins its flow by score and
    /// is no longer picked by hash.
    pub(super) fn member_connected(&mut self, id: SocketId) {
        self.connected += 1;
        self.unpin(id);
    }

    /// Removes member `id` (`connected` if it was).
    pub(super) fn leave(&mut self, id: SocketId, connected: bool) {
        self.members.retain(|&m| m != id);
        if connected {
            self.connected -= 1;
        } else {
            self.unpin(id);
        }
    }

    /// Takes `id` out of `pinned`, if it is there.
    fn unpin(&mut self, id: SocketId) {
        let Some(at) = self.pinned.iter().position(|&m| m == id) else {
            return;
        };
        self.pinned.remove(at);
        let at = at as u32;
        let Some(lcore) =
            (self.by_lcore.iter()).position(|s| s.start <= at && at < s.start + s.len)
        else {
            return;
        };
        self.by_lcore[lcore].len -= 1;
        for later in &mut self.by_lcore[lcore + 1..] {
            later.start -= 1;
        }
        while self.by_lcore.last().is_some_and(|s| s.len == 0) {
            self.by_lcore.pop();
        }
    }

    /// True once the last member left.
    pub(super) fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// True if some member is connected (lookup must then go on scoring).
    #[inline]
    pub(super) fn has_connected(&self) -> bool {
        self.connected != 0
    }

    /// The unconnected members pinned to pipeline `lcore`, if any.
    #[inline]
    fn pinned_on(&self, lcore: u16) -> Option<&[SocketId]> {
        let span = self
            .by_lcore
            .get(usize::from(lcore))
            .filter(|s| s.len != 0)?;
        let start = span.start as usize;
        self.pinned.get(start..start + span.len as usize)
    }

    /// The member for a datagram with flow hash `hash` that arrived on
    /// pipeline `lcore`, in a group without connected members.
    #[inline]
    pub(super) fn select(&self, hash: u32, lcore: u16) -> SocketId {
        if let Some(own) = self.pinned_on(lcore) {
            return own[scale(hash, own.len())];
        }
        self.members[scale(hash, self.members.len())]
    }

    /// An unconnected member for a datagram with flow hash `hash` that
    /// arrived on pipeline `lcore` (`connected` says which members are):
    /// one pinned there if any, else the first unconnected one from where
    /// the hash points.
    pub(super) fn select_unconnected(
        &self,
        hash: u32,
        lcore: u16,
        connected: impl Fn(SocketId) -> bool,
    ) -> Option<SocketId> {
        if let Some(own) = self.pinned_on(lcore) {
            return Some(own[scale(hash, own.len())]);
        }
        let members = &self.members;
        let first = scale(hash, members.len());
        (0..members.len())
            .map(|i| members[(first + i) % members.len()])
            .find(|&m| !connected(m))
    }
}
