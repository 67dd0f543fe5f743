//! RSS-aware connects: ports whose return traffic the device sends to the
//! connecting lcore's queue come first, in the search's own order; when
//! none is free, any free port is taken and reported as not fitting.

use super::*;
use crate::rss::{RedirectionTable, RssPlacement, MICROSOFT_KEY};

const SERVER: u16 = 443;

fn search(range: (u16, u16), mode: ConnectMode) -> PortSearch {
    PortSearch {
        local_ip: LOCAL,
        remote: remote(SERVER),
        range,
        mode,
    }
}

#[test]
fn rss_placed_connects_all_return_to_the_connecting_queue() {
    for queues in [2, 4] {
        for queue in 0..queues {
            let placement = RssPlacement::new(
                &MICROSOFT_KEY,
                RedirectionTable::round_robin(128, queues),
                queue,
            );
            let returns = placement.towards(LOCAL, remote(SERVER));
            let table: ConnTable<u32> = ConnTable::new(1024, 17, !17);
            let mut ports = HashSet::new();
            for i in 0..1000 {
                let placed = table
                    .connect_placed(
                        search((32768, 60999), ConnectMode::RcuFirst),
                        2 * i,
                        never,
                        free,
                        |port| returns.fits(port),
                    )
                    .expect("a free port");
                assert!(placed.fits, "connect {i} on queue {queue} of {queues}");
                let local = SocketAddr::new(LOCAL, placed.port);
                assert_eq!(placement.return_queue(local, remote(SERVER)), queue);
                assert!(
                    ports.insert(placed.port),
                    "port {} given twice",
                    placed.port
                );
            }
        }
    }
}

#[test]
fn rss_connects_take_any_free_port_once_no_fitting_one_is_left() {
    let range = (40000, 40031);
    let placement = RssPlacement::new(&MICROSOFT_KEY, RedirectionTable::round_robin(128, 4), 3);
    let returns = placement.towards(LOCAL, remote(SERVER));
    let fitting: HashSet<u16> = (range.0..=range.1).filter(|&p| returns.fits(p)).collect();
    assert!(
        !fitting.is_empty() && fitting.len() < 32,
        "a range with some fitting ports: {fitting:?}"
    );
    for mode in [ConnectMode::RcuFirst, ConnectMode::LockFirst] {
        let table: ConnTable<u32> = ConnTable::new(64, 19, !19);
        let connect = || {
            table.connect_placed(search(range, mode), 0, never, free, |port| {
                returns.fits(port)
            })
        };
        let mut placed = HashSet::new();
        for _ in 0..fitting.len() {
            let got = connect().expect("a fitting port");
            assert!(got.fits && fitting.contains(&got.port), "{mode:?}: {got:?}");
            placed.insert(got.port);
        }
        assert_eq!(placed, fitting, "{mode:?}: the fitting ports, each once");
        for _ in fitting.len()..32 {
            let got = connect().expect("a free port, though not a fitting one");
            assert!(
                !got.fits && !fitting.contains(&got.port),
                "{mode:?}: {got:?}"
            );
            assert!(placed.insert(got.port), "{mode:?}: {got:?} given twice");
        }
        assert_eq!(
            connect(),
            Err(ConnectError::AddressNotAvailable),
            "{mode:?}"
        );
    }
}

#[test]
fn preferring_ports_keeps_the_order_of_the_search() {
    // Two tables with the same secrets search in the same order: one
    // preferring even ports must take what the other takes when the odd
    // ones are bound otherwise.
    let prefers: ConnTable<u32> = ConnTable::new(64, 23, !23);
    let excludes: ConnTable<u32> = ConnTable::new(64, 23, !23);
    let range = (5000, 5099);
    for i in 0..50 {
        let placed = prefers
            .connect_placed(search(range, ConnectMode::RcuFirst), 0, never, free, |p| {
                p % 2 == 0
            })
            .expect("an even port");
        let (port, _) = excludes
            .connect(search(range, ConnectMode::RcuFirst), 0, never, |p| {
                p % 2 == 1
            })
            .expect("an even port");
        assert_eq!((placed.port, placed.fits), (port, true), "connect {i}");
    }
}

#[test]
fn a_fitting_time_wait_entry_is_taken_over_before_other_ones() {
    let range = (6000, 6009);
    for wanted in range.0..=range.1 {
        // Every port held by a reusable TIME-WAIT entry (odd values).
        let table: ConnTable<u32> = ConnTable::new(64, 29, !29);
        for port in range.0..=range.1 {
            let key = FourTuple {
                local: SocketAddr::new(LOCAL, port),
                remote: remote(SERVER),
            };
            table.insert(key, 1).expect("free");
        }
        let placed = table
            .connect_placed(
                search(range, ConnectMode::RcuFirst),
                2,
                |v| v % 2 == 1,
                free,
                |p| p == wanted,
            )
            .expect("a TIME-WAIT entry's port");
        assert_eq!(
            placed,
            Placed {
                port: wanted,
                replaced: Some(1),
                fits: true
            }
        );
    }
}
