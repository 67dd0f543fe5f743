//! The stack state on two pipelines over in-memory ports standing for two
//! queues of one device, against a peer stack, with a virtual clock: the
//! test picks the queue each of the peer's frames lands on, as a device's
//! spreading would, and checks that the pipeline it lands on answers.

use super::lanes::{self, LaneAnswer, LaneRequest};
use super::tests::Collect;
use super::*;
use dpstack::stack::counters::Stat;
use dpstack::stack::port::memory::{MemBuf, MemPort, MemPortConfig};
use dpstack::stack::port::MacAddr;
use dpstack::stack::time::Duration;
use dpstack::stack::udp::BindOptions;
use std::net::SocketAddr;

const OURS: MacAddr = MacAddr([2, 0, 0, 0, 8, 1]);
const PEER: MacAddr = MacAddr([2, 0, 0, 0, 8, 2]);

/// The home pipeline with its port (queue 0), one lane with its port
/// (queue 1), and the peer.
struct World {
    state: StackState<MemBuf>,
    home_ports: Vec<StackPort<MemPort>>,
    lane: Lane<MemBuf>,
    lane_ports: Vec<StackPort<MemPort>>,
    peer: Interface<MemBuf>,
    peer_port: MemPort,
    received: Collect,
    now: Instant,
    /// The queue the peer's frames land on.
    queue: usize,
}

fn port(mac: MacAddr) -> MemPort {
    MemPort::new(MemPortConfig {
        mac,
        ..MemPortConfig::default()
    })
}

fn world() -> World {
    let links = vec![LinkLine {
        port: 0,
        mac: OURS,
        mtu: 1500,
    }];
    let setup = [(0, "10.9.0.1/24".parse().expect("prefix"))];
    let mut state = StackState::new(links, &setup, 1).expect("a stack");
    state.add_lanes(2).expect("a lane");
    state.lcore_ids = vec![1, 2];
    let lane = state.lanes.remove(0);
    let mut config = InterfaceConfig::new(PEER, "10.9.0.2/24".parse().expect("cidr"));
    config.dad_transmits = 0;
    World {
        home_ports: vec![StackPort::new(port(OURS), state.capture())],
        lane_ports: vec![StackPort::new(port(OURS), state.capture())],
        state,
        lane,
        peer: Interface::new(config).expect("a peer"),
        peer_port: port(PEER),
        received: Collect::default(),
        now: Instant::ZERO,
        queue: 1,
    }
}

impl World {
    /// 100 ms of every pipeline's life.
    fn tick(&mut self) {
        self.now = self.now + Duration::from_millis(100);
        self.home_ports[0]
            .inner_mut()
            .deliver_to(&mut self.peer_port);
        self.lane_ports[0]
            .inner_mut()
            .deliver_to(&mut self.peer_port);
        (self.peer).poll(&mut self.peer_port, self.now, &mut self.received);
        let to = match self.queue {
            0 => &mut self.home_ports[0],
            _ => &mut self.lane_ports[0],
        };
        self.peer_port.deliver_to(to.inner_mut());
        let state = &mut self.state;
        (state.iface).poll_ports(&mut self.home_ports, self.now, &mut state.services);
        state.step(&mut self.home_ports, self.now);
        self.lane.poll(&mut self.lane_ports, self.now);
    }

    /// Serves `request` on the home pipeline and polls until it is
    /// answered.
    fn ask(&mut self, request: Request) -> String {
        let (reply, answer) = crossbeam_channel::bounded(1);
        let envelope = Envelope { request, reply };
        (self.state).serve(&mut self.home_ports, self.now, envelope);
        for _ in 0..100 {
            if let Ok(text) = answer.try_recv() {
                return text;
            }
            self.tick();
        }
        panic!("{request:?} was never answered");
    }

    /// `request` on both pipelines, home first, as the console asks them.
    fn ask_both(&mut self, request: LaneRequest) -> [LaneAnswer; 2] {
        let state = &mut self.state;
        let home = lanes::answer(&mut state.iface, &mut state.services, request);
        let lane = &mut self.lane;
        [
            home,
            lanes::answer(&mut lane.iface, &mut lane.services, request),
        ]
    }

    fn sockets(&mut self) -> Vec<lanes::SocketsPart> {
        (self.ask_both(LaneRequest::Sockets).into_iter())
            .map(|answer| match answer {
                LaneAnswer::Sockets(part) => part,
                LaneAnswer::Echo(text) => panic!("{text:?}"),
            })
            .collect()
    }

    /// Sends `payload` from the peer's `from` to our `to` over UDP.
    fn send(&mut self, from: &str, to: &str, payload: &[u8]) {
        let from: SocketAddr = from.parse().expect("addr");
        let socket = (self.peer)
            .udp_bind(from, BindOptions::default())
            .expect("bound");
        let to: SocketAddr = to.parse().expect("addr");
        (self.peer)
            .send_to(&mut self.peer_port, self.now, socket, to, payload)
            .expect("sent");
        for _ in 0..5 {
            self.tick();
        }
    }
}

fn echo(proto: Proto, start: bool) -> LaneRequest {
    LaneRequest::Echo {
        proto,
        port: 7,
        start,
    }
}

#[test]
fn echo_services_answer_on_the_pipeline_the_peer_lands_on() {
    let mut w = world();
    for proto in [Proto::Udp, Proto::Tcp] {
        for answer in w.ask_both(echo(proto, true)) {
            let LaneAnswer::Echo(Ok(text)) = answer else {
                panic!("started on both: {answer:?}");
            };
            assert!(text.contains(" echo started on [::]:7\n"), "{text}");
        }
    }
    // The UDP socket is bound once, by the home pipeline.
    let parts = w.sockets();
    assert_eq!((parts[0].udp.len(), parts[1].udp.len()), (1, 0));
    w.send("10.9.0.2:5000", "10.9.0.1:7", b"to the lane");
    assert_eq!(w.received.0, [b"to the lane".to_vec()]);
    w.queue = 0;
    w.send("10.9.0.2:5001", "10.9.0.1:7", b"to home");
    assert_eq!(w.received.0.len(), 2, "the home pipeline echoes too");
    assert_eq!(w.state.counters().get(Stat::UdpInDatagrams), 1);
    assert_eq!(w.lane.counters().get(Stat::UdpInDatagrams), 1);

    // A connection that lands on the lane is the lane's, shown with its
    // lcore among every pipeline's listeners.
    w.queue = 1;
    let remote: SocketAddr = "10.9.0.1:7".parse().expect("addr");
    let mut peer_ports = [port(PEER)];
    std::mem::swap(&mut peer_ports[0], &mut w.peer_port);
    (w.peer)
        .tcp_connect(&mut peer_ports, w.now, remote)
        .expect("connecting");
    std::mem::swap(&mut peer_ports[0], &mut w.peer_port);
    for _ in 0..5 {
        w.tick();
    }
    let parts = w.sockets();
    assert_eq!(parts[1].connections.len(), 1);
    assert_eq!(parts[1].connections[0].lcore, 1);
    let counters = text::total(&[
        dpstack::app::counters::snapshot(w.state.counters()),
        dpstack::app::counters::snapshot(w.lane.counters()),
    ]);
    let tcp = text::tcp(&parts, &counters, &w.state.lcore_ids);
    assert!(
        tcp.starts_with("TCP: 2 listening, 1 connections: ESTABLISHED 1\n"),
        "{tcp}"
    );
    let line = tcp.lines().find(|l| l.starts_with("ESTABLISHED"));
    let lcore = line.and_then(|l| l.split_whitespace().nth(7));
    assert_eq!(lcore, Some("2"), "lcore 2 runs pipeline 1:\n{tcp}");
    let lines = text::socket_lines(&parts);
    assert_eq!(lines.iter().filter(|l| l.state == "LISTEN").count(), 2);

    // Stopped on both, the lane echoes no more.
    for answer in w.ask_both(echo(Proto::Udp, false)) {
        let LaneAnswer::Echo(text) = answer else {
            panic!("an echo answers with text");
        };
        assert_eq!(text, Ok("UDP echo stopped on port 7\n".into()));
    }
    w.send("10.9.0.2:5002", "10.9.0.1:7", b"nobody");
    assert_eq!(w.received.0.len(), 2);
}

#[test]
fn a_lane_echoes_only_the_echo_sockets_and_runs_the_services_home_runs() {
    let mut w = world();
    // A socket of the home pipeline's own (as the RTP relay's are): a
    // datagram for it that lands on the lane is not echoed.
    let own: SocketAddr = "10.9.0.1:9000".parse().expect("addr");
    (w.state.iface)
        .udp_bind(own, BindOptions::default())
        .expect("bound");
    w.send("10.9.0.2:5000", "10.9.0.1:9000", b"not an echo");
    assert!(w.received.0.is_empty(), "{:?}", w.received.0);

    // Services started before a lane exists run on it when it is made.
    let started = w.ask(Request::Echo {
        proto: Proto::Tcp,
        port: 7,
        start: true,
    });
    assert_eq!(started, "TCP echo started on [::]:7\n");
    w.state.add_lanes(3).expect("another lane");
    let new = w.state.lanes.last().expect("a lane");
    assert_eq!(new.iface.tcp_listeners().len(), 1);
    assert!(matches!(
        new.services.started[..],
        [services::Service::Tcp(..)]
    ));
    // A lane a run did not use catches up with what changed meanwhile.
    let stopped = w.ask(Request::Echo {
        proto: Proto::Tcp,
        port: 7,
        start: false,
    });
    assert_eq!(stopped, "TCP echo stopped on port 7\n");
    let started = w.ask(Request::Echo {
        proto: Proto::Udp,
        port: 7,
        start: true,
    });
    assert_eq!(started, "UDP echo started on [::]:7\n");
    w.state.add_lanes(3).expect("the lanes follow");
    let parked = w.state.lanes.last().expect("a lane");
    assert!(parked.iface.tcp_listeners().is_empty());
    assert!(matches!(
        parked.services.started[..],
        [services::Service::Udp(..)]
    ));
}

#[test]
fn a_ping_reply_that_lands_on_a_lane_reaches_the_home_pipelines_ping() {
    let mut w = world();
    let text = w.ask(Request::Ping {
        dst: "10.9.0.2".parse().expect("ip"),
        count: 3,
    });
    assert!(
        text.contains("3 packets transmitted, 3 received, 0% packet loss"),
        "{text}"
    );
    assert!(
        w.lane_ports[0].rx_packets >= 3,
        "the replies came to the lane"
    );
    assert_eq!(w.home_ports[0].rx_packets, 0);
}
