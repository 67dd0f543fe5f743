//! The IPv4 and IPv6 reassemblers (stack/src/reassembly.rs), fed fragment
//! sequences decoded from the input against a few keys, with clock steps.
//!
//! Every fragment byte is a function of its key and its offset, and a
//! small model remembers which bytes each datagram in progress has taken.
//! Invariants: a completed datagram is exactly as long as its last
//! fragment says, every byte of it came from a fragment the reassembler
//! accepted for that datagram (none missing, none beyond its end), and its
//! headers name the key, its ECN field follows RFC 3168 5.3 (CE if any
//! fragment was CE, else the first-arrived fragment's; a mix of Not-ECT
//! with ECT or CE is never completed); the table never holds more than its bound; once
//! everything has timed out it is empty and every buffer is back in the
//! pool.

use super::input::Input;
use dpstack_stack::counters::{Counters, DropReason};
use dpstack_stack::port::memory::{MemBuf, MemPort, MemPortConfig};
use dpstack_stack::port::{Buf, Port};
use dpstack_stack::reassembly::{
    Fragment, FragmentKey, Key4, Key6, Reassembler, Reassembly, ReassemblyConfig,
};
use dpstack_stack::time::{Duration, Instant};
use dpstack_stack::wire::ipv4::Ipv4Packet;
use dpstack_stack::wire::ipv6::Ipv6Packet;
use dpstack_stack::wire::Ecn;
use std::collections::HashMap;
use std::net::{Ipv4Addr, Ipv6Addr};

const KEYS: u8 = 6;
const MAX_DATAGRAMS: usize = 4;
const TIMEOUT: Duration = Duration::from_secs(30);
/// Where the fragment's payload starts in its frame (Ethernet + some IP
/// header; the reassembler only reads `payload_start..`).
const PAYLOAD_START: usize = 14 + 20;

/// What the model knows of one key's datagram in progress.
#[derive(Default)]
struct Progress {
    /// The byte ranges of the fragments it took.
    taken: Vec<(usize, usize)>,
    since: Option<Instant>,
    /// The end the last fragment (MF clear) set.
    end: Option<usize>,
    /// The ECN field of the first fragment it took.
    first_ecn: Option<Ecn>,
    /// The ECN codepoints of the fragments it took, one bit each.
    ecn_seen: u8,
}

impl Progress {
    fn took(&mut self, offset: usize, end: usize, more: bool, ecn: Ecn) {
        self.taken.push((offset, end));
        if !more {
            self.end = Some(end);
        }
        self.first_ecn.get_or_insert(ecn);
        self.ecn_seen |= 1 << ecn as u8;
    }

    /// True if its fragments mixed Not-ECT with ECT or CE.
    fn ecn_mixed(&self) -> bool {
        self.ecn_seen & 1 != 0 && self.ecn_seen != 1
    }
}

fn content(key: u8, at: usize) -> u8 {
    (at as u32).wrapping_mul(2_654_435_761).to_be_bytes()[1] ^ key.wrapping_mul(37)
}

/// Each key's bytes from offset 0 to past the largest fragment end,
/// computed once: fragments are filled and datagrams checked by slice
/// copies and compares, not per-byte loops, which coverage
/// instrumentation would otherwise make the bulk of every execution.
fn contents(key: u8) -> &'static [u8] {
    static CONTENTS: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    let all = CONTENTS.get_or_init(|| {
        (0..KEYS)
            .map(|k| (0..CONTENT_LEN).map(|at| content(k, at)).collect())
            .collect()
    });
    &all[usize::from(key)]
}

/// Past any fragment's end: the largest offset of either family plus the
/// largest payload, with the 8 bytes a short frame may claim beyond it.
const CONTENT_LEN: usize = 0x1fff * 8 + 8 + 1500 + 8;

/// One family's side of the harness.
trait Family: FragmentKey {
    fn key(index: u8) -> Self;
    fn max_offset() -> usize;
    /// Checks the completed frame's IP header names the key.
    fn check_header(&self, frame: &[u8], total: usize);
    /// The completed frame's ECN field.
    fn ecn(frame: &[u8]) -> Ecn;
}

impl Family for Key4 {
    fn key(index: u8) -> Key4 {
        Key4 {
            src: Ipv4Addr::new(10, 0, 0, 2 + index % 2),
            dst: Ipv4Addr::new(10, 0, 0, 1),
            protocol: 17,
            ident: u16::from(index / 2),
        }
    }

    fn max_offset() -> usize {
        0x1fff * 8
    }

    fn check_header(&self, frame: &[u8], total: usize) {
        let ip = Ipv4Packet::new_checked(&frame[14..]).expect("reassembled IPv4 header parses");
        assert!(ip.verify_checksum());
        assert_eq!(
            (ip.src(), ip.dst(), ip.ident()),
            (self.src, self.dst, self.ident)
        );
        assert_eq!(usize::from(ip.total_len()), 20 + total);
        assert!(!ip.is_fragment());
    }

    fn ecn(frame: &[u8]) -> Ecn {
        Ecn::from_bits(frame[15])
    }
}

impl Family for Key6 {
    fn key(index: u8) -> Key6 {
        Key6 {
            src: Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2 + u16::from(index % 2)),
            dst: Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1),
            ident: u32::from(index / 2) << 20 | 7,
        }
    }

    fn max_offset() -> usize {
        0xfff8
    }

    fn check_header(&self, frame: &[u8], total: usize) {
        let ip = Ipv6Packet::new_checked(&frame[14..]).expect("reassembled IPv6 header parses");
        assert_eq!((ip.src(), ip.dst()), (self.src, self.dst));
        assert_eq!(usize::from(ip.payload_len()), total);
    }

    fn ecn(frame: &[u8]) -> Ecn {
        Ecn::from_bits(frame[15] >> 4)
    }
}

pub fn ipv4(data: &[u8]) {
    run::<Key4>(data);
}

pub fn ipv6(data: &[u8]) {
    run::<Key6>(data);
}

fn run<K: Family>(data: &[u8]) {
    let mut input = Input::new(data);
    let mut port = MemPort::new(MemPortConfig {
        pool_size: 64,
        ..MemPortConfig::default()
    });
    let mut reassembler: Reassembler<MemBuf, K> = Reassembler::new(ReassemblyConfig {
        max_datagrams: MAX_DATAGRAMS,
        timeout: TIMEOUT,
        ..ReassemblyConfig::default()
    });
    let counters = Counters::default();
    let mut model: HashMap<u8, Progress> = HashMap::new();
    let mut now = Instant::ZERO;
    let mut steps = 0;
    while !input.is_empty() && steps < 256 {
        steps += 1;
        let op = input.u8();
        if op >= 0xf0 {
            // A clock step: up to about 16 s, or past the timeout.
            let ms = if op == 0xff {
                31_000
            } else {
                u64::from(input.u16()) / 4
            };
            now = now + Duration::from_millis(ms);
            reassembler.expire(now);
            model.retain(|_, p| p.since.is_none_or(|t| now < t + TIMEOUT));
            continue;
        }
        let index = op % KEYS;
        let key = K::key(index);
        let more = op & 0x80 != 0;
        let offset = match input.u8() {
            // Mostly small offsets (neighbouring fragments), sometimes any.
            b @ 0..=0xef => usize::from(b) * 8,
            _ => usize::from(input.u16()) * 8 % (K::max_offset() + 8),
        };
        let payload_len = match input.u8() {
            0 => 0,
            b @ 1..=0x7f => usize::from(b) * 8,
            b @ 0x80..=0xef => usize::from(b & 0x7f) + 1,
            _ => usize::from(input.u16()) % 1500,
        };
        let ttl = input.u8();
        // Mostly one codepoint per key, sometimes any: mixes are rare in
        // real traffic but must be refused.
        let ecn = if ttl & 0x20 != 0 {
            Ecn::from_bits(ttl >> 6)
        } else {
            Ecn::from_bits(index)
        };
        let Some(mut frame) = port.alloc() else {
            break;
        };
        let Some(space) = frame.append((PAYLOAD_START + payload_len).min(frame.tailroom())) else {
            break;
        };
        let header_room = space.len().min(PAYLOAD_START);
        space[..header_room].fill(0xee);
        let body = &mut space[header_room..];
        let body_len = body.len();
        body.copy_from_slice(&contents(index)[offset..offset + body_len]);
        // Sometimes the frame is shorter than the fragment claims.
        let payload_len = if op & 0x40 != 0 && input.bool() {
            payload_len + 8
        } else {
            payload_len
        };
        let fragment = Fragment {
            key,
            protocol: 17,
            offset,
            more,
            payload_start: PAYLOAD_START,
            payload_len,
            ttl,
            ecn,
        };
        // The checks before the table is looked at leave it as it was.
        let early = more && payload_len % 8 != 0
            || payload_len == 0
            || offset + payload_len > K::MAX_PAYLOAD;
        match reassembler.add(&mut port, &frame, fragment, now, &counters) {
            Reassembly::Pending => {
                let progress = model.entry(index).or_default();
                progress.since.get_or_insert(now);
                progress.took(offset, offset + payload_len, more, ecn);
            }
            Reassembly::Complete(whole) => {
                let mut progress = model.remove(&index).unwrap_or_default();
                progress.took(offset, offset + payload_len, more, ecn);
                assert!(!progress.ecn_mixed(), "a mix of Not-ECT and ECT completed");
                let expected_ecn = if progress.ecn_seen & 1 << Ecn::Ce as u8 != 0 {
                    Ecn::Ce
                } else {
                    progress.first_ecn.unwrap_or_default()
                };
                assert_eq!(K::ecn(whole.data()), expected_ecn);
                let header_len = K::HEADER_LEN;
                let bytes = whole.data();
                let total = bytes.len() - 14 - header_len;
                assert_eq!(
                    Some(total),
                    progress.end,
                    "the length is not the last fragment's end"
                );
                key.check_header(bytes, total);
                // The ranges taken tile the datagram exactly: no gap, no
                // overlap, nothing beyond its end.
                progress.taken.sort_unstable();
                let mut next = 0;
                for &(start, end) in &progress.taken {
                    assert_eq!(
                        start, next,
                        "ranges taken {:?}, total {total}",
                        progress.taken
                    );
                    next = end;
                }
                assert_eq!(next, total, "ranges taken {:?}", progress.taken);
                let body = &bytes[14 + header_len..];
                if body != &contents(index)[..body.len()] {
                    let at = (0..body.len())
                        .find(|&at| body[at] != content(index, at))
                        .unwrap_or_default();
                    panic!("byte {at} of the datagram differs");
                }
            }
            // An exact duplicate is dropped alone: its datagram goes on.
            Reassembly::Dropped(
                DropReason::Ipv4ReassemblyDuplicate | DropReason::Ipv6ReassemblyDuplicate,
            ) => {}
            Reassembly::Dropped(
                DropReason::Ipv4ReassemblyEcnMix | DropReason::Ipv6ReassemblyEcnMix,
            ) => {
                let mut progress = model.remove(&index).unwrap_or_default();
                progress.took(offset, offset + payload_len, more, ecn);
                assert!(progress.ecn_mixed(), "an ECN mix drop without a mix");
            }
            Reassembly::Dropped(_) => {
                if !early {
                    model.remove(&index);
                }
            }
        }
        // A datagram evicted to make room for another starts afresh.
        model.retain(|&i, _| reassembler.holds(&K::key(i)));
        assert!(reassembler.len() <= MAX_DATAGRAMS);
    }
    reassembler.expire(now + TIMEOUT + Duration::from_secs(1));
    assert!(reassembler.is_empty(), "datagrams left after the timeout");
    drop(reassembler);
    assert_eq!(port.buffers_in_use(), 0, "a buffer leaked");
}
