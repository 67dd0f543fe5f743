//! Unit tests of the pure pieces: the per-packet decision, the socket
//! layout, the generator's packets and the report.

use crate::generator::{Stream, DATAGRAM_LEN, PAYLOAD_LEN};
use crate::logic::{endpoint_of, socket_index, RelayOptions, Session};
use crate::relay::peer_of;
use crate::report::render;
use dpstack::media::relay::RelayDrop;
use dpstack::media::rtp::{write_sender_report, Kind, RtpPacket, SenderInfo};
use dpstack::media::{Channel, LatchConfig, Leg};
use dpstack::stack::time::Instant;
use std::net::{SocketAddr, SocketAddrV4};

fn options() -> RelayOptions {
    RelayOptions {
        latch: LatchConfig::default(),
        clock_rate: 8000,
    }
}

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fn packet(stream: &mut Stream) -> [u8; DATAGRAM_LEN] {
    let mut buf = [0u8; DATAGRAM_LEN];
    stream.write_next(&mut buf);
    buf
}

fn ms(n: u64) -> Instant {
    Instant::from_nanos(n * 1_000_000)
}

#[test]
fn rtp_goes_from_the_other_legs_socket_to_its_peer() {
    let b_peer = addr("127.0.0.1:44000");
    let mut session = Session::new(&options(), [None, Some(b_peer)]);
    let mut stream = Stream::new(0);
    let caller = addr("127.0.0.1:50000");
    for i in 0..5u64 {
        let p = packet(&mut stream);
        let fwd = session
            .receive(Leg::A, Channel::Rtp, &p, caller, ms(20 * i), &options())
            .unwrap();
        assert_eq!(
            (fwd.leg, fwd.channel, fwd.dst, fwd.kind),
            (Leg::B, Channel::Rtp, b_peer, Kind::Rtp)
        );
        session.sent(Leg::A, fwd.kind);
    }
    let a = &session.legs[0];
    assert_eq!(a.counters().forwarded, 5);
    assert_eq!(
        a.rtp_latch().peer(),
        Some(caller),
        "leg A latched onto the caller"
    );
    let streams: Vec<_> = a.streams().collect();
    assert_eq!(streams.len(), 1);
    assert_eq!(streams[0].counters.packets, 5);
    assert_eq!(streams[0].counters.bytes, 5 * PAYLOAD_LEN as u64);
    // Media back from B's peer goes to the latched caller.
    let mut back = Stream::new(7);
    let fwd = session
        .receive(
            Leg::B,
            Channel::Rtp,
            &packet(&mut back),
            b_peer,
            ms(100),
            &options(),
        )
        .unwrap();
    assert_eq!((fwd.leg, fwd.dst), (Leg::A, caller));
}

#[test]
fn drops_are_counted_by_reason_and_on_the_leg() {
    let mut session = Session::new(&options(), [None, None]);
    let mut stream = Stream::new(1);
    let caller = addr("127.0.0.1:50000");
    let p = packet(&mut stream);
    let first = session.receive(Leg::A, Channel::Rtp, &p, caller, ms(0), &options());
    assert_eq!(first, Err(RelayDrop::NoPeer), "leg B has no peer yet");
    let p = packet(&mut stream);
    let foreign = session.receive(
        Leg::A,
        Channel::Rtp,
        &p,
        addr("127.0.0.1:50002"),
        ms(20),
        &options(),
    );
    assert_eq!(foreign, Err(RelayDrop::Foreign));
    let not_rtp = session.receive(
        Leg::A,
        Channel::Rtp,
        b"\x00\x01hello",
        caller,
        ms(40),
        &options(),
    );
    assert_eq!(not_rtp, Err(RelayDrop::NotRtp));
    let mut bad = packet(&mut stream);
    bad[0] |= 0x20; // padding, of more bytes than the packet has
    bad[DATAGRAM_LEN - 1] = 0xff;
    let bad_rtp = session.receive(Leg::A, Channel::Rtp, &bad, caller, ms(60), &options());
    assert_eq!(bad_rtp, Err(RelayDrop::BadRtp));
    let p = packet(&mut stream);
    let rtp_on_rtcp = session.receive(Leg::A, Channel::Rtcp, &p, caller, ms(80), &options());
    assert_eq!(rtp_on_rtcp, Err(RelayDrop::BadRtcp));
    let a = session.legs[0].counters();
    assert_eq!((a.dropped, a.foreign, a.forwarded), (5, 1, 0));
}

#[test]
fn probation_holds_packets_until_the_source_is_learned() {
    let mut opts = options();
    opts.latch.probation = 2;
    let mut session = Session::new(&opts, [None, Some(addr("127.0.0.1:44000"))]);
    let mut stream = Stream::new(2);
    let caller = addr("127.0.0.1:50000");
    let p = packet(&mut stream);
    assert_eq!(
        session.receive(Leg::A, Channel::Rtp, &p, caller, ms(0), &opts),
        Err(RelayDrop::Learning)
    );
    let p = packet(&mut stream);
    assert!(session
        .receive(Leg::A, Channel::Rtp, &p, caller, ms(20), &opts)
        .is_ok());
}

#[test]
fn rtcp_goes_next_to_the_other_legs_rtp_peer() {
    let b_peer = addr("127.0.0.1:44000");
    let mut session = Session::new(&options(), [None, Some(b_peer)]);
    let mut stream = Stream::new(3);
    let caller = addr("127.0.0.1:50000");
    let p = packet(&mut stream);
    session
        .receive(Leg::A, Channel::Rtp, &p, caller, ms(0), &options())
        .unwrap();
    let mut sr = [0u8; 64];
    let info = SenderInfo {
        ntp_timestamp: 1 << 32,
        rtp_timestamp: 160,
        packet_count: 1,
        octet_count: 160,
    };
    let len = write_sender_report(&mut sr, stream.ssrc, &info, &[]).unwrap();
    let fwd = session
        .receive(
            Leg::A,
            Channel::Rtcp,
            &sr[..len],
            addr("127.0.0.1:50001"),
            ms(5),
            &options(),
        )
        .unwrap();
    assert_eq!(
        (fwd.leg, fwd.channel, fwd.kind),
        (Leg::B, Channel::Rtcp, Kind::Rtcp)
    );
    assert_eq!(fwd.dst, addr("127.0.0.1:44001"));
    session.sent(Leg::A, fwd.kind);
    let a = session.legs[0].counters();
    assert_eq!((a.rtcp, a.rtcp_forwarded, a.rtcp_bytes), (1, 1, len as u64));
}

#[test]
fn sockets_are_laid_out_like_ports() {
    for index in 0..64 {
        let (s, leg, channel) = endpoint_of(index);
        assert_eq!(socket_index(s, leg, channel), index);
    }
    assert_eq!(socket_index(2, Leg::B, Channel::Rtcp), 11);
    assert_eq!(endpoint_of(6), (1, Leg::B, Channel::Rtp));
    let base: SocketAddrV4 = "127.0.0.1:44000".parse().unwrap();
    assert_eq!(peer_of(base, 3).unwrap(), addr("127.0.0.1:44006"));
    assert!(peer_of("127.0.0.1:65530".parse().unwrap(), 3).is_err());
}

#[test]
fn generated_packets_are_valid_pcmu_and_advance() {
    let mut stream = Stream::new(16);
    let start = stream;
    let first = packet(&mut stream);
    let second = packet(&mut stream);
    let p1 = RtpPacket::new_checked(&first[..]).unwrap();
    let p2 = RtpPacket::new_checked(&second[..]).unwrap();
    assert_eq!((p1.payload_type(), p1.ssrc()), (0, 0x5000_0010));
    assert_eq!(p1.payload().len(), PAYLOAD_LEN);
    assert_eq!(p2.seq(), p1.seq().wrapping_add(1));
    assert_eq!(p2.timestamp(), p1.timestamp().wrapping_add(160));
    stream.unwrite();
    stream.unwrite();
    assert_eq!(stream, start, "unwrite undoes write_next");
    let mut wrapping = Stream::new(0);
    wrapping.seq = u16::MAX;
    packet(&mut wrapping);
    assert_eq!(wrapping.seq, 0);
}

#[test]
fn the_report_sums_legs_and_lists_sessions() {
    let b_peer = addr("127.0.0.1:44000");
    let mut sessions: Vec<Session> = (0..3)
        .map(|_| Session::new(&options(), [None, Some(b_peer)]))
        .collect();
    for (i, session) in sessions.iter_mut().enumerate().take(2) {
        let mut stream = Stream::new(i);
        for k in 0..=i as u64 {
            let p = packet(&mut stream);
            let fwd = session
                .receive(
                    Leg::A,
                    Channel::Rtp,
                    &p,
                    addr("127.0.0.1:50000"),
                    ms(20 * k),
                    &options(),
                )
                .unwrap();
            session.sent(Leg::A, fwd.kind);
        }
    }
    let mut drops = [0; RelayDrop::ALL.len()];
    drops[RelayDrop::NoPeer as usize] = 4;
    let text = render(&sessions, &drops, 0, 1);
    assert!(
        text.contains("total sessions 3 active 2 packets 3 "),
        "{text}"
    );
    assert!(
        text.contains("total leg A forwarded 3 rtcp-forwarded 0 dropped 0\n"),
        "{text}"
    );
    assert!(text.contains("total leg B forwarded 0 "), "{text}");
    assert!(
        text.contains("session s0 leg A peer 127.0.0.1:50000 latched yes"),
        "{text}"
    );
    assert!(
        !text.contains("session s1 "),
        "only one session listed: {text}"
    );
    assert!(text.contains("more active sessions 1\n"), "{text}");
    assert!(text.contains("relay drops: no_peer 4\n"), "{text}");
}
