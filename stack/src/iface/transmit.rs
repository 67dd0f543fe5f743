//! The transmit context of one poll: a batch of outgoing frames per port
//! ([`TxBatch`]), the ports and batches bundled as [`Out`] for the send
//! paths, and the error type of those paths ([`SendError`]).
//!
//! The bottom of the pipeline: every send path queues through [`Out::push`],
//! and nothing here knows about IP. Invariant: a frame handed to [`Out`] is
//! sent in a burst, or held in its batch for the next flush (the device's
//! queue was full: a poll later it usually has room, and a TCP segment
//! held is not one to recover by retransmission), or freed and counted
//! (`TxDeviceFull` when the batch itself is full, `TxNoRoute`); it is never
//! lost silently while the interface lives.

use crate::counters::{Counters, DropReason, Stat};
use crate::port::{Buf, MacAddr, Port};
use arrayvec::ArrayVec;

/// Packets collected before one `tx_burst`.
pub const TX_BATCH: usize = 64;

/// Why a send failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendError {
    /// The socket does not exist.
    NoSocket,
    /// No route to the destination.
    NoRoute,
    /// The payload does not fit one buffer.
    TooLarge,
    /// No buffer was free.
    NoBuffer,
    /// The neighbour is unresolved and its wait queue is full.
    NeighborUnresolved,
    /// The destination (or its gateway) is one of the stack's own
    /// addresses: the stack has no loopback, and asking the link for our
    /// own MAC would only time out.
    OwnAddress,
    /// The destination port is 0, which no socket can listen on (Linux's
    /// `EINVAL` for a `sendto` to port 0).
    PortZero,
}

impl core::fmt::Display for SendError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            SendError::NoSocket => "no such socket",
            SendError::NoRoute => "no route to host",
            SendError::TooLarge => "datagram too large for one buffer",
            SendError::NoBuffer => "no buffer available",
            SendError::NeighborUnresolved => "neighbour unresolved and its queue is full",
            SendError::OwnAddress => {
                "the destination is one of the stack's own addresses (no loopback)"
            }
            SendError::PortZero => "destination port 0 (no socket listens there)",
        })
    }
}

impl std::error::Error for SendError {}

/// Outgoing packets of one poll, sent in bursts.
#[derive(Debug)]
pub struct TxBatch<B> {
    bufs: ArrayVec<B, TX_BATCH>,
    retries: u32,
}

impl<B: Buf> TxBatch<B> {
    /// An empty batch whose flushes retry `retries` times.
    pub fn new(retries: u32) -> TxBatch<B> {
        TxBatch {
            bufs: ArrayVec::new(),
            retries,
        }
    }

    /// Queues `buf`; sends the batch first if it is full, and drops `buf`,
    /// counted, if the device took none of it.
    #[inline]
    pub fn push<P: Port<Buf = B>>(&mut self, port: &mut P, buf: B, counters: &Counters) {
        if self.bufs.is_full() {
            self.flush(port, counters);
        }
        if self.bufs.try_push(buf).is_err() {
            counters.count_drop(DropReason::TxDeviceFull);
        }
    }

    /// Sends what is queued, retrying the refused tail `retries` times;
    /// what the device still refuses stays queued, in order, for the next
    /// flush.
    pub fn flush<P: Port<Buf = B>>(&mut self, port: &mut P, counters: &Counters) {
        if self.bufs.is_empty() {
            return;
        }
        let mut sent = port.tx_burst(&mut self.bufs);
        for _ in 0..self.retries {
            if self.bufs.is_empty() {
                break;
            }
            sent += port.tx_burst(&mut self.bufs);
        }
        counters.add(Stat::EthOutFrames, sent as u64);
    }
}

/// Where a poll's packets leave: the ports, in link order, and a transmit
/// batch for each. A link without a port (the caller passed fewer ports
/// than the interface has links) drops what is sent to it, counted.
pub struct Out<'a, P: Port> {
    ports: &'a mut [P],
    batches: &'a mut [TxBatch<P::Buf>],
}

impl<'a, P: Port> Out<'a, P> {
    pub(crate) fn new(ports: &'a mut [P], batches: &'a mut [TxBatch<P::Buf>]) -> Out<'a, P> {
        Out { ports, batches }
    }

    /// The same ports and batches, for a shorter borrow.
    pub(crate) fn reborrow(&mut self) -> Out<'_, P> {
        Out {
            ports: &mut *self.ports,
            batches: &mut *self.batches,
        }
    }

    /// The port of `link`.
    #[inline]
    pub(crate) fn port(&mut self, link: usize) -> Option<&mut P> {
        self.ports.get_mut(link)
    }

    /// A fresh buffer from `link`'s pool.
    pub(crate) fn alloc(&mut self, link: usize) -> Option<P::Buf> {
        self.ports.get_mut(link)?.alloc()
    }

    /// Queues `buf` for `link`. Per packet: the common case (a batch with
    /// room) is inlined into its callers, a few instructions with no
    /// registers to save; a missing link or a full batch goes out of line.
    #[inline]
    pub(crate) fn push(&mut self, link: usize, buf: P::Buf, counters: &Counters) {
        match self.batches.get_mut(link) {
            Some(batch) if batch.bufs.len() < batch.bufs.capacity() => batch.bufs.push(buf),
            _ => self.push_slow(link, buf, counters),
        }
    }

    /// [`Out::push`] without room: no such link (dropped, counted), or a
    /// full batch, sent first.
    #[cold]
    #[inline(never)]
    fn push_slow(&mut self, link: usize, buf: P::Buf, counters: &Counters) {
        let Some(batch) = self.batches.get_mut(link) else {
            return counters.count_drop(DropReason::TxNoRoute);
        };
        if let Err(full) = batch.bufs.try_push(buf) {
            // Full: send the batch (ports and batches have the same length).
            if let Some(port) = self.ports.get_mut(link) {
                batch.flush(port, counters);
            }
            // What the device refused stays in the batch; a frame that
            // finds it still full is dropped (the newest, as a full
            // device queue drops its tail).
            if batch.bufs.try_push(full.element()).is_err() {
                counters.count_drop(DropReason::TxDeviceFull);
            }
        }
    }

    /// Sends every batch.
    pub(crate) fn flush(&mut self, counters: &Counters) {
        for (port, batch) in self.ports.iter_mut().zip(self.batches.iter_mut()) {
            batch.flush(port, counters);
        }
    }
}

/// Sets the Ethernet destination of a frame whose header is in place.
pub(crate) fn set_destination_mac<B: Buf>(buf: &mut B, mac: MacAddr) {
    if let Some(header) = buf.data_mut().get_mut(..6) {
        header.copy_from_slice(&mac.0);
    }
}
