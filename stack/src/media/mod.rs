//! Building blocks for RTP media servers (relays, echo, conference
//! bridges) on the stack's inline UDP sockets, sans-IO like the rest of
//! the crate:
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
//! With [`crate::rtp`] (header checks, per-SSRC statistics, RTCP) these
//! make a relay's receive path: look the batch's socket up in the
//! [`SessionTable`], check each packet, let the leg's [`Latch`] judge its
//! source, record it in the SSRC's [`ReceiveStats`](crate::rtp::ReceiveStats)
//! at the poll's time, and send it from the other leg's socket to that
//! leg's [`Latch::peer`]. `docs/RTP.md` explains it; in short:
//!
//! ```
//! use dpstack_stack::iface::{Batch, Interface, InterfaceConfig, UdpContext, UdpHandler};
//! use dpstack_stack::media::{Latch, LatchConfig, LegSockets, PortAllocator, SessionTable};
//! use dpstack_stack::port::{memory::MemBuf, Buf, MacAddr, Port};
//! use dpstack_stack::route::Ipv4Cidr;
//! use dpstack_stack::rtp::{ReceiveStats, RtpPacket};
//! use dpstack_stack::udp::{BindOptions, SocketId};
//! use std::net::{Ipv4Addr, SocketAddrV4};
//!
//! /// One leg: where its peer is, and what that peer sends.
//! struct Leg {
//!     latch: Latch,
//!     stats: Option<ReceiveStats>,
//! }
//!
//! struct Relay {
//!     sessions: SessionTable<[Leg; 2]>,
//! }
//!
//! impl<B: Buf> UdpHandler<B> for Relay {
//!     fn on_datagrams<P: Port<Buf = B>>(
//!         &mut self,
//!         socket: SocketId,
//!         batch: &mut Batch<B>,
//!         ctx: &mut UdpContext<'_, P>,
//!     ) {
//!         let now = ctx.now(); // the receive timestamp: TSC at this poll
//!         let Some(entry) = self.sessions.lookup_mut(socket) else { return };
//!         let this = entry.endpoint.leg.index();
//!         let other = entry.endpoint.leg.other().index();
//!         for datagram in batch.drain(..) {
//!             // (A real relay counts every `continue` by reason.)
//!             let Ok(rtp) = RtpPacket::new_checked(datagram.payload()) else { continue };
//!             let leg = &mut entry.value[this];
//!             if !leg.latch.observe(datagram.src(), Some(rtp.seq()), now).accepted() {
//!                 continue;
//!             }
//!             let stats = leg.stats.get_or_insert_with(|| ReceiveStats::new(rtp.ssrc(), 8000));
//!             stats.record_packet(&rtp, now);
//!             if let Some(peer) = entry.value[other].latch.peer() {
//!                 let _ = ctx.send_to(entry.legs[other].rtp, peer, datagram.payload());
//!             }
//!         }
//!     }
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let ip = Ipv4Addr::new(10, 0, 0, 1);
//! let prefix = Ipv4Cidr::new(ip, 24).ok_or("bad prefix")?;
//! let config = InterfaceConfig::new(MacAddr([2, 0, 0, 0, 0, 1]), prefix);
//! let mut iface: Interface<MemBuf> = Interface::new(config)?;
//! let mut ports = PortAllocator::new(30000..=39999)?;
//! let mut legs = [None, None];
//! for leg in &mut legs {
//!     let pair = ports.allocate()?; // RTP 30000, RTCP 30001; then 30002/30003
//!     let bind = |port| SocketAddrV4::new(ip, port);
//!     let rtp = iface.udp_bind(bind(pair.rtp()), BindOptions::default())?;
//!     let rtcp = iface.udp_bind(bind(pair.rtcp()), BindOptions::default())?;
//!     *leg = Some(LegSockets { rtp, rtcp: Some(rtcp) });
//! }
//! let [Some(a), Some(b)] = legs else { unreachable!() };
//! let new_leg = || Leg { latch: Latch::new(LatchConfig::default()), stats: None };
//! let mut relay = Relay { sessions: SessionTable::new() };
//! relay.sessions.insert([a, b], [new_leg(), new_leg()])?;
//! // Then, on the lcore: loop { iface.poll(&mut port, clock.now(), &mut relay); }
//! # Ok(())
//! # }
//! ```
//!
//! Invariants: nothing here allocates, reads a clock or panics on the
//! per-packet calls; control-path calls return typed errors.

pub mod latch;
pub mod ports;
pub mod relay;
pub mod sessions;

pub use latch::{Latch, LatchConfig, Verdict};
pub use ports::{PortAllocator, PortError, PortPair, RangeError};
pub use sessions::{
    Channel, Endpoint, Entry, Leg, LegSockets, SessionId, SessionTable, TableError,
};
