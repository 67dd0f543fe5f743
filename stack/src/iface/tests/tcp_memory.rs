//! TCP buffer memory through the whole stack, two interfaces wired
//! together: idle connections hold no ring storage, used ones give it back
//! once empty, receive windows grow with use (auto-tuning), and a spent
//! `TcpConfig::buffer_memory` refuses writes and drops data (counted),
//! losing nothing once memory comes back.

use super::*;
use crate::tcp::buffer::INITIAL_RECV;
use crate::tcp::{TcpConfig, TcpError};
use std::collections::HashMap;

fn host(
    mac: MacAddr,
    ip: Ipv4Addr,
    tune: impl FnOnce(&mut TcpConfig),
) -> (Interface<MemBuf>, MemPort) {
    let mut config = InterfaceConfig::new(mac, Ipv4Cidr::new(ip, 24).unwrap());
    config.dad_transmits = 0;
    tune(&mut config.tcp);
    let iface = Interface::new(config).unwrap();
    let port = MemPort::new(MemPortConfig {
        mac,
        ..MemPortConfig::default()
    });
    (iface, port)
}

/// The server: on any event, reads (when told to) everything every
/// connection received; on request, tries one write and keeps its result.
#[derive(Default)]
struct Server {
    reading: bool,
    want_write: bool,
    wrote: Option<Result<usize, TcpError>>,
    known: Vec<ConnId>,
    got: HashMap<ConnId, Vec<u8>>,
}

impl InlineHandler<MemBuf> for Server {
    fn on_tcp<P: Port<Buf = MemBuf>>(
        &mut self,
        conn: ConnId,
        event: TcpEvent,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        if matches!(event, TcpEvent::Accepted(_)) {
            self.known.push(conn);
        }
        if self.want_write && self.wrote.is_none() {
            self.wrote = Some(ctx.tcp_send(conn, b"x"));
        }
        if !self.reading {
            return;
        }
        let mut buf = [0u8; 16 * 1024];
        for &id in &self.known {
            while let Ok(n @ 1..) = ctx.tcp_recv(id, &mut buf) {
                self.got.entry(id).or_default().extend(&buf[..n]);
            }
        }
    }
}

/// The clients: each connection writes `data` once it is up.
#[derive(Default)]
struct Writers {
    data: Vec<u8>,
    sent: HashMap<ConnId, usize>,
    connected: usize,
}

impl InlineHandler<MemBuf> for Writers {
    fn on_tcp<P: Port<Buf = MemBuf>>(
        &mut self,
        conn: ConnId,
        event: TcpEvent,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        if event == TcpEvent::Connected {
            self.connected += 1;
        }
        let sent = self.sent.entry(conn).or_default();
        if let Ok(n) = ctx.tcp_send(conn, &self.data[*sent..]) {
            *sent += n;
        }
    }
}

struct Pair {
    server: (Interface<MemBuf>, MemPort),
    client: (Interface<MemBuf>, MemPort),
    now: Instant,
}

impl Pair {
    fn new(
        server_tcp: impl FnOnce(&mut TcpConfig),
        client_tcp: impl FnOnce(&mut TcpConfig),
    ) -> Pair {
        let server = host(OUR_MAC, OUR_IP, server_tcp);
        let client = host(PEER_MAC, PEER_IP, client_tcp);
        let mut pair = Pair {
            server,
            client,
            now: Instant::ZERO,
        };
        pair.server
            .0
            .tcp_listen(SocketAddrV4::new(OUR_IP, 7), 64)
            .unwrap();
        pair
    }

    fn connect(&mut self) -> ConnId {
        let (iface, port) = &mut self.client;
        let target = SocketAddrV4::new(OUR_IP, 7);
        iface
            .tcp_connect(core::slice::from_mut(port), self.now, target)
            .unwrap()
    }

    /// One millisecond: both sides poll, frames cross.
    fn step(&mut self, server: &mut Server, writers: &mut Writers) {
        self.now = self.now + Duration::from_millis(1);
        let (s, sp) = &mut self.server;
        let (c, cp) = &mut self.client;
        c.poll(cp, self.now, writers);
        cp.deliver_to(sp);
        s.poll(sp, self.now, server);
        sp.deliver_to(cp);
    }

    fn server_conns(&self) -> Vec<crate::iface::TcpConnInfo> {
        self.server.0.tcp_connections()
    }
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 253) as u8).collect()
}

#[test]
fn idle_connections_hold_no_buffer_memory_and_a_used_one_gives_it_back() {
    let mut pair = Pair::new(|_| {}, |_| {});
    let mut server = Server::default();
    let mut writers = Writers::default();
    // The first connect resolves the server's address; the rest follow.
    pair.connect();
    for _ in 0..5 {
        pair.step(&mut server, &mut writers);
    }
    for _ in 1..50 {
        pair.connect();
    }
    for _ in 0..20 {
        pair.step(&mut server, &mut writers);
    }
    assert_eq!(writers.connected, 50);
    let conns = pair.server_conns();
    assert_eq!(conns.len(), 50);
    assert!(conns
        .iter()
        .all(|c| c.state == crate::tcp::State::Established));
    assert!(conns.iter().all(|c| c.buffer_bytes == 0), "{conns:?}");
    assert_eq!(pair.server.0.tcp_buffer_memory().used, 0);
    assert_eq!(pair.client.0.tcp_buffer_memory().used, 0);
    // One connection carries a little data, read at once: its rings come
    // and go back, and its window stays where it started.
    writers.data = pattern(3000);
    server.reading = true;
    let only = pair.connect();
    for _ in 0..50 {
        pair.step(&mut server, &mut writers);
    }
    assert_eq!(writers.sent[&only], 3000);
    let received: Vec<&Vec<u8>> = server.got.values().collect();
    assert_eq!(received, [&pattern(3000)]);
    let conns = pair.server_conns();
    assert!(conns.iter().all(|c| c.buffer_bytes == 0), "{conns:?}");
    assert!(conns.iter().all(|c| c.recv_window == INITIAL_RECV));
    let client_conns = pair.client.0.tcp_connections();
    assert!(client_conns.iter().all(|c| c.buffer_bytes == 0));
    // What exists is the pools' freed storage, one ring's worth a side.
    assert_eq!(pair.server.0.tcp_buffer_memory().used, INITIAL_RECV);
    assert!(pair.client.0.tcp_buffer_memory().used <= 16 * 1024);
}

#[test]
fn a_bulk_receivers_window_grows_with_use_up_to_its_limit() {
    const LIMIT: usize = 1 << 20;
    let mut pair = Pair::new(|tcp| tcp.recv_buffer = LIMIT, |tcp| tcp.send_buffer = LIMIT);
    let mut server = Server {
        reading: true,
        ..Server::default()
    };
    let mut writers = Writers {
        data: pattern(8 << 20),
        ..Writers::default()
    };
    pair.connect();
    let mut windows = Vec::new();
    for _ in 0..5000 {
        pair.step(&mut server, &mut writers);
        if let Some(c) = pair.server_conns().first() {
            if windows.last() != Some(&c.recv_window) {
                windows.push(c.recv_window);
            }
        }
        if server
            .got
            .values()
            .next()
            .is_some_and(|g| g.len() == 8 << 20)
        {
            break;
        }
    }
    assert!(
        server.got.values().next() == Some(&writers.data),
        "all 8 MiB, intact"
    );
    assert_eq!(windows.first(), Some(&INITIAL_RECV));
    assert_eq!(
        windows.last(),
        Some(&LIMIT),
        "grew to the limit: {windows:?}"
    );
    assert!(
        windows.windows(2).all(|w| w[0] < w[1]),
        "never shrank: {windows:?}"
    );
}

#[test]
fn spent_buffer_memory_refuses_writes_and_drops_data_then_loses_nothing() {
    // Room for two receive rings: a third connection's data has nowhere
    // to go until the application reads.
    let mut pair = Pair::new(|tcp| tcp.buffer_memory = 2 * INITIAL_RECV, |_| {});
    let mut server = Server::default();
    let mut writers = Writers {
        data: pattern(40_000),
        ..Writers::default()
    };
    for _ in 0..3 {
        pair.connect();
    }
    for _ in 0..300 {
        pair.step(&mut server, &mut writers);
        let memory = pair.server.0.tcp_buffer_memory();
        assert!(memory.used <= memory.limit);
    }
    let mut queued: Vec<usize> = pair.server_conns().iter().map(|c| c.recv_queued).collect();
    queued.sort();
    assert_eq!(queued, [0, 40_000, 40_000], "two rings filled, one refused");
    let counters = pair.server.0.counters();
    let dropped = counters.dropped(DropReason::TcpMemLimit);
    assert!(dropped > 0);
    assert_eq!(counters.get(Stat::TcpRcvQDrop), dropped);
    // A write now finds no memory for a send ring: a typed error, and the
    // connection stays open.
    server.want_write = true;
    pair.connect();
    for _ in 0..300 {
        pair.step(&mut server, &mut writers);
        if server.wrote.is_some() {
            break;
        }
    }
    assert_eq!(server.wrote, Some(Err(TcpError::NoBufferMemory)));
    assert!(pair.server.0.counters().get(Stat::TcpMemoryLimited) > 0);
    // The application reads (from the next event on, a fifth connection's
    // opening): memory comes back and the refused data, sent again,
    // arrives whole.
    server.reading = true;
    pair.connect();
    for _ in 0..30_000 {
        pair.step(&mut server, &mut writers);
        if server.got.len() == 5 && server.got.values().all(|g| g.len() == 40_000) {
            break;
        }
    }
    assert_eq!(server.got.len(), 5);
    assert!(server.got.values().all(|g| *g == writers.data), "intact");
    let conns = pair.server_conns();
    assert!(conns
        .iter()
        .all(|c| c.state == crate::tcp::State::Established));
}
