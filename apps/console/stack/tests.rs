//! The stack state against a peer stack over in-memory ports, with a
//! virtual clock: each request as the lcore serves it, then polls until
//! the answer comes.

use super::*;
use dpstack::stack::iface::{Batch, InlineHandler, LcoreContext};
use dpstack::stack::port::memory::{MemBuf, MemPort, MemPortConfig};
use dpstack::stack::port::MacAddr;
use dpstack::stack::time::Duration;
use dpstack::stack::udp::{BindOptions, SocketId};
use std::net::SocketAddr;

const OURS: MacAddr = MacAddr([2, 0, 0, 0, 7, 1]);
const PEER: MacAddr = MacAddr([2, 0, 0, 0, 7, 2]);

/// Keeps every datagram's payload.
#[derive(Default)]
pub(super) struct Collect(pub(super) Vec<Vec<u8>>);

impl InlineHandler<MemBuf> for Collect {
    fn on_datagrams<P: Port<Buf = MemBuf>>(
        &mut self,
        _: SocketId,
        batch: &mut Batch<MemBuf>,
        _: &mut LcoreContext<'_, P>,
    ) {
        self.0.extend(batch.drain(..).map(|d| d.payload().to_vec()));
    }
}

struct World {
    state: StackState<MemBuf>,
    ports: Vec<StackPort<MemPort>>,
    peer: Interface<MemBuf>,
    peer_port: MemPort,
    received: Collect,
    now: Instant,
}

fn port(mac: MacAddr) -> MemPort {
    MemPort::new(MemPortConfig {
        mac,
        ..MemPortConfig::default()
    })
}

fn world() -> World {
    let links = vec![LinkLine {
        port: 4,
        mac: OURS,
        mtu: 1500,
    }];
    let setup = [(0, "10.7.0.1/24".parse().expect("prefix"))];
    let state = StackState::new(links, &setup, 1).expect("a stack");
    let cidr = "10.7.0.2/24".parse().expect("cidr");
    let mut config = InterfaceConfig::new(PEER, cidr);
    config.dad_transmits = 0;
    World {
        ports: vec![StackPort::new(port(OURS), state.capture())],
        state,
        peer: Interface::new(config).expect("a peer"),
        peer_port: port(PEER),
        received: Collect::default(),
        now: Instant::ZERO,
    }
}

impl World {
    /// 100 ms of both stacks' life.
    fn tick(&mut self) {
        self.now = self.now + Duration::from_millis(100);
        self.ports[0].inner_mut().deliver_to(&mut self.peer_port);
        (self.peer).poll(&mut self.peer_port, self.now, &mut self.received);
        self.peer_port.deliver_to(self.ports[0].inner_mut());
        let state = &mut self.state;
        (state.iface).poll_ports(&mut self.ports, self.now, &mut state.services);
        state.step(&mut self.ports, self.now);
    }

    /// Serves `request` and polls until it is answered.
    fn ask(&mut self, request: Request) -> String {
        let (reply, answer) = crossbeam_channel::bounded(1);
        (self.state).serve(&mut self.ports, self.now, Envelope { request, reply });
        for _ in 0..100 {
            if let Ok(text) = answer.try_recv() {
                return text;
            }
            self.tick();
        }
        panic!("{request:?} was never answered");
    }
}

fn prefix(s: &str) -> Prefix {
    s.parse().expect("a prefix")
}

#[test]
fn addresses_and_routes_are_shown_added_and_removed() {
    let mut w = world();
    let text = w.ask(Request::ShowAddr);
    assert!(
        text.starts_with(
            "port 4: mtu 1500\n    link/ether 02:00:00:00:07:01\n    inet 10.7.0.1/24 brd \
             10.7.0.255 scope global\n    inet6 fe80::"
        ),
        "{text}"
    );
    let add = Request::AddrAdd {
        link: 0,
        prefix: prefix("10.8.0.1/16"),
    };
    assert_eq!(w.ask(add), "");
    assert_eq!(w.ask(add), "Error: address 10.8.0.1 is configured twice\n");
    let via = |gw: &str| Request::RouteAdd {
        prefix: prefix("198.51.100.0/24"),
        via: Some(gw.parse().expect("ip")),
        link: None,
    };
    assert_eq!(w.ask(via("10.7.0.2")), "");
    assert!(w
        .ask(via("192.0.2.1"))
        .starts_with("Error: gateway 192.0.2.1 is on none"));
    assert_eq!(
        w.ask(Request::ShowRoute),
        "10.7.0.0/24 port 4 proto kernel scope link src 10.7.0.1
10.8.0.0/16 port 4 proto kernel scope link src 10.8.0.1
198.51.100.0/24 via 10.7.0.2 port 4 src 10.7.0.1
"
    );
    let del = Request::RouteDel {
        prefix: prefix("198.51.100.0/24"),
    };
    assert_eq!(w.ask(del), "");
    assert_eq!(w.ask(del), "Error: no route to 198.51.100.0/24\n");
    let bare = Request::RouteAdd {
        prefix: prefix("203.0.113.0/24"),
        via: None,
        link: None,
    };
    assert_eq!(
        w.ask(bare),
        "Error: route add needs via GATEWAY or port N\n"
    );
    let gone = Request::AddrDel {
        link: None,
        addr: "10.8.0.1".parse().expect("ip"),
    };
    assert_eq!(w.ask(gone), "");
    assert!(!w.ask(Request::ShowRoute).contains("10.8.0.0/16"));
}

#[test]
fn ping_reaches_the_peer_and_learns_its_mac() {
    let mut w = world();
    let ping = |dst: &str, count| Request::Ping {
        dst: dst.parse().expect("ip"),
        count,
    };
    let text = w.ask(ping("10.7.0.2", 3));
    assert!(
        text.starts_with("PING 10.7.0.2 (10.7.0.2) 56(84) bytes of data.\n"),
        "{text}"
    );
    assert_eq!(
        text.matches("64 bytes from 10.7.0.2: icmp_seq=").count(),
        3,
        "{text}"
    );
    assert!(
        text.contains("3 packets transmitted, 3 received, 0% packet loss"),
        "{text}"
    );
    assert!(
        w.ports[0].rx_packets >= 4,
        "an ARP reply and three echo replies"
    );
    assert_eq!(
        w.ask(Request::ShowNeigh),
        "10.7.0.2 port 4 lladdr 02:00:00:00:07:02 REACHABLE\n"
    );
    let counters = w.ask(Request::ShowCounters);
    assert!(counters.contains("ARP:\n    ArpInReplies"), "{counters}");
    assert!(
        !counters.contains("icmp_unhandled"),
        "replies to our ping are ours, not drops: {counters}"
    );
    let text = w.ask(ping("10.7.0.99", 2));
    assert!(
        text.contains("2 packets transmitted, 0 received, 100% packet loss"),
        "{text}"
    );
    assert_eq!(
        w.ask(ping("192.0.2.1", 1)),
        "ping: connect: Network is unreachable\n"
    );
}

#[test]
fn udp_echo_answers_the_peer_and_stops() {
    let mut w = world();
    let echo = |start| Request::Echo {
        proto: Proto::Udp,
        port: 7,
        start,
    };
    assert_eq!(w.ask(echo(true)), "UDP echo started on [::]:7\n");
    assert_eq!(w.ask(echo(true)), "UDP echo already runs on port 7\n");
    let local: SocketAddr = "10.7.0.2:5000".parse().expect("addr");
    let socket = w
        .peer
        .udp_bind(local, BindOptions::default())
        .expect("bound");
    let dst: SocketAddr = "10.7.0.1:7".parse().expect("addr");
    (w.peer)
        .send_to(&mut w.peer_port, w.now, socket, dst, b"hello stack")
        .expect("sent");
    for _ in 0..5 {
        w.tick();
    }
    assert_eq!(w.received.0, [b"hello stack".to_vec()]);
    let sockets = w.ask(Request::ShowSockets);
    assert!(
        sockets.contains("\nudp   UNCONN          0      0 [::]:7                     *:*\n"),
        "{sockets}"
    );
    assert_eq!(w.ask(echo(false)), "UDP echo stopped on port 7\n");
    assert_eq!(w.ask(echo(false)), "No UDP echo runs on port 7\n");
    assert!(!w.ask(Request::ShowSockets).contains("udp"));
}

#[test]
fn tcp_echo_accepts_and_shows_its_connection() {
    let mut w = world();
    let echo = Request::Echo {
        proto: Proto::Tcp,
        port: 7,
        start: true,
    };
    assert_eq!(w.ask(echo), "TCP echo started on [::]:7\n");
    let remote: SocketAddr = "10.7.0.1:7".parse().expect("addr");
    let mut ports = [port(PEER)];
    std::mem::swap(&mut ports[0], &mut w.peer_port);
    w.peer
        .tcp_connect(&mut ports, w.now, remote)
        .expect("connecting");
    std::mem::swap(&mut ports[0], &mut w.peer_port);
    for _ in 0..5 {
        w.tick();
    }
    let tcp = w.ask(Request::ShowTcp);
    assert!(
        tcp.starts_with(
            "TCP: 1 listening, 1 connections: ESTABLISHED 1\n\
             Buffer memory: 0 of 1073741824 bytes\n\
             TcpActiveOpens 0  TcpPassiveOpens 1"
        ),
        "{tcp}"
    );
    assert!(tcp.contains("\nESTABLISHED  10.7.0.1:7"), "{tcp}");
    let sockets = w.ask(Request::ShowSockets);
    assert!(sockets.contains("\ntcp   LISTEN"), "{sockets}");
    assert!(
        sockets.contains("\ntcp   ESTAB           0      0 10.7.0.1:7"),
        "{sockets}"
    );
}

#[test]
fn routes_and_sockets_the_console_did_not_make_are_listed_with_queue_depths() {
    let mut w = world();
    // An application on the same stack: a route, an inline UDP socket, a
    // listener, and a queue-mode socket an application thread binds.
    let iface = &mut w.state.iface;
    let cidr = "203.0.113.0/24".parse().expect("cidr");
    iface
        .add_route(cidr, "10.7.0.2".parse().expect("ip"))
        .expect("route");
    let inline: SocketAddr = "10.7.0.1:9000".parse().expect("addr");
    iface
        .udp_bind(inline, BindOptions::default())
        .expect("bound");
    let listening: SocketAddr = "10.7.0.1:8080".parse().expect("addr");
    iface.tcp_listen(listening, 16).expect("listening");
    let handle = iface.handle(w.ports[0].inner_mut().pool(), 8);
    let queued: SocketAddr = "10.7.0.1:9100".parse().expect("addr");
    let app = std::thread::spawn(move || handle.udp_bind(queued));
    while !app.is_finished() {
        w.tick();
    }
    let _app_socket = app.join().expect("no panic").expect("bound");
    let from: SocketAddr = "10.7.0.2:5000".parse().expect("addr");
    let socket = (w.peer)
        .udp_bind(from, BindOptions::default())
        .expect("bound");
    for payload in [&b"one"[..], b"two"] {
        (w.peer)
            .send_to(&mut w.peer_port, w.now, socket, queued, payload)
            .expect("sent");
        w.tick();
    }
    for _ in 0..3 {
        w.tick();
    }
    assert!(
        w.ask(Request::ShowRoute)
            .contains("\n203.0.113.0/24 via 10.7.0.2 port 4 src 10.7.0.1\n"),
        "a route added without `route add` is listed"
    );
    let sockets = w.ask(Request::ShowSockets);
    for line in [
        "\nudp   UNCONN          0      0 10.7.0.1:9000              *:*\n",
        "\nudp   UNCONN          2      0 10.7.0.1:9100              *:*\n",
        "\ntcp   LISTEN          0     16 10.7.0.1:8080              *:*\n",
    ] {
        assert!(sockets.contains(line), "no {line:?} in:\n{sockets}");
    }
    assert!(w
        .ask(Request::ShowTcp)
        .starts_with("TCP: 1 listening, 0 connections\n"));
}
