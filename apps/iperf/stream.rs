//! One data stream of a test and its counters, kept the way iperf3 keeps
//! them: bytes and blocks; for a UDP sender the next packet number; for a
//! UDP receiver the highest number seen, losses (a gap adds to them, a late
//! packet takes one back), out-of-order packets and RFC 3550-style jitter
//! in seconds. Totals exclude the omitted start (`-O`), as iperf3 reports.

use crate::lanes::LaneStream;
use crate::proto::{StreamResults, UdpHeader};
use dpstack::stack::iface::ConnId;
use dpstack::stack::udp::SocketId;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// How a stream's bytes travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// A TCP connection.
    Tcp(ConnId),
    /// UDP between our `socket` and the peer's address.
    Udp {
        /// Our socket.
        socket: SocketId,
        /// The peer's address and port.
        peer: SocketAddr,
    },
    /// A TCP connection owned by another lane, which moves its bytes and
    /// stores its counters in the stream's [`Stream::link`].
    Elsewhere,
}

/// Counters at some moment, to report the difference.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Snapshot {
    /// Bytes sent or received.
    pub bytes: u64,
    /// Datagrams sent, or the highest number received.
    pub packets: u64,
    /// Datagrams lost so far.
    pub lost: i64,
    /// Datagrams that came out of order.
    pub out_of_order: u64,
    /// Retransmitted segments (TCP sender).
    pub retransmits: u64,
}

/// A stream.
#[derive(Debug, Clone)]
pub struct Stream {
    /// Its id: 1, 3, 4, 5, ... in creation order (iperf3's numbering).
    pub id: u32,
    /// We send on it (else we receive).
    pub sender: bool,
    /// Its connection or socket.
    pub transport: Transport,
    /// What has happened so far.
    pub now: Snapshot,
    /// The counters when the omitted seconds ended (zero without `-O`).
    pub omitted: Snapshot,
    /// The counters at the start of the current interval.
    pub interval: Snapshot,
    /// Interarrival jitter, seconds (UDP receiver).
    pub jitter: f64,
    /// The last transit time, seconds (UDP receiver).
    prev_transit: Option<f64>,
    /// Blocks written (sender).
    pub blocks: u64,
    /// Bytes of the current block already written (TCP sender).
    pub block_offset: usize,
    /// The peer closed it.
    pub finished: bool,
    /// The counters of a stream on another lane ([`Transport::Elsewhere`]).
    pub link: Option<Arc<LaneStream>>,
}

/// The id of the `index`-th stream (iperf3 skips 2).
pub fn stream_id(index: usize) -> u32 {
    if index == 0 {
        1
    } else {
        index as u32 + 2
    }
}

impl Stream {
    /// The `index`-th stream of a test.
    pub fn new(index: usize, sender: bool, transport: Transport) -> Stream {
        Stream {
            id: stream_id(index),
            sender,
            transport,
            now: Snapshot::default(),
            omitted: Snapshot::default(),
            interval: Snapshot::default(),
            jitter: 0.0,
            prev_transit: None,
            blocks: 0,
            block_offset: 0,
            finished: false,
            link: None,
        }
    }

    /// A stream whose bytes another lane moves, counting into `link`.
    pub fn elsewhere(index: usize, sender: bool, link: Arc<LaneStream>) -> Stream {
        Stream {
            link: Some(link),
            ..Stream::new(index, sender, Transport::Elsewhere)
        }
    }

    /// Takes in what the lane that owns the stream counted.
    pub fn sync(&mut self) {
        if let Some(link) = &self.link {
            self.now.bytes = link.bytes.load(Ordering::Relaxed);
            self.blocks = link.blocks.load(Ordering::Relaxed);
            self.now.retransmits = link.retransmits.load(Ordering::Relaxed);
            self.finished |= link.finished.load(Ordering::Relaxed);
        }
    }

    /// Its connection, if TCP.
    pub fn conn(&self) -> Option<ConnId> {
        match self.transport {
            Transport::Tcp(conn) => Some(conn),
            Transport::Udp { .. } | Transport::Elsewhere => None,
        }
    }

    /// Accounts a received UDP datagram with header `header` that arrived
    /// at `arrival_ns` (our clock) carrying `len` bytes.
    pub fn udp_received(&mut self, header: UdpHeader, arrival_ns: u64, len: usize) {
        self.now.bytes += len as u64;
        let seq = header.count;
        let highest = self.now.packets;
        if seq > highest {
            if seq > highest + 1 {
                self.now.lost += (seq - 1 - highest) as i64;
            }
            self.now.packets = seq;
        } else {
            // Late: it was counted lost when the gap opened.
            self.now.out_of_order += 1;
            if self.now.lost > 0 {
                self.now.lost -= 1;
            }
        }
        // Only differences of transit times matter: the clocks need not agree.
        let transit = (arrival_ns as f64 - header.nanos() as f64) / 1e9;
        if let Some(prev) = self.prev_transit {
            let d = (transit - prev).abs();
            self.jitter += (d - self.jitter) / 16.0;
        }
        self.prev_transit = Some(transit);
    }

    /// Marks the end of the omitted seconds: totals count from here.
    pub fn end_omit(&mut self) {
        self.omitted = self.now;
        self.interval = self.now;
        self.jitter = 0.0;
    }

    /// Totals since the omitted seconds.
    pub fn total(&self) -> Snapshot {
        diff(self.now, self.omitted)
    }

    /// This interval's counts; the next interval starts now.
    pub fn take_interval(&mut self) -> Snapshot {
        let d = diff(self.now, self.interval);
        self.interval = self.now;
        d
    }

    /// Its figures for the results exchange.
    pub fn results(&self, udp: bool, end_time: f64) -> StreamResults {
        let total = self.total();
        StreamResults {
            id: self.id,
            bytes: total.bytes,
            retransmits: if self.sender && !udp {
                total.retransmits as i64
            } else {
                -1
            },
            jitter: if udp && !self.sender {
                self.jitter
            } else {
                0.0
            },
            errors: if udp && !self.sender { total.lost } else { 0 },
            packets: if udp { total.packets as i64 } else { 0 },
            start_time: 0.0,
            end_time,
        }
    }
}

fn diff(a: Snapshot, b: Snapshot) -> Snapshot {
    Snapshot {
        bytes: a.bytes - b.bytes.min(a.bytes),
        packets: a.packets - b.packets.min(a.packets),
        lost: a.lost - b.lost,
        out_of_order: a.out_of_order - b.out_of_order.min(a.out_of_order),
        retransmits: a.retransmits - b.retransmits.min(a.retransmits),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn udp() -> Stream {
        use dpstack::stack::iface::{Interface, InterfaceConfig, LinkConfig};
        use dpstack::stack::port::memory::MemBuf;
        use dpstack::stack::port::MacAddr;
        use dpstack::stack::route::Ipv4Cidr;
        let cidr = Ipv4Cidr::new([10, 0, 0, 1].into(), 24).unwrap();
        let link = LinkConfig::new(MacAddr([2, 0, 0, 0, 0, 1]), cidr);
        let mut iface: Interface<MemBuf> =
            Interface::new(InterfaceConfig::with_links(vec![link])).unwrap();
        let socket = iface
            .udp_bind(
                "10.0.0.1:5201".parse::<SocketAddr>().unwrap(),
                Default::default(),
            )
            .unwrap();
        let peer: SocketAddr = "10.0.0.2:40000".parse().unwrap();
        Stream::new(0, false, Transport::Udp { socket, peer })
    }

    fn header(count: u64, sent_us: u64) -> UdpHeader {
        UdpHeader {
            sec: (sent_us / 1_000_000) as u32,
            usec: (sent_us % 1_000_000) as u32,
            count,
        }
    }

    #[test]
    fn ids_skip_two_as_iperf3_does() {
        assert_eq!((0..4).map(stream_id).collect::<Vec<_>>(), [1, 3, 4, 5]);
    }

    #[test]
    fn gaps_count_as_loss_and_late_packets_take_it_back() {
        let mut s = udp();
        for (seq, t) in [(1, 0), (2, 1), (5, 2), (3, 3), (6, 4)] {
            s.udp_received(header(seq, t * 1000), t * 1_000_000, 100);
        }
        // 5 after 2 opens a gap of two (3 and 4); 3 arrives late.
        assert_eq!(s.now.packets, 6);
        assert_eq!(s.now.lost, 1);
        assert_eq!(s.now.out_of_order, 1);
        assert_eq!(s.now.bytes, 500);
    }

    #[test]
    fn jitter_follows_rfc_3550_in_seconds() {
        let mut s = udp();
        // Sent every 1 ms; arrivals 0, 1.5, 2, 3.5 ms: transits 0, 0.5, 0, 0.5 ms.
        for (seq, arrival_us) in [(1, 0u64), (2, 1500), (3, 2000), (4, 3500)] {
            s.udp_received(header(seq, (seq - 1) * 1000), arrival_us * 1000, 64);
        }
        // d = 0.5 ms three times: J = 0.5/16, then += (0.5 - J)/16 twice.
        let mut expected = 0.0f64;
        for _ in 0..3 {
            expected += (0.0005 - expected) / 16.0;
        }
        assert!(
            (s.jitter - expected).abs() < 1e-12,
            "{} vs {expected}",
            s.jitter
        );
    }

    #[test]
    fn omitted_seconds_leave_the_totals() {
        let mut s = udp();
        s.udp_received(header(1, 0), 0, 100);
        s.udp_received(header(3, 2), 2000, 100);
        s.end_omit();
        s.udp_received(header(4, 3), 3000, 100);
        let total = s.total();
        assert_eq!((total.bytes, total.packets, total.lost), (100, 1, 0));
        let r = s.results(true, 1.0);
        assert_eq!(
            (r.bytes, r.packets, r.errors, r.retransmits),
            (100, 1, 0, -1)
        );
    }
}
