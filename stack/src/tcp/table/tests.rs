//! The connection table: lookups, inserts and removes; connect's port
//! search (range, perturbation, exhaustion, TIME-WAIT reuse); and many
//! threads connecting at once into a narrow range while readers look up.
//! [`rss`]: connects that prefer ports whose replies reach one queue.

use super::*;
use core::net::{IpAddr, Ipv4Addr};
use std::collections::HashSet;
use std::sync::atomic::AtomicBool;

mod rss;

const LOCAL: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));

fn remote(port: u16) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)), port)
}

fn tuple(local_port: u16, remote_port: u16) -> FourTuple {
    FourTuple {
        local: SocketAddr::new(LOCAL, local_port),
        remote: remote(remote_port),
    }
}

#[test]
fn inserts_lookups_and_removes() {
    let table: ConnTable<u32> = ConnTable::new(16, 7, !7);
    assert_eq!(table.insert(tuple(1000, 80), 1), Ok(()));
    assert_eq!(table.insert(tuple(1000, 80), 2), Err(1), "already there");
    assert_eq!(table.insert(tuple(1001, 80), 3), Ok(()));
    assert_eq!(table.lookup(&tuple(1000, 80)), Some(1));
    assert_eq!(table.lookup(&tuple(1000, 81)), None);
    assert_eq!(table.remove(&tuple(1000, 80)), Some(1));
    assert_eq!(table.remove(&tuple(1000, 80)), None);
    assert_eq!(table.len(), 1);
    assert_eq!(table.entries(), [(tuple(1001, 80), 3)]);
}

fn never(_: &u32) -> bool {
    false
}

fn free(_: u16) -> bool {
    false
}

#[test]
fn connect_uses_the_whole_range_then_reports_exhaustion() {
    let table: ConnTable<u32> = ConnTable::new(64, 11, !11);
    let mut ports = HashSet::new();
    for i in 0..100 {
        let port = table
            .connect(
                PortSearch {
                    local_ip: LOCAL,
                    remote: remote(80),
                    range: (5000, 5099),
                    mode: ConnectMode::RcuFirst,
                },
                i,
                never,
                free,
            )
            .unwrap()
            .0;
        assert!((5000..=5099).contains(&port));
        assert!(ports.insert(port), "port {port} given twice");
    }
    assert_eq!(
        table.connect(
            PortSearch {
                local_ip: LOCAL,
                remote: remote(80),
                range: (5000, 5099),
                mode: ConnectMode::RcuFirst
            },
            0,
            never,
            free
        ),
        Err(ConnectError::AddressNotAvailable)
    );
    // Another destination has the whole range again.
    assert!(table
        .connect(
            PortSearch {
                local_ip: LOCAL,
                remote: remote(81),
                range: (5000, 5099),
                mode: ConnectMode::LockFirst
            },
            0,
            never,
            free
        )
        .is_ok());
    // A freed port is found again; a port bound otherwise is skipped.
    table.remove(&tuple(5042, 80));
    assert_eq!(
        table.connect(
            PortSearch {
                local_ip: LOCAL,
                remote: remote(80),
                range: (5000, 5099),
                mode: ConnectMode::LockFirst
            },
            0,
            never,
            free
        ),
        Ok((5042, None))
    );
    table.remove(&tuple(5043, 80));
    assert_eq!(
        table.connect(
            PortSearch {
                local_ip: LOCAL,
                remote: remote(80),
                range: (5000, 5099),
                mode: ConnectMode::RcuFirst
            },
            0,
            never,
            |p| p == 5043
        ),
        Err(ConnectError::AddressNotAvailable)
    );
}

#[test]
fn consecutive_connects_to_one_destination_do_not_restart_from_the_same_port() {
    let table: ConnTable<u32> = ConnTable::new(64, 13, !13);
    let first = table
        .connect(
            PortSearch {
                local_ip: LOCAL,
                remote: remote(80),
                range: (1024, 65535),
                mode: ConnectMode::RcuFirst,
            },
            0,
            never,
            free,
        )
        .unwrap()
        .0;
    table.remove(&tuple(first, 80));
    let second = table
        .connect(
            PortSearch {
                local_ip: LOCAL,
                remote: remote(80),
                range: (1024, 65535),
                mode: ConnectMode::RcuFirst,
            },
            0,
            never,
            free,
        )
        .unwrap()
        .0;
    assert_ne!(first, second, "the perturbation table moved the start");
}

#[test]
fn a_reusable_time_wait_entry_is_taken_over() {
    // Values: 1 = TIME-WAIT that may be reused, 2 = established.
    let table: ConnTable<u32> = ConnTable::new(64, 17, !17);
    for port in 7000..7010 {
        table
            .insert(tuple(port, 80), if port == 7004 { 1 } else { 2 })
            .unwrap();
    }
    let port = table
        .connect(
            PortSearch {
                local_ip: LOCAL,
                remote: remote(80),
                range: (7000, 7009),
                mode: ConnectMode::RcuFirst,
            },
            3,
            |&v| v == 1,
            free,
        )
        .unwrap();
    assert_eq!(port, (7004, Some(1)), "the TIME-WAIT entry is handed back");
    assert_eq!(table.lookup(&tuple(7004, 80)), Some(3));
    assert_eq!(table.len(), 10);
    // Its old owner letting go does not remove the new entry.
    assert!(!table.remove_if(&tuple(7004, 80), 1));
    assert_eq!(table.lookup(&tuple(7004, 80)), Some(3));
    assert!(table.remove_if(&tuple(7004, 80), 3));
}

#[test]
fn threads_connecting_at_once_never_share_a_four_tuple() {
    for mode in [ConnectMode::RcuFirst, ConnectMode::LockFirst] {
        let table: Arc<ConnTable<u32>> = Arc::new(ConnTable::new(256, 19, !19));
        let stop = Arc::new(AtomicBool::new(false));
        // A reader looking up all the while (as the lcore does per packet).
        let reader = {
            let (table, stop) = (Arc::clone(&table), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut seen = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    for port in 20000..20200 {
                        seen += u64::from(table.lookup(&tuple(port, 443)).is_some());
                    }
                }
                seen
            })
        };
        let workers: Vec<_> = (0..8u32)
            .map(|t| {
                let table = Arc::clone(&table);
                std::thread::spawn(move || {
                    let mut got = Vec::new();
                    let mut refused = 0;
                    for i in 0..40 {
                        match table.connect(
                            PortSearch {
                                local_ip: LOCAL,
                                remote: remote(443),
                                range: (20000, 20199),
                                mode,
                            },
                            t * 1000 + i,
                            never,
                            free,
                        ) {
                            Ok((port, _)) => got.push(port),
                            Err(ConnectError::AddressNotAvailable) => refused += 1,
                        }
                    }
                    (got, refused)
                })
            })
            .collect();
        let mut ports = HashSet::new();
        let mut refused = 0;
        for worker in workers {
            let (got, r) = worker.join().unwrap();
            refused += r;
            for port in got {
                assert!(ports.insert(port), "{mode:?}: port {port} given twice");
            }
        }
        stop.store(true, Ordering::Relaxed);
        reader.join().unwrap();
        assert_eq!(ports.len(), 200, "{mode:?}: the whole range, once each");
        assert_eq!(refused, 8 * 40 - 200, "{mode:?}: the rest refused cleanly");
        assert_eq!(table.len(), 200);
    }
}

#[test]
fn a_bucket_longer_than_its_summary_still_answers_exactly() {
    // One bucket: every entry shares it.
    let table: ConnTable<u32> = ConnTable::new(1, 23, !23);
    for port in 0..10 {
        table
            .insert(tuple(3000 + port, 80), u32::from(port) * 2)
            .unwrap();
    }
    for port in 0..10 {
        assert_eq!(
            table.lookup(&tuple(3000 + port, 80)),
            Some(u32::from(port) * 2)
        );
    }
    assert_eq!(table.lookup(&tuple(2999, 80)), None);
    for port in 0..7 {
        table.remove(&tuple(3000 + port, 80));
    }
    for port in 0..10 {
        let expected = (port >= 7).then_some(u32::from(port) * 2);
        assert_eq!(
            table.lookup(&tuple(3000 + port, 80)),
            expected,
            "port {port}"
        );
    }
    // Short again: the summary alone answers for absent keys.
    let bucket = &table.buckets[0];
    assert!(!bucket.overflow.load(Ordering::Relaxed));
    assert_eq!(
        bucket
            .summary
            .iter()
            .filter(|s| s.load(Ordering::Relaxed) != 0)
            .count(),
        3
    );
    // An entry entering TIME-WAIT is marked in place.
    assert!(table.update(&tuple(3008, 80), 17));
    assert_eq!(table.lookup(&tuple(3008, 80)), Some(17));
    assert_eq!(
        bucket
            .summary
            .iter()
            .filter(|s| s.load(Ordering::Relaxed) & 1 == 1)
            .count(),
        1
    );
    assert!(!table.update(&tuple(3001, 80), 5), "absent");
}
