//! The packets a [`FaultPort`](super::FaultPort) holds for one direction.
//!
//! Three queues, each oldest first: the *backlog* (ready packets the caller
//! had no room for on receive, or the device refused on transmit: they go
//! out before anything else), the *delayed* packets (with one fixed delay,
//! their due times only grow) and the *reordered* packets (waiting for a
//! later packet to pass them).
//!
//! Invariants: together the queues hold at most [`MAX_HELD`] packets; a
//! packet that would exceed that is handed back to the caller, which drops
//! and counts it. The queues a direction can use reserve their capacity up
//! front, so holding never allocates. Owning lcore only.

use std::collections::VecDeque;
use std::time::Instant;

/// Packets held per direction at most.
pub const MAX_HELD: usize = 4096;

/// One direction's held packets. See the module documentation.
pub(super) struct Held<B> {
    backlog: VecDeque<B>,
    delayed: VecDeque<(Instant, B)>,
    reordered: VecDeque<B>,
    /// Polls in a row that let no packet pass while some were reordered.
    pub(super) idle_polls: u32,
}

impl<B> Held<B> {
    /// Empty queues; `reserve` the room a direction with faults needs
    /// (`delay` and `reorder`: whether those queues are used at all).
    pub(super) fn new(reserve: bool, delay: bool, reorder: bool) -> Held<B> {
        let room = |used: bool| if reserve && used { MAX_HELD } else { 0 };
        Held {
            backlog: VecDeque::with_capacity(room(true)),
            delayed: VecDeque::with_capacity(room(delay)),
            reordered: VecDeque::with_capacity(room(reorder)),
            idle_polls: 0,
        }
    }

    /// Packets held in all three queues.
    pub(super) fn len(&self) -> usize {
        self.backlog.len() + self.delayed.len() + self.reordered.len()
    }

    /// True if nothing is held.
    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Packets waiting for a later one to pass them.
    pub(super) fn reordered(&self) -> usize {
        self.reordered.len()
    }

    /// Queues a ready packet behind the backlog; `Err` hands it back if
    /// the bound is reached.
    pub(super) fn push_backlog(&mut self, buf: B) -> Result<(), B> {
        self.check_room(buf).map(|buf| self.backlog.push_back(buf))
    }

    /// Puts a packet back at the front of the backlog (the device refused
    /// it); `Err` hands it back if the bound is reached.
    pub(super) fn unpop_backlog(&mut self, buf: B) -> Result<(), B> {
        self.check_room(buf).map(|buf| self.backlog.push_front(buf))
    }

    /// Holds a packet until `due`; `Err` hands it back if the bound is
    /// reached.
    pub(super) fn push_delayed(&mut self, due: Instant, buf: B) -> Result<(), B> {
        self.check_room(buf)
            .map(|buf| self.delayed.push_back((due, buf)))
    }

    /// Holds a packet until later ones pass it; `Err` hands it back if the
    /// bound is reached.
    pub(super) fn push_reordered(&mut self, buf: B) -> Result<(), B> {
        self.check_room(buf)
            .map(|buf| self.reordered.push_back(buf))
    }

    /// The oldest packet of the backlog.
    pub(super) fn pop_backlog(&mut self) -> Option<B> {
        self.backlog.pop_front()
    }

    /// The oldest delayed packet, if it is due by `now`.
    pub(super) fn pop_due(&mut self, now: Instant) -> Option<B> {
        match self.delayed.front() {
            Some((due, _)) if *due <= now => self.delayed.pop_front().map(|(_, buf)| buf),
            _ => None,
        }
    }

    /// The oldest reordered packet.
    pub(super) fn pop_reordered(&mut self) -> Option<B> {
        self.reordered.pop_front()
    }

    fn check_room(&self, buf: B) -> Result<B, B> {
        if self.len() < MAX_HELD {
            Ok(buf)
        } else {
            Err(buf)
        }
    }
}
