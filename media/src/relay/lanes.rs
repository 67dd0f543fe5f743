//! The relay on several lanes (pipelines, one per lcore, over one stack's
//! shared socket table): [`Relay::into_lanes`] turns a started relay into
//! one relay per lane, each the inline handler of its lane.
//!
//! A flow (5-tuple) stays on one lane, but a session's two legs are two
//! flows and may land on two lanes. So every lane keeps its own copy of
//! every session (the same slots and sockets), and the state is split by
//! who writes it:
//! - what one direction of a session records (the receiving leg's latch
//!   judging, its per-SSRC statistics, sequence tracking, jitter, its
//!   counters and the receiver reports about it) is written only in the
//!   copy of the lane that receives that leg's flow; the other lanes' copies
//!   of that leg stay empty;
//! - what forwarding needs of the other leg (where its peer is: the
//!   latched RTP and RTCP peers, and whether the peer sends RTCP to the RTP
//!   port) changes only when a latch changes. The lane that saw the change
//!   notes the leg ([`LaneLink::note`]) and at its next poll sends a
//!   [`PeerNews`] to every other lane through that lane's bounded
//!   lock-free inbox; each lane takes in its inbox at its poll and adopts
//!   the news into its own copy of the leg ([`LegState::adopt`](super::LegState::adopt)),
//!   which also points the other leg's forward address at the new peer.
//!
//! So the per-packet path reads and writes only the lane's own copy: no
//! lock, no atomic, no line another lane writes. A latch change costs one
//! ticket (an atomic add shared by the lanes) and one message per other
//! lane, at the poll. Until a lane has taken the news in, it forwards to
//! the peer it knew (the signalled one, or none: `no_peer` drops), for at
//! most a poll of the receiving lane.
//!
//! Invariants: news of one leg is ordered by its ticket (taken from one
//! counter for all lanes), and a copy takes only news newer than what it
//! holds, so every copy ends on the newest latch whichever lane learned
//! it. A latch a lane adopted judges packets on that lane too: a foreign
//! source that lands on another lane than the peer's is still foreign. News
//! is never dropped: a leg whose news found a full inbox stays noted and is
//! sent again (with a newer ticket) at the next poll. If a leg's flow moves
//! to another lane (the peer's source port changed and hashes elsewhere),
//! the new lane latches or judges it on its adopted latch and records from
//! then on; the leg's report sums both lanes' figures ([`Snapshot::merge`](super::Snapshot::merge)).
//! With re-latching, when the peer was last heard is known per lane. Lane
//! copies are made before the lanes run; only lane 0's relay starts or
//! stops sessions (it closes the shared sockets), after the lanes stopped.

use super::leg::PeerNews;
use super::Relay;
use crate::{Leg, SessionId};
use crossbeam_channel::{Receiver, Sender, TrySendError};
use dpstack_stack::time::Instant;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// One leg's news from one lane.
#[derive(Debug, Clone, Copy)]
pub struct LegNews {
    /// The session (its slot is the same on every lane).
    pub session: SessionId,
    /// The leg.
    pub leg: Leg,
    /// Its peers.
    pub news: PeerNews,
}

/// A lane's counters of news between lanes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NewsCounters {
    /// News sent to other lanes (one per leg change and lane).
    pub sent: u64,
    /// News from other lanes taken in.
    pub taken: u64,
    /// News older than what the leg held (ignored).
    pub stale: u64,
    /// Sends put off to the next poll by a full inbox.
    pub deferred: u64,
}

/// A lane's link to the others. See the module documentation.
#[derive(Debug)]
pub struct LaneLink {
    /// This lane's number (0 for the relay the lanes were made from).
    lane: usize,
    /// How many lanes.
    lanes: usize,
    /// Tickets ordering every leg's news, shared by the lanes.
    tickets: Arc<AtomicU64>,
    /// The other lanes' inboxes.
    others: Vec<Sender<LegNews>>,
    inbox: Receiver<LegNews>,
    /// Legs whose peers changed on this lane, news not sent yet (room for
    /// every leg reserved: notes allocate nothing in practice).
    pending: Vec<(SessionId, Leg)>,
    counters: NewsCounters,
}

impl LaneLink {
    /// Notes that this lane changed `leg`'s peers (a latch). Called by the
    /// receive path on a latch change only.
    #[inline]
    pub fn note(&mut self, session: SessionId, leg: Leg) {
        if self.pending.last() != Some(&(session, leg)) {
            self.pending.push((session, leg));
        }
    }
}

impl Relay {
    /// This relay as `lanes` relays, one per lane of the stack (this one
    /// becomes lane 0), linked as the module documentation says. Control
    /// path, after the sessions started and before the lanes run. One lane
    /// gives this relay back as it is.
    pub fn into_lanes(mut self, lanes: usize) -> Vec<Relay> {
        if lanes <= 1 {
            return vec![self];
        }
        let legs = 2 * self.table.slot_count() as usize;
        let capacity = (2 * legs).max(64);
        let (senders, inboxes): (Vec<_>, Vec<_>) = (0..lanes)
            .map(|_| crossbeam_channel::bounded(capacity))
            .unzip();
        let tickets = Arc::new(AtomicU64::new(0));
        let mut links = inboxes.into_iter().enumerate().map(|(lane, inbox)| {
            let others = (senders.iter().enumerate())
                .filter(|&(n, _)| n != lane)
                .map(|(_, s)| s.clone())
                .collect();
            LaneLink {
                lane,
                lanes,
                tickets: Arc::clone(&tickets),
                others,
                inbox,
                pending: Vec::with_capacity(legs),
                counters: NewsCounters::default(),
            }
        });
        self.lanes = links.next();
        let mut all = Vec::with_capacity(lanes);
        for link in links {
            let mut table = self.table.clone();
            for (_, session) in table.iter_mut() {
                session.legs = [&session.legs[0], &session.legs[1]].map(|l| l.lane_copy());
            }
            let mut copy = Relay::new(self.options);
            copy.table = table;
            // Each lane draws its own report randomness.
            copy.rng = (self.rng ^ (link.lane as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1;
            copy.lanes = Some(link);
            all.push(copy);
        }
        all.insert(0, self);
        all
    }

    /// This relay's lane and how many lanes there are (`(0, 1)` on one).
    pub fn lane(&self) -> (usize, usize) {
        self.lanes.as_ref().map_or((0, 1), |l| (l.lane, l.lanes))
    }

    /// The news between lanes this lane counted (zero on one lane).
    pub fn news_counters(&self) -> NewsCounters {
        self.lanes
            .as_ref()
            .map_or_else(NewsCounters::default, |l| l.counters)
    }

    /// A lane's poll work with the other lanes: takes in their news, then
    /// sends this lane's. Nothing on one lane; one atomic load each way
    /// when there is no news.
    #[inline]
    pub(crate) fn exchange_news(&mut self, now: Instant) {
        let Some(link) = &mut self.lanes else { return };
        while let Ok(LegNews { session, leg, news }) = link.inbox.try_recv() {
            let Some(state) = self.table.get_mut(session) else {
                continue;
            };
            let (this, other) = leg.split(&mut state.legs);
            if this.adopt(&news, now) {
                link.counters.taken += 1;
                if this.take_dst_change() {
                    other.set_forward(this.dst());
                }
            } else {
                link.counters.stale += 1;
            }
        }
        if link.pending.is_empty() {
            return;
        }
        let mut kept = 0;
        for i in 0..link.pending.len() {
            let (session, leg) = link.pending[i];
            let Some(state) = self.table.get_mut(session) else {
                continue;
            };
            let ticket = link.tickets.fetch_add(1, Ordering::Relaxed) + 1;
            let news = state.legs[leg.index()].news(ticket);
            let message = LegNews { session, leg, news };
            let mut full = false;
            for other in &link.others {
                match other.try_send(message) {
                    Ok(()) => link.counters.sent += 1,
                    Err(TrySendError::Full(_)) => full = true,
                    // That lane stopped: nobody to tell.
                    Err(TrySendError::Disconnected(_)) => {}
                }
            }
            if full {
                link.counters.deferred += 1;
                link.pending[kept] = (session, leg);
                kept += 1;
            }
        }
        link.pending.truncate(kept);
    }
}
