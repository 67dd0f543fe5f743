//! Multi-queue ports: RSS configured, read back and changed; what devices
//! without RSS say; queues taken in halves; per-queue counters; and the
//! stack's software Toeplitz against DPDK's own `rte_softrss`. One process
//! per test (cargo nextest).

mod common;

use arrayvec::ArrayVec;
use dpstack::ethdev::{available_ports, softrss, EthPort, PortConfig, QueueSpreading, RssConfig};
use dpstack::mbuf::{free_burst, Mbuf};
use dpstack::mempool::{Mempool, PoolConfig};
use dpstack::stack::port::{Buf, Port};
use dpstack::stack::rss::{FlowInput, MICROSOFT_KEY, SYMMETRIC_KEY};
use dpstack::sys;
use dpstack::DpdkError;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

fn pool(name: &str) -> Mempool {
    Mempool::create(
        name,
        &PoolConfig {
            count: 8191,
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
fn rss_configuration_reads_back_as_set_and_changes_at_run_time() {
    let _eal = common::eal(1, &["net_null0"]);
    let rss = RssConfig::ip_udp().with_key(&SYMMETRIC_KEY);
    let port = EthPort::open(available_ports()[0], &two_queues(Some(rss)), pool("rss_rb"))
        .expect("open with RSS");
    assert!(matches!(
        port.spreading().expect("spreading"),
        QueueSpreading::Rss { reta_size: 128, .. }
    ));
    let conf = port.rss_hash_conf().expect("hash conf");
    let supported = port.info().expect("info").flow_type_rss_offloads;
    let asked = sys::RTE_ETH_RSS_IP | sys::RTE_ETH_RSS_UDP;
    assert_eq!(
        conf.rss_hf,
        asked & supported,
        "the types the device can hash"
    );
    assert_eq!(conf.key, SYMMETRIC_KEY, "the key as set");

    // The redirection table: set every entry, read it back.
    let table: Vec<(u16, u16)> = (0..128).map(|i| (i, i / 3 % 2)).collect();
    port.set_rss_reta(&table).expect("set reta");
    let reta = port.rss_reta().expect("reta");
    assert_eq!(reta, table.iter().map(|&(_, q)| q).collect::<Vec<_>>());
    // One entry changed, the others kept.
    port.set_rss_reta(&[(5, 0)]).expect("one entry");
    let after = port.rss_reta().expect("reta");
    assert_eq!(after[5], 0);
    assert_eq!(after[6], reta[6]);

    // Changing the hash and key while the port runs.
    port.set_rss_hash(&RssConfig::ip().with_key(&MICROSOFT_KEY))
        .expect("update");
    let conf = port.rss_hash_conf().expect("hash conf");
    assert_eq!(conf.rss_hf, sys::RTE_ETH_RSS_IP & supported);
    assert_eq!(conf.key, MICROSOFT_KEY);

    // Entries and queues that do not exist.
    let err = port.set_rss_reta(&[(128, 0)]).expect_err("no entry 128");
    assert!(err.to_string().contains("128 entries"), "{err}");
    let err = port.set_rss_reta(&[(0, 2)]).expect_err("no queue 2");
    assert!(err.to_string().contains("2 rx queues"), "{err}");
}

#[test]
fn rss_on_a_device_without_it_is_a_typed_error_naming_port_pmd_and_limits() {
    let _eal = common::eal(1, &["net_ring0"]);
    let err = EthPort::open(
        available_ports()[0],
        &two_queues(Some(RssConfig::ip())),
        pool("rss_no"),
    )
    .expect_err("net_ring has no RSS");
    match &err {
        DpdkError::RssUnsupported {
            port: 0,
            driver,
            spreading: QueueSpreading::SenderChooses,
            max_rx_queues: 16,
        } if driver == "net_ring" => {}
        other => panic!("wrong error: {other:?}"),
    }
    let text = err.to_string();
    assert!(
        text.contains("port 0 (net_ring)") && text.contains("16 rx"),
        "{text}"
    );
    // Without RSS the same device takes its queues.
    let port = EthPort::open(available_ports()[0], &two_queues(None), pool("rss_no2"))
        .expect("open without RSS");
    assert_eq!(
        port.spreading().expect("spreading"),
        QueueSpreading::SenderChooses
    );
    assert!(matches!(
        port.rss_reta(),
        Err(DpdkError::RssUnsupported { .. })
    ));
}

#[test]
fn a_queue_count_beyond_the_device_is_a_typed_error_with_its_limits() {
    let _eal = common::eal(1, &["net_ring0"]);
    let config = PortConfig {
        rx_queues: 17,
        ..PortConfig::default()
    };
    match EthPort::open(available_ports()[0], &config, pool("rss_qc")) {
        Err(
            e @ DpdkError::QueueCount {
                max_rx: 16, rx: 17, ..
            },
        ) => {
            let text = e.to_string();
            assert!(text.contains("port 0 (net_ring) takes 1..=16 rx"), "{text}");
        }
        other => panic!("wrong result: {other:?}"),
    }
}

#[test]
fn queues_are_taken_in_halves_and_counted_per_queue() {
    let _eal = common::eal(1, &["net_ring0"]);
    let mut port =
        EthPort::open(available_ports()[0], &two_queues(None), pool("rss_half")).expect("open");
    // One lcore receives on queue 1 while another transmits on it.
    let mut rx = port.queue_parts(Some(1), None).expect("rx half");
    let mut tx = port.queue_parts(None, Some(1)).expect("tx half");
    assert!(port.queue(1, 0).is_err(), "rx 1 is taken");
    assert!(port.queue(0, 1).is_err(), "tx 1 is taken");
    let mut burst: ArrayVec<Mbuf, 32> = ArrayVec::new();
    assert!(tx.alloc_burst(&mut burst, 8));
    for m in burst.iter_mut() {
        m.append(60).expect("room");
    }
    assert_eq!(rx.tx_burst(&mut burst), 0, "the rx half sends nothing");
    assert_eq!(tx.tx_burst(&mut burst), 8);
    let mut got: ArrayVec<Mbuf, 32> = ArrayVec::new();
    assert_eq!(tx.rx_burst(&mut got, 32), 0, "the tx half receives nothing");
    assert_eq!(rx.rx_burst(&mut got, 32), 8, "ring 1 loops back to rx 1");
    free_burst(&mut got);
    let per_queue = port.queue_stats().expect("queue stats");
    assert_eq!(per_queue.len(), 2);
    assert_eq!((per_queue[1].tx_packets, per_queue[1].rx_packets), (8, 8));
    assert_eq!((per_queue[0].tx_packets, per_queue[0].rx_packets), (0, 0));
    // Queue facts, and reconfiguring needs the port stopped and no handle.
    // net_ring keeps no queue facts (ENOTSUP); a queue it lacks is EINVAL.
    match port.rx_queue_info(1) {
        Ok(_) | Err(DpdkError::Port { errno: 95, .. }) => {}
        Err(e) => panic!("{e}"),
    }
    assert!(matches!(
        port.rx_queue_info(2),
        Err(DpdkError::Port { errno: 22, .. })
    ));
    drop((rx, tx));
    let four = PortConfig {
        rx_queues: 4,
        tx_queues: 4,
        ..PortConfig::default()
    };
    assert!(port.reconfigure(&four).is_err(), "the port still runs");
    port.stop().expect("stop");
    port.reconfigure(&four).expect("reconfigure");
    port.start().expect("start");
    assert_eq!(port.info().expect("info").rx_queues, 4);
    port.queue(3, 3).expect("queue 3 exists now");
}

/// `rte_thash_tuple`'s words for a flow: addresses in host order, then the
/// ports as one word (source port high).
fn thash_words(src: IpAddr, dst: IpAddr, ports: Option<(u16, u16)>) -> Vec<u32> {
    let octets = |a: IpAddr| match a {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    };
    let mut bytes = octets(src);
    bytes.extend(octets(dst));
    if let Some((s, d)) = ports {
        bytes.extend(s.to_be_bytes());
        bytes.extend(d.to_be_bytes());
    }
    bytes
        .chunks(4)
        .map(|w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
        .collect()
}

#[test]
fn software_toeplitz_agrees_with_rte_softrss() {
    let _eal = common::eal(1, &[]);
    // A small seeded generator: the same flows every run.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for case in 0..2000 {
        let (src, dst) = if case % 2 == 0 {
            (
                IpAddr::V4(Ipv4Addr::from(next() as u32)),
                IpAddr::V4(Ipv4Addr::from(next() as u32)),
            )
        } else {
            let wide = |n: &mut dyn FnMut() -> u64| {
                Ipv6Addr::from(u128::from(n()) << 64 | u128::from(n()))
            };
            (IpAddr::V6(wide(&mut next)), IpAddr::V6(wide(&mut next)))
        };
        let ports = (case % 3 != 0).then(|| (next() as u16, next() as u16));
        let words = thash_words(src, dst, ports);
        let ours = FlowInput::new(src, dst, ports);
        for key in [&MICROSOFT_KEY, &SYMMETRIC_KEY] {
            assert_eq!(
                ours.hash(key),
                softrss(&words, key),
                "{src} -> {dst} {ports:?}"
            );
        }
    }
}

#[test]
fn a_multi_queue_tap_keeps_each_kernel_flow_on_one_queue_and_uses_both() {
    let iface = common::unique_name("dpsmq");
    let vdev = format!("net_tap0,iface={iface}");
    let _eal = common::eal(1, &[&vdev]);
    let port = EthPort::open(available_ports()[0], &two_queues(None), pool("rss_tap"))
        .expect("open a 2-queue tap");
    assert_eq!(
        port.spreading().expect("spreading"),
        QueueSpreading::KernelFlowHash
    );
    let ns = common::kernel_side("dpsmq-", &iface, "02:00:00:00:77:02", &["10.77.0.2/24"]);
    let ours = port.mac().to_string();
    common::run(
        "ip",
        &[
            "-n",
            &ns.name,
            "neigh",
            "add",
            "10.77.0.1",
            "lladdr",
            &ours,
            "dev",
            &iface,
            "nud",
            "permanent",
        ],
    );
    // 64 flows (source ports 40000..40064), 8 datagrams each.
    const FLOWS: u16 = 64;
    const EACH: usize = 8;
    let script = format!(
        "import socket\n\
         for p in range(40000, {}):\n\
         \x20   s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
         \x20   s.bind(('10.77.0.2', p))\n\
         \x20   for i in range({EACH}):\n\
         \x20       s.sendto(b'x' * 20, ('10.77.0.1', 9))\n\
         \x20   s.close()\n",
        40000 + FLOWS
    );
    let sent = ns.exec_bounded(30, "python3", &["-c", &script]);
    assert!(sent.status.success(), "{sent:?}");
    let mut queues = [
        port.queue_parts(Some(0), None).expect("rx 0"),
        port.queue_parts(Some(1), None).expect("rx 1"),
    ];
    let mut seen: std::collections::BTreeMap<u16, Vec<usize>> = Default::default();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut frames = 0;
    while frames < usize::from(FLOWS) * EACH && std::time::Instant::now() < deadline {
        for (q, queue) in queues.iter_mut().enumerate() {
            let mut burst: ArrayVec<Mbuf, 32> = ArrayVec::new();
            queue.rx_burst(&mut burst, 32);
            for m in &burst {
                let f = m.data();
                // IPv4 (no options) carrying UDP from one of the flows.
                if f.len() >= 42 && f[12..14] == [0x08, 0x00] && f[14] == 0x45 && f[23] == 17 {
                    let sport = u16::from_be_bytes([f[34], f[35]]);
                    if (40000..40000 + FLOWS).contains(&sport) {
                        seen.entry(sport).or_default().push(q);
                        frames += 1;
                    }
                }
            }
            free_burst(&mut burst);
        }
    }
    assert_eq!(
        seen.len(),
        usize::from(FLOWS),
        "every flow arrived: {seen:?}"
    );
    for (flow, on) in &seen {
        assert!(
            on.iter().all(|&q| q == on[0]),
            "flow {flow} stayed on one queue: {on:?}"
        );
    }
    let on_queue = |q: usize| seen.values().filter(|on| on[0] == q).count();
    assert!(
        on_queue(0) > 0 && on_queue(1) > 0,
        "both queues used: {} and {} flows",
        on_queue(0),
        on_queue(1)
    );
}
