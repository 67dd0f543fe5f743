//! Socket groups: many queue-mode UDP sockets sharing one receive queue, so
//! an application thread receives across thousands of sockets in one call,
//! with no `epoll` and no per-socket queue to visit (a media server's
//! RTP/RTCP ports). Each datagram names its socket
//! ([`Datagram::socket`]), source and receive time
//! ([`Datagram::received_at`]).
//!
//! - **Receive**: the lcore pushes each burst's datagrams for the group's
//!   sockets into the shared queue and wakes a sleeping receiver once per
//!   poll, as for a single socket.
//! - **Send**: [`UdpGroup::send_batch`] queues many datagrams, each from a
//!   member socket; [`UdpGroup::forward`] sends a received datagram on in
//!   its own buffer (a relay's forward, no copy).
//!
//! A relay thread forwarding between two members (the lcore polls the
//! interface elsewhere; the hidden lines run it on an in-memory port and
//! check that a packet to port 30000 leaves port 30002 for `peer_b`,
//! marked EF):
//!
//! ```
//! # use dpstack_stack::iface::{DropDatagrams, Interface, InterfaceConfig};
//! # use dpstack_stack::port::memory::{MemBuf, MemPool, MemPort, MemPortConfig};
//! # use dpstack_stack::port::MacAddr;
//! # use dpstack_stack::route::Ipv4Cidr;
//! # use dpstack_stack::socket::{SocketError, StackHandle};
//! # use dpstack_stack::time::Instant;
//! # use dpstack_stack::udp::BindOptions;
//! # use dpstack_stack::wire::arp::{ArpOperation, ArpRepr};
//! # use dpstack_stack::wire::ethernet::{EtherType, EthernetFrame};
//! # use dpstack_stack::wire::ipv4::{protocol, Ipv4Header, Ipv4Packet};
//! # use dpstack_stack::wire::udp::UdpPacket;
//! # use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
//! # use std::sync::atomic::{AtomicBool, Ordering};
//! # use std::sync::{Arc, Mutex};
//! # use std::thread;
//! # use std::time::Duration;
//! # fn relay(handle: StackHandle<MemPool>, ip: Ipv4Addr, peer_a: SocketAddr, peer_b: SocketAddr)
//! #     -> Result<(), SocketError> {
//! let group = handle.udp_group(65_536);
//! let media = BindOptions { tos: 46 << 2, ..BindOptions::default() }; // DSCP EF
//! let (a, _) = group.bind(SocketAddrV4::new(ip, 30000), media)?;
//! let (b, _) = group.bind(SocketAddrV4::new(ip, 30002), media)?;
//! let mut got = Vec::with_capacity(256);
//! loop {
//!     group.recv_batch(&mut got, 256, None)?;
//!     for datagram in got.drain(..) {
//!         let arrival = datagram.received_at(); // for the jitter of datagram.socket()'s leg
//!         let (from, to) = if datagram.socket() == a { (b, peer_b) } else { (a, peer_a) };
//!         let _ = group.forward(datagram, from, to);
//!     }
//! }
//! # }
//! #
//! # fn main() {
//! #     let (ip, mac) = (Ipv4Addr::new(10, 0, 0, 1), MacAddr([2, 0, 0, 0, 0, 1]));
//! #     let config = InterfaceConfig::new(mac, Ipv4Cidr::new(ip, 24).unwrap());
//! #     let mut iface: Interface<MemBuf> = Interface::new(config).unwrap();
//! #     let port = MemPort::new(MemPortConfig { mac, ..MemPortConfig::default() });
//! #     let handle = iface.handle(port.pool(), 64);
//! #     let port = Arc::new(Mutex::new(port));
//! #     let stop = Arc::new(AtomicBool::new(false));
//! #     let lcore = {
//! #         let (port, stop) = (Arc::clone(&port), Arc::clone(&stop));
//! #         thread::spawn(move || {
//! #             let mut ticks = 0;
//! #             while !stop.load(Ordering::Relaxed) {
//! #                 ticks += 1;
//! #                 let now = Instant::from_nanos(ticks * 1000);
//! #                 iface.poll(&mut *port.lock().unwrap(), now, &mut DropDatagrams);
//! #                 thread::yield_now();
//! #             }
//! #         })
//! #     };
//! #     let (a_ip, a_mac) = (Ipv4Addr::new(10, 0, 0, 2), MacAddr([2, 0, 0, 0, 0, 2]));
//! #     let (b_ip, b_mac) = (Ipv4Addr::new(10, 0, 0, 3), MacAddr([2, 0, 0, 0, 0, 3]));
//! #     let (peer_a, peer_b) = (SocketAddr::from((a_ip, 5004)), SocketAddr::from((b_ip, 6000)));
//! #     // The relay thread blocks in `recv_batch` for ever; the process ends it.
//! #     thread::spawn(move || relay(handle, ip, peer_a, peer_b));
//! #     // B's endpoint announces itself, then A's sends until the relay is up.
//! #     let mut arp = [0u8; 28];
//! #     ArpRepr {
//! #         operation: ArpOperation::Request,
//! #         sender_mac: b_mac,
//! #         sender_ip: b_ip,
//! #         target_mac: MacAddr::default(),
//! #         target_ip: ip,
//! #     }
//! #     .emit(&mut arp);
//! #     port.lock().unwrap().push_rx(&ethernet(MacAddr::BROADCAST, b_mac, EtherType::Arp, &arp));
//! #     let payload = b"\x80\x00\x00\x01 an RTP packet";
//! #     let mut udp = vec![0u8; 8 + payload.len()];
//! #     udp[8..].copy_from_slice(payload);
//! #     let len = payload.len() as u16;
//! #     UdpPacket::new_unchecked(&mut udp[..]).emit_header((a_ip, 5004), (ip, 30000), len);
//! #     let mut ipv4 = vec![0u8; 20 + udp.len()];
//! #     ipv4[20..].copy_from_slice(&udp);
//! #     Ipv4Packet::new_unchecked(&mut ipv4[..]).emit_header(&Ipv4Header {
//! #         src: a_ip,
//! #         dst: ip,
//! #         protocol: protocol::UDP,
//! #         payload_len: udp.len() as u16,
//! #         ttl: 64,
//! #         ident: 1,
//! #         dont_fragment: true,
//! #         tos: 0,
//! #     });
//! #     let frame = ethernet(mac, a_mac, EtherType::Ipv4, &ipv4);
//! #     let relayed = (0..5000).find_map(|_| {
//! #         let mut port = port.lock().unwrap();
//! #         let relayed = port.take_tx().into_iter().find(|f| {
//! #             let eth = EthernetFrame::new_checked(&f[..]).unwrap();
//! #             let ip = Ipv4Packet::new_checked(eth.payload());
//! #             ip.is_ok_and(|ip| ip.protocol() == protocol::UDP)
//! #         });
//! #         if relayed.is_none() {
//! #             port.push_rx(&frame);
//! #             drop(port);
//! #             thread::sleep(Duration::from_millis(1));
//! #         }
//! #         relayed
//! #     });
//! #     stop.store(true, Ordering::Relaxed);
//! #     lcore.join().unwrap();
//! #     let relayed = relayed.expect("a packet to port 30000 is relayed");
//! #     let eth = EthernetFrame::new_checked(&relayed[..]).unwrap();
//! #     assert_eq!(eth.dst(), b_mac);
//! #     let out = Ipv4Packet::new_checked(eth.payload()).unwrap();
//! #     assert_eq!((out.src(), out.dst(), out.tos()), (ip, b_ip, 0xb8));
//! #     let udp = UdpPacket::new_checked(out.payload()).unwrap();
//! #     assert_eq!((udp.src_port(), udp.dst_port()), (30002, 6000));
//! #     let pseudo = dpstack_stack::wire::checksum::pseudo_header_v4(
//! #         out.src(), out.dst(), dpstack_stack::wire::ipv4::protocol::UDP, udp.len());
//! #     assert!(udp.verify_checksum(pseudo));
//! #     assert_eq!(udp.payload(), &payload[..]);
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
//! Invariants: membership changes only on the control path (bind, close),
//! under the group's own lock, never on the lcore's; every member is closed
//! when the group is dropped; a full queue drops and counts, it never
//! blocks the lcore.

use super::queue::{bind_queue, queue_close, queue_forward, queue_send, send_all, RecvError};
use super::{BufPool, Shared, SocketError, SocketQueue, StackHandle};
use crate::udp::{BindOptions, Datagram, SocketId};
use core::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// UDP sockets sharing one receive queue, used from application threads.
/// Dropping the group closes every member.
#[derive(Debug)]
pub struct UdpGroup<P: BufPool> {
    queue: Arc<SocketQueue<P::Buf>>,
    shared: Arc<Shared<P::Buf>>,
    pool: Arc<P>,
    members: Mutex<Vec<SocketId>>,
}

impl<P: BufPool> StackHandle<P> {
    /// An empty socket group whose shared receive queue holds `capacity`
    /// datagrams (size it for the group's sockets' burst, e.g. 50 packets
    /// per second per RTP socket times the longest pause of the reader).
    pub fn udp_group(&self, capacity: usize) -> UdpGroup<P> {
        UdpGroup {
            queue: Arc::new(SocketQueue::new(capacity)),
            shared: Arc::clone(&self.shared),
            pool: Arc::clone(&self.pool),
            members: Mutex::new(Vec::new()),
        }
    }
}

impl<P: BufPool> UdpGroup<P> {
    /// Binds a member socket (port 0: an ephemeral port); returns its id
    /// and bound address.
    pub fn bind(
        &self,
        local: impl Into<SocketAddr>,
        options: BindOptions,
    ) -> Result<(SocketId, SocketAddr), SocketError> {
        let (id, local) = bind_queue(&self.shared, local.into(), options, &self.queue)?;
        self.lock_members().push(id);
        Ok((id, local))
    }

    /// Closes a member socket; false if it is not one. Datagrams it
    /// received that are still queued are dropped with it once the lcore
    /// takes the close (as Linux frees a closed socket's queue): its id
    /// may name the next member bound. A reader may still get the ones it
    /// takes before then.
    pub fn close(&self, socket: SocketId) -> bool {
        let mut members = self.lock_members();
        let Some(at) = members.iter().position(|&m| m == socket) else {
            return false;
        };
        members.swap_remove(at);
        queue_close(&self.shared, socket);
        true
    }

    /// The member sockets, in no particular order.
    pub fn members(&self) -> Vec<SocketId> {
        self.lock_members().clone()
    }

    /// Only exchange datagrams with `remote` on `socket` from now on (as
    /// [`super::UdpSocket::connect`], waiting for the lcore's answer;
    /// after NAT latching, for instance).
    pub fn connect(
        &self,
        socket: SocketId,
        remote: impl Into<SocketAddr>,
    ) -> Result<(), SocketError> {
        self.check_member(socket)?;
        super::connect_queued(&self.shared, socket, remote.into())
    }

    /// Member `socket` joins multicast `group` on `on` (as
    /// [`super::UdpSocket::join`]). Returns the link.
    pub fn join(
        &self,
        socket: SocketId,
        group: core::net::IpAddr,
        on: crate::udp::membership::GroupLink,
    ) -> Result<usize, SocketError> {
        self.check_member(socket)?;
        super::membership_queued(&self.shared, socket, (group, on), true)
    }

    /// Member `socket` leaves `group` on `on`.
    pub fn leave(
        &self,
        socket: SocketId,
        group: core::net::IpAddr,
        on: crate::udp::membership::GroupLink,
    ) -> Result<usize, SocketError> {
        self.check_member(socket)?;
        super::membership_queued(&self.shared, socket, (group, on), false)
    }

    /// Moves up to `max` datagrams received on any member into `out`
    /// (zero-copy, in arrival order), waiting up to `timeout` (`None`:
    /// forever) for the first. Returns how many. An ICMP error for a
    /// connected member comes as [`SocketError::PeerOn`], naming it.
    pub fn recv_batch(
        &self,
        out: &mut Vec<Datagram<P::Buf>>,
        max: usize,
        timeout: Option<Duration>,
    ) -> Result<usize, SocketError> {
        self.queue
            .recv_into(out, max, timeout)
            .map_err(|e| match e {
                RecvError::Peer(index, error) => {
                    let socket = self
                        .lock_members()
                        .iter()
                        .copied()
                        .find(|s| s.index() == index);
                    match socket {
                        Some(socket) => SocketError::PeerOn(socket, error),
                        None => SocketError::Peer(error),
                    }
                }
                RecvError::TimedOut => SocketError::TimedOut,
            })
    }

    /// Sends `payload` from `socket` to `dst` (copied into a pool buffer;
    /// headers and transmission on the lcore). Sends do not check
    /// membership (a linear search per datagram): any bound socket of the
    /// interface may be named; the lcore drops and counts sends from a
    /// closed one.
    pub fn send_to(
        &self,
        socket: SocketId,
        payload: &[u8],
        dst: impl Into<SocketAddr>,
    ) -> Result<usize, SocketError> {
        queue_send(&self.shared, &*self.pool, socket, payload, dst.into())
    }

    /// Sends each `(socket, dst, payload)` (batch send across members).
    /// Returns how many were queued; stops at the first that cannot be (no
    /// buffer, queue full), which is the error if it is the first.
    pub fn send_batch<'d>(
        &self,
        datagrams: impl IntoIterator<Item = (SocketId, SocketAddr, &'d [u8])>,
    ) -> Result<usize, SocketError> {
        send_all(datagrams.into_iter().map(|(socket, dst, payload)| {
            queue_send(&self.shared, &*self.pool, socket, payload, dst)
        }))
    }

    /// Sends a received datagram's payload on from member `from` to `dst`
    /// in its own buffer (no copy; the lcore rebuilds the headers).
    pub fn forward(
        &self,
        datagram: Datagram<P::Buf>,
        from: SocketId,
        dst: impl Into<SocketAddr>,
    ) -> Result<usize, SocketError> {
        queue_forward(&self.shared, &*self.pool, from, datagram, dst.into())
    }

    /// Datagrams waiting to be read.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Datagrams dropped because the shared queue was full.
    pub fn dropped(&self) -> u64 {
        self.queue.dropped()
    }

    /// Threads blocked in a receive on the group right now.
    pub fn blocked_readers(&self) -> usize {
        self.queue.sleepers()
    }

    fn check_member(&self, socket: SocketId) -> Result<(), SocketError> {
        if self.lock_members().contains(&socket) {
            Ok(())
        } else {
            Err(SocketError::NotMember)
        }
    }

    fn lock_members(&self) -> std::sync::MutexGuard<'_, Vec<SocketId>> {
        self.members.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<P: BufPool> Drop for UdpGroup<P> {
    fn drop(&mut self) {
        for socket in self.lock_members().drain(..) {
            queue_close(&self.shared, socket);
        }
    }
}
