//! TCP input segment by segment through the whole receive path: a peer
//! written by hand against a listener, so each test states the segments in
//! and out. Every segment a connection refuses counts one drop reason (and
//! a challenge ACK where one answers it); checksums follow
//! `ChecksumPolicy` exactly as those of UDP over IPv4 do.

use super::ipv6::{GLOBAL, PEER6};
use super::*;
use crate::port::{ChecksumStatus, RxOffload};
use crate::tcp::State;
use crate::wire::checksum::pseudo_header_v4;
use crate::wire::ipv6::{next_header, pseudo_header, Ipv6Header, Ipv6Packet};
use crate::wire::tcp::{flags, TcpOptions, TcpPacket, TcpRepr};
use core::net::IpAddr;

pub(super) const PORT: u16 = 7;
pub(super) const PEER_PORT: u16 = 40000;
/// The peer's initial sequence number.
const PEER_ISN: u32 = 1000;
/// The window the peer advertises (no scaling).
const PEER_WINDOW: u16 = 8000;
/// The peer's timestamp clock at its SYN.
const PEER_TS: u32 = 5000;

/// A frame carrying the peer's segment `repr` + `payload` from `src` to
/// `dst`, its checksum right.
pub(super) fn tcp_frame(src: IpAddr, dst: IpAddr, repr: &TcpRepr, payload: &[u8]) -> Vec<u8> {
    let header_len = repr.header_len();
    let mut segment = vec![0u8; header_len + payload.len()];
    repr.emit(&mut segment[..header_len]);
    segment[header_len..].copy_from_slice(payload);
    let len = segment.len();
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let pseudo = pseudo_header_v4(s, d, protocol::TCP, len as u16);
            TcpPacket::new_unchecked(&mut segment[..]).fill_checksum(pseudo);
            ethernet(
                OUR_MAC,
                PEER_MAC,
                EtherType::Ipv4,
                &ipv4(s, d, protocol::TCP, &segment),
            )
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            let pseudo = pseudo_header(s, d, next_header::TCP, len as u32);
            TcpPacket::new_unchecked(&mut segment[..]).fill_checksum(pseudo);
            let mut packet = vec![0u8; 40 + len];
            Ipv6Packet::new_unchecked(&mut packet[..]).emit_header(&Ipv6Header {
                src: s,
                dst: d,
                next_header: next_header::TCP,
                payload_len: len as u16,
                hop_limit: 64,
            });
            packet[40..].copy_from_slice(&segment);
            ethernet(OUR_MAC, PEER_MAC, EtherType::Ipv6, &packet)
        }
        _ => unreachable!("one family"),
    }
}

/// The TCP headers of the IPv4 segments the stack sent.
fn sent(port: &mut MemPort) -> Vec<TcpRepr> {
    port.take_tx()
        .iter()
        .filter_map(|frame| {
            let ip = Ipv4Packet::new_checked(&frame[14..]).ok()?;
            if ip.protocol() != protocol::TCP {
                return None;
            }
            let tcp = TcpPacket::new_checked(&frame[14 + ip.header_len()..]).ok()?;
            Some(TcpRepr::parse(&tcp).expect("our segments parse"))
        })
        .collect()
}

/// The peer: its side of one connection to our port 7 over IPv4, with
/// timestamps (so PAWS applies) and no window scaling.
pub(super) struct Peer {
    pub(super) iface: Interface<MemBuf>,
    pub(super) port: MemPort,
    /// Our ISN, from the SYN-ACK.
    pub(super) iss: u32,
    /// The peer's next sequence number (our RCV.NXT).
    pub(super) next: u32,
    /// Our last timestamp value, which the peer echoes.
    pub(super) echo: u32,
    /// The time of the stack's polls.
    pub(super) now: Instant,
}

impl Peer {
    /// A stack listening on our address and [`PORT`] with `backlog`, and
    /// the peer it knows, before any segment.
    pub(super) fn listening(backlog: usize) -> Peer {
        let (mut iface, port) = stack_knowing_peer();
        iface
            .tcp_listen(SocketAddrV4::new(OUR_IP, PORT), backlog)
            .unwrap();
        Peer::on(iface, port)
    }

    /// The peer of `iface` over `port`, before any segment, at 1 ms.
    pub(super) fn on(iface: Interface<MemBuf>, port: MemPort) -> Peer {
        Peer {
            iface,
            port,
            iss: 0,
            next: PEER_ISN,
            echo: 0,
            now: Instant::from_nanos(1_000_000),
        }
    }

    /// `0 < S 1000:1000(0) win 8000 <mss 1460,TS val 5000 ecr 0>`, then
    /// `0 > S. iss:iss(0) ack 1001`: the connection in SYN-RECEIVED.
    pub(super) fn syn_received() -> Peer {
        let mut peer = Peer::listening(8);
        let syn = TcpRepr {
            flags: flags::SYN,
            options: TcpOptions {
                mss: Some(1460),
                timestamps: Some((PEER_TS, 0)),
                ..TcpOptions::default()
            },
            ..peer.repr(0)
        };
        let out = peer.send(&syn, &[]);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].flags, flags::SYN | flags::ACK);
        assert_eq!(out[0].ack, PEER_ISN + 1);
        peer.iss = out[0].seq;
        peer.echo = out[0].options.timestamps.expect("timestamps agreed").0;
        peer.next = PEER_ISN + 1;
        assert_eq!(peer.state(), State::SynReceived);
        peer
    }

    /// [`Peer::syn_received`], then `0 < . 1001:1001(0) ack iss+1`:
    /// ESTABLISHED, with nothing dropped on the way.
    fn established() -> Peer {
        let mut peer = Peer::syn_received();
        let ack = peer.repr(flags::ACK);
        assert!(peer.send(&ack, &[]).is_empty());
        assert_eq!(peer.state(), State::Established);
        assert_eq!(peer.iface.counters().total_dropped(), 0);
        peer
    }

    /// A segment at the peer's next sequence number, acknowledging our SYN,
    /// with `bits` and a current timestamp.
    pub(super) fn repr(&self, bits: u8) -> TcpRepr {
        TcpRepr {
            src_port: PEER_PORT,
            dst_port: PORT,
            seq: self.next,
            ack: self.iss.wrapping_add(1),
            flags: bits,
            window: PEER_WINDOW,
            options: TcpOptions {
                timestamps: Some((PEER_TS + 1, self.echo)),
                ..TcpOptions::default()
            },
        }
    }

    /// Sends one segment; what the stack answered.
    fn send(&mut self, repr: &TcpRepr, payload: &[u8]) -> Vec<TcpRepr> {
        self.send_to(repr, payload, &mut DropDatagrams)
    }

    /// [`Peer::send`], with `handler` serving the stack's connections.
    pub(super) fn send_to<H: InlineHandler<MemBuf>>(
        &mut self,
        repr: &TcpRepr,
        payload: &[u8],
        handler: &mut H,
    ) -> Vec<TcpRepr> {
        let frame = tcp_frame(IpAddr::V4(PEER_IP), IpAddr::V4(OUR_IP), repr, payload);
        self.port.push_rx(&frame);
        self.iface.poll(&mut self.port, self.now, handler);
        sent(&mut self.port)
    }

    pub(super) fn state(&self) -> State {
        let connections = self.iface.tcp_connections();
        assert_eq!(connections.len(), 1);
        connections[0].state
    }

    fn drops(&self) -> Vec<u64> {
        let c = self.iface.counters();
        DropReason::ALL.iter().map(|&r| c.dropped(r)).collect()
    }
}

/// What the stack answers a refused segment with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    /// Nothing.
    Silence,
    /// An ACK of RCV.NXT from SND.NXT (a duplicate or a challenge ACK).
    Ack,
    /// A reset at the segment's ACK number.
    Reset,
}

/// Sends `repr` + `payload` and checks it was refused: `reason` counted
/// once and no other reason moved, a challenge ACK counted if `challenged`,
/// `answer` sent, and the connection still in the state it was.
fn refused(
    peer: &mut Peer,
    (repr, payload): (TcpRepr, &[u8]),
    reason: DropReason,
    challenged: bool,
    answer: Answer,
) -> Result<(), String> {
    let state = peer.state();
    let drops = peer.drops();
    let challenges = peer.iface.counters().get(Stat::TcpChallengeACK);
    let out = peer.send(&repr, payload);
    let moved: Vec<(DropReason, u64)> = (DropReason::ALL.iter().zip(peer.drops()))
        .zip(&drops)
        .filter(|((_, after), before)| after != *before)
        .map(|((&r, after), before)| (r, after - before))
        .collect();
    if moved != [(reason, 1)] {
        return Err(format!("drops moved {moved:?}, not {reason:?} by one"));
    }
    let challenged_now = peer.iface.counters().get(Stat::TcpChallengeACK) - challenges;
    if challenged_now != u64::from(challenged) {
        return Err(format!("{challenged_now} challenge ACKs counted"));
    }
    let got = match out.as_slice() {
        [] => Answer::Silence,
        [seg] if seg.flags == flags::ACK && seg.ack == peer.next => Answer::Ack,
        [seg] if seg.flags == flags::RST && seg.seq == repr.ack => Answer::Reset,
        _ => return Err(format!("answered with {out:?}")),
    };
    if got != answer {
        return Err(format!("answered {got:?}, not {answer:?}"));
    }
    if peer.state() != state {
        return Err(format!("moved from {state:?} to {:?}", peer.state()));
    }
    Ok(())
}

#[test]
fn segments_an_established_connection_refuses_are_counted_by_reason() {
    // Each row on a fresh connection: the segment (made from one at
    // RCV.NXT with a current timestamp), its drop reason, whether a
    // challenge ACK is counted, and the answer.
    type Make = fn(&Peer) -> (TcpRepr, &'static [u8]);
    let rows: [(&str, Make, DropReason, bool, Answer); 8] = [
        (
            "< P. 1001:1002(1) ack 1 <TS val 4000>: older than TS.Recent (RFC 7323 5.3)",
            |p| {
                let mut r = p.repr(flags::PSH | flags::ACK);
                r.options.timestamps = Some((PEER_TS - 1000, p.echo));
                (r, b"x")
            },
            DropReason::TcpPawsEstab,
            false,
            Answer::Ack,
        ),
        (
            "< P. 1001001:1001002(1) ack 1: beyond the window (RFC 9293 3.10.7.4)",
            |p| {
                let mut r = p.repr(flags::PSH | flags::ACK);
                r.seq = p.next.wrapping_add(1_000_000);
                (r, b"x")
            },
            DropReason::TcpOutOfWindow,
            false,
            Answer::Ack,
        ),
        (
            "< . 1001:1001(0) ack 10001: acknowledges unsent data (RFC 5961 5.2)",
            |p| {
                let mut r = p.repr(flags::ACK);
                r.ack = p.iss.wrapping_add(10_001);
                (r, b"")
            },
            DropReason::TcpBadAck,
            true,
            Answer::Ack,
        ),
        (
            "< . 1001:1001(0) ack -19999: older than the peer's window (RFC 5961 5.2)",
            |p| {
                let mut r = p.repr(flags::ACK);
                r.ack = p.iss.wrapping_add(1).wrapping_sub(20_000);
                (r, b"")
            },
            DropReason::TcpBadAck,
            true,
            Answer::Ack,
        ),
        (
            "< R 1001001:1001001(0): a reset outside the window, dropped",
            |p| {
                let mut r = p.repr(flags::RST);
                r.seq = p.next.wrapping_add(1_000_000);
                (r, b"")
            },
            DropReason::TcpBadRst,
            false,
            Answer::Silence,
        ),
        (
            "< R 1101:1101(0): a reset in the window, not at RCV.NXT (RFC 5961 3.2)",
            |p| {
                let mut r = p.repr(flags::RST);
                r.seq = p.next.wrapping_add(100);
                (r, b"")
            },
            DropReason::TcpBadRst,
            true,
            Answer::Ack,
        ),
        (
            "< S 1006:1006(0): a SYN on a synchronized connection (RFC 5961 4.2)",
            |p| {
                let mut r = p.repr(flags::SYN);
                r.seq = p.next.wrapping_add(5);
                (r, b"")
            },
            DropReason::TcpBadSyn,
            true,
            Answer::Ack,
        ),
        (
            "< P 1001:1002(1): no ACK flag (RFC 9293 3.10.7.4, fifth check)",
            |p| (p.repr(flags::PSH), b"x"),
            DropReason::TcpBadFlags,
            false,
            Answer::Silence,
        ),
    ];
    for (script, make, reason, challenged, answer) in rows {
        let mut peer = Peer::established();
        let segment = make(&peer);
        if let Err(why) = refused(&mut peer, segment, reason, challenged, answer) {
            panic!("{script}: {why}");
        }
        // Still in step: in-order data is taken, nothing more dropped.
        let drops = peer.drops();
        peer.send(&peer.repr(flags::PSH | flags::ACK), b"ok");
        assert_eq!(peer.drops(), drops, "{script}: the next segment");
    }
}

#[test]
fn a_syn_received_connection_resets_an_unacceptable_ack() {
    // < . 1001:1001(0) ack iss: our SYN not acknowledged (RFC 9293
    // 3.10.7.4: a reset at SEG.ACK), the handshake left pending.
    let mut peer = Peer::syn_received();
    let mut ack = peer.repr(flags::ACK);
    ack.ack = peer.iss;
    let resets = peer.iface.counters().get(Stat::TcpOutRsts);
    let result = refused(
        &mut peer,
        (ack, b""),
        DropReason::TcpBadAck,
        false,
        Answer::Reset,
    );
    result.unwrap();
    assert_eq!(peer.iface.counters().get(Stat::TcpOutRsts), resets + 1);
    // The right ACK still completes the handshake.
    assert!(peer.send(&peer.repr(flags::ACK), &[]).is_empty());
    assert_eq!(peer.state(), State::Established);
}

/// A stack with `policy`, listening on `[::]:7` (both families) with a UDP
/// socket on port 7.
fn stack_checking(policy: ChecksumPolicy) -> (Interface<MemBuf>, MemPort) {
    let mut link = LinkConfig::new(OUR_MAC, Ipv4Cidr::new(OUR_IP, 24).unwrap());
    link.addresses6
        .push(crate::route::Ipv6Cidr::new(GLOBAL, 64).unwrap());
    let mut config = InterfaceConfig::with_links(vec![link]);
    config.dad_transmits = 0;
    config.checksum = policy;
    let mut iface = Interface::new(config).unwrap();
    let mut port = MemPort::new(MemPortConfig {
        mac: OUR_MAC,
        ..MemPortConfig::default()
    });
    iface.poll(&mut port, Instant::ZERO, &mut DropDatagrams);
    port.take_tx();
    iface
        .tcp_listen("[::]:7".parse::<core::net::SocketAddr>().unwrap(), 8)
        .unwrap();
    iface
        .udp_bind(SocketAddrV4::new(OUR_IP, PORT), BindOptions::default())
        .unwrap();
    (iface, port)
}

#[test]
fn tcp_checksums_follow_the_policy_as_udp_checksums_do() {
    use ChecksumPolicy::{Software, TrustOffload};
    use ChecksumStatus::{Bad, Good, Unknown};
    // Policy, what the device said about the L4 checksum, whether the
    // checksum is right: taken, or dropped as a bad checksum.
    let rows = [
        (TrustOffload, Unknown, false, false),
        (TrustOffload, Unknown, true, true),
        (TrustOffload, Good, false, true), // the device vouched for it
        (TrustOffload, Bad, true, false),  // the device's verdict stands
        (Software, Unknown, false, false),
        (Software, Unknown, true, true),
        (Software, Good, false, false),
        (Software, Bad, true, true),
    ];
    let syn = TcpRepr {
        src_port: PEER_PORT,
        dst_port: PORT,
        seq: PEER_ISN,
        flags: flags::SYN,
        window: PEER_WINDOW,
        options: TcpOptions {
            mss: Some(1460),
            ..TcpOptions::default()
        },
        ..TcpRepr::default()
    };
    let families: [(&str, IpAddr, IpAddr); 2] = [
        ("ipv4", IpAddr::V4(PEER_IP), IpAddr::V4(OUR_IP)),
        ("ipv6", IpAddr::V6(PEER6), IpAddr::V6(GLOBAL)),
    ];
    for (policy, status, right, taken) in rows {
        let offload = RxOffload {
            l4_checksum: status,
            ..RxOffload::default()
        };
        let row = format!("{policy:?}, device says {status:?}, checksum right: {right}");

        let (mut iface, mut port) = stack_checking(policy);
        let mut frame = udp_frame(PEER_PORT, PORT, b"data");
        if !right {
            *frame.last_mut().unwrap() ^= 0xff; // the payload, not the checksum
        }
        port.push_rx_with(&frame, offload);
        poll(&mut iface, &mut port, &mut DropDatagrams);
        let c = iface.counters();
        let got = (
            c.get(Stat::UdpInDatagrams),
            c.dropped(DropReason::UdpBadChecksum),
        );
        assert_eq!(got, (u64::from(taken), u64::from(!taken)), "udp: {row}");

        for (family, src, dst) in families {
            let (mut iface, mut port) = stack_checking(policy);
            let mut frame = tcp_frame(src, dst, &syn, &[]);
            if !right {
                let window = frame.len() - syn.header_len() + 14;
                frame[window] ^= 0xff; // the window field, not the checksum
            }
            port.push_rx_with(&frame, offload);
            poll(&mut iface, &mut port, &mut DropDatagrams);
            let c = iface.counters();
            let got = (
                c.get(Stat::TcpPassiveOpens),
                c.dropped(DropReason::TcpBadChecksum),
            );
            assert_eq!(
                got,
                (u64::from(taken), u64::from(!taken)),
                "tcp over {family}: {row}"
            );
            assert_eq!(
                c.total_dropped(),
                u64::from(!taken),
                "tcp over {family}: {row}"
            );
        }
    }
}

/// The SYNs of connects from a fresh default stack to the peer's ports
/// 80, 81 and 82 at time zero: (our port, ISS, TSval) each.
fn syns_of_a_fresh_stack() -> Vec<(u16, u32, u32)> {
    let (mut iface, mut port) = stack_knowing_peer();
    for remote in [80, 81, 82] {
        iface
            .tcp_connect(
                core::slice::from_mut(&mut port),
                Instant::ZERO,
                SocketAddrV4::new(PEER_IP, remote),
            )
            .unwrap();
    }
    let syns = sent(&mut port);
    assert_eq!(syns.len(), 3, "{syns:?}");
    syns.iter()
        .map(|s| (s.src_port, s.seq, s.options.timestamps.expect("offered").0))
        .collect()
}

#[test]
fn two_stacks_alike_draw_unrelated_isns_ports_and_timestamp_offsets() {
    // RFC 6528, RFC 6056, RFC 7323 5.4: the keys come from the system's
    // random source, so two stacks made from the same configuration share
    // nothing a peer could learn from one and use against the other.
    let (a, b) = (syns_of_a_fresh_stack(), syns_of_a_fresh_stack());
    let column = |v: &[(u16, u32, u32)], f: fn(&(u16, u32, u32)) -> u32| -> Vec<u32> {
        v.iter().map(f).collect()
    };
    assert_ne!(
        column(&a, |s| s.0.into()),
        column(&b, |s| s.0.into()),
        "ports"
    );
    assert_ne!(column(&a, |s| s.1), column(&b, |s| s.1), "ISNs");
    // At time zero TSval is the offset itself.
    assert_ne!(
        column(&a, |s| s.2),
        column(&b, |s| s.2),
        "timestamp offsets"
    );
    // The offset has its own key: it is not the ISS masked by a constant,
    // which would hand the peer that constant with every SYN.
    for syns in [&a, &b] {
        let masks: Vec<u32> = syns.iter().map(|&(_, iss, ts)| iss ^ ts).collect();
        assert!(masks[0] != masks[1] && masks[1] != masks[2], "{masks:x?}");
    }
}

#[test]
fn a_syn_ack_echoing_no_timestamp_of_ours_is_counted_and_reset() {
    // As Linux's PAWSActiveRejected: in SYN-SENT, a SYN-ACK echoing a
    // TSval ahead of our clock is no answer to our SYN.
    let (mut iface, mut port) = stack_knowing_peer();
    let at = Instant::from_nanos(1_000_000);
    let to = SocketAddrV4::new(PEER_IP, PEER_PORT);
    iface
        .tcp_connect(core::slice::from_mut(&mut port), at, to)
        .unwrap();
    let [syn] = <[TcpRepr; 1]>::try_from(sent(&mut port)).unwrap();
    let (our_ts, _) = syn.options.timestamps.expect("offered");
    let mut peer = Peer::on(iface, port);
    peer.iss = syn.seq;
    let syn_ack = |echo: u32| TcpRepr {
        dst_port: syn.src_port,
        flags: flags::SYN | flags::ACK,
        options: TcpOptions {
            mss: Some(1460),
            timestamps: Some((PEER_TS, echo)),
            ..TcpOptions::default()
        },
        ..peer.repr(0)
    };
    let forged = syn_ack(our_ts.wrapping_add(60_000));
    let genuine = syn_ack(our_ts);
    let result = refused(
        &mut peer,
        (forged, &[]),
        DropReason::TcpPawsActive,
        false,
        Answer::Reset,
    );
    assert_eq!(result, Ok(()));
    assert_eq!(peer.state(), State::SynSent);
    let out = peer.send(&genuine, &[]);
    assert_eq!(peer.state(), State::Established, "{out:?}");
}

#[test]
fn challenge_acks_are_limited_per_second_across_the_stack() {
    // RFC 5961 7, Linux's tcp_challenge_ack_limit (1000): a flood of
    // in-window resets not at RCV.NXT, all within one second.
    let mut peer = Peer::established();
    let mut blind = peer.repr(flags::RST);
    blind.seq = peer.next.wrapping_add(100);
    let mut answered = 0u64;
    for _ in 0..3000 {
        match peer.send(&blind, &[]).as_slice() {
            [] => {}
            [ack] if ack.flags == flags::ACK && ack.ack == peer.next => answered += 1,
            other => panic!("answered with {other:?}"),
        }
    }
    let c = peer.iface.counters();
    // The second's budget is drawn between half the limit and one and a
    // half times it.
    assert!((500..1500).contains(&answered), "{answered} challenge ACKs");
    assert_eq!(c.get(Stat::TcpChallengeACK), answered);
    assert_eq!(c.get(Stat::TcpACKSkippedChallenge), 3000 - answered);
    assert_eq!(
        c.dropped(DropReason::TcpBadRst),
        3000,
        "each one still dropped"
    );
    assert_eq!(peer.state(), State::Established);
    // The next second has a budget of its own; other ACKs were never
    // limited (data is acknowledged as ever).
    peer.now = peer.now + Duration::from_secs(1);
    assert_eq!(peer.send(&blind, &[]).len(), 1);
    let data = peer.repr(flags::PSH | flags::ACK);
    peer.now = peer.now + Duration::from_millis(100);
    peer.send(&data, &[b'x'; 1460]);
    peer.next = peer.next.wrapping_add(1460);
    let out = peer.send(&peer.repr(flags::PSH | flags::ACK), &[b'y'; 1460]);
    assert!(
        out.iter().any(|s| s.ack == peer.next.wrapping_add(1460)),
        "{out:?}"
    );
}

/// A server that closes each connection as soon as it is accepted.
struct CloseFirst;

impl InlineHandler<MemBuf> for CloseFirst {
    fn on_tcp<P: Port<Buf = MemBuf>>(
        &mut self,
        conn: ConnId,
        event: TcpEvent,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        if let TcpEvent::Accepted(_) = event {
            ctx.tcp_close(conn);
        }
    }
}

/// The server closed first: its side of 10.0.0.1:7 - 10.0.0.2:40000 is in
/// TIME-WAIT, having seen the peer's FIN at 1001 with TSval 5001.
fn server_in_time_wait() -> Peer {
    let mut peer = Peer::syn_received();
    // < . 1001:1001(0) ack 1: accepted, and the server closes at once.
    let out = peer.send_to(&peer.repr(flags::ACK), &[], &mut CloseFirst);
    assert!(
        matches!(out.as_slice(), [fin] if fin.flags == flags::FIN | flags::ACK),
        "{out:?}"
    );
    // < F. 1001:1001(0) ack 2: our FIN acknowledged, the peer's own FIN.
    let mut fin = peer.repr(flags::FIN | flags::ACK);
    fin.ack = peer.iss.wrapping_add(2);
    let out = peer.send(&fin, &[]);
    assert!(
        matches!(out.as_slice(), [ack] if ack.flags == flags::ACK && ack.ack == PEER_ISN + 2),
        "{out:?}"
    );
    peer.next = PEER_ISN + 2;
    assert_eq!(peer.state(), State::TimeWait);
    peer
}

/// The peer's new SYN from the same port: `seq`, and TSval `ts` if any.
fn new_syn(seq: u32, ts: Option<u32>) -> TcpRepr {
    TcpRepr {
        src_port: PEER_PORT,
        dst_port: PORT,
        seq,
        flags: flags::SYN,
        window: PEER_WINDOW,
        options: TcpOptions {
            mss: Some(1460),
            timestamps: ts.map(|v| (v, 0)),
            ..TcpOptions::default()
        },
        ..TcpRepr::default()
    }
}

#[test]
fn a_newer_syn_reopens_a_four_tuple_in_time_wait() {
    // RFC 6191: with timestamps, a newer TSval makes the SYN new whatever
    // its ISN; without, an ISN beyond RCV.NXT does. Either way the answer
    // is a SYN-ACK (no reset, no challenge ACK), and the old incarnation is
    // gone.
    for (case, syn) in [
        (
            "newer timestamp, lower ISN",
            new_syn(PEER_ISN.wrapping_sub(50_000), Some(6000)),
        ),
        (
            "no timestamp, ISN beyond",
            new_syn(PEER_ISN + 100_000, None),
        ),
    ] {
        let mut peer = server_in_time_wait();
        let old_iss = peer.iss;
        let out = peer.send(&syn, &[]);
        let [syn_ack] = out.as_slice() else {
            panic!("{case}: answered {out:?}");
        };
        assert_eq!(syn_ack.flags, flags::SYN | flags::ACK, "{case}");
        assert_eq!(syn_ack.ack, syn.seq.wrapping_add(1), "{case}");
        // Its ISS lies beyond all the old one sent (Linux: 64 KiB on).
        let ahead = syn_ack.seq.wrapping_sub(old_iss.wrapping_add(2)) as i32;
        assert!(ahead >= 65_537, "{case}: ISS only {ahead} ahead");
        assert_eq!(peer.state(), State::SynReceived, "{case}");
        assert_eq!(peer.iface.counters().get(Stat::TcpOutRsts), 0, "{case}");
        assert_eq!(peer.iface.counters().total_dropped(), 0, "{case}");
        // The handshake completes on the same 4-tuple.
        peer.iss = syn_ack.seq;
        peer.next = syn.seq.wrapping_add(1);
        peer.echo = syn_ack.options.timestamps.map_or(0, |t| t.0);
        let mut ack = peer.repr(flags::ACK);
        ack.options.timestamps = syn.options.timestamps.map(|(v, _)| (v, peer.echo));
        assert!(peer.send(&ack, &[]).is_empty(), "{case}");
        assert_eq!(peer.state(), State::Established, "{case}");
    }
}

#[test]
fn an_old_syn_gets_a_challenge_ack_and_a_reset_leaves_time_wait_alone() {
    let mut peer = server_in_time_wait();
    // An older timestamp, though its ISN lies beyond: an old duplicate.
    refused(
        &mut peer,
        (new_syn(PEER_ISN + 100_000, Some(4000)), b""),
        DropReason::TcpBadSyn,
        true,
        Answer::Ack,
    )
    .unwrap();
    // No timestamp and an ISN not beyond RCV.NXT: the same.
    refused(
        &mut peer,
        (new_syn(PEER_ISN + 1, None), b""),
        DropReason::TcpBadSyn,
        true,
        Answer::Ack,
    )
    .unwrap();
    // RFC 1337: a reset, even exactly at RCV.NXT, is dropped silently.
    let mut rst = peer.repr(flags::RST);
    rst.options.timestamps = None;
    refused(
        &mut peer,
        (rst, b""),
        DropReason::TcpTimeWaitRst,
        false,
        Answer::Silence,
    )
    .unwrap();
    assert_eq!(peer.state(), State::TimeWait);
}

/// A segment from the peer's `port` (no options but the MSS on a SYN).
fn from_port(port: u16, seq: u32, ack: u32, bits: u8) -> TcpRepr {
    TcpRepr {
        src_port: port,
        dst_port: PORT,
        seq,
        ack,
        flags: bits,
        window: PEER_WINDOW,
        options: TcpOptions {
            mss: (bits & flags::SYN != 0).then_some(1460),
            ..TcpOptions::default()
        },
    }
}

#[test]
fn a_full_accept_queue_drops_the_final_ack_and_a_later_one_completes_it() {
    // Queue mode, backlog 2: at most two handshakes and two connections
    // waiting for accept().
    let (iface, port) = stack_knowing_peer();
    let mut peer = Peer::on(iface, port);
    let handle = peer.iface.handle(peer.port.pool(), 64);
    let listening =
        std::thread::spawn(move || handle.tcp_listen(SocketAddrV4::new(OUR_IP, PORT), 2));
    while !listening.is_finished() {
        peer.iface
            .poll(&mut peer.port, peer.now, &mut DropDatagrams);
        std::thread::yield_now();
    }
    let listener = listening.join().unwrap().unwrap();
    // < S from ports 1, 2, 3 (each at ISN 1000) and their SYN-ACKs' ISSs.
    let syn = |peer: &mut Peer, from: u16| -> Option<u32> {
        let out = peer.send(&from_port(from, PEER_ISN, 0, flags::SYN), &[]);
        match out.as_slice() {
            [] => None,
            [s] if s.flags == flags::SYN | flags::ACK => Some(s.seq),
            other => panic!("answered {other:?}"),
        }
    };
    let ack = |iss: u32, from: u16| from_port(from, PEER_ISN + 1, iss.wrapping_add(1), flags::ACK);
    let (a, b) = (syn(&mut peer, 1).unwrap(), syn(&mut peer, 2).unwrap());
    assert!(peer.send(&ack(a, 1), &[]).is_empty());
    let c = syn(&mut peer, 3).expect("a handshake's place is free again");
    assert!(peer.send(&ack(b, 2), &[]).is_empty());
    // The queue holds a and b. c's final ACK is dropped, not answered with
    // a reset, and c stays half-open; a new SYN is dropped as well.
    let overflows = |peer: &Peer| {
        let c = peer.iface.counters();
        (
            c.get(Stat::TcpListenOverflows),
            c.dropped(DropReason::TcpListenOverflow),
        )
    };
    assert!(peer.send(&ack(c, 3), &[]).is_empty());
    assert_eq!(overflows(&peer), (1, 1));
    assert_eq!(syn(&mut peer, 4), None);
    assert_eq!(overflows(&peer), (2, 2));
    let states = |peer: &Peer| {
        let all = peer.iface.tcp_connections();
        all.iter()
            .map(|c| (c.remote.port(), c.state))
            .collect::<Vec<_>>()
    };
    use State::{Established, SynReceived};
    assert_eq!(
        states(&peer),
        [(1, Established), (2, Established), (3, SynReceived)]
    );
    // The application takes one; c's next ACK (here with data) completes it.
    let accept = || {
        let (stream, from) = listener.accept(Some(core::time::Duration::ZERO)).unwrap();
        (stream, from.port())
    };
    let (_a, from) = accept();
    assert_eq!(from, 1);
    assert!(peer.send(&ack(c, 3), b"hello").len() <= 1);
    assert_eq!(states(&peer)[2], (3, Established));
    let ((_b, second), (_c, third)) = (accept(), accept());
    assert_eq!((second, third), (2, 3));
    assert_eq!(peer.iface.counters().get(Stat::TcpOutRsts), 0, "no reset");
    assert_eq!(overflows(&peer), (2, 2));
}

#[test]
fn a_listener_drops_unanswered_what_is_neither_an_ack_nor_a_plain_syn() {
    // A barrage from a tap's kernel side found SYN+FIN opening a half-open
    // connection and FIN+PSH+URG answered with a reset.
    let (mut iface, mut port) = stack_knowing_peer();
    iface
        .tcp_listen(SocketAddrV4::new(OUR_IP, PORT), 16)
        .unwrap();
    let (src, dst) = (IpAddr::V4(PEER_IP), IpAddr::V4(OUR_IP));
    let odd = [
        flags::SYN | flags::FIN,
        flags::SYN | flags::FIN | flags::PSH,
        0,
        flags::FIN,
        flags::FIN | flags::PSH | flags::URG,
    ];
    for (i, bits) in odd.into_iter().enumerate() {
        // < each, from a port of its own
        let repr = from_port(PEER_PORT + i as u16, PEER_ISN, 0, bits);
        port.push_rx(&tcp_frame(src, dst, &repr, &[]));
        poll(&mut iface, &mut port, &mut DropDatagrams);
        // > nothing
        assert_eq!(sent(&mut port), [], "flags {bits:#04x}");
    }
    let c = iface.counters();
    assert_eq!(c.dropped(DropReason::TcpBadFlags), odd.len() as u64);
    assert_eq!(c.get(Stat::TcpOutRsts), 0);
    assert!(
        iface.tcp_connections().is_empty(),
        "no half-open connection"
    );
    // < S   > S.  (a plain SYN still opens)
    let syn = from_port(PEER_PORT + 10, PEER_ISN, 0, flags::SYN);
    port.push_rx(&tcp_frame(src, dst, &syn, &[]));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    let out = sent(&mut port);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].flags, flags::SYN | flags::ACK);
    // < .   > R   (an ACK for no connection still gets a reset)
    let ack = from_port(PEER_PORT + 11, PEER_ISN, 77, flags::ACK);
    port.push_rx(&tcp_frame(src, dst, &ack, &[]));
    poll(&mut iface, &mut port, &mut DropDatagrams);
    let out = sent(&mut port);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].flags, flags::RST);
}

#[test]
fn a_syn_in_a_broadcast_or_multicast_frame_is_not_answered() {
    // TCP is unicast: a segment that came as a link-layer broadcast (or a
    // joined multicast), even to our address, or to a broadcast address, opens
    // nothing and draws no reset (as Linux, which takes only frames to its
    // MAC); counted, not taken for an unknown protocol.
    let mut peer = Peer::listening(8);
    let syn = TcpRepr {
        flags: flags::SYN,
        ..peer.repr(0)
    };
    let to_us = tcp_frame(PEER_IP.into(), OUR_IP.into(), &syn, &[]);
    let mut broadcast_frame = to_us.clone();
    broadcast_frame[..6].copy_from_slice(&MacAddr::BROADCAST.0);
    let subnet = Ipv4Addr::new(10, 0, 0, 255);
    let mut to_broadcast = tcp_frame(PEER_IP.into(), subnet.into(), &syn, &[]);
    to_broadcast[..6].copy_from_slice(&MacAddr::BROADCAST.0);
    for frame in [broadcast_frame, to_broadcast] {
        peer.port.push_rx(&frame);
    }
    poll(&mut peer.iface, &mut peer.port, &mut DropDatagrams);
    assert!(peer.port.take_tx().is_empty(), "no SYN-ACK, no reset");
    let c = peer.iface.counters();
    assert_eq!(c.dropped(DropReason::TcpNotUnicast), 2);
    assert_eq!(c.total_dropped(), 2);
    // The same SYN to our MAC opens the connection.
    peer.port.push_rx(&to_us);
    poll(&mut peer.iface, &mut peer.port, &mut DropDatagrams);
    assert_eq!(sent(&mut peer.port).len(), 1);
}
