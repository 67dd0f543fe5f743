//! Selective acknowledgments: the blocks a receiver reports (RFC 2018,
//! with RFC 2883's D-SACK) and the sender's scoreboard of what the peer
//! holds beyond `SND.UNA`, from which RFC 6675's loss recovery picks what
//! to retransmit (`IsLost`, `NextSeg`, `pipe`).
//!
//! Both sides are bounded: the receiver remembers the starts of its
//! [`RECENT`] latest out-of-order segments (to order blocks most recent
//! first), the scoreboard at most [`SCOREBOARD_RANGES`] sacked ranges.
//! A scoreboard that runs out of room forgets its highest range: that data
//! may be sent again needlessly, but nothing unsacked is ever taken for
//! sacked. Per segment, on the owning lcore; no allocation.

use super::seq::Seq;
use crate::wire::tcp::SackBlocks;
use arrayvec::ArrayVec;

/// Out-of-order segments whose blocks are reported first, most recent
/// first (RFC 2018 4: the first block holds the latest segment, the
/// others repeat the latest reported).
pub const RECENT: usize = 4;

/// Most sacked ranges the sender keeps per connection.
pub const SCOREBOARD_RANGES: usize = 16;

/// RFC 6675's DupThresh: three duplicates, or three segments' worth of
/// sacked data above a hole, mark it lost.
pub const DUP_THRESH: u32 = 3;

/// RFC 6675 loss recovery in progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recovery {
    /// `RecoveryPoint`: recovery ends once this is acknowledged.
    pub point: Seq,
    /// `HighRxt`: the end of the highest retransmission so far.
    pub high_rxt: Seq,
    /// PRR (RFC 6937): bytes delivered to the peer since recovery began
    /// (`prr_delivered`), sent since (`prr_out`), in flight when it began
    /// (`RecoverFS`), and what the last ACK allows sending (`sndcnt`).
    pub prr_delivered: u32,
    /// See `prr_delivered`.
    pub prr_out: u32,
    /// See `prr_delivered`.
    pub recover_fs: u32,
    /// See `prr_delivered`.
    pub sndcnt: u32,
}

impl Recovery {
    /// Recovery from `point` down, with `flight` bytes outstanding.
    pub fn new(una: Seq, point: Seq, flight: u32) -> Recovery {
        Recovery {
            point,
            high_rxt: una,
            prr_delivered: 0,
            prr_out: 0,
            recover_fs: flight.max(1),
            sndcnt: 0,
        }
    }

    /// `len` bytes were sent in recovery.
    pub fn sent(&mut self, len: usize) {
        let len = len as u32;
        self.prr_out = self.prr_out.saturating_add(len);
        self.sndcnt = self.sndcnt.saturating_sub(len);
    }

    /// RFC 6937 3 on an ACK that delivered `delivered` bytes, with `pipe`
    /// in flight after it: how much may be sent now. Above `ssthresh`,
    /// in proportion to what was delivered (the window comes down to
    /// `ssthresh` over one round trip, not at once); at or below it,
    /// slow start back up to it, at most one segment beyond what was
    /// delivered (PRR-SSRB).
    pub fn on_ack(&mut self, delivered: u32, pipe: u32, ssthresh: u32, mss: u32) {
        self.prr_delivered = self.prr_delivered.saturating_add(delivered);
        self.sndcnt = if pipe > ssthresh {
            let share = u64::from(self.prr_delivered) * u64::from(ssthresh);
            let allowed = share.div_ceil(u64::from(self.recover_fs));
            (allowed.min(u64::from(u32::MAX)) as u32).saturating_sub(self.prr_out)
        } else {
            let limit = self
                .prr_delivered
                .saturating_sub(self.prr_out)
                .max(delivered)
                .saturating_add(mss);
            (ssthresh - pipe).min(limit)
        };
    }
}

/// Loss-recovery events since the lcore last took them
/// ([`crate::tcp::Connection::take_loss_events`]), each the count of one
/// Linux MIB counter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LossEvents {
    /// Recoveries entered with SACK (`TCPSackRecovery`).
    pub sack_recoveries: u32,
    /// Recoveries entered without it: NewReno (`TCPRenoRecovery`).
    pub reno_recoveries: u32,
    /// Retransmissions in recovery (`TCPFastRetrans`).
    pub fast_retransmits: u32,
    /// Tail loss probes sent (`TCPLossProbes`).
    pub loss_probes: u32,
    /// D-SACKs received: the peer got something twice (`TCPDSACKRecv`).
    pub dsacks_received: u32,
    /// D-SACKs sent for data below `RCV.NXT` (`TCPDSACKOldSent`).
    pub dsacks_old_sent: u32,
    /// D-SACKs sent for out-of-order data held already
    /// (`TCPDSACKOfoSent`).
    pub dsacks_ofo_sent: u32,
    /// Out-of-order segments dropped: they would have needed more ranges
    /// than are kept (`TCPOFODrop`).
    pub ofo_drops: u32,
    /// Segments whose data was dropped because the receive ring had no
    /// storage and the stack's buffer memory was spent (`TCPRcvQDrop`).
    pub rcv_memory_drops: u32,
    /// Retransmissions found lost (RACK) and sent again
    /// (`TCPLostRetransmit`).
    pub lost_retransmits: u32,
    /// Receive-window growths and writes the stack's buffer memory
    /// refused.
    pub memory_limited: u32,
    /// MSS reductions for a suspected MTU black hole.
    pub mtu_black_holes: u32,
    /// Path MTU probes acknowledged (`TCPMTUPSuccess`).
    pub mtu_probe_successes: u32,
    /// Path MTU probes lost (`TCPMTUPFail`).
    pub mtu_probe_failures: u32,
    /// Segments whose data the zero receive window refused, taken for
    /// their ACK (`TCPZeroWindowDrop`).
    pub zero_window_drops: u32,
    /// Data segments that arrived marked CE on connections with ECN
    /// (`TcpInCE`).
    pub ce_received: u32,
    /// Echoes of congestion (ECE) that reduced the congestion window
    /// (`TcpEceReductions`).
    pub ece_reductions: u32,
    /// Congestion windows cut back after an idle spell longer than the
    /// RTO (`TcpCwndRestarts`).
    pub cwnd_restarts: u32,
}

/// The receiver's side: what goes into the SACK blocks of our ACKs.
#[derive(Debug, Clone, Default)]
pub struct SackReceiver {
    /// Starts of the latest out-of-order segments, most recent first.
    recent: ArrayVec<Seq, RECENT>,
    /// A duplicate to report once (RFC 2883), as `[left, right)`.
    pub(crate) dsack: Option<(Seq, Seq)>,
}

impl SackReceiver {
    /// An out-of-order segment starting at `seq` was stored.
    pub fn note(&mut self, seq: Seq) {
        if let Some(at) = self.recent.iter().position(|&s| s == seq) {
            self.recent.remove(at);
        }
        if self.recent.is_full() {
            self.recent.pop();
        }
        self.recent.insert(0, seq);
    }

    /// The blocks for our next ACK: the D-SACK first if one is owed, then
    /// the out-of-order ranges (`ranges`, offsets past `rcv_nxt`) holding
    /// the latest segments, most recent first, then any others; at most
    /// `max` blocks.
    pub fn blocks(&self, rcv_nxt: Seq, ranges: &[(u32, u32)], max: usize) -> SackBlocks {
        let mut blocks = SackBlocks::default();
        let edges = |&(s, e): &(u32, u32)| (rcv_nxt + s, rcv_nxt + e);
        if let Some((left, right)) = self.dsack {
            blocks.push(left.0, right.0);
        }
        let mut used = [false; crate::tcp::buffer::MAX_RANGES];
        let order = self.recent.iter().filter_map(|&seq| {
            ranges.iter().position(|r| {
                let (left, right) = edges(r);
                seq.in_range(left, right)
            })
        });
        // Ranges not among the recent ones follow, highest first (those
        // hold the newest data the recent list no longer names).
        let rest = (0..ranges.len()).rev();
        for index in order.chain(rest) {
            if blocks.len() >= max {
                break;
            }
            if used.get(index).copied().unwrap_or(true) {
                continue;
            }
            used[index] = true;
            let (left, right) = edges(&ranges[index]);
            blocks.push(left.0, right.0);
        }
        blocks
    }

    /// Forgets everything (the connection's buffers are reused).
    pub fn clear(&mut self) {
        *self = SackReceiver::default();
    }
}

/// The sender's record of sacked ranges above `SND.UNA`: sorted, disjoint,
/// never adjacent (those merge).
#[derive(Debug, Clone, Default)]
pub struct Scoreboard {
    ranges: ArrayVec<(Seq, Seq), SCOREBOARD_RANGES>,
}

impl Scoreboard {
    /// Records `[left, right)` as held by the peer.
    pub fn add(&mut self, left: Seq, right: Seq) {
        if left >= right {
            return;
        }
        let (mut left, mut right) = (left, right);
        let mut kept = ArrayVec::<(Seq, Seq), { SCOREBOARD_RANGES + 1 }>::new();
        let mut placed = false;
        for &(s, e) in &self.ranges {
            if e < left {
                kept.push((s, e));
            } else if right < s {
                if !placed {
                    kept.push((left, right));
                    placed = true;
                }
                kept.push((s, e));
            } else {
                left = left.min(s);
                right = right.max(e);
            }
        }
        if !placed {
            kept.push((left, right));
        }
        // Full: the highest range is forgotten (see the module docs).
        self.ranges = kept.into_iter().take(SCOREBOARD_RANGES).collect();
    }

    /// Drops what `una` acknowledged cumulatively.
    pub fn prune(&mut self, una: Seq) {
        self.ranges.retain(|r| r.1 > una);
        if let Some(first) = self.ranges.first_mut() {
            first.0 = first.0.max(una);
        }
    }

    /// Forgets every range.
    pub fn clear(&mut self) {
        self.ranges.clear();
    }

    /// True if nothing is sacked.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The ranges, lowest first.
    pub fn ranges(&self) -> &[(Seq, Seq)] {
        &self.ranges
    }

    /// The end of the sacked range holding `seq`, if one does.
    pub fn sacked_end(&self, seq: Seq) -> Option<Seq> {
        self.ranges
            .iter()
            .find(|&&(s, e)| seq.in_range(s, e))
            .map(|r| r.1)
    }

    /// The start of the first sacked range beyond `seq`.
    pub fn next_sacked(&self, seq: Seq) -> Option<Seq> {
        self.ranges.iter().map(|r| r.0).find(|&s| s > seq)
    }

    /// Bytes in `[from, to)` the peer does not hold.
    pub fn unsacked(&self, from: Seq, to: Seq) -> u32 {
        if from >= to {
            return 0;
        }
        let sacked: u32 = self
            .ranges
            .iter()
            .map(|&(s, e)| {
                let (s, e) = (s.max(from), e.min(to));
                if s < e {
                    e.since(s)
                } else {
                    0
                }
            })
            .sum();
        to.since(from) - sacked
    }

    /// RFC 6675's `IsLost` as one edge: every unsacked byte below it is
    /// lost (DupThresh ranges, or more than DupThresh - 1 segments of
    /// sacked data, above it); `una` if nothing is.
    pub fn lost_edge(&self, una: Seq, mss: u32) -> Seq {
        let mut bytes = 0u32;
        for (count, &(s, e)) in self.ranges.iter().rev().enumerate() {
            bytes = bytes.saturating_add(e.since(s));
            if count as u32 + 1 >= DUP_THRESH || bytes > (DUP_THRESH - 1) * mss {
                return s.max(una);
            }
        }
        una
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scoreboard_merges_prunes_and_stays_bounded() {
        let mut b = Scoreboard::default();
        b.add(Seq(300), Seq(400));
        b.add(Seq(100), Seq(200));
        b.add(Seq(200), Seq(250));
        assert_eq!(b.ranges(), &[(Seq(100), Seq(250)), (Seq(300), Seq(400))]);
        assert_eq!(b.unsacked(Seq(0), Seq(500)), 500 - 250);
        assert_eq!(b.sacked_end(Seq(120)), Some(Seq(250)));
        assert_eq!(b.next_sacked(Seq(250)), Some(Seq(300)));
        b.prune(Seq(150));
        assert_eq!(b.ranges()[0], (Seq(150), Seq(250)));
        for i in 0..40u32 {
            b.add(Seq(1000 + i * 10), Seq(1005 + i * 10));
        }
        assert_eq!(b.ranges().len(), SCOREBOARD_RANGES);
        assert_eq!(b.ranges()[0], (Seq(150), Seq(250)), "the lowest stay");
    }

    #[test]
    fn a_hole_is_lost_under_three_ranges_or_three_segments() {
        let mut b = Scoreboard::default();
        b.add(Seq(2000), Seq(3000));
        assert_eq!(b.lost_edge(Seq(1000), 1000), Seq(1000), "one segment above");
        b.add(Seq(3000), Seq(4000));
        b.add(Seq(4000), Seq(4001));
        // 2001 bytes above 2000: more than two segments.
        assert_eq!(b.lost_edge(Seq(1000), 1000), Seq(2000));
        let mut b = Scoreboard::default();
        for s in [2000, 4000, 6000] {
            b.add(Seq(s), Seq(s + 100));
        }
        assert_eq!(b.lost_edge(Seq(1000), 1000), Seq(2000), "three ranges");
    }

    #[test]
    fn blocks_name_the_latest_segment_first() {
        let mut r = SackReceiver::default();
        let ranges = [(1000, 2000), (3000, 4000), (5000, 6000)];
        r.note(Seq(3000));
        r.note(Seq(1000));
        let blocks = r.blocks(Seq(0), &ranges, 3);
        assert_eq!(
            blocks.as_slice(),
            &[(1000, 2000), (3000, 4000), (5000, 6000)]
        );
        r.dsack = Some((Seq(10), Seq(20)));
        let blocks = r.blocks(Seq(0), &ranges, 3);
        assert_eq!(blocks.as_slice(), &[(10, 20), (1000, 2000), (3000, 4000)]);
    }
}
