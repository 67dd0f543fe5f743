//! The driver layer over real DPDK virtual devices: mbufs, pools, ports,
//! queues, lcores. One process per test (cargo nextest).

mod common;

use arrayvec::ArrayVec;
use dpstack::eal::{Eal, EalArgs};
use dpstack::ethdev::{available_ports, EthPort, PortConfig};
use dpstack::lcore::{launch, LaunchResult, Lcore};
use dpstack::mbuf::{free_burst, Mbuf};
use dpstack::mempool::{Mempool, PoolConfig};
use dpstack::stack::port::{send_burst, Buf, Port};
use dpstack::DpdkError;

fn pool(name: &str, count: u32) -> Mempool {
    Mempool::create(
        name,
        &PoolConfig {
            count,
            cache: 0,
            ..PoolConfig::default()
        },
    )
    .expect("pool")
}

#[test]
fn ring_port_returns_what_it_sent_and_nothing_leaks() {
    let _eal = common::eal(1, &["net_ring0"]);
    let pool = pool("ring_rt", 1023);
    let port = EthPort::open(available_ports()[0], &PortConfig::default(), pool).expect("open");
    let mut queue = port.queue(0, 0).expect("queue");

    let mut burst: ArrayVec<Mbuf, 32> = ArrayVec::new();
    assert!(queue.alloc_burst(&mut burst, 32));
    assert_eq!(pool.in_use(), 32);
    for (i, m) in burst.iter_mut().enumerate() {
        m.append(60).expect("tailroom").fill(i as u8);
    }
    assert_eq!(queue.tx_burst(&mut burst), 32);
    assert!(burst.is_empty());

    let mut received: ArrayVec<Mbuf, 64> = ArrayVec::new();
    assert_eq!(queue.rx_burst(&mut received, 64), 32);
    for (i, m) in received.iter().enumerate() {
        assert_eq!(m.len(), 60);
        assert!(
            m.data().iter().all(|&b| b == i as u8),
            "frame {i} intact and in order"
        );
    }
    free_burst(&mut received);
    assert_eq!(pool.in_use(), 0, "every buffer is back in the pool");
    assert_eq!(port.stats().expect("stats").tx_packets, 32);
}

#[test]
fn mbuf_headroom_operations_follow_dpdk_rules() {
    let _eal = common::eal(1, &[]);
    let pool = pool("mbuf_ops", 63);
    let mut m = pool.alloc().expect("alloc");
    assert_eq!(m.headroom(), 128, "RTE_PKTMBUF_HEADROOM");
    assert_eq!(m.len(), 0);
    let tail = m.tailroom();
    m.append(4).expect("room").copy_from_slice(b"data");
    m.prepend(3).expect("room").copy_from_slice(b"hdr");
    assert_eq!(m.data(), b"hdrdata");
    assert_eq!((m.headroom(), m.tailroom()), (125, tail - 4));
    assert!(m.prepend(126).is_none(), "more than the headroom");
    assert!(m.append(tail).is_none(), "more than the tailroom");
    assert_eq!(m.data(), b"hdrdata", "failed calls change nothing");
    assert!(m.adjust(3));
    assert!(m.trim(2));
    assert_eq!(m.data(), b"da");
    assert!(!m.adjust(3) && !m.trim(3));
    m.data_mut()[1] = b'o';
    assert_eq!(m.data(), b"do");
    assert_eq!(m.segments(), 1);
    assert_eq!(m.rss_hash(), None);
    drop(m);
    assert_eq!(pool.in_use(), 0);
}

#[test]
fn a_full_device_ring_makes_send_burst_drop_count_and_free() {
    let _eal = common::eal(1, &["net_ring0"]);
    let pool = pool("tx_full", 4095);
    let port = EthPort::open(available_ports()[0], &PortConfig::default(), pool).expect("open");
    let mut queue = port.queue(0, 0).expect("queue");
    // net_ring's ring holds fewer than 2048 packets and nobody receives.
    let (mut sent, mut dropped) = (0, 0);
    for _ in 0..64 {
        let mut burst: ArrayVec<Mbuf, 32> = ArrayVec::new();
        assert!(queue.alloc_burst(&mut burst, 32));
        let outcome = send_burst(&mut queue, &mut burst, 2);
        sent += outcome.sent;
        dropped += outcome.dropped;
    }
    assert_eq!(sent + dropped, 2048);
    assert!(dropped > 0, "the ring must have filled up");
    assert_eq!(
        pool.in_use() as usize,
        sent,
        "dropped buffers went back to the pool"
    );
}

#[test]
fn null_port_receives_generated_packets() {
    let _eal = common::eal(1, &["net_null0"]);
    let pool = pool("null_rx", 1023);
    let port = EthPort::open(available_ports()[0], &PortConfig::default(), pool).expect("open");
    let info = port.info().expect("info");
    assert_eq!(info.driver, "net_null");
    assert_eq!(info.name, "net_null0");
    assert!(port.link().expect("link").up);
    let mut queue = port.queue(0, 0).expect("queue");
    let mut burst: ArrayVec<Mbuf, 32> = ArrayVec::new();
    assert_eq!(queue.rx_burst(&mut burst, 32), 32);
    assert!(burst.iter().all(|m| m.len() == 64));
    let stats = port.stats().expect("stats");
    assert_eq!(stats.rx_packets, 32);
    let xstats = port.xstats().expect("xstats");
    assert!(xstats
        .iter()
        .any(|x| x.name == "rx_good_packets" && x.value == 32));
    port.reset_stats().expect("reset");
    assert_eq!(port.stats().expect("stats").rx_packets, 0);
}

#[test]
fn a_queue_is_taken_once_and_bad_ids_are_typed_errors() {
    let _eal = common::eal(1, &["net_null0"]);
    let pool = pool("taken", 511);
    let port = EthPort::open(0, &PortConfig::default(), pool).expect("open");
    let first = port.queue(0, 0).expect("free");
    assert!(matches!(
        port.queue(0, 0),
        Err(DpdkError::InvalidArgument(_))
    ));
    drop(first);
    assert!(port.queue(0, 0).is_ok(), "given back on drop");
    assert!(matches!(
        port.queue(1, 0),
        Err(DpdkError::InvalidArgument(_))
    ));
    let err = EthPort::open(7, &PortConfig::default(), pool).expect_err("no port 7");
    assert!(matches!(err, DpdkError::NoSuchPort(7)));
    assert!(err.to_string().contains("--vdev"), "says what to do: {err}");
}

#[test]
fn eal_initialises_once_per_process() {
    let _eal = common::eal(1, &[]);
    let again = Eal::init(&EalArgs::for_test(1).to_vec());
    assert!(matches!(again, Err(DpdkError::EalAlreadyInitialized)));
}

#[test]
fn a_bad_vdev_is_a_typed_error_with_a_hint() {
    let err = Eal::init(&EalArgs::for_test(1).vdev("net_nosuchdriver0").to_vec())
        .expect_err("unknown driver");
    match &err {
        DpdkError::EalInit { errno, .. } => assert_eq!(*errno, libc::ENODEV),
        other => panic!("unexpected {other:?}"),
    }
    assert!(err.to_string().contains("--vdev"), "{err}");
}

#[test]
fn workers_run_closures_and_panics_are_contained() {
    let _eal = common::eal(2, &[]);
    assert_eq!(Lcore::current(), Some(Lcore::main()));
    let workers = Lcore::workers();
    assert_eq!(workers.len(), 1);
    let handle =
        launch(workers[0], || Lcore::current().map_or(-1, |l| l.0 as i32)).expect("launch");
    assert_eq!(handle.wait(), LaunchResult::Returned(workers[0].0 as i32));
    let handle = launch(workers[0], || panic!("boom")).expect("launch");
    assert_eq!(handle.wait(), LaunchResult::Panicked);
    assert!(launch(Lcore::main(), || 0).is_err(), "main is not a worker");
}

#[test]
fn too_little_hugepage_memory_is_a_typed_error_that_names_no_huge() {
    let mut args = EalArgs::for_test(1).to_vec();
    args.retain(|a| a != "--no-huge" && a != "--no-shconf" && !a.starts_with("-m"));
    args.push("--in-memory".into());
    args.push("-m1000000".into());
    let err = Eal::init(&args).expect_err("nobody has a terabyte of hugepages");
    match &err {
        DpdkError::EalInit { errno, .. } => {
            assert!(
                [libc::ENOMEM, libc::EACCES].contains(errno),
                "errno {errno}"
            )
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(err.to_string().contains("--no-huge"), "{err}");
    assert!(err.to_string().contains("scripts/setup"), "{err}");
}

#[test]
fn the_tsc_clock_tracks_wall_time() {
    let _eal = common::eal(1, &[]);
    let clock = dpstack::clock::TscClock::new();
    assert!(clock.hz() > 100_000_000, "a TSC of at least 100 MHz");
    let (t0, wall) = (clock.now(), std::time::Instant::now());
    std::thread::sleep(std::time::Duration::from_millis(50));
    let (tsc, wall) = (
        (clock.now() - t0).as_secs_f64(),
        wall.elapsed().as_secs_f64(),
    );
    assert!((tsc - wall).abs() < 0.005, "tsc {tsc} s vs wall {wall} s");
    assert_eq!(
        clock.cycles_in(std::time::Duration::from_secs(1)),
        clock.hz()
    );
}

#[test]
fn a_port_is_not_stopped_while_a_queue_is_held() {
    let _eal = common::eal(1, &["net_null0"]);
    let pool = pool("stop_held", 511);
    let port = EthPort::open(0, &PortConfig::default(), pool).expect("open");
    let queue = port.queue(0, 0).expect("queue");
    assert!(matches!(port.stop(), Err(DpdkError::InvalidArgument(_))));
    assert!(port.is_started());
    drop(queue);
    port.stop().expect("no queue held any more");
    assert!(!port.is_started());
}

#[test]
fn only_the_main_lcore_launches() {
    let _eal = common::eal(2, &[]);
    let worker = Lcore::workers()[0];
    let from_elsewhere = std::thread::spawn(move || launch(worker, || 0).is_err());
    assert!(
        from_elsewhere.join().expect("thread"),
        "refused off the main lcore"
    );
    assert_eq!(
        launch(worker, || 3).expect("main lcore").wait(),
        LaunchResult::Returned(3)
    );
}

#[test]
fn a_pool_below_dpdks_floor_is_refused_before_dpdk_is_asked() {
    let _eal = common::eal(1, &[]);
    let config = PoolConfig {
        count: 64,
        ..PoolConfig::default()
    };
    let err = Mempool::create("floor", &config).expect_err("64 < 1.5 x 256");
    assert!(
        matches!(&err, DpdkError::PoolTooSmall { count: 64, need } if need.minimum() == 384),
        "{err:?}"
    );
    assert!(!err.to_string().contains("memory"), "{err}");
    let config = PoolConfig {
        count: 384,
        ..config
    };
    let pool = Mempool::create("floor", &config).expect("at the floor");
    assert_eq!((pool.size(), pool.cache_size()), (384, 256));
}

#[test]
fn a_tap_port_that_cannot_fill_its_rx_ring_says_the_pool_is_too_small() {
    // net_tap takes a buffer for each receive descriptor at queue set-up.
    let vdev = format!("net_tap0,iface={}", common::unique_name("dpsp"));
    let _eal = common::eal(1, &[&vdev]);
    let pool = pool("tap_small", 511);
    let err = EthPort::open(0, &PortConfig::default(), pool).expect_err("511 < 1024");
    let DpdkError::PoolTooSmall { count, need } = &err else {
        panic!("not a pool error: {err}");
    };
    assert_eq!(*count, 511);
    assert_eq!(need.minimum(), 2048, "both rings, no cache: {err}");
    assert!(err.to_string().contains("rx ring 1024"), "{err}");
}
