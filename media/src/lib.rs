//! dpstack's media library: building blocks for RTP media servers
//! (relays, echo, conference bridges) on the stack's inline UDP sockets,
//! sans-IO like the stack itself:
//! - [`rtp`]: RTP and RTCP (RFC 3550): header checks, per-SSRC statistics,
//!   RTCP parsing and writing, rtcp-mux, the RTCP interval;
//! - [`ports`]: RTP/RTCP port pairs (even RTP port, RTCP on the next) from
//!   a configured range, allocated and released in O(1), running out as a
//!   typed error;
//! - [`latch`]: learning a leg's peer from the first valid packets
//!   (symmetric RTP), then treating the socket as connected to it, with
//!   optional re-latching after a quiet period;
//! - [`sessions`]: sessions of two legs with O(1) lookup from the
//!   receiving socket to its session, leg and channel (a dense array by
//!   socket index: no hashing per packet);
//! - [`relay`]: a complete RTP/RTCP relay and echo over those pieces
//!   (what `dpstack-rtp-relay` runs), usable inside any app's handler.
//!
//! **Why a crate of its own.** This is an application library above the
//! pipeline, not a part of it: it reaches the stack only through what any
//! user of `dpstack-stack` has, the handler API
//! ([`InlineHandler`](dpstack_stack::iface::InlineHandler) and
//! [`LcoreContext`](dpstack_stack::iface::LcoreContext): a socket's batch
//! in, sends and in-place forwards out), UDP binds on the
//! [`Interface`](dpstack_stack::iface::Interface), and the stack's
//! [`Instant`](dpstack_stack::time::Instant). The compiler holds that
//! boundary: the pipeline's insides can change without touching this crate,
//! and a program on `dpstack-stack` that does no media does not compile it.
//! The `dpstack` library re-exports it as `dpstack::media` for the apps.
//!
//! With [`rtp`] (header checks, per-SSRC statistics, RTCP) these
//! make a relay's receive path: look the batch's socket up in the
//! [`SessionTable`], check each packet, let the leg's [`Latch`] judge its
//! source, record it in the SSRC's [`ReceiveStats`](crate::rtp::ReceiveStats)
//! at the poll's time, and send it from the other leg's socket to that
//! leg's [`Latch::peer`]. In short (this is the "minimal relay" of
//! `docs/RTP.md`, which shows it without the hidden lines: imports, the
//! interface, and the check that a packet from leg A's endpoint leaves leg
//! B's RTP port for leg B's endpoint, marked EF, in its own buffer):
//!
//! ```
//! # use dpstack_stack::counters::Stat;
//! # use dpstack_stack::iface::{Batch, Interface, InterfaceConfig, LcoreContext, InlineHandler};
//! # use dpstack_media::{Latch, LatchConfig, LegSockets, PortAllocator, SessionTable};
//! # use dpstack_stack::port::memory::{MemBuf, MemPort, MemPortConfig};
//! # use dpstack_stack::port::{Buf, MacAddr, Port};
//! # use dpstack_stack::route::Ipv4Cidr;
//! # use dpstack_media::rtp::{ReceiveStats, RtpHeader, RtpPacket};
//! # use dpstack_stack::time::Instant;
//! # use dpstack_stack::udp::{BindOptions, SocketId};
//! # use dpstack_stack::wire::arp::{ArpOperation, ArpRepr};
//! # use dpstack_stack::wire::ethernet::{EtherType, EthernetFrame};
//! # use dpstack_stack::wire::ipv4::{protocol, Ipv4Header, Ipv4Packet};
//! # use dpstack_stack::wire::udp::UdpPacket;
//! # use std::error::Error;
//! # use std::net::{Ipv4Addr, SocketAddrV4};
//! struct Leg { latch: Latch, stats: Option<ReceiveStats> }
//! struct Relay { sessions: SessionTable<[Leg; 2]> }
//!
//! impl<B: Buf> InlineHandler<B> for Relay {
//!     fn on_datagrams<P: Port<Buf = B>>(&mut self, socket: SocketId, batch: &mut Batch<B>,
//!                                       ctx: &mut LcoreContext<'_, P>) {
//!         let now = ctx.now(); // the receive timestamp: TSC at this poll
//!         let Some(entry) = self.sessions.lookup_mut(socket) else { return };
//!         let this = entry.endpoint.leg.index();
//!         let other = entry.endpoint.leg.other().index();
//!         for datagram in batch.drain(..) {
//!             // (A real relay counts every `continue` by reason.)
//!             let Ok(rtp) = RtpPacket::new_checked(datagram.payload()) else { continue };
//!             let leg = &mut entry.value[this];
//!             if !leg.latch.observe(datagram.src(), Some(rtp.seq()), now).accepted() { continue }
//!             let stats = leg.stats.get_or_insert_with(|| ReceiveStats::new(rtp.ssrc(), 8000));
//!             stats.record_packet(&rtp, now);
//!             if let Some(peer) = entry.value[other].latch.peer() {
//!                 // Headers rewritten in the received buffer; the payload stays put.
//!                 let _ = ctx.forward(datagram, entry.legs[other].rtp, peer);
//!             }
//!         }
//!     }
//! }
//!
//! # fn main() -> Result<(), Box<dyn Error>> {
//! # let (ip, mac) = (Ipv4Addr::new(10, 0, 0, 1), MacAddr([2, 0, 0, 0, 0, 1]));
//! # let config = InterfaceConfig::new(mac, Ipv4Cidr::new(ip, 24).ok_or("bad prefix")?);
//! # let mut iface: Interface<MemBuf> = Interface::new(config)?;
//! # let a_peer = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 5004);
//! # let b_peer = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 3), 6000);
//! // Set-up, on the control path:
//! let mut ports = PortAllocator::new(30000..=39999)?;
//! let media = BindOptions { tos: 46 << 2, ..BindOptions::default() }; // DSCP EF
//! let mut bind_leg = || -> Result<LegSockets, Box<dyn Error>> {
//!     let pair = ports.allocate()?;                   // 30000/30001, then 30002/30003, ...
//!     let rtp = iface.udp_bind(SocketAddrV4::new(ip, pair.rtp()), media)?;
//!     let rtcp = iface.udp_bind(SocketAddrV4::new(ip, pair.rtcp()), media)?;
//!     Ok(LegSockets { rtp, rtcp: Some(rtcp) })
//! };
//! let (leg_a, leg_b) = (bind_leg()?, bind_leg()?);
//! let new_leg = || Leg { latch: Latch::new(LatchConfig::default()), stats: None };
//! let mut relay = Relay { sessions: SessionTable::new() };
//! let call = relay.sessions.insert([leg_a, leg_b], [new_leg(), new_leg()])?;
//! // Signalling said where leg B's endpoint is: A's media goes there until B speaks.
//! relay.sessions.get_mut(call).ok_or("no session")?[1].latch.expect(b_peer.into());
//! // On the lcore: loop { iface.poll(&mut port, clock.now(), &mut relay); }
//! #
//! # // The check, on an in-memory port: B's endpoint announces itself (ARP),
//! # // then A's endpoint sends one G.711 packet to leg A's RTP port.
//! # let mut port = MemPort::new(MemPortConfig { mac, ..MemPortConfig::default() });
//! # let (a_mac, b_mac) = (MacAddr([2, 0, 0, 0, 0, 2]), MacAddr([2, 0, 0, 0, 0, 3]));
//! # let mut arp = [0u8; 28];
//! # ArpRepr {
//! #     operation: ArpOperation::Request,
//! #     sender_mac: b_mac,
//! #     sender_ip: *b_peer.ip(),
//! #     target_mac: MacAddr::default(),
//! #     target_ip: ip,
//! # }
//! # .emit(&mut arp);
//! # assert!(port.push_rx(&ethernet(MacAddr::BROADCAST, b_mac, EtherType::Arp, &arp)));
//! # iface.poll(&mut port, Instant::ZERO, &mut relay);
//! # port.take_tx(); // the interface's announcements and the ARP reply
//! # let mut packet = vec![0xd5; 12 + 160];
//! # RtpHeader { seq: 1, timestamp: 160, ssrc: 0x1234, ..RtpHeader::default() }
//! #     .emit(&mut packet)
//! #     .expect("an RTP header");
//! # let mut udp = vec![0u8; 8 + packet.len()];
//! # udp[8..].copy_from_slice(&packet);
//! # let to = (ip, 30000);
//! # UdpPacket::new_unchecked(&mut udp[..]).emit_header((*a_peer.ip(), 5004), to, 172);
//! # let mut ipv4 = vec![0u8; 20 + udp.len()];
//! # ipv4[20..].copy_from_slice(&udp);
//! # Ipv4Packet::new_unchecked(&mut ipv4[..]).emit_header(&Ipv4Header {
//! #     src: *a_peer.ip(),
//! #     dst: ip,
//! #     protocol: protocol::UDP,
//! #     payload_len: udp.len() as u16,
//! #     ttl: 64,
//! #     ident: 1,
//! #     dont_fragment: true,
//! #     tos: 0,
//! # });
//! # assert!(port.push_rx(&ethernet(mac, a_mac, EtherType::Ipv4, &ipv4)));
//! # iface.poll(&mut port, Instant::from_nanos(20_000_000), &mut relay);
//! # // It leaves leg B's RTP port for B's endpoint, marked EF, in its own buffer.
//! # let sent = port.take_tx();
//! # assert_eq!(sent.len(), 1, "one packet relayed");
//! # let eth = EthernetFrame::new_checked(&sent[0][..]).expect("Ethernet");
//! # assert_eq!((eth.dst(), eth.ethertype()), (b_mac, EtherType::Ipv4));
//! # let out = Ipv4Packet::new_checked(eth.payload()).expect("IPv4");
//! # assert_eq!((out.src(), out.dst(), out.tos()), (ip, *b_peer.ip(), 0xb8));
//! # let out_udp = UdpPacket::new_checked(out.payload()).expect("UDP");
//! # assert_eq!((out_udp.src_port(), out_udp.dst_port()), (30002, 6000));
//! # let pseudo = dpstack_stack::wire::checksum::pseudo_header_v4(
//! #     out.src(), out.dst(), dpstack_stack::wire::ipv4::protocol::UDP, out_udp.len());
//! # assert!(out_udp.verify_checksum(pseudo));
//! # assert_eq!(out_udp.payload(), &packet[..]);
//! # assert_eq!(iface.counters().get(Stat::UdpForwardedInPlace), 1);
//! # let stats = relay.sessions.get_mut(call).ok_or("no session")?[0].stats.as_ref();
//! # assert_eq!(stats.map(|s| s.ssrc()), Some(0x1234));
//! # Ok(())
//! # }
//! #
//! # fn ethernet(dst: MacAddr, src: MacAddr, ethertype: EtherType, payload: &[u8]) -> Vec<u8> {
//! #     let mut frame = vec![0u8; 14 + payload.len()];
//! #     let mut eth = EthernetFrame::new_unchecked(&mut frame[..]);
//! #     eth.set_dst(dst);
//! #     eth.set_src(src);
//! #     eth.set_ethertype(ethertype);
//! #     eth.payload_mut().copy_from_slice(payload);
//! #     frame
//! # }
//! ```
//!
//! Invariants: nothing here allocates, reads a clock or panics on the
//! per-packet calls; control-path calls return typed errors; no `unsafe`
//! (`forbid(unsafe_code)`).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod latch;
pub mod ports;
pub mod relay;
pub mod rtp;
pub mod sessions;

pub use latch::{Latch, LatchConfig, Verdict};
pub use ports::{PortAllocator, PortError, PortPair, RangeError};
pub use sessions::{
    Channel, Endpoint, Entry, Hot, HotEndpoint, Leg, LegSockets, SessionId, SessionTable,
    TableError,
};
