//! Fragments in, datagrams out.

use super::*;
use crate::counters::Counters;
use crate::port::memory::{MemBuf, MemPort, MemPortConfig};
use crate::wire::ipv4::protocol;
use crate::wire::Ecn;

const SRC: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
const DST: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);

fn port() -> MemPort {
    MemPort::new(MemPortConfig::default())
}

/// A frame carrying `payload[offset..offset+len]` of datagram `ident`.
fn fragment_frame(
    port: &mut MemPort,
    ident: u16,
    payload: &[u8],
    offset: usize,
    len: usize,
) -> (MemBuf, Fragment<Key4>) {
    let more = offset + len < payload.len();
    let mut buf = port.alloc().unwrap();
    let frame = buf.append(ETH_LEN + IP_LEN + len).unwrap();
    frame[..ETH_LEN].copy_from_slice(&[2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 8, 0]);
    frame[ETH_LEN + IP_LEN..].copy_from_slice(&payload[offset..offset + len]);
    let fragment = Fragment {
        key: Key4 {
            src: SRC,
            dst: DST,
            protocol: protocol::UDP,
            ident,
        },
        protocol: protocol::UDP,
        offset,
        more,
        payload_start: ETH_LEN + IP_LEN,
        payload_len: len,
        ttl: 64,
        ecn: Ecn::Ect0,
    };
    (buf, fragment)
}

fn payload(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

fn feed(
    r: &mut Reassembler<MemBuf>,
    port: &mut MemPort,
    ident: u16,
    data: &[u8],
    pieces: &[(usize, usize)],
    now: Instant,
) -> Vec<Reassembly<MemBuf>> {
    pieces
        .iter()
        .map(|&(offset, len)| {
            let (frame, fragment) = fragment_frame(port, ident, data, offset, len);
            r.add(port, &frame, fragment, now, &Counters::default())
        })
        .collect()
}

fn complete(outcome: Reassembly<MemBuf>) -> MemBuf {
    match outcome {
        Reassembly::Complete(buf) => buf,
        other => panic!("not complete: {other:?}"),
    }
}

#[test]
fn fragments_in_any_order_make_the_datagram() {
    let data = payload(3000);
    for order in [
        [(0, 1480), (1480, 1480), (2960, 40)],
        [(2960, 40), (0, 1480), (1480, 1480)],
    ] {
        let mut port = port();
        let mut r = Reassembler::new(ReassemblyConfig::default());
        let mut outcomes = feed(&mut r, &mut port, 7, &data, &order, Instant::ZERO);
        let last = outcomes.pop().unwrap();
        assert!(outcomes.iter().all(|o| matches!(o, Reassembly::Pending)));
        let buf = complete(last);
        let ip = Ipv4Packet::new_checked(&buf.data()[ETH_LEN..]).unwrap();
        assert!(ip.verify_checksum() && !ip.is_fragment());
        assert_eq!(
            (ip.src(), ip.dst(), usize::from(ip.total_len())),
            (SRC, DST, 3020)
        );
        assert_eq!(ip.payload(), &data[..]);
        assert!(r.is_empty());
    }
}

#[test]
fn overlapping_fragments_drop_the_datagram() {
    let data = payload(3000);
    let mut port = port();
    let mut r = Reassembler::new(ReassemblyConfig::default());
    let outcomes = feed(
        &mut r,
        &mut port,
        1,
        &data,
        &[(0, 1480), (1472, 1480)],
        Instant::ZERO,
    );
    assert!(matches!(
        outcomes[1],
        Reassembly::Dropped(DropReason::Ipv4ReassemblyOverlap)
    ));
    assert!(r.is_empty());
    drop(outcomes);
    assert_eq!(port.buffers_in_use(), 0, "the reassembly buffer was freed");
}

/// Found by fuzzing (fuzz/regressions/reassembly_ipv4): a last fragment
/// that ends before data already received must not complete a datagram
/// that silently loses that data; the datagram is inconsistent and dropped
/// as overlapping (Linux discards it too).
#[test]
fn a_last_fragment_ending_before_received_data_drops_the_datagram() {
    let data = payload(2000);
    let mut port = port();
    let mut r = Reassembler::new(ReassemblyConfig::default());
    let beyond = feed(&mut r, &mut port, 1, &data, &[(1480, 8)], Instant::ZERO);
    assert!(matches!(beyond[0], Reassembly::Pending));
    let (frame, last) = fragment_frame(&mut port, 1, &data[..1000], 0, 1000);
    assert!(!last.more);
    let outcome = r.add(&mut port, &frame, last, Instant::ZERO, &Counters::default());
    assert!(
        matches!(
            outcome,
            Reassembly::Dropped(DropReason::Ipv4ReassemblyOverlap)
        ),
        "{outcome:?}"
    );
    assert!(r.is_empty());
    drop((beyond, frame, outcome));
    assert_eq!(port.buffers_in_use(), 0, "the reassembly buffer was freed");
}

#[test]
fn incomplete_datagrams_time_out() {
    let data = payload(3000);
    let mut port = port();
    let mut r = Reassembler::new(ReassemblyConfig::default());
    feed(&mut r, &mut port, 1, &data, &[(0, 1480)], Instant::ZERO);
    assert_eq!(r.expire(Instant::from_nanos(29_000_000_000)), 0);
    assert_eq!(r.expire(Instant::from_nanos(30_000_000_000)), 1);
    assert_eq!(port.buffers_in_use(), 0);
}

/// Adds `data[offset..offset+len]` of datagram `ident` from `src`.
fn add_from(
    r: &mut Reassembler<MemBuf>,
    port: &mut MemPort,
    (src, ident): (Ipv4Addr, u16),
    data: &[u8],
    (offset, len): (usize, usize),
    counters: &Counters,
) -> Reassembly<MemBuf> {
    let (frame, mut fragment) = fragment_frame(port, ident, data, offset, len);
    fragment.key.src = src;
    r.add(port, &frame, fragment, Instant::ZERO, counters)
}

#[test]
fn a_full_table_evicts_the_oldest_datagram_of_the_source_holding_the_most() {
    let data = payload(3000);
    let mut port = port();
    let config = ReassemblyConfig {
        max_datagrams: 3,
        ..ReassemblyConfig::default()
    };
    let mut r = Reassembler::new(config);
    let counters = Counters::default();
    let (a, b) = (Ipv4Addr::new(192, 0, 2, 1), Ipv4Addr::new(192, 0, 2, 2));
    for datagram in [(a, 1), (b, 2), (a, 3)] {
        add_from(&mut r, &mut port, datagram, &data, (0, 1480), &counters);
    }
    // Full: a holds the most, and its oldest (1) goes.
    let fourth = add_from(&mut r, &mut port, (b, 4), &data, (0, 1480), &counters);
    assert!(matches!(fourth, Reassembly::Pending));
    assert_eq!(counters.dropped(DropReason::Ipv4ReassemblyEvictedMemory), 1);
    assert_eq!(r.len(), 3);
    assert_eq!(r.bytes(), 3 * (65535 - 128 + BOOKKEEPING));
    for datagram in [(b, 2), (a, 3), (b, 4)] {
        let last = add_from(&mut r, &mut port, datagram, &data, (1480, 1520), &counters);
        assert!(matches!(last, Reassembly::Complete(_)), "{datagram:?}");
    }
    let evicted = add_from(&mut r, &mut port, (a, 1), &data, (1480, 1520), &counters);
    assert!(matches!(evicted, Reassembly::Pending), "starts afresh");
}

#[test]
fn a_source_over_its_share_evicts_its_own_oldest_datagram() {
    let data = payload(3000);
    let mut port = port();
    let charge = 65535 - 128 + BOOKKEEPING;
    let config = ReassemblyConfig {
        max_source_bytes: 2 * charge,
        ..ReassemblyConfig::default()
    };
    let mut r = Reassembler::new(config);
    let counters = Counters::default();
    for ident in 0..5 {
        let (frame, fragment) = fragment_frame(&mut port, ident, &data, 0, 1480);
        r.add(&mut port, &frame, fragment, Instant::ZERO, &counters);
    }
    assert_eq!(counters.dropped(DropReason::Ipv4ReassemblyEvictedShare), 3);
    assert_eq!((r.len(), r.bytes()), (2, 2 * charge));
    // The newest two are the ones left.
    let outcomes = feed(&mut r, &mut port, 4, &data, &[(1480, 1520)], Instant::ZERO);
    assert!(matches!(outcomes[0], Reassembly::Complete(_)));
    drop(outcomes);
    // Expiry and completion leave nothing charged.
    assert_eq!(r.expire(Instant::from_nanos(30_000_000_000)), 1);
    assert_eq!((r.len(), r.bytes()), (0, 0));
    assert_eq!(port.buffers_in_use(), 0);
}

#[test]
fn without_a_large_buffer_the_heaviest_source_gives_one_back() {
    let data = payload(3000);
    let mut port = MemPort::new(MemPortConfig {
        pool_size: 3,
        ..MemPortConfig::default()
    });
    let mut r = Reassembler::new(ReassemblyConfig::default());
    let counters = Counters::default();
    for ident in 0..3 {
        let (frame, fragment) = fragment_frame(&mut port, ident, &data, 0, 1480);
        r.add(&mut port, &frame, fragment, Instant::ZERO, &counters);
    }
    // Two buffers in reassembly and the frame: the pool is empty.
    assert_eq!(counters.dropped(DropReason::Ipv4ReassemblyEvictedMemory), 1);
    assert_eq!(r.len(), 2);
}

#[test]
fn malformed_and_oversized_fragments_are_refused() {
    let data = payload(70_000);
    let mut port = port();
    let mut r = Reassembler::new(ReassemblyConfig::default());
    let odd = feed(&mut r, &mut port, 1, &data, &[(0, 1001)], Instant::ZERO);
    assert!(matches!(
        odd[0],
        Reassembly::Dropped(DropReason::Ipv4FragmentMalformed)
    ));
    let beyond = feed(
        &mut r,
        &mut port,
        2,
        &data,
        &[(65_000, 1000)],
        Instant::ZERO,
    );
    assert!(matches!(
        beyond[0],
        Reassembly::Dropped(DropReason::Ipv4ReassemblyTooBig)
    ));
}

#[test]
fn an_exact_duplicate_is_dropped_alone() {
    let data = payload(3000);
    let mut port = port();
    let mut r = Reassembler::new(ReassemblyConfig::default());
    let pieces = [(0, 1480), (0, 1480), (1480, 1520)];
    let mut outcomes = feed(&mut r, &mut port, 3, &data, &pieces[..2], Instant::ZERO);
    assert!(matches!(
        outcomes[1],
        Reassembly::Dropped(DropReason::Ipv4ReassemblyDuplicate)
    ));
    // A part of the first fragment again is a duplicate too.
    outcomes = feed(&mut r, &mut port, 3, &data, &[(8, 16)], Instant::ZERO);
    assert!(matches!(
        outcomes[0],
        Reassembly::Dropped(DropReason::Ipv4ReassemblyDuplicate)
    ));
    outcomes = feed(&mut r, &mut port, 3, &data, &pieces[2..], Instant::ZERO);
    let ip_payload = |b: &MemBuf| {
        Ipv4Packet::new_checked(&b.data()[ETH_LEN..])
            .unwrap()
            .payload()
            .to_vec()
    };
    assert_eq!(ip_payload(&complete(outcomes.remove(0))), data);
    assert!(r.is_empty());
}

#[test]
fn the_same_extent_with_other_bytes_or_another_end_is_an_overlap() {
    let data = payload(3000);
    let mut port = port();
    let mut r = Reassembler::new(ReassemblyConfig::default());
    feed(&mut r, &mut port, 4, &data, &[(0, 1480)], Instant::ZERO);
    let (mut frame, fragment) = fragment_frame(&mut port, 4, &data, 0, 1480);
    frame.data_mut()[ETH_LEN + IP_LEN + 100] ^= 1;
    assert!(matches!(
        r.add(
            &mut port,
            &frame,
            fragment,
            Instant::ZERO,
            &Counters::default()
        ),
        Reassembly::Dropped(DropReason::Ipv4ReassemblyOverlap)
    ));
    // The first fragment's bytes again, claiming to be the last.
    let mut r = Reassembler::new(ReassemblyConfig::default());
    feed(&mut r, &mut port, 5, &data, &[(0, 1480)], Instant::ZERO);
    let (frame, mut fragment) = fragment_frame(&mut port, 5, &data, 0, 1480);
    fragment.more = false;
    assert!(matches!(
        r.add(
            &mut port,
            &frame,
            fragment,
            Instant::ZERO,
            &Counters::default()
        ),
        Reassembly::Dropped(DropReason::Ipv4ReassemblyOverlap)
    ));
}

#[test]
fn a_fragment_too_big_for_a_large_buffer_evicts_nothing_for_its_place() {
    // Found by the ingress fuzz target: a fragment that fits 64 KiB but not
    // a large buffer evicted another datagram, then was refused itself.
    let data = payload(66_000);
    let mut port = port();
    let config = ReassemblyConfig {
        max_datagrams: 1,
        ..ReassemblyConfig::default()
    };
    let mut r = Reassembler::new(config);
    let counters = Counters::default();
    let a = Ipv4Addr::new(192, 0, 2, 1);
    add_from(&mut r, &mut port, (a, 1), &data, (0, 1480), &counters);
    // Ends at 65,480 (under IPv4's 65,515), past this port's large buffer.
    let late = add_from(&mut r, &mut port, (a, 2), &data, (64_000, 1480), &counters);
    assert!(
        matches!(late, Reassembly::Dropped(DropReason::Ipv4ReassemblyTooBig)),
        "{late:?}"
    );
    assert_eq!(counters.dropped(DropReason::Ipv4ReassemblyEvictedMemory), 0);
    assert_eq!(r.len(), 1, "the datagram in progress is kept");
}

#[test]
fn the_block_map_counts_and_sets_ranges_across_words() {
    let mut map = BlockMap::new();
    map.set(60..130);
    map.set(BLOCKS - 1..BLOCKS);
    let bit = |b: usize| (map.0[b / 64] >> (b % 64)) & 1 == 1;
    let naive = |range: std::ops::Range<usize>| range.filter(|&b| bit(b)).count();
    for (start, end) in [
        (0, 0),
        (0, 60),
        (0, 61),
        (59, 61),
        (64, 128),
        (100, 200),
        (129, 131),
        (0, BLOCKS),
        (BLOCKS - 64, BLOCKS),
        (BLOCKS, BLOCKS),
    ] {
        assert_eq!(
            map.arrived_in(start..end),
            naive(start..end),
            "{start}..{end}"
        );
    }
    assert_eq!(map.arrived_in(0..BLOCKS), 71);
    assert_eq!(map.arrived_in(60..130), 70);
}

#[test]
fn a_ce_mark_on_any_fragment_marks_the_datagram() {
    // RFC 3168 5.3: the congestion a router marked on one fragment is
    // not lost in reassembly (a CE-marked TCP segment's echo depends on it).
    let data = payload(3000);
    for (marked, expected) in [(None, Ecn::Ect0), (Some(1), Ecn::Ce), (Some(0), Ecn::Ce)] {
        let mut port = port();
        let mut r = Reassembler::new(ReassemblyConfig::default());
        let pieces = [(0, 1480), (1480, 1480), (2960, 40)];
        let mut last = None;
        for (i, &(offset, len)) in pieces.iter().enumerate() {
            let (frame, mut fragment) = fragment_frame(&mut port, 9, &data, offset, len);
            if marked == Some(i) {
                fragment.ecn = Ecn::Ce;
            }
            last = Some(r.add(
                &mut port,
                &frame,
                fragment,
                Instant::ZERO,
                &Counters::default(),
            ));
        }
        let buf = complete(last.unwrap());
        let ip = Ipv4Packet::new_checked(&buf.data()[ETH_LEN..]).unwrap();
        assert!(ip.verify_checksum());
        assert_eq!(
            Ecn::from_bits(ip.tos()),
            expected,
            "fragment {marked:?} marked"
        );
    }
}

#[test]
fn fragments_mixing_not_ect_with_ect_or_ce_are_dropped_whole() {
    // RFC 3168 5.3: a datagram whose fragments disagree on ECN capability
    // is invalid; ECT(0) mixed with ECT(1) is not.
    let data = payload(3000);
    let pieces = [(0, 1480), (1480, 1480), (2960, 40)];
    for (odd, outcome) in [
        (Ecn::NotEct, None),
        (Ecn::Ce, Some(Ecn::Ce)),
        (Ecn::Ect1, Some(Ecn::Ect0)),
    ] {
        for first_is_odd in [false, true] {
            let mut port = port();
            let mut r = Reassembler::new(ReassemblyConfig::default());
            let mut last = None;
            for (i, &(offset, len)) in pieces.iter().enumerate() {
                let (frame, mut fragment) = fragment_frame(&mut port, 9, &data, offset, len);
                // ECT(0) elsewhere; the odd one out is the middle fragment, or
                // the others are odd and the middle one is ECT(0).
                if (i == 1) != first_is_odd {
                    fragment.ecn = odd;
                }
                last = Some(r.add(
                    &mut port,
                    &frame,
                    fragment,
                    Instant::ZERO,
                    &Counters::default(),
                ));
            }
            let last = last.unwrap();
            match outcome {
                None => assert!(
                    matches!(last, Reassembly::Dropped(DropReason::Ipv4ReassemblyEcnMix)),
                    "{odd:?} mixed in, first {first_is_odd}"
                ),
                Some(ecn) => {
                    let buf = complete(last);
                    let ip = Ipv4Packet::new_checked(&buf.data()[ETH_LEN..]).unwrap();
                    let expected = if first_is_odd && odd == Ecn::Ect1 {
                        Ecn::Ect1
                    } else {
                        ecn
                    };
                    assert_eq!(Ecn::from_bits(ip.tos()), expected, "{odd:?} mixed in");
                }
            }
            assert!(r.is_empty());
            assert_eq!(r.bytes(), 0);
        }
    }
}
