//! The software Toeplitz against Microsoft's verification vectors, the
//! symmetric key, redirection tables, and the return-queue prediction of
//! [`RssPlacement`] (direction, and the per-port shortcut against the full
//! hash).

use super::*;

/// Microsoft's "Verifying the RSS Hash Calculation" vectors: source,
/// destination, the addresses-only hash and the hash with ports.
const V4: [(&str, &str, u32, u32); 5] = [
    (
        "66.9.149.187:2794",
        "161.142.100.80:1766",
        0x323e8fc2,
        0x51ccc178,
    ),
    (
        "199.92.111.2:14230",
        "65.69.140.83:4739",
        0xd718262a,
        0xc626b0ea,
    ),
    (
        "24.19.198.95:12898",
        "12.22.207.184:38024",
        0xd2d0a5de,
        0x5c2b394a,
    ),
    (
        "38.27.205.30:48228",
        "209.142.163.6:2217",
        0x82989176,
        0xafc7327f,
    ),
    (
        "153.39.163.191:44251",
        "202.188.127.2:1303",
        0x5d1809c5,
        0x10e828a2,
    ),
];
const V6: [(&str, &str, u32, u32); 3] = [
    (
        "[3ffe:2501:200:1fff::7]:2794",
        "[3ffe:2501:200:3::1]:1766",
        0x2cc18cd5,
        0x40207d3d,
    ),
    (
        "[3ffe:501:8::260:97ff:fe40:efab]:14230",
        "[ff02::1]:4739",
        0x0f0c461c,
        0xdde51bbf,
    ),
    (
        "[3ffe:1900:4545:3:200:f8ff:fe21:67cf]:44251",
        "[fe80::200:f8ff:fe21:67cf]:38024",
        0x4b61e985,
        0x02d1feef,
    ),
];

fn check(vectors: &[(&str, &str, u32, u32)]) {
    for &(src, dst, addresses, with_ports) in vectors {
        let src: core::net::SocketAddr = src.parse().expect("vector");
        let dst: core::net::SocketAddr = dst.parse().expect("vector");
        let plain = FlowInput::new(src.ip(), dst.ip(), None);
        assert_eq!(plain.hash(&MICROSOFT_KEY), addresses, "{src} -> {dst}");
        let ports = FlowInput::new(src.ip(), dst.ip(), Some((src.port(), dst.port())));
        assert_eq!(
            ports.hash(&MICROSOFT_KEY),
            with_ports,
            "{src} -> {dst} ports"
        );
    }
}

#[test]
fn microsoft_ipv4_vectors() {
    check(&V4);
}

#[test]
fn microsoft_ipv6_vectors() {
    check(&V6);
}

#[test]
fn the_symmetric_key_hashes_both_directions_alike() {
    for &(src, dst, _, _) in V4.iter().chain(&V6) {
        let src: core::net::SocketAddr = src.parse().expect("vector");
        let dst: core::net::SocketAddr = dst.parse().expect("vector");
        let there = FlowInput::new(src.ip(), dst.ip(), Some((src.port(), dst.port())));
        let back = FlowInput::new(dst.ip(), src.ip(), Some((dst.port(), src.port())));
        assert_eq!(there.hash(&SYMMETRIC_KEY), back.hash(&SYMMETRIC_KEY));
        assert_ne!(
            there.hash(&MICROSOFT_KEY),
            back.hash(&MICROSOFT_KEY),
            "the default key is not symmetric"
        );
    }
}

#[test]
fn the_table_maps_the_low_bits_and_refuses_missing_queues() {
    let reta = RedirectionTable::round_robin(128, 2);
    assert_eq!(reta.queue(0), 0);
    assert_eq!(reta.queue(1), 1);
    assert_eq!(reta.queue(128 + 3), 1);
    assert_eq!(reta.entries().len(), 128);
    assert_eq!(
        RedirectionTable::new(vec![0, 1, 2], 2),
        Err(RetaError::NoSuchQueue {
            index: 2,
            queue: 2,
            queues: 2
        })
    );
    assert_eq!(RedirectionTable::new(vec![], 2), Err(RetaError::Empty));
}

/// A table whose entry i names queue i: the queue is the hash's low 15
/// bits, so a prediction shows the hash it came from.
fn identity_table() -> RedirectionTable {
    RedirectionTable::new((0..1 << 15).collect(), 1 << 15).expect("table")
}

fn socket(text: &str) -> SocketAddr {
    text.parse().expect("vector")
}

#[test]
fn the_return_queue_hashes_the_peer_as_source() {
    let placement = RssPlacement::new(&MICROSOFT_KEY, identity_table(), 0);
    for &(src, dst, _, with_ports) in V4.iter().chain(&V6) {
        let (src, dst) = (socket(src), socket(dst));
        // Our connection from `dst` to `src`: its replies come from `src`
        // to `dst`, the vector's own direction.
        assert_eq!(
            u32::from(placement.return_queue(dst, src)),
            with_ports & 0x7fff,
            "replies {src} -> {dst}"
        );
        // From `src` to `dst`, the replies hash the other way round.
        let back = FlowInput::new(dst.ip(), src.ip(), Some((dst.port(), src.port())));
        assert_eq!(
            u32::from(placement.return_queue(src, dst)),
            back.hash(&MICROSOFT_KEY) & 0x7fff,
            "replies {dst} -> {src}"
        );
        assert_ne!(
            placement.return_queue(src, dst),
            placement.return_queue(dst, src),
            "the two directions differ under the default key"
        );
    }
}

#[test]
fn the_per_port_shortcut_agrees_with_the_full_hash() {
    let tables = [
        identity_table(),
        RedirectionTable::round_robin(128, 4),
        RedirectionTable::round_robin(100, 3),
    ];
    for key in [MICROSOFT_KEY, SYMMETRIC_KEY] {
        for reta in &tables {
            let placement = RssPlacement::new(&key, reta.clone(), 1);
            for &(src, dst, _, _) in V4.iter().chain(&V6) {
                let (local, remote) = (socket(src), socket(dst));
                let returns = placement.towards(local.ip(), remote);
                for port in (0..=u16::MAX).step_by(251).chain([0, 1, 0x8000, u16::MAX]) {
                    let full = placement.return_queue(SocketAddr::new(local.ip(), port), remote);
                    assert_eq!(returns.queue(port), full, "{local} port {port} -> {remote}");
                    assert_eq!(returns.fits(port), full == 1);
                }
            }
        }
    }
}

#[test]
fn ipv4_mapped_addresses_are_hashed_as_ipv4() {
    let placement = RssPlacement::new(&MICROSOFT_KEY, identity_table(), 0);
    let (src, dst, _, with_ports) = V4[0];
    let (src, dst) = (socket(src), socket(dst));
    let mapped = |a: SocketAddr| match a.ip() {
        IpAddr::V4(v4) => SocketAddr::new(IpAddr::V6(v4.to_ipv6_mapped()), a.port()),
        IpAddr::V6(_) => a,
    };
    assert_eq!(
        u32::from(placement.return_queue(mapped(dst), mapped(src))),
        with_ports & 0x7fff
    );
    assert_eq!(
        placement
            .towards(mapped(dst).ip(), mapped(src))
            .queue(dst.port()),
        placement.return_queue(dst, src)
    );
}

#[test]
fn under_the_symmetric_key_replies_return_to_the_queue_of_the_request() {
    let reta = RedirectionTable::round_robin(128, 4);
    let placement = RssPlacement::new(&SYMMETRIC_KEY, reta.clone(), 0);
    for &(src, dst, _, _) in V4.iter().chain(&V6) {
        let (local, remote) = (socket(src), socket(dst));
        let out = FlowInput::new(local.ip(), remote.ip(), Some((local.port(), remote.port())));
        assert_eq!(
            placement.return_queue(local, remote),
            reta.queue(out.hash(&SYMMETRIC_KEY)),
            "{local} -> {remote}"
        );
    }
}

#[test]
fn a_short_key_reads_as_zeros_past_its_end() {
    let reta = RedirectionTable::round_robin(128, 2);
    let short = RssPlacement::new(&MICROSOFT_KEY[..20], reta.clone(), 0);
    let mut padded = MICROSOFT_KEY;
    padded[20..].fill(0);
    let full = RssPlacement::new(&padded, reta, 0);
    assert_eq!(short, full);
}
