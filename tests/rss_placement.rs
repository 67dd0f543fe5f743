//! RSS placement for TCP connects (`EthPort::rss_placement`) on the
//! devices at hand: none of them spreads TCP by a Toeplitz hash that
//! dpstack can predict, so each gives no placement (steering carries their
//! connections), and a queue the port lacks is an error. The positive case
//! (a device hashing TCP ports with a known key) is checked without a
//! device, in `ethdev::rss`'s unit tests. One process per test (cargo
//! nextest).

mod common;

use dpstack::ethdev::{available_ports, EthPort, PortConfig, QueueSpreading, RssConfig};
use dpstack::mempool::{Mempool, PoolConfig};
use dpstack::DpdkError;

fn pool(name: &str) -> Mempool {
    Mempool::create(
        name,
        &PoolConfig {
            count: 4095,
            cache: 0,
            ..PoolConfig::default()
        },
    )
    .expect("pool")
}

fn two_queues(rss: Option<RssConfig>) -> PortConfig {
    PortConfig {
        rx_queues: 2,
        tx_queues: 2,
        rss,
        ..PortConfig::default()
    }
}

#[test]
fn a_two_queue_tap_gives_no_placement() {
    let iface = common::unique_name("dpsrp");
    let vdev = format!("net_tap0,iface={iface}");
    let _eal = common::eal(1, &[&vdev]);
    let port = EthPort::open(available_ports()[0], &two_queues(None), pool("rp_tap"))
        .expect("open a 2-queue tap");
    // The kernel picks a multi-queue tap's queue by its own flow hash.
    assert_eq!(
        port.spreading().expect("spreading"),
        QueueSpreading::KernelFlowHash
    );
    for queue in 0..2 {
        assert_eq!(port.rss_placement(queue).expect("placement"), None);
    }
    assert!(matches!(
        port.rss_placement(2),
        Err(DpdkError::InvalidArgument(_))
    ));
}

#[test]
fn net_null_reports_rss_but_gives_no_placement() {
    let _eal = common::eal(1, &["net_null0"]);
    let port = EthPort::open(
        available_ports()[0],
        &two_queues(Some(RssConfig::ip_tcp_udp())),
        pool("rp_null"),
    )
    .expect("open with RSS");
    // It has a key and a table, but its packets are made up, not hashed.
    assert!(port.spreading().expect("spreading").is_predictable());
    assert!(!port.rss_hash_conf().expect("hash conf").key.is_empty());
    for queue in 0..2 {
        assert_eq!(port.rss_placement(queue).expect("placement"), None);
    }
}

#[test]
fn memif_and_ring_give_no_placement() {
    let socket = format!("/tmp/{}.sock", common::unique_name("dpsrp"));
    let _cleanup = common::RemoveOnDrop::new(&socket);
    let memif = format!("net_memif0,role=server,socket={socket},socket-abstract=no");
    let _eal = common::eal(1, &[&memif, "net_ring0"]);
    for (at, name) in available_ports().into_iter().zip(["rp_memif", "rp_ring"]) {
        let port = EthPort::open(at, &two_queues(None), pool(name)).expect("open");
        assert!(!port.spreading().expect("spreading").is_predictable());
        assert_eq!(port.rss_placement(1).expect("placement"), None, "{name}");
    }
    let _ = std::fs::remove_file(socket);
}
