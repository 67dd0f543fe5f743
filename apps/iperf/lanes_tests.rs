//! Our client and our server, each on two lanes of its own in-memory
//! stack, run TCP tests (one way, `-R`, `--bidir`) in one thread,
//! deterministically: every poll of
//! every lane in turn on one simulated clock, the frames a lane sends
//! delivered to the same-numbered lane of the other stack (as a memif's
//! queue pairs do), so the streams of one test land on both lanes of both
//! sides and the lanes' coordination (orders, notes, commands, the board)
//! carries the whole test.

use crate::lanes::{Helper, Hub};
use crate::proto::Params;
use crate::server::Server;
use crate::{client::Client, ClientLane};
use dpstack::stack::counters::Stat;
use dpstack::stack::iface::{InlineHandler, Interface, InterfaceConfig, LinkConfig};
use dpstack::stack::port::memory::{MemBuf, MemPort, MemPortConfig};
use dpstack::stack::port::MacAddr;
use dpstack::stack::route::Ipv4Cidr;
use dpstack::stack::time::Instant;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

const CLIENT_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 0xc1]);
const SERVER_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 0x5e]);

/// A stack's lanes, each an interface with its own port.
type Lanes = Vec<(Interface<MemBuf>, MemPort)>;

/// A stack at `ip` with `mac` on two lanes, each with its own port.
fn two_lanes(mac: MacAddr, ip: [u8; 4]) -> Lanes {
    let cidr = Ipv4Cidr::new(ip.into(), 24).unwrap();
    let mut config = InterfaceConfig::with_links(vec![LinkConfig::new(mac, cidr)]);
    config.tcp.send_buffer = 256 * 1024;
    config.tcp.recv_buffer = 256 * 1024;
    let first: Interface<MemBuf> = Interface::new(config).unwrap();
    let second = first.pipeline().unwrap();
    let port = || {
        MemPort::new(MemPortConfig {
            mac,
            ..MemPortConfig::default()
        })
    };
    vec![(first, port()), (second, port())]
}

fn params() -> Params {
    Params {
        tcp: true,
        udp: false,
        omit: 0,
        time: 1,
        num: 0,
        blockcount: 0,
        parallel: 4,
        len: 16 * 1024,
        // 8 Mbit/s a stream: a second's test is a few MB to simulate.
        bandwidth: 8_000_000,
        pacing_timer: 1000,
        reverse: false,
        bidirectional: false,
        udp_counters_64bit: 0,
        client_version: "3.12".into(),
    }
}

/// Polls `lane` with `handler` at `now`, then moves what it sent to the
/// same lane of the other side.
fn poll<H: InlineHandler<MemBuf>>(
    lane: &mut (Interface<MemBuf>, MemPort),
    handler: &mut H,
    now: Instant,
    peer: &mut MemPort,
) {
    lane.0.poll(&mut lane.1, now, handler);
    for frame in lane.1.take_tx() {
        peer.push_rx(&frame);
    }
}

/// Runs a test of `params` between our client and our server, each on two
/// lanes; the client (lane 0's) and both stacks' lanes when it is over.
fn run_test(params: Params) -> (Box<Client>, Lanes, Lanes) {
    let mut client_lanes = two_lanes(CLIENT_MAC, [10, 9, 0, 1]);
    let mut server_lanes = two_lanes(SERVER_MAC, [10, 9, 0, 2]);
    let server_at = SocketAddr::new(Ipv4Addr::new(10, 9, 0, 2).into(), 5201);
    let any = SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), 5201);
    for (iface, _) in &mut server_lanes {
        iface.tcp_listen(any, 16).unwrap();
    }
    let (client_hub, server_hub) = (Hub::new(2), Hub::new(2));
    let mut clients = [
        ClientLane::Driver(Box::new(
            Client::new(server_at, params, Vec::new(), true, 1).on_lanes(Arc::clone(&client_hub)),
        )),
        ClientLane::Helper(Helper::new(Arc::clone(&client_hub), 1, 2)),
    ];
    let mut servers: Vec<Server> = (0..2)
        .map(|lane| {
            let helper = Helper::new(Arc::clone(&server_hub), lane, 3 + lane as u64);
            Server::new(5201, Vec::new(), true, 5, helper)
        })
        .collect();
    // 50 µs a round, for at most 10 simulated seconds.
    let mut nanos = 0;
    while nanos < 10_000_000_000 && !server_hub.over.load(std::sync::atomic::Ordering::Relaxed) {
        nanos += 50_000;
        let now = Instant::from_nanos(nanos);
        for lane in 0..2 {
            let peer = &mut server_lanes[lane].1;
            poll(&mut client_lanes[lane], &mut clients[lane], now, peer);
            let peer = &mut client_lanes[lane].1;
            poll(&mut server_lanes[lane], &mut servers[lane], now, peer);
        }
    }
    assert!(servers.iter().any(|s| s.finished) && servers.iter().all(|s| s.errors.is_empty()));
    let [ClientLane::Driver(client), _] = clients else {
        unreachable!("lane 0 drives");
    };
    (client, client_lanes, server_lanes)
}

#[test]
fn a_test_spread_over_two_lanes_on_each_side_adds_up() {
    let (client, client_lanes, server_lanes) = run_test(params());
    assert_eq!(client.outcome, Some(Ok(())), "the test completed");
    let theirs = client
        .server_results
        .as_ref()
        .expect("the server's results");
    assert_eq!(theirs.streams.len(), 4);
    for (ours, theirs) in client.test.streams.iter().zip(&theirs.streams) {
        assert_eq!(ours.id, theirs.id);
        // About a second at 1 MB/s; the server received what we sent but
        // for what was in flight at the end.
        assert!(
            ours.now.bytes > 500_000,
            "stream {} sent {}",
            ours.id,
            ours.now.bytes
        );
        assert!(
            theirs.bytes <= ours.now.bytes && theirs.bytes * 10 >= ours.now.bytes * 9,
            "stream {}: sent {}, received {}",
            ours.id,
            ours.now.bytes,
            theirs.bytes
        );
    }
    // The control connection and streams 0 and 2 from lane 0, streams 1
    // and 3 from lane 1, each accepted by the server's lane of the same
    // number: both sides ran the test on both lanes, and no segment needed
    // handing over.
    let opens = |lanes: &Lanes, stat| {
        lanes
            .iter()
            .map(|(iface, _)| iface.counters().get(stat))
            .collect::<Vec<u64>>()
    };
    assert_eq!(opens(&client_lanes, Stat::TcpActiveOpens), [3, 2]);
    assert_eq!(opens(&server_lanes, Stat::TcpPassiveOpens), [3, 2]);
    assert_eq!(opens(&client_lanes, Stat::TcpSteeredOut), [0, 0]);
}

#[test]
fn reverse_and_bidirectional_tests_run_on_two_lanes_each_side() {
    // -R: the server's lanes send, ours receive.
    let reverse = Params {
        reverse: true,
        ..params()
    };
    let (client, _, server_lanes) = run_test(reverse);
    assert_eq!(client.outcome, Some(Ok(())));
    let theirs = client
        .server_results
        .as_ref()
        .expect("the server's results");
    for (ours, theirs) in client.test.streams.iter().zip(&theirs.streams) {
        assert!(!ours.sender);
        assert!(
            ours.now.bytes > 500_000 && ours.now.bytes <= theirs.bytes,
            "stream {}: the server sent {}, we received {}",
            ours.id,
            theirs.bytes,
            ours.now.bytes
        );
    }
    let sent = |lane: &(Interface<MemBuf>, MemPort)| lane.0.counters().get(Stat::TcpOutSegs);
    assert!(server_lanes.iter().all(|lane| sent(lane) > 100));
    // --bidir -P 2: streams 0 and 1 we send on, 2 and 3 the server sends on.
    let bidir = Params {
        bidirectional: true,
        parallel: 2,
        ..params()
    };
    let (client, _, _) = run_test(bidir);
    assert_eq!(client.outcome, Some(Ok(())));
    let senders: Vec<bool> = client.test.streams.iter().map(|s| s.sender).collect();
    assert_eq!(senders, [true, true, false, false]);
    assert!(client.test.streams.iter().all(|s| s.now.bytes > 500_000));
}
