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
//! Invariants: `pinned[k]` lists the unconnected members pinned to pipeline
//! k, in bind order; `pinned` has no empty list at its end, so it is empty
//! while no unconnected member is pinned and a group without pins pays one
//! length compare per datagram. `connected` counts the connected members.

use super::SocketId;

/// One SO_REUSEPORT group. See the module documentation.
#[derive(Debug, Clone, Default)]
pub(super) struct ReuseportGroup {
    members: Vec<SocketId>,
    connected: usize,
    /// By pipeline index: its pinned unconnected members.
    pinned: Vec<Vec<SocketId>>,
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
        if let Some(lcore) = pin.map(usize::from) {
            if self.pinned.len() <= lcore {
                self.pinned.resize_with(lcore + 1, Vec::new);
            }
            self.pinned[lcore].push(id);
        }
    }

    /// Member `id` (pinned to `pin`) connected: from now on it wins its
    /// flow by score and is no longer picked by hash.
    pub(super) fn member_connected(&mut self, id: SocketId, pin: Option<u16>) {
        self.connected += 1;
        self.unpin(id, pin);
    }

    /// Removes member `id` (pinned to `pin`; `connected` if it was).
    pub(super) fn leave(&mut self, id: SocketId, pin: Option<u16>, connected: bool) {
        self.members.retain(|&m| m != id);
        if connected {
            self.connected -= 1;
        } else {
            self.unpin(id, pin);
        }
    }

    fn unpin(&mut self, id: SocketId, pin: Option<u16>) {
        let Some(list) = pin.and_then(|lcore| self.pinned.get_mut(usize::from(lcore))) else {
            return;
        };
        list.retain(|&m| m != id);
        while self.pinned.last().is_some_and(Vec::is_empty) {
            self.pinned.pop();
        }
    }

    /// True if some member is connected (lookup must then go on scoring).
    #[inline]
    pub(super) fn has_connected(&self) -> bool {
        self.connected != 0
    }

    /// The unconnected members pinned to pipeline `lcore`, if any.
    #[inline]
    fn pinned_on(&self, lcore: u16) -> Option<&[SocketId]> {
        match self.pinned.get(usize::from(lcore)) {
            Some(own) if !own.is_empty() => Some(own),
            _ => None,
        }
    }

    /// The member for a datagram with flow hash `hash` that arrived on
    /// pipeline `lcore`, in a group without connected members.
    #[inline]
    pub(super) fn select(&self, hash: u32, lcore: u16) -> SocketId {
        let candidates = self.pinned_on(lcore).unwrap_or(&self.members);
        candidates[scale(hash, candidates.len())]
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
