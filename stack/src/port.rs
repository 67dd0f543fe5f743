//! The port abstraction the stack is generic over: a [`Port`] moves bursts of
//! owned packet buffers ([`Buf`]) in and out of one rx/tx queue pair.
//!
//! Invariants:
//! - A buffer is owned: it moves from rx through the stack to tx (or is
//!   dropped, which returns it to its pool). Nothing copies payload.
//! - Bursts are fixed-capacity [`ArrayVec`]s on the caller's stack: no heap
//!   allocation per burst or per packet.
//! - Every implementation is used through generics (monomorphized per driver):
//!   the stack makes no `dyn` call per packet.
//! - A transmit that the device does not fully accept is retried a bounded
//!   number of times, then the unsent tail is dropped and counted
//!   ([`send_burst`]); nothing is lost silently and nothing blocks.

pub mod memory;

use arrayvec::ArrayVec;
use core::fmt;

/// The most packets one burst call moves (testpmd's `--burst` maximum).
pub const MAX_BURST: usize = 512;

/// The burst size used when the caller does not choose one.
pub const DEFAULT_BURST: usize = 32;

/// An Ethernet (MAC-48) address.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MacAddr(pub [u8; 6]);

impl MacAddr {
    /// The broadcast address, ff:ff:ff:ff:ff:ff.
    pub const BROADCAST: MacAddr = MacAddr([0xff; 6]);

    /// The raw octets.
    pub const fn octets(self) -> [u8; 6] {
        self.0
    }
}

impl fmt::Display for MacAddr {
    /// Upper-case and colon-separated, as testpmd prints it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.0;
        write!(
            f,
            "{:02X}:{:02X}:{:02X}:{:02X}:{:02X}:{:02X}",
            m[0], m[1], m[2], m[3], m[4], m[5]
        )
    }
}

impl fmt::Debug for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// What the device said about a checksum on receive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ChecksumStatus {
    /// The device did not check it: verify in software.
    #[default]
    Unknown,
    /// The device checked it and it is correct.
    Good,
    /// The device checked it and it is wrong.
    Bad,
}

/// Receive offload results a device attaches to a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RxOffload {
    /// IPv4 header checksum.
    pub ip_checksum: ChecksumStatus,
    /// TCP/UDP checksum.
    pub l4_checksum: ChecksumStatus,
    /// The RSS hash the device computed over the flow, if it did.
    pub rss_hash: Option<u32>,
}

/// An owned packet buffer with headroom for headers.
///
/// Dropping a buffer returns it to its pool. `data()` is the packet's first
/// (for single-segment buffers, only) segment.
pub trait Buf {
    /// The packet bytes in the first segment.
    fn data(&self) -> &[u8];
    /// The packet bytes in the first segment, writable in place.
    fn data_mut(&mut self) -> &mut [u8];
    /// Total packet length over all segments.
    fn len(&self) -> usize;
    /// True if the packet has no bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Free bytes before the data (room to prepend headers).
    fn headroom(&self) -> usize;
    /// Free bytes after the data in the last segment.
    fn tailroom(&self) -> usize;
    /// Grows the packet at the front by `len` bytes and returns them, or
    /// `None` (packet unchanged) if the headroom is too small.
    fn prepend(&mut self, len: usize) -> Option<&mut [u8]>;
    /// Grows the packet at the end by `len` bytes and returns them, or `None`
    /// (packet unchanged) if the tailroom is too small.
    fn append(&mut self, len: usize) -> Option<&mut [u8]>;
    /// Removes `len` bytes from the front (e.g. a parsed header). Returns
    /// false, packet unchanged, if the first segment is shorter than `len`.
    fn adjust(&mut self, len: usize) -> bool;
    /// Removes `len` bytes from the end. Returns false, packet unchanged, if
    /// the last segment is shorter than `len`.
    fn trim(&mut self, len: usize) -> bool;
    /// What the device checked on receive.
    fn rx_offload(&self) -> RxOffload;
    /// Hints the CPU to start loading the packet's first bytes, so a loop can
    /// prefetch packet i+1 while it works on packet i. A no-op by default.
    #[inline]
    fn prefetch(&self) {}
}

/// Gives buffers to threads that do not poll a port (application threads
/// of queue-mode sockets): a DPDK mempool, or the in-memory port's pool.
/// Beside [`Port`] because it is the same ground floor: buffers, not
/// sockets.
pub trait BufPool: Send + Sync + 'static {
    /// The buffer type.
    type Buf: Buf + Send + 'static;
    /// An empty buffer with headroom, or `None` if the pool is empty.
    fn alloc(&self) -> Option<Self::Buf>;
    /// An empty buffer that holds a whole 64 KiB datagram, if the pool has
    /// such buffers (for payloads that do not fit a regular one; the lcore
    /// fragments what exceeds the MTU).
    fn alloc_large(&self) -> Option<Self::Buf> {
        None
    }
}

/// One rx/tx queue pair of a network port, owned by one polling thread.
pub trait Port {
    /// The buffer type this port moves.
    type Buf: Buf;

    /// Receives up to `max` packets (capped by the spare capacity of `bufs`),
    /// appending them to `bufs`. Returns how many arrived.
    fn rx_burst<const N: usize>(&mut self, bufs: &mut ArrayVec<Self::Buf, N>, max: usize) -> usize;

    /// Offers all of `bufs` to the device. The accepted ones are removed from
    /// the front of `bufs`; the rest stay there, in order. Returns how many
    /// were accepted.
    fn tx_burst<const N: usize>(&mut self, bufs: &mut ArrayVec<Self::Buf, N>) -> usize;

    /// Takes an empty buffer from the port's pool, or `None` if it is empty.
    fn alloc(&mut self) -> Option<Self::Buf>;

    /// Fills `bufs` with `count` empty buffers, all or none: returns false,
    /// `bufs` unchanged, if the pool cannot give `count` or they do not fit.
    fn alloc_burst<const N: usize>(
        &mut self,
        bufs: &mut ArrayVec<Self::Buf, N>,
        count: usize,
    ) -> bool;

    /// The port's own MAC address.
    fn mac(&self) -> MacAddr;

    /// Takes an empty buffer big enough for a reassembled IPv4 datagram (up
    /// to 64 KiB), or `None` if the port has no such buffers (then fragments
    /// are dropped and counted). Slow path.
    fn alloc_large(&mut self) -> Option<Self::Buf> {
        None
    }
}

/// What [`send_burst`] did with a burst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TxOutcome {
    /// Packets the device accepted.
    pub sent: usize,
    /// Packets it still refused after the retries: dropped (freed).
    pub dropped: usize,
}

/// Transmits all of `bufs`, retrying the unsent tail at most `retries` more
/// times, then drops what is left. On return `bufs` is empty.
///
/// Hot path: no allocation; the caller adds `dropped` to its counters.
#[inline]
pub fn send_burst<P: Port, const N: usize>(
    port: &mut P,
    bufs: &mut ArrayVec<P::Buf, N>,
    retries: u32,
) -> TxOutcome {
    let mut sent = port.tx_burst(bufs);
    let mut attempts = 0;
    while !bufs.is_empty() && attempts < retries {
        sent += port.tx_burst(bufs);
        attempts += 1;
    }
    let dropped = bufs.len();
    bufs.clear();
    TxOutcome { sent, dropped }
}

#[cfg(test)]
mod tests {
    use super::memory::{MemPort, MemPortConfig};
    use super::*;

    fn frames(port: &mut MemPort, count: usize) -> ArrayVec<memory::MemBuf, 64> {
        let mut burst = ArrayVec::new();
        for i in 0..count {
            let mut buf = port.alloc().expect("pool has room");
            buf.append(1).expect("tailroom")[0] = i as u8;
            burst.push(buf);
        }
        burst
    }

    #[test]
    fn send_burst_sends_everything_when_the_device_has_room() {
        let mut port = MemPort::new(MemPortConfig::default());
        let mut burst = frames(&mut port, 8);
        let outcome = send_burst(&mut port, &mut burst, 0);
        assert_eq!(
            outcome,
            TxOutcome {
                sent: 8,
                dropped: 0
            }
        );
        assert!(burst.is_empty());
        let sent: Vec<u8> = port.take_tx().into_iter().map(|f| f[0]).collect();
        assert_eq!(sent, (0..8).collect::<Vec<u8>>());
    }

    #[test]
    fn send_burst_retries_then_drops_and_frees_the_tail() {
        let mut port = MemPort::new(MemPortConfig {
            tx_ring_size: 5,
            ..MemPortConfig::default()
        });
        let mut burst = frames(&mut port, 8);
        let outcome = send_burst(&mut port, &mut burst, 3);
        assert_eq!(
            outcome,
            TxOutcome {
                sent: 5,
                dropped: 3
            }
        );
        assert!(burst.is_empty());
        assert_eq!(port.tx_attempts(), 4, "one try plus three retries");
        // The dropped buffers went back to the pool; the sent ones are queued.
        assert_eq!(port.buffers_in_use(), 5);
        port.take_tx();
        assert_eq!(port.buffers_in_use(), 0);
    }

    #[test]
    fn send_burst_stops_retrying_once_everything_is_sent() {
        let mut port = MemPort::new(MemPortConfig::default());
        let mut burst = frames(&mut port, 3);
        send_burst(&mut port, &mut burst, 100);
        assert_eq!(port.tx_attempts(), 1);
    }

    #[test]
    fn mac_prints_like_testpmd() {
        let mac = MacAddr([0xd6, 0xdd, 0x56, 0x51, 0xed, 0x69]);
        assert_eq!(mac.to_string(), "D6:DD:56:51:ED:69");
    }
}
