//! Fragments in, datagrams out.

use super::*;
use crate::port::memory::{MemBuf, MemPort, MemPortConfig};
use crate::wire::ipv4::protocol;

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
            r.add(port, &frame, fragment, now)
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
    let outcome = r.add(&mut port, &frame, last, Instant::ZERO);
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

#[test]
fn the_number_of_datagrams_in_reassembly_is_bounded() {
    let data = payload(3000);
    let mut port = port();
    let config = ReassemblyConfig {
        max_datagrams: 2,
        ..ReassemblyConfig::default()
    };
    let mut r = Reassembler::new(config);
    for ident in 0..2 {
        feed(&mut r, &mut port, ident, &data, &[(0, 1480)], Instant::ZERO);
    }
    let outcome = feed(&mut r, &mut port, 9, &data, &[(0, 1480)], Instant::ZERO);
    assert!(matches!(
        outcome[0],
        Reassembly::Dropped(DropReason::Ipv4ReassemblyFull)
    ));
    let finish = feed(&mut r, &mut port, 0, &data, &[(1480, 1520)], Instant::ZERO);
    assert!(
        matches!(finish[0], Reassembly::Complete(_)),
        "older datagrams still complete"
    );
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
