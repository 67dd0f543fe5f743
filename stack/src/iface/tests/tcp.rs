//! TCP through the whole stack: two interfaces wired together through
//! their in-memory ports, a listener echoing on one, a client on the other;
//! transfers compared byte for byte, with and without seeded loss,
//! duplication, reordering and ECN marks on the wire; refusal by a closed
//! port.

use super::*;
use crate::tcp::{EcnMode, TcpError};
use crate::wire::ipv6::Ipv6Packet;

/// Echoes whatever arrives, as far as the send buffer takes it; closes
/// after the peer did.
pub(super) struct EchoTcp;

impl InlineHandler<MemBuf> for EchoTcp {
    fn on_tcp<P: Port<Buf = MemBuf>>(
        &mut self,
        conn: ConnId,
        event: TcpEvent,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        if !matches!(event, TcpEvent::Accepted(_) | TcpEvent::Readable) {
            return;
        }
        let mut buf = [0u8; 8192];
        loop {
            let (room, ready) = ctx.tcp_room(conn);
            let n = room.min(ready).min(buf.len());
            if n == 0 {
                break;
            }
            let got = ctx.tcp_recv(conn, &mut buf[..n]).unwrap();
            assert_eq!(ctx.tcp_send(conn, &buf[..got]), Ok(got));
        }
        if ctx.tcp_at_eof(conn) {
            ctx.tcp_close(conn);
        }
    }
}

/// Sends `data`, reads the echo, closes once everything went out.
#[derive(Default)]
pub(super) struct Client {
    pub(super) data: Vec<u8>,
    pub(super) sent: usize,
    pub(super) got: Vec<u8>,
    pub(super) connected: bool,
    pub(super) closed: Option<Option<TcpError>>,
}

impl Client {
    fn pump<P: Port<Buf = MemBuf>>(&mut self, conn: ConnId, ctx: &mut LcoreContext<'_, P>) {
        let mut buf = [0u8; 8192];
        loop {
            let n = ctx.tcp_recv(conn, &mut buf).unwrap_or(0);
            if n == 0 {
                break;
            }
            self.got.extend_from_slice(&buf[..n]);
        }
        if self.sent < self.data.len() {
            if let Ok(n) = ctx.tcp_send(conn, &self.data[self.sent..]) {
                self.sent += n;
                if self.sent == self.data.len() {
                    ctx.tcp_close(conn);
                }
            }
        }
    }
}

impl InlineHandler<MemBuf> for Client {
    fn on_tcp<P: Port<Buf = MemBuf>>(
        &mut self,
        conn: ConnId,
        event: TcpEvent,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        match event {
            TcpEvent::Connected => {
                self.connected = true;
                self.pump(conn, ctx);
            }
            TcpEvent::Readable => self.pump(conn, ctx),
            TcpEvent::Closed(error) => self.closed = Some(error),
            TcpEvent::Accepted(_) => {}
        }
    }
}

/// Seeded faults on the wire.
#[derive(Clone, Copy, Default)]
struct Faults {
    /// Per mille of frames dropped, duplicated, held back one step.
    drop: u32,
    duplicate: u32,
    reorder: u32,
    /// Per mille of ECN-capable (ECT) frames marked CE, as a router's AQM
    /// would instead of dropping them (rolled apart from the others).
    ce: u32,
}

/// Marks `frame` CE (congestion experienced) if it is ECN-capable.
fn mark_ce(frame: &mut [u8]) {
    match frame.get(12..14) {
        Some([0x08, 0x00]) => {
            let mut ip = Ipv4Packet::new_unchecked(&mut frame[14..]);
            if ip.tos() & 3 != 0 {
                ip.set_tos(ip.tos() | 3);
            }
        }
        Some([0x86, 0xdd]) => {
            let mut ip = Ipv6Packet::new_unchecked(&mut frame[14..]);
            if ip.traffic_class() & 3 != 0 {
                ip.set_traffic_class(ip.traffic_class() | 3);
            }
        }
        _ => {}
    }
}

struct Wire {
    rng: u64,
    faults: Faults,
    held: Vec<Vec<u8>>,
    dropped: usize,
}

impl Wire {
    fn roll(&mut self) -> u32 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng % 1000) as u32
    }

    /// Moves what `from` sent into `to`, through the faults.
    fn carry(&mut self, from: &mut MemPort, to: &mut MemPort) {
        for frame in std::mem::take(&mut self.held) {
            to.push_rx(&frame);
        }
        for mut frame in from.take_tx() {
            if self.faults.ce > 0 && self.roll() < self.faults.ce {
                mark_ce(&mut frame);
            }
            let roll = self.roll();
            let f = self.faults;
            if roll < f.drop {
                self.dropped += 1;
                continue;
            }
            if roll < f.drop + f.duplicate {
                to.push_rx(&frame);
            }
            if roll >= f.drop + f.duplicate && roll < f.drop + f.duplicate + f.reorder {
                self.held.push(frame);
                continue;
            }
            to.push_rx(&frame);
        }
    }
}

pub(super) fn host(mac: MacAddr, ip: Ipv4Addr, ip6: &str) -> (Interface<MemBuf>, MemPort) {
    host_with(mac, ip, ip6, Knobs::default())
}

/// What the echo tests vary in both stacks' TCP configuration.
#[derive(Debug, Clone, Copy)]
struct Knobs {
    sack: bool,
    pacing: bool,
    ecn: EcnMode,
    /// Send and receive buffer bytes.
    buffer: usize,
}

impl Default for Knobs {
    fn default() -> Knobs {
        Knobs {
            sack: true,
            pacing: false,
            ecn: EcnMode::Accept,
            buffer: 32 * 1024,
        }
    }
}

/// [`host`], configured by `knobs`.
fn host_with(mac: MacAddr, ip: Ipv4Addr, ip6: &str, knobs: Knobs) -> (Interface<MemBuf>, MemPort) {
    let mut link = LinkConfig::new(mac, Ipv4Cidr::new(ip, 24).unwrap());
    link.addresses6
        .push(crate::route::Ipv6Cidr::new(ip6.parse().unwrap(), 64).unwrap());
    let mut config = InterfaceConfig::with_links(vec![link]);
    config.dad_transmits = 0;
    config.tcp.send_buffer = knobs.buffer;
    config.tcp.recv_buffer = knobs.buffer;
    config.tcp.sack = knobs.sack;
    config.tcp.pacing = knobs.pacing;
    config.tcp.ecn = knobs.ecn;
    let iface = Interface::new(config).unwrap();
    let port = MemPort::new(MemPortConfig {
        mac,
        ..MemPortConfig::default()
    });
    (iface, port)
}

/// Echoes `len` bytes from a client on one stack through a server on the
/// other, to `server_addr` (port 7), through `faults`; returns the client
/// and how many frames the wire dropped.
/// Echoes `len` bytes from a client through a server over a faulty wire;
/// the client, the frames the wire dropped, and both sides' retransmission
/// timeouts.
fn echo_through(len: usize, server_addr: &str, faults: Faults, seed: u64) -> (Client, usize, u64) {
    let (client, dropped, stats) = echo_counting(len, server_addr, faults, seed, Knobs::default());
    (client, dropped, stats[0])
}

/// [`echo_through`] with both stacks configured by `knobs`; the stats are
/// both sides' sums of [`COUNTED`].
fn echo_counting(
    len: usize,
    server_addr: &str,
    faults: Faults,
    seed: u64,
    knobs: Knobs,
) -> (Client, usize, [u64; COUNTED.len()]) {
    let (mut server, mut server_port) = host_with(OUR_MAC, OUR_IP, "2001:db8::1", knobs);
    let (mut client, mut client_port) = host_with(PEER_MAC, PEER_IP, "2001:db8::2", knobs);
    server
        .tcp_listen("[::]:7".parse::<SocketAddr>().unwrap(), 16)
        .unwrap();
    let mut wire = Wire {
        rng: seed | 1,
        faults,
        held: Vec::new(),
        dropped: 0,
    };
    let mut handler = Client {
        data: (0..len).map(|i| (i * 31 % 251) as u8).collect(),
        ..Client::default()
    };
    let mut now = Instant::ZERO;
    let target: SocketAddr = server_addr.parse().unwrap();
    client
        .tcp_connect(core::slice::from_mut(&mut client_port), now, target)
        .unwrap();
    for _ in 0..200_000 {
        now = now + Duration::from_millis(1);
        server.poll(&mut server_port, now, &mut EchoTcp);
        wire.carry(&mut server_port, &mut client_port);
        client.poll(&mut client_port, now, &mut handler);
        wire.carry(&mut client_port, &mut server_port);
        if handler.closed.is_some() {
            break;
        }
    }
    let stats = COUNTED.map(|stat| {
        [&server, &client]
            .iter()
            .map(|i| i.counters().get(stat))
            .sum()
    });
    (handler, wire.dropped, stats)
}

/// The counters [`echo_counting`] reports, in this order.
const COUNTED: [Stat; 7] = [
    Stat::TcpRetransTimeouts,
    Stat::TcpSackRecovery,
    Stat::TcpRenoRecovery,
    Stat::TcpFastRetrans,
    Stat::TcpPacingWaits,
    Stat::TcpInCE,
    Stat::TcpEceReductions,
];

#[test]
fn data_is_echoed_intact_over_ipv4_and_ipv6() {
    for server in ["10.0.0.1:7", "[2001:db8::1]:7"] {
        let (client, _, timeouts) = echo_through(200_000, server, Faults::default(), 1);
        assert_eq!(timeouts, 0, "{server}: nothing lost, no timeout");
        assert!(client.connected, "{server}");
        assert_eq!(client.got.len(), client.data.len(), "{server}");
        assert!(client.got == client.data, "{server}: the echo differs");
        assert_eq!(client.closed, Some(None), "{server}: an orderly close");
    }
}

#[test]
fn a_client_asking_for_ecn_gets_marks_instead_of_losses_both_ways() {
    // The wire marks a fortieth of ECN-capable frames CE, as a router's
    // AQM would. The client asks for ECN, the server agrees (its default):
    // both sides' data goes ECT, marks are echoed and answered, and
    // nothing is lost or resent.
    let marking = Faults {
        ce: 25,
        ..Faults::default()
    };
    for server in ["10.0.0.1:7", "[2001:db8::1]:7"] {
        let knobs = Knobs {
            ecn: EcnMode::Request,
            ..Knobs::default()
        };
        let (client, _, stats) = echo_counting(1 << 20, server, marking, 3, knobs);
        assert!(client.got == client.data, "{server}: the echo differs");
        assert_eq!(client.closed, Some(None), "{server}: an orderly close");
        let [timeouts, sack, reno, fast, _, ce, reductions] = stats;
        assert_eq!((timeouts, sack, reno, fast), (0, 0, 0, 0), "{server}");
        assert!(ce >= 10, "{server}: {ce} CE marks received");
        assert!(
            (1..=ce).contains(&reductions),
            "{server}: {reductions} reductions for {ce} marks"
        );
        // The same wire, nobody asking: nothing is ECN-capable, so nothing
        // is marked.
        let (client, _, stats) = echo_counting(1 << 20, server, marking, 3, Knobs::default());
        assert!(client.got == client.data, "{server}: the echo differs");
        assert_eq!(stats[5..], [0, 0], "{server}: no ECN, no marks");
    }
}

#[test]
fn paced_connections_are_released_by_the_poll_and_echo_intact() {
    // Buffers larger than the pacer's burst, so that pacing holds
    // segments. Each poll releases the connections whose time has come;
    // one that was never released would never be held (and counted)
    // again, and would send only when an ACK came.
    for (server, faults) in [
        ("10.0.0.1:7", Faults::default()),
        (
            "[2001:db8::1]:7",
            Faults {
                drop: 10,
                ..Faults::default()
            },
        ),
    ] {
        let knobs = Knobs {
            pacing: true,
            buffer: 1 << 20,
            ..Knobs::default()
        };
        let (client, _, stats) = echo_counting(4 << 20, server, faults, 5, knobs);
        assert!(client.got == client.data, "{server}: the echo differs");
        assert_eq!(client.closed, Some(None), "{server}: an orderly close");
        // Loss keeps the window near the burst, so pacing holds less.
        let least = if faults.drop == 0 { 20 } else { 1 };
        assert!(
            stats[4] >= least,
            "{server}: pacing held segments {} times",
            stats[4]
        );
        if faults.drop == 0 {
            assert_eq!(stats[0], 0, "{server}: no timeout on a clean wire");
        }
    }
}

#[test]
fn data_survives_seeded_loss_duplication_and_reordering() {
    let faults = Faults {
        drop: 50,
        duplicate: 20,
        reorder: 50,
        ..Faults::default()
    };
    let mut timeouts = 0;
    for seed in [7, 8, 9] {
        let (client, dropped, seed_timeouts) = echo_through(100_000, "10.0.0.1:7", faults, seed);
        timeouts += seed_timeouts;
        assert!(
            dropped > 5,
            "seed {seed}: the wire dropped {dropped} frames"
        );
        assert!(
            client.got == client.data,
            "seed {seed}: {} of {} bytes back",
            client.got.len(),
            client.data.len()
        );
        assert_eq!(client.closed, Some(None), "seed {seed}");
    }
    assert!(timeouts > 0, "some losses were recovered by a timeout");
}

#[test]
fn sack_recovers_megabytes_through_random_loss_with_fewer_timeouts() {
    // 2% of frames lost each way (data and ACKs), 4 MB echoed: with SACK
    // the holes are retransmitted in recovery, without it NewReno repairs
    // one hole per round trip and falls back on the timer more often.
    let faults = Faults {
        drop: 20,
        ..Faults::default()
    };
    let len = 4 << 20;
    let mut totals = [[0u64; COUNTED.len()]; 2];
    for seed in [3, 4] {
        for (sack, total) in [true, false].into_iter().zip(&mut totals) {
            let knobs = Knobs {
                sack,
                ..Knobs::default()
            };
            let (client, dropped, stats) = echo_counting(len, "10.0.0.1:7", faults, seed, knobs);
            assert!(dropped > 100, "seed {seed}: the wire dropped {dropped}");
            assert!(
                client.got == client.data,
                "seed {seed}, sack {sack}: {} of {} bytes back",
                client.got.len(),
                client.data.len()
            );
            assert_eq!(client.closed, Some(None), "seed {seed}, sack {sack}");
            for (t, s) in total.iter_mut().zip(stats) {
                *t += s;
            }
        }
    }
    let [with, without] = totals;
    eprintln!("timeouts, SACK recoveries, Reno recoveries, fast retransmits");
    eprintln!("with SACK {with:?}, without {without:?}");
    assert!(with[1] > 0, "SACK recovery happened");
    assert_eq!(with[2], 0, "no NewReno recovery with SACK");
    assert_eq!(without[1], 0, "no SACK recovery without it");
    assert!(
        with[0] < without[0],
        "fewer timeouts with SACK: {} against {}",
        with[0],
        without[0]
    );
}

#[test]
fn a_closed_port_refuses_the_connection() {
    let (mut server, mut server_port) = host(OUR_MAC, OUR_IP, "2001:db8::1");
    let (mut client, mut client_port) = host(PEER_MAC, PEER_IP, "2001:db8::2");
    let mut wire = Wire {
        rng: 1,
        faults: Faults::default(),
        held: Vec::new(),
        dropped: 0,
    };
    let mut handler = Client::default();
    let mut now = Instant::ZERO;
    client
        .tcp_connect(
            core::slice::from_mut(&mut client_port),
            now,
            "10.0.0.1:9".parse::<SocketAddr>().unwrap(),
        )
        .unwrap();
    for _ in 0..100 {
        now = now + Duration::from_millis(1);
        server.poll(&mut server_port, now, &mut EchoTcp);
        wire.carry(&mut server_port, &mut client_port);
        client.poll(&mut client_port, now, &mut handler);
        wire.carry(&mut client_port, &mut server_port);
    }
    assert_eq!(handler.closed, Some(Some(TcpError::Refused)));
    assert_eq!(server.counters().dropped(DropReason::TcpNoSocket), 1);
    assert_eq!(server.counters().get(Stat::TcpOutRsts), 1);
}

/// Runs short transactions one after another (connect, 10 bytes each way,
/// close) and counts those that completed.
#[derive(Default)]
struct Transactions {
    done: usize,
    failed: usize,
    current: Option<(ConnId, usize)>,
}

impl InlineHandler<MemBuf> for Transactions {
    fn on_tcp<P: Port<Buf = MemBuf>>(
        &mut self,
        conn: ConnId,
        event: TcpEvent,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        match event {
            TcpEvent::Connected => {
                ctx.tcp_send(conn, b"0123456789").unwrap();
                self.current = Some((conn, 0));
            }
            TcpEvent::Readable => {
                let mut buf = [0u8; 64];
                let n = ctx.tcp_recv(conn, &mut buf).unwrap_or(0);
                if let Some((c, got)) = self.current.as_mut().filter(|(c, _)| *c == conn) {
                    *got += n;
                    if *got >= 10 {
                        let c = *c;
                        ctx.tcp_close(c);
                        self.done += 1;
                        self.current = None;
                        if self.done < 20 {
                            match ctx.tcp_connect("10.0.0.1:7".parse::<SocketAddr>().unwrap()) {
                                Ok(_) => {}
                                Err(_) => self.failed += 1,
                            }
                        }
                    }
                }
            }
            TcpEvent::Closed(Some(_)) => self.failed += 1,
            _ => {}
        }
    }
}

#[test]
fn time_wait_four_tuples_are_reused_by_new_connects() {
    // Two local ports for twenty connections to one server: every connect
    // after the second takes over a 4-tuple still in TIME-WAIT (its ISN
    // lies beyond everything the old connection sent).
    let (mut server, mut server_port) = host(OUR_MAC, OUR_IP, "2001:db8::1");
    let (mut client, mut client_port) = {
        let mut link = LinkConfig::new(PEER_MAC, Ipv4Cidr::new(PEER_IP, 24).unwrap());
        link.ipv6 = false;
        let mut config = InterfaceConfig::with_links(vec![link]);
        config.tcp.ephemeral_ports = (40000, 40001);
        let port = MemPort::new(MemPortConfig {
            mac: PEER_MAC,
            ..MemPortConfig::default()
        });
        (Interface::<MemBuf>::new(config).unwrap(), port)
    };
    server
        .tcp_listen("0.0.0.0:7".parse::<SocketAddr>().unwrap(), 16)
        .unwrap();
    let mut wire = Wire {
        rng: 1,
        faults: Faults::default(),
        held: Vec::new(),
        dropped: 0,
    };
    let mut handler = Transactions::default();
    let mut now = Instant::ZERO;
    client
        .tcp_connect(
            core::slice::from_mut(&mut client_port),
            now,
            "10.0.0.1:7".parse::<SocketAddr>().unwrap(),
        )
        .unwrap();
    for _ in 0..2000 {
        now = now + Duration::from_millis(1);
        server.poll(&mut server_port, now, &mut EchoTcp);
        wire.carry(&mut server_port, &mut client_port);
        client.poll(&mut client_port, now, &mut handler);
        wire.carry(&mut client_port, &mut server_port);
        if handler.done == 20 {
            break;
        }
    }
    assert_eq!((handler.done, handler.failed), (20, 0));
}

/// Server side of the reuseport test: which listener accepted each
/// connection.
#[derive(Default)]
struct AcceptLog(Vec<ListenerId>);

impl InlineHandler<MemBuf> for AcceptLog {
    fn on_tcp<P: Port<Buf = MemBuf>>(
        &mut self,
        conn: ConnId,
        event: TcpEvent,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        match event {
            TcpEvent::Accepted(listener) => self.0.push(listener),
            TcpEvent::Readable if ctx.tcp_at_eof(conn) => ctx.tcp_close(conn),
            _ => {}
        }
    }
}

/// Client side: connections that opened (closed at once) and refused.
#[derive(Default)]
struct Opener {
    opened: usize,
    refused: usize,
}

impl InlineHandler<MemBuf> for Opener {
    fn on_tcp<P: Port<Buf = MemBuf>>(
        &mut self,
        conn: ConnId,
        event: TcpEvent,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        match event {
            TcpEvent::Connected => {
                self.opened += 1;
                ctx.tcp_close(conn);
            }
            TcpEvent::Closed(Some(TcpError::Refused)) => self.refused += 1,
            _ => {}
        }
    }
}

/// Opens `count` connections from `client` to 10.0.0.1:7 and runs both
/// stacks until they settle.
fn open_many(
    server: (&mut Interface<MemBuf>, &mut MemPort),
    client: (&mut Interface<MemBuf>, &mut MemPort),
    now: &mut Instant,
    count: usize,
    log: &mut AcceptLog,
) -> Opener {
    let target: SocketAddr = "10.0.0.1:7".parse().unwrap();
    open_many_to(target, server, client, now, (count, log))
}

/// [`open_many`] to `target`.
fn open_many_to(
    target: SocketAddr,
    (server, server_port): (&mut Interface<MemBuf>, &mut MemPort),
    (client, client_port): (&mut Interface<MemBuf>, &mut MemPort),
    now: &mut Instant,
    (count, log): (usize, &mut AcceptLog),
) -> Opener {
    let mut opener = Opener::default();
    for _ in 0..count {
        client
            .tcp_connect(core::slice::from_mut(client_port), *now, target)
            .unwrap();
    }
    // Long enough for SYNs held back by address resolution to be sent again.
    for _ in 0..1500 {
        *now = *now + Duration::from_millis(1);
        server.poll(server_port, *now, log);
        for frame in server_port.take_tx() {
            client_port.push_rx(&frame);
        }
        client.poll(client_port, *now, &mut opener);
        for frame in client_port.take_tx() {
            server_port.push_rx(&frame);
        }
    }
    opener
}

#[test]
fn inline_reuseport_members_share_connections_and_close_alone() {
    let (mut server, mut server_port) = host(OUR_MAC, OUR_IP, "2001:db8::1");
    let (mut client, mut client_port) = host(PEER_MAC, PEER_IP, "2001:db8::2");
    let local: SocketAddr = "10.0.0.1:7".parse().unwrap();
    let a = server.tcp_listen_reuseport(local, 64).unwrap();
    let b = server.tcp_listen_reuseport(local, 64).unwrap();
    assert_ne!(a, b);
    // A plain listener does not join a group.
    assert_eq!(server.tcp_listen(local, 8), Err(ListenError::AddrInUse));
    let mut now = Instant::ZERO;
    let mut log = AcceptLog::default();
    let opened = open_many(
        (&mut server, &mut server_port),
        (&mut client, &mut client_port),
        &mut now,
        24,
        &mut log,
    );
    assert_eq!(opened.opened, 24);
    let to_a = log.0.iter().filter(|&&l| l == a).count();
    let to_b = log.0.iter().filter(|&&l| l == b).count();
    assert_eq!(to_a + to_b, 24, "{:?}", log.0);
    assert!(
        to_a > 0 && to_b > 0,
        "the flow hash used one member: {to_a}/{to_b}"
    );

    // Without a, every connection meets b.
    assert!(server.tcp_unlisten(a));
    assert!(!server.tcp_unlisten(a), "closed twice");
    let mut log = AcceptLog::default();
    let opened = open_many(
        (&mut server, &mut server_port),
        (&mut client, &mut client_port),
        &mut now,
        8,
        &mut log,
    );
    assert_eq!(opened.opened, 8);
    assert!(log.0.iter().all(|&l| l == b), "{:?}", log.0);

    // A new listener may take a's place, under a new id.
    let c = server
        .tcp_listen("10.0.0.1:9".parse::<SocketAddr>().unwrap(), 8)
        .unwrap();
    assert_ne!(c, a);
    assert!(!server.tcp_unlisten(a), "a stale id closed its successor");

    // Without either member, the port refuses.
    assert!(server.tcp_unlisten(b));
    let mut log = AcceptLog::default();
    let opened = open_many(
        (&mut server, &mut server_port),
        (&mut client, &mut client_port),
        &mut now,
        3,
        &mut log,
    );
    assert_eq!((opened.opened, opened.refused), (0, 3));
    assert!(log.0.is_empty());
}

/// Counts Readable events; reads everything each time, never closes.
#[derive(Default)]
struct ReadableCounter {
    events: usize,
    bytes: usize,
}

impl InlineHandler<MemBuf> for ReadableCounter {
    fn on_tcp<P: Port<Buf = MemBuf>>(
        &mut self,
        conn: ConnId,
        event: TcpEvent,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        if event == TcpEvent::Readable {
            self.events += 1;
            let mut buf = [0u8; 64];
            while let Ok(n @ 1..) = ctx.tcp_recv(conn, &mut buf) {
                self.bytes += n;
            }
        }
    }
}

#[test]
fn a_read_at_the_end_of_the_stream_does_not_wake_the_handler_again() {
    let (mut server, mut server_port) = host(OUR_MAC, OUR_IP, "2001:db8::1");
    let (mut client, mut client_port) = host(PEER_MAC, PEER_IP, "2001:db8::2");
    server
        .tcp_listen("10.0.0.1:7".parse::<SocketAddr>().unwrap(), 8)
        .unwrap();
    let mut counter = ReadableCounter::default();
    let mut sender = Client {
        data: b"0123456789".to_vec(),
        ..Client::default()
    };
    let mut now = Instant::ZERO;
    client
        .tcp_connect(
            core::slice::from_mut(&mut client_port),
            now,
            "10.0.0.1:7".parse::<SocketAddr>().unwrap(),
        )
        .unwrap();
    for _ in 0..2000 {
        now = now + Duration::from_millis(1);
        server.poll(&mut server_port, now, &mut counter);
        for frame in server_port.take_tx() {
            client_port.push_rx(&frame);
        }
        client.poll(&mut client_port, now, &mut sender);
        for frame in client_port.take_tx() {
            server_port.push_rx(&frame);
        }
    }
    assert_eq!(counter.bytes, 10);
    // At most one per segment that arrived (the handshake's ACK, the data,
    // the FIN): not one per poll (17,899 before the fix).
    assert!(counter.events <= 6, "{} Readable events", counter.events);
}

/// A stack and its port.
type Host = (Interface<MemBuf>, MemPort);

/// Opens three connections to `target` from `client` to `server`; the
/// listeners that accepted them.
fn accepted_by(
    target: &str,
    (server, client): (&mut Host, &mut Host),
    now: &mut Instant,
) -> Vec<ListenerId> {
    let mut log = AcceptLog::default();
    let target = target.parse().unwrap();
    let server = (&mut server.0, &mut server.1);
    let client = (&mut client.0, &mut client.1);
    let opened = open_many_to(target, server, client, now, (3, &mut log));
    assert_eq!(opened.opened, 3, "{target}");
    log.0
}

#[test]
fn a_v6_only_listener_leaves_ipv4_to_an_ipv4_one_and_overlaps_are_refused() {
    let mut server = host(OUR_MAC, OUR_IP, "2001:db8::1");
    let mut client = host(PEER_MAC, PEER_IP, "2001:db8::2");
    let at = |s: &str| s.parse::<SocketAddr>().unwrap();
    // A dual-stack [::] hears IPv4 too: 0.0.0.0 and our IPv4 address
    // collide with it, as in Linux.
    let iface = &mut server.0;
    let dual = iface.tcp_listen(at("[::]:7"), 8).unwrap();
    assert_eq!(
        iface.tcp_listen(at("0.0.0.0:7"), 8),
        Err(ListenError::AddrInUse)
    );
    assert_eq!(
        iface.tcp_listen(at("10.0.0.1:7"), 8),
        Err(ListenError::AddrInUse)
    );
    assert!(iface.tcp_unlisten(dual));
    let v6_only = ListenOptions {
        v6_only: true,
        ..ListenOptions::default()
    };
    let six = iface.tcp_listen_with(at("[::]:7"), 8, v6_only).unwrap();
    let four = iface.tcp_listen(at("0.0.0.0:7"), 8).unwrap();
    let mut now = Instant::ZERO;
    let pair = (&mut server, &mut client);
    assert_eq!(accepted_by("10.0.0.1:7", pair, &mut now), [four; 3]);
    let pair = (&mut server, &mut client);
    assert_eq!(accepted_by("[2001:db8::1]:7", pair, &mut now), [six; 3]);
    // Alone, the v6-only listener leaves IPv4 refused.
    assert!(server.0.tcp_unlisten(four));
    let mut log = AcceptLog::default();
    let (s, c) = (&mut server, &mut client);
    let target = at("10.0.0.1:7");
    let opened = open_many_to(
        target,
        (&mut s.0, &mut s.1),
        (&mut c.0, &mut c.1),
        &mut now,
        (3, &mut log),
    );
    assert_eq!((opened.opened, opened.refused), (0, 3));
    // An IPv4-mapped listener hears IPv4 to its address, before 0.0.0.0
    // (both share by SO_REUSEPORT to coexist); never with IPV6_V6ONLY.
    let iface = &mut server.0;
    let mapped = at("[::ffff:10.0.0.1]:9");
    assert_eq!(
        iface.tcp_listen_with(mapped, 8, v6_only),
        Err(ListenError::AddrNotAvailable)
    );
    let shared = ListenOptions {
        reuse_port: true,
        ..ListenOptions::default()
    };
    iface.tcp_listen_with(at("0.0.0.0:9"), 8, shared).unwrap();
    assert_eq!(iface.tcp_listen(mapped, 8), Err(ListenError::AddrInUse));
    let m = iface.tcp_listen_with(mapped, 8, shared).unwrap();
    let pair = (&mut server, &mut client);
    assert_eq!(accepted_by("10.0.0.1:9", pair, &mut now), [m; 3]);
}
