//! Reuseport members pinned to pipelines (`BindOptions::incoming_lcore`, as
//! Linux's SO_INCOMING_CPU), over several pipelines of one stack, each on
//! its own in-memory port: what arrives on pipeline k goes to the member
//! pinned to k; on a pipeline nobody is pinned to, the group's hash picks;
//! a connected member keeps its flow on every pipeline. Inline and
//! queue-mode sockets alike.

use super::*;
use std::thread;

const GROUP_PORT: u16 = 5000;

fn our_port() -> MemPort {
    MemPort::new(MemPortConfig {
        mac: OUR_MAC,
        ..MemPortConfig::default()
    })
}

fn pinned(lcore: u16) -> BindOptions {
    BindOptions {
        reuse_port: true,
        incoming_lcore: Some(lcore),
        ..BindOptions::default()
    }
}

/// Datagrams from source ports `flows` to the group's port, arriving on
/// `iface`'s `port`: which socket got each (by source port, its payload).
fn receivers(
    iface: &mut Interface<MemBuf>,
    port: &mut MemPort,
    flows: core::ops::Range<u16>,
) -> Vec<(u16, SocketId)> {
    let bursts = flows.len().div_ceil(16);
    for src_port in flows {
        port.push_rx(&udp_frame(src_port, GROUP_PORT, &src_port.to_be_bytes()));
    }
    let mut recorder = Recorder::default();
    // A poll takes one receive burst.
    for _ in 0..bursts {
        poll(iface, port, &mut recorder);
    }
    let mut got: Vec<(u16, SocketId)> = (recorder.calls.into_iter())
        .flat_map(|(socket, payloads)| {
            (payloads.into_iter()).map(move |p| (u16::from_be_bytes([p[0], p[1]]), socket))
        })
        .collect();
    got.sort_unstable();
    got
}

fn all_to(got: &[(u16, SocketId)], socket: SocketId) -> bool {
    got.iter().all(|&(_, s)| s == socket)
}

#[test]
fn members_pinned_per_pipeline_receive_their_pipeline_s_flows() {
    let (mut first, mut port0) = stack_knowing_peer();
    let (mut second, mut port1) = (first.pipeline().unwrap(), our_port());
    let (mut third, mut port2) = (first.pipeline().unwrap(), our_port());
    assert_eq!(third.index(), 2);
    let group = SocketAddrV4::new(OUR_IP, GROUP_PORT);
    let on_0 = first.udp_bind(group, pinned(0)).unwrap();
    let on_1 = first.udp_bind(group, pinned(1)).unwrap();
    let got = receivers(&mut first, &mut port0, 6000..6064);
    assert_eq!(got.len(), 64, "every datagram delivered");
    assert!(all_to(&got, on_0), "pipeline 0's flows: {got:?}");
    let got = receivers(&mut second, &mut port1, 6000..6064);
    assert_eq!(got.len(), 64);
    assert!(all_to(&got, on_1), "pipeline 1's flows: {got:?}");
    // A second member pinned to 0 and an unpinned one join: pipeline 0's
    // flows stay with its two members, pipeline 1's with its one; on
    // pipeline 2, pinned to by none, the group's hash spreads over all.
    let also_on_0 = first.udp_bind(group, pinned(0)).unwrap();
    let unpinned = BindOptions {
        reuse_port: true,
        ..BindOptions::default()
    };
    let free = first.udp_bind(group, unpinned).unwrap();
    let pins: Vec<Option<u16>> = (first.udp_sockets().iter())
        .map(|s| s.incoming_lcore)
        .collect();
    assert_eq!(pins, vec![Some(0), Some(1), Some(0), None]);
    let got = receivers(&mut second, &mut port1, 7000..7064);
    assert!(all_to(&got, on_1), "pipeline 1 keeps its member: {got:?}");
    let got = receivers(&mut first, &mut port0, 7000..7064);
    assert_eq!(got.len(), 64);
    assert!(
        got.iter().all(|&(_, s)| s == on_0 || s == also_on_0),
        "pipeline 0's flows stay with its pinned members: {got:?}"
    );
    for member in [on_0, also_on_0] {
        assert!(got.iter().any(|&(_, s)| s == member), "shared by hash");
    }
    let got = receivers(&mut third, &mut port2, 7000..7064);
    assert_eq!(got.len(), 64);
    for member in [on_0, on_1, also_on_0, free] {
        assert!(
            got.iter().any(|&(_, s)| s == member),
            "{member:?} gets some of pipeline 2's flows: {got:?}"
        );
    }
    assert_eq!(third.counters().get(Stat::UdpInDatagrams), 64);
}

#[test]
fn a_connected_member_keeps_its_flow_on_every_pipeline() {
    let (mut first, mut port0) = stack_knowing_peer();
    let (mut second, mut port1) = (first.pipeline().unwrap(), our_port());
    let group = SocketAddrV4::new(OUR_IP, GROUP_PORT);
    let on_0 = first.udp_bind(group, pinned(0)).unwrap();
    let on_1 = first.udp_bind(group, pinned(1)).unwrap();
    let connected = first.udp_bind(group, pinned(1)).unwrap();
    assert!(first.udp_connect(connected, SocketAddrV4::new(PEER_IP, 6010)));
    let got = receivers(&mut first, &mut port0, 6000..6020);
    let got1 = receivers(&mut second, &mut port1, 6000..6020);
    for (got, pinned_here) in [(got, on_0), (got1, on_1)] {
        assert_eq!(got.len(), 20);
        for (src_port, socket) in got {
            let want = if src_port == 6010 {
                connected
            } else {
                pinned_here
            };
            assert_eq!(socket, want, "from port {src_port}");
        }
    }
}

#[test]
fn queue_mode_members_pinned_per_pipeline_fill_their_own_queues() {
    let (mut first, mut port0) = stack_knowing_peer();
    let handle = first.handle(port0.pool(), 64);
    let (mut second, mut port1) = (first.pipeline().unwrap(), our_port());
    let binder = thread::spawn(move || {
        let group = SocketAddrV4::new(OUR_IP, GROUP_PORT);
        let on_0 = handle.udp_bind_with(group, pinned(0)).unwrap();
        let on_1 = handle.udp_bind_with(group, pinned(1)).unwrap();
        (on_0, on_1)
    });
    // The binds are commands the first pipeline applies at its polls.
    for tick in 1..=10_000u64 {
        first.poll(&mut port0, Instant::from_nanos(tick), &mut DropDatagrams);
        if binder.is_finished() {
            break;
        }
        thread::sleep(std::time::Duration::from_millis(1));
    }
    let (on_0, on_1) = binder.join().unwrap();
    let pins: Vec<Option<u16>> = (first.udp_sockets().iter())
        .map(|s| s.incoming_lcore)
        .collect();
    assert_eq!(pins, vec![Some(0), Some(1)]);
    for src_port in 6000..6016 {
        port0.push_rx(&udp_frame(src_port, GROUP_PORT, b"zero"));
    }
    for src_port in 6000..6008 {
        port1.push_rx(&udp_frame(src_port, GROUP_PORT, b"one"));
    }
    poll(&mut first, &mut port0, &mut DropDatagrams);
    poll(&mut second, &mut port1, &mut DropDatagrams);
    assert_eq!((on_0.queued(), on_1.queued()), (16, 8));
    let mut buf = [0u8; 8];
    let (n, _) = on_1.recv_from(&mut buf, None).unwrap();
    assert_eq!(&buf[..n], b"one");
}
