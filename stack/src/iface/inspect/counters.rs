//! Counters: every protocol counter and every drop reason at one moment.

use crate::counters::{DropReason, Stat};
use crate::iface::Interface;
use crate::port::Buf;

/// Every counter's value at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterSnapshot {
    /// Protocol counters, in declaration order.
    pub stats: Vec<(Stat, u64)>,
    /// Drops by reason, in declaration order.
    pub drops: Vec<(DropReason, u64)>,
}

impl<B: Buf> Interface<B> {
    /// Every counter, zero or not.
    pub fn counter_snapshot(&self) -> CounterSnapshot {
        let c = &self.core.lcore.counters;
        CounterSnapshot {
            stats: Stat::ALL.iter().map(|&s| (s, c.get(s))).collect(),
            drops: DropReason::ALL.iter().map(|&r| (r, c.dropped(r))).collect(),
        }
    }
}
