//! Exhaustion soaks over the in-memory port: floods a kernel peer cannot
//! produce in a test's time (100,000 neighbours, 100,000 spoofed SYNs,
//! 1,000,000 socket binds, tens of thousands of TCP connect/close cycles
//! between two stacks, buffer pool exhaustion, a queue-mode socket nobody
//! reads). Each states what the
//! stack must refuse, checks it is counted, that nothing leaks (the port's
//! buffers in use back to zero, tables back to their size before) and that
//! service resumes when the pressure stops. Counts are sized for debug
//! builds on a busy two-core machine: each test takes a few seconds.

use super::ipv6::{frame6, ip6_icmp, ns, stack6, GLOBAL};
use super::*;
use crate::wire::ipv6::{multicast_mac, solicited_node};
use crate::wire::tcp::{flags, TcpOptions, TcpPacket, TcpRepr};
use core::net::{Ipv6Addr, SocketAddrV6};

/// Echoes datagrams and TCP bytes (as far as the send buffer takes them).
struct EchoBoth;

impl InlineHandler<MemBuf> for EchoBoth {
    fn on_datagrams<P: Port<Buf = MemBuf>>(
        &mut self,
        _: SocketId,
        batch: &mut Batch<MemBuf>,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        for datagram in batch.drain(..) {
            ctx.reply(datagram);
        }
    }

    fn on_tcp<P: Port<Buf = MemBuf>>(
        &mut self,
        conn: ConnId,
        event: TcpEvent,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        if !matches!(event, TcpEvent::Accepted(_) | TcpEvent::Readable) {
            return;
        }
        let mut buf = [0u8; 2048];
        let (room, ready) = ctx.tcp_room(conn);
        let n = room.min(ready).min(buf.len());
        if let Ok(got) = ctx.tcp_recv(conn, &mut buf[..n]) {
            let _ = ctx.tcp_send(conn, &buf[..got]);
        }
        if ctx.tcp_at_eof(conn) {
            ctx.tcp_close(conn);
        }
    }
}

/// Frames pushed between two polls: a few rx bursts, well under the
/// port's pool so no frame of a flood is lost before the stack sees it.
const CHUNK: usize = 256;

/// Pushes `frames` into `port` in chunks, polling `iface` at `now` after
/// each and throwing away what it sent (a flood's answers).
fn flood(
    iface: &mut Interface<MemBuf>,
    port: &mut MemPort,
    now: Instant,
    frames: impl Iterator<Item = Vec<u8>>,
) -> usize {
    let mut pending = 0;
    let mut sent = 0;
    for frame in frames {
        assert!(port.push_rx(&frame), "the port's pool has room");
        pending += 1;
        sent += 1;
        if pending == CHUNK {
            drain(iface, port, now);
            pending = 0;
        }
    }
    drain(iface, port, now);
    sent
}

/// Polls until the port's receive queue is empty (a poll takes one burst),
/// throwing away what the stack sent; bounded by the queue's length.
fn drain(iface: &mut Interface<MemBuf>, port: &mut MemPort, now: Instant) {
    for _ in 0..=port.rx_pending() {
        iface.poll(port, now, &mut EchoBoth);
        port.take_tx();
        if port.rx_pending() == 0 {
            return;
        }
    }
    panic!("{} frames still queued", port.rx_pending());
}

/// A stack on 10.0.0.1/8 and 2001:db8::1/64: a /8 so that 100,000 ARP
/// senders are all on the link (off-link ones are refused earlier, as
/// martians, and would not press on the cache).
fn wide_stack() -> (Interface<MemBuf>, MemPort) {
    let mut link = LinkConfig::new(OUR_MAC, Ipv4Cidr::new(OUR_IP, 8).unwrap());
    link.addresses6
        .push(crate::route::Ipv6Cidr::new(GLOBAL, 64).unwrap());
    let mut config = InterfaceConfig::with_links(vec![link]);
    config.dad_transmits = 0;
    let mut iface = Interface::new(config).unwrap();
    let mut port = MemPort::new(MemPortConfig {
        mac: OUR_MAC,
        ..MemPortConfig::default()
    });
    iface.poll(&mut port, Instant::ZERO, &mut DropDatagrams);
    port.take_tx();
    (iface, port)
}

/// The i-th flooding source: a distinct address and MAC per i.
fn source(i: u32) -> (Ipv4Addr, Ipv6Addr, MacAddr) {
    let n = i + 10; // clear of 10.0.0.1 (us) and 10.0.0.2 (the peer)
    let [_, b, c, d] = n.to_be_bytes();
    let mac = MacAddr([2, 0x66, 0, b, c, d]);
    let v6 = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0x66, (n >> 16) as u16, n as u16);
    (Ipv4Addr::new(10, b, c, d), v6, mac)
}

/// 100,000 sources is the figure: 25 times the cache's 4,096
/// entries per family, enough that any unbounded growth would show.
const NEIGHBOURS: u32 = 100_000;

#[test]
fn an_arp_and_nd_flood_from_100000_sources_stays_bounded_and_real_neighbours_resolve() {
    let (mut iface, mut port) = wide_stack();
    let capacity = iface.config().neighbor.capacity;
    let mut now = Instant::from_nanos(1_000_000);
    // The real neighbour, known before the flood.
    port.push_rx(&arp(
        ArpOperation::Request,
        (PEER_MAC, PEER_IP),
        (MacAddr::default(), OUR_IP),
    ));
    iface.poll(&mut port, now, &mut EchoBoth);
    port.take_tx();
    let requests = (0..NEIGHBOURS).map(|i| {
        let (ip, _, mac) = source(i);
        arp(
            ArpOperation::Request,
            (mac, ip),
            (MacAddr::default(), OUR_IP),
        )
    });
    flood(&mut iface, &mut port, now, requests);
    let group = solicited_node(GLOBAL);
    let solicitations = (0..NEIGHBOURS).map(|i| {
        let (_, ip, mac) = source(i);
        let packet = ip6_icmp(ip, group, 255, &[], &ns(GLOBAL, Some(mac)));
        let mut frame = frame6(multicast_mac(group), &packet);
        frame[6..12].copy_from_slice(&mac.0);
        frame
    });
    flood(&mut iface, &mut port, now, solicitations);
    let (v4, v6) = (iface.neighbors().len(), iface.neighbors6().len());
    assert!(v4 <= capacity, "{v4} ARP entries, capacity {capacity}");
    assert!(v6 <= capacity, "{v6} ND entries, capacity {capacity}");
    assert!(
        v4 > capacity / 2 && v6 > capacity / 2,
        "the flood filled them"
    );
    assert_eq!(port.buffers_in_use(), 0, "no buffer kept by the flood");
    // Every request was for our address: all answered, even with the cache
    // full (the answer goes to the MAC in the request, no lookup needed).
    assert_eq!(
        iface.counters().get(Stat::Icmp6OutNeighborAdvertisements),
        u64::from(NEIGHBOURS)
    );
    // The neighbour known before the flood still gets its ping answered.
    port.push_rx(&echo_request(1, b"still there"));
    iface.poll(&mut port, now, &mut EchoBoth);
    assert_eq!(port.take_tx().len(), 1, "the known neighbour is answered");
    // When the flood stops its entries age out (reachable 30 s, then stale
    // 60 s), and a neighbour new to us resolves again.
    for _ in 0..100 {
        now = now + Duration::from_secs(1);
        iface.poll(&mut port, now, &mut EchoBoth);
        port.take_tx();
    }
    assert!(
        iface.neighbors().len() <= 1 && iface.neighbors6().is_empty(),
        "the flood's entries aged out: {} and {} left",
        iface.neighbors().len(),
        iface.neighbors6().len()
    );
    let (late_ip, _, late_mac) = source(NEIGHBOURS + 1);
    port.push_rx(&arp(
        ArpOperation::Request,
        (late_mac, late_ip),
        (MacAddr::default(), OUR_IP),
    ));
    iface.poll(&mut port, now, &mut EchoBoth);
    assert_eq!(port.take_tx().len(), 1, "answered");
    assert_eq!(iface.neighbor(late_ip), Some(late_mac), "and learned");
    assert_eq!(port.buffers_in_use(), 0);
}

/// A frame carrying TCP segment `repr` from `src`, checksum filled, to us.
fn tcp4(src: Ipv4Addr, repr: &TcpRepr, payload: &[u8]) -> Vec<u8> {
    let header_len = repr.header_len();
    let mut segment = vec![0u8; header_len + payload.len()];
    repr.emit(&mut segment[..header_len]);
    segment[header_len..].copy_from_slice(payload);
    let pseudo =
        crate::wire::checksum::pseudo_header_v4(src, OUR_IP, protocol::TCP, segment.len() as u16);
    TcpPacket::new_unchecked(&mut segment[..]).fill_checksum(pseudo);
    ethernet(
        OUR_MAC,
        PEER_MAC,
        EtherType::Ipv4,
        &ipv4(src, OUR_IP, protocol::TCP, &segment),
    )
}

fn segment(src_port: u16, seq: u32, ack: u32, bits: u8) -> TcpRepr {
    TcpRepr {
        src_port,
        dst_port: 7,
        seq,
        ack,
        flags: bits,
        window: 8000,
        options: TcpOptions {
            mss: (bits & flags::SYN != 0).then_some(1460),
            ..TcpOptions::default()
        },
    }
}

/// The SYN-ACKs among `frames`: (destination port, our ISS).
fn syn_acks(frames: &[Vec<u8>]) -> Vec<(u16, u32)> {
    frames
        .iter()
        .filter(|f| f.len() > 34 && f[12..14] == [8, 0] && f[23] == protocol::TCP)
        .filter_map(|f| TcpRepr::parse(&TcpPacket::new_checked(&f[34..]).ok()?).ok())
        .filter(|r| r.flags == flags::SYN | flags::ACK)
        .map(|r| (r.dst_port, r.seq))
        .collect()
}

/// 100,000 SYNs: the in-memory figure, 390 times the backlog.
const SYNS: u32 = 100_000;

#[test]
fn a_flood_of_100000_spoofed_syns_leaves_established_connections_echoing() {
    // Spoofed sources all over 198.18.0.0/15, reached through the peer as
    // the gateway (so SYN-ACKs need no neighbour per source).
    let mut config = InterfaceConfig::new(OUR_MAC, Ipv4Cidr::new(OUR_IP, 24).unwrap());
    config.gateway = Some(PEER_IP);
    config.dad_transmits = 0;
    let mut iface: Interface<MemBuf> = Interface::new(config).unwrap();
    let mut port = MemPort::new(MemPortConfig {
        mac: OUR_MAC,
        ..MemPortConfig::default()
    });
    let mut now = Instant::from_nanos(1_000_000);
    iface.poll(&mut port, now, &mut EchoBoth);
    port.push_rx(&arp(
        ArpOperation::Request,
        (PEER_MAC, PEER_IP),
        (MacAddr::default(), OUR_IP),
    ));
    iface.poll(&mut port, now, &mut EchoBoth);
    port.take_tx();
    const BACKLOG: usize = 256;
    iface
        .tcp_listen(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 7), BACKLOG)
        .unwrap();
    // An established connection from the peer, before the flood.
    port.push_rx(&tcp4(PEER_IP, &segment(5000, 100, 0, flags::SYN), &[]));
    iface.poll(&mut port, now, &mut EchoBoth);
    let [(5000, iss)] = syn_acks(&port.take_tx())[..] else {
        panic!("no SYN-ACK for the real client")
    };
    let mut ack = iss.wrapping_add(1);
    port.push_rx(&tcp4(PEER_IP, &segment(5000, 101, ack, flags::ACK), &[]));
    iface.poll(&mut port, now, &mut EchoBoth);
    port.take_tx();
    // Measured with the real connection open: TCP output keeps one packet
    // buffer in hand between flushes (`held_tx`, one per stack however many
    // connections follow), so the leak checks below are relative to that.
    let baseline = port.buffers_in_use();
    let syns = (0..SYNS).map(|i| {
        let [_, _, c, d] = i.to_be_bytes();
        let src = Ipv4Addr::new(198, 18 + (i >> 16) as u8, c, d);
        tcp4(
            src,
            &segment(1024 + (i % 50_000) as u16, i, 0, flags::SYN),
            &[],
        )
    });
    let mut seq = 101u32;
    let mut echoed = 0;
    // The flood in slices, the real connection talking between them.
    let syns: Vec<Vec<u8>> = syns.collect();
    for slice in syns.chunks(10_000) {
        flood(&mut iface, &mut port, now, slice.iter().cloned());
        let half_open = iface.tcp_connections().len();
        assert!(half_open <= BACKLOG + 1, "{half_open} connections");
        port.push_rx(&tcp4(
            PEER_IP,
            &segment(5000, seq, ack, flags::ACK | flags::PSH),
            b"ping",
        ));
        // Each echo acknowledged with the next ping (Nagle holds a second
        // small segment while the first is unacknowledged).
        seq += 4;
        ack = ack.wrapping_add(4);
        iface.poll(&mut port, now, &mut EchoBoth);
        let replies = port.take_tx();
        assert!(
            replies.iter().any(|f| f.ends_with(b"ping")),
            "the established connection echoes during the flood"
        );
        echoed += 1;
        now = now + Duration::from_millis(100);
    }
    assert_eq!(echoed, SYNS / 10_000);
    // The last echo acknowledged (else its retransmissions would wait for
    // the gateway's MAC in a buffer below).
    port.push_rx(&tcp4(PEER_IP, &segment(5000, seq, ack, flags::ACK), &[]));
    iface.poll(&mut port, now, &mut EchoBoth);
    port.take_tx();
    let cookies = iface.counters().get(Stat::TcpSyncookiesSent);
    assert!(
        cookies >= u64::from(SYNS) - BACKLOG as u64 * 10,
        "SYNs over the backlog answered with cookies: {cookies}"
    );
    assert_eq!(iface.counters().dropped(DropReason::TcpListenOverflow), 0);
    // With the backlog still full of spoofed handshakes, a real client
    // gets in through a cookie and is served.
    port.push_rx(&tcp4(PEER_IP, &segment(5002, 700, 0, flags::SYN), &[]));
    iface.poll(&mut port, now, &mut EchoBoth);
    let [(5002, cookie)] = syn_acks(&port.take_tx())[..] else {
        panic!("no cookie SYN-ACK for a real client during the flood")
    };
    let cookie_ack = cookie.wrapping_add(1);
    port.push_rx(&tcp4(
        PEER_IP,
        &segment(5002, 701, cookie_ack, flags::ACK | flags::PSH),
        b"in",
    ));
    iface.poll(&mut port, now, &mut EchoBoth);
    assert!(
        port.take_tx().iter().any(|f| f.ends_with(b"in")),
        "the cookie's connection echoes"
    );
    assert_eq!(iface.counters().get(Stat::TcpSyncookiesRecv), 1);
    port.push_rx(&tcp4(
        PEER_IP,
        &segment(5002, 703, cookie_ack.wrapping_add(2), flags::RST),
        &[],
    ));
    iface.poll(&mut port, now, &mut EchoBoth);
    port.take_tx();
    // The flood stops: the half-open connections give up their SYN-ACK
    // retries, the table shrinks back to the one real connection, and a new
    // client gets in.
    for _ in 0..200 {
        now = now + Duration::from_secs(1);
        iface.poll(&mut port, now, &mut EchoBoth);
        port.take_tx();
    }
    assert_eq!(iface.tcp_connections().len(), 1, "only the real one left");
    assert_eq!(
        port.buffers_in_use(),
        baseline,
        "no buffer leaked by the flood"
    );
    let listener = &iface.tcp_listeners()[0];
    assert_eq!(listener.handshakes, 0, "the backlog is free again");
    // (The gateway's entry aged out in those idle minutes; it speaks again.)
    port.push_rx(&arp(
        ArpOperation::Request,
        (PEER_MAC, PEER_IP),
        (MacAddr::default(), OUR_IP),
    ));
    port.push_rx(&tcp4(PEER_IP, &segment(5001, 900, 0, flags::SYN), &[]));
    iface.poll(&mut port, now, &mut EchoBoth);
    assert_eq!(syn_acks(&port.take_tx()).len(), 1, "a new client gets in");
    assert_eq!(port.buffers_in_use(), baseline, "no buffer leaked");
}

/// One million binds and closes: the figure; the table must end
/// where it started.
const UDP_CHURN: u32 = 1_000_000;

#[test]
fn a_million_udp_bind_and_close_cycles_leave_no_growth() {
    let (mut iface, mut port) = stack6();
    let kept = iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 7), BindOptions::default())
        .unwrap();
    let before = iface.udp_sockets().len();
    for i in 0..UDP_CHURN {
        // Both families, wildcard and specific, over a spread of ports.
        let port_no = 1024 + (i % 60_000) as u16;
        let local: SocketAddr = match i % 4 {
            0 => SocketAddrV4::new(OUR_IP, port_no).into(),
            1 => SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, port_no).into(),
            2 => SocketAddrV6::new(GLOBAL, port_no, 0, 0).into(),
            _ => SocketAddrV6::new(Ipv6Addr::UNSPECIFIED, port_no, 0, 0).into(),
        };
        let id = iface
            .udp_bind(local, BindOptions::default())
            .unwrap_or_else(|e| panic!("bind {i} to {local}: {e:?}"));
        assert!(iface.udp_close(id), "close {i}");
    }
    assert_eq!(iface.udp_sockets().len(), before, "no socket left behind");
    // The socket kept open through the churn still echoes.
    port.push_rx(&udp_frame(40000, 7, b"after the churn"));
    iface.poll(&mut port, Instant::from_nanos(1_000_000), &mut EchoBoth);
    assert_eq!(port.take_tx().len(), 1);
    assert!(iface.udp_close(kept));
    assert_eq!(port.buffers_in_use(), 0);
}

#[test]
fn an_empty_buffer_pool_refuses_sends_and_receives_and_both_recover() {
    let (mut iface, mut port) = stack_knowing_peer();
    let socket = iface
        .udp_bind(SocketAddrV4::new(OUR_IP, 7), BindOptions::default())
        .unwrap();
    let now = Instant::from_nanos(1_000_000);
    // Hold every buffer of the pool, as a flood that fills the rx ring
    // while nothing frees does.
    let pool = port.pool();
    let held: Vec<MemBuf> = std::iter::from_fn(|| pool.alloc()).collect();
    assert!(!held.is_empty());
    // Receive: nothing to put a frame in; the port counts it missed.
    let missed = port.rx_missed();
    assert!(!port.push_rx(&udp_frame(40000, 7, b"lost")));
    assert_eq!(port.rx_missed(), missed + 1);
    // Send with the pool empty: refused and counted, not a panic.
    let drops = iface.counters().total_dropped();
    let to = SocketAddrV4::new(PEER_IP, 9);
    for _ in 0..100 {
        let _ = iface.send_to(&mut port, now, socket, to, b"no room");
    }
    assert!(port.take_tx().is_empty(), "nothing could be sent");
    assert!(
        iface.counters().total_dropped() >= drops + 100,
        "each refused send counted"
    );
    // The pressure stops: everything works again and nothing leaked.
    drop(held);
    assert_eq!(port.buffers_in_use(), 0);
    assert!(port.push_rx(&udp_frame(40000, 7, b"back")));
    iface.poll(&mut port, now, &mut EchoBoth);
    assert_eq!(port.take_tx().len(), 1, "echoed");
    assert!(iface.send_to(&mut port, now, socket, to, b"sent").is_ok());
    assert_eq!(port.take_tx().len(), 1);
    assert_eq!(port.buffers_in_use(), 0);
}

/// The client side of the churn: closes each connection as soon as it is
/// up; counts opens and orderly ends.
#[derive(Default)]
struct Churner {
    connected: u64,
    closed: u64,
    failed: u64,
}

impl InlineHandler<MemBuf> for Churner {
    fn on_tcp<P: Port<Buf = MemBuf>>(
        &mut self,
        conn: ConnId,
        event: TcpEvent,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        match event {
            TcpEvent::Connected => {
                self.connected += 1;
                ctx.tcp_close(conn);
            }
            TcpEvent::Closed(None) => self.closed += 1,
            TcpEvent::Closed(Some(_)) => self.failed += 1,
            _ => {}
        }
    }
}

fn churn_host(mac: MacAddr, ip: Ipv4Addr) -> (Interface<MemBuf>, MemPort) {
    let mut config = InterfaceConfig::new(mac, Ipv4Cidr::new(ip, 24).unwrap());
    config.dad_transmits = 0;
    // TIME-WAIT of 100 ms instead of 60 s: the virtual clock moves 1 ms a
    // step, so 60 s would hold all 28,232 ephemeral ports after ~30,000
    // cycles and measure the port range, not the tables.
    config.tcp.time_wait = Duration::from_millis(100);
    config.tcp.send_buffer = 4096;
    config.tcp.recv_buffer = 4096;
    let iface = Interface::new(config).unwrap();
    let port = MemPort::new(MemPortConfig {
        mac,
        ..MemPortConfig::default()
    });
    (iface, port)
}

/// The issue asks for 1,000,000 cycles; a debug build does about 5,000 a
/// second on a busy two-core machine, so the churn stops at whichever
/// comes first of that count and [`churn_wall_limit`], and must have done
/// at least 20,000 (73,736 in 15 s when written, debug, 32 in flight).
const TCP_CHURN: u64 = 1_000_000;

/// The churn's wall-time limit: 15 s in the suite, or
/// `DPSTACK_SOAK_SECONDS` for a full run (docs/TESTING.md).
fn churn_wall_limit() -> std::time::Duration {
    let seconds = std::env::var("DPSTACK_SOAK_SECONDS")
        .ok()
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("DPSTACK_SOAK_SECONDS={v:?} is not a number of seconds"))
        })
        .unwrap_or(15);
    std::time::Duration::from_secs(seconds)
}

#[test]
fn tcp_connect_and_close_churn_between_two_stacks_leaves_no_growth() {
    let (mut server, mut server_port) = churn_host(OUR_MAC, OUR_IP);
    let (mut client, mut client_port) = churn_host(PEER_MAC, PEER_IP);
    server
        .tcp_listen(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 7), 64)
        .unwrap();
    let target = SocketAddrV4::new(OUR_IP, 7);
    let mut churner = Churner::default();
    let mut now = Instant::from_nanos(1_000_000);
    let wall = std::time::Instant::now();
    let mut started = 0u64;
    // Up to 32 connections in flight at once, as a client pool would.
    let limit = churn_wall_limit();
    while started < TCP_CHURN && wall.elapsed() < limit {
        while started - (churner.closed + churner.failed) < 32 {
            client
                .tcp_connect(core::slice::from_mut(&mut client_port), now, target)
                .unwrap_or_else(|e| panic!("connect {started}: {e:?}"));
            started += 1;
        }
        now = now + Duration::from_millis(1);
        client.poll(&mut client_port, now, &mut churner);
        client_port.deliver_to(&mut server_port);
        server.poll(&mut server_port, now, &mut EchoBoth);
        server_port.deliver_to(&mut client_port);
    }
    // Let the last ones finish and every TIME-WAIT expire.
    for _ in 0..1000 {
        now = now + Duration::from_millis(1);
        client.poll(&mut client_port, now, &mut churner);
        client_port.deliver_to(&mut server_port);
        server.poll(&mut server_port, now, &mut EchoBoth);
        server_port.deliver_to(&mut client_port);
    }
    eprintln!(
        "{started} connect/close cycles in {:.1} s",
        wall.elapsed().as_secs_f64()
    );
    assert!(started >= 20_000, "only {started} cycles");
    assert_eq!(churner.connected, started, "every connect completed");
    assert_eq!(churner.closed, started, "and ended in an orderly close");
    assert_eq!(churner.failed, 0);
    assert!(client.tcp_connections().is_empty(), "client table empty");
    assert!(server.tcp_connections().is_empty(), "server table empty");
    assert_eq!(server.tcp_listeners()[0].handshakes, 0);
    // TCP output keeps one buffer in hand per stack (`held_tx`).
    assert!(client_port.buffers_in_use() <= 1);
    assert!(server_port.buffers_in_use() <= 1);
}

/// A slow reader: 2,000 datagrams (31 times its queue of 64) arrive at a
/// queue-mode socket nobody reads; the queue holds its 64, the rest are
/// refused and counted, no more buffers than the queue's are held, and
/// once the application reads, the socket is served again.
#[test]
fn a_full_socket_queue_with_a_slow_reader_drops_counts_and_resumes() {
    const QUEUE: usize = 64;
    const SENT: usize = 2_000;
    let (mut iface, mut port) = stack_knowing_peer();
    let now = Instant::from_nanos(1_000_000);
    let handle = iface.handle(port.pool(), QUEUE);
    let binding = std::thread::spawn(move || handle.udp_bind(SocketAddrV4::new(OUR_IP, 7)));
    while !binding.is_finished() {
        iface.poll(&mut port, now, &mut DropDatagrams);
        std::thread::yield_now();
    }
    let socket = binding.join().unwrap().unwrap();
    let frames = (0..SENT).map(|i| udp_frame(40000, 7, &(i as u32).to_be_bytes()));
    let mut pending = 0;
    for frame in frames {
        assert!(port.push_rx(&frame));
        pending += 1;
        if pending == CHUNK {
            drain_with(&mut iface, &mut port, now);
            pending = 0;
        }
    }
    drain_with(&mut iface, &mut port, now);
    assert_eq!(socket.queued(), QUEUE, "the queue is full");
    let refused = iface.counters().dropped(DropReason::UdpQueueFull);
    assert_eq!(refused, (SENT - QUEUE) as u64, "the rest refused, counted");
    assert_eq!(socket.dropped(), refused);
    assert_eq!(port.buffers_in_use(), QUEUE, "only the queued ones held");
    // The reader catches up: the first 64 in order, then new traffic flows.
    let mut batch = Vec::new();
    let got = socket
        .recv_batch(&mut batch, QUEUE, Some(core::time::Duration::ZERO))
        .unwrap();
    assert_eq!(got, QUEUE);
    assert_eq!(batch[0].payload(), 0u32.to_be_bytes());
    assert_eq!(batch[QUEUE - 1].payload(), (QUEUE as u32 - 1).to_be_bytes());
    drop(batch);
    assert_eq!(port.buffers_in_use(), 0, "read buffers returned");
    port.push_rx(&udp_frame(40000, 7, b"after"));
    drain_with(&mut iface, &mut port, now);
    let mut one = Vec::new();
    socket
        .recv_batch(&mut one, 1, Some(core::time::Duration::ZERO))
        .unwrap();
    assert_eq!(one[0].payload(), b"after");
    assert_eq!(iface.counters().dropped(DropReason::UdpQueueFull), refused);
}

/// [`drain`] for a queue-mode stack (nothing answers inline).
fn drain_with(iface: &mut Interface<MemBuf>, port: &mut MemPort, now: Instant) {
    for _ in 0..=port.rx_pending() {
        iface.poll(port, now, &mut DropDatagrams);
        port.take_tx();
        if port.rx_pending() == 0 {
            return;
        }
    }
    panic!("{} frames still queued", port.rx_pending());
}
