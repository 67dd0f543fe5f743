//! UDP: the socket table with Linux's lookup semantics ([`table`]) and the
//! datagram type handed to applications.

pub mod table;

pub use table::{BindError, BindOptions, SocketId, UdpTable};

use crate::port::Buf;
use core::net::SocketAddrV4;
use core::ops::Range;

/// A received UDP datagram: the whole frame's buffer (zero-copy) and where
/// its payload lies in it.
#[derive(Debug)]
pub struct Datagram<B: Buf> {
    pub(crate) buf: B,
    /// The sender.
    pub src: SocketAddrV4,
    /// The address it was sent to (one of ours, or a broadcast address).
    pub dst: SocketAddrV4,
    /// Where the payload lies in the frame (u32: a reassembled datagram
    /// may end past 65,535; compact, as datagrams move by value per packet).
    pub(crate) payload_start: u32,
    pub(crate) payload_end: u32,
    /// The payload was changed through [`Datagram::payload_mut`]: a reply
    /// must recompute the UDP checksum.
    pub(crate) modified: bool,
    /// It was sent to a broadcast address: a reply must come from ours.
    pub(crate) to_broadcast: bool,
    /// The link it arrived on (a reply leaves through it).
    pub(crate) link: u16,
}

impl<B: Buf> Datagram<B> {
    pub(crate) fn new(
        buf: B,
        src: SocketAddrV4,
        dst: SocketAddrV4,
        payload: Range<usize>,
        to_broadcast: bool,
        link: u16,
    ) -> Self {
        Datagram {
            buf,
            src,
            dst,
            payload_start: payload.start as u32,
            payload_end: payload.end as u32,
            modified: false,
            to_broadcast,
            link,
        }
    }

    /// The link (port, in the interface's link order) it arrived on.
    pub fn link(&self) -> usize {
        usize::from(self.link)
    }

    /// The payload bytes.
    pub fn payload(&self) -> &[u8] {
        &self.buf.data()[self.payload_range()]
    }

    /// The payload bytes, writable in place (for a reply with the same
    /// length; the reply then recomputes the checksum).
    pub fn payload_mut(&mut self) -> &mut [u8] {
        self.modified = true;
        let range = self.payload_range();
        &mut self.buf.data_mut()[range]
    }

    /// Where the payload lies in [`Datagram::frame`].
    pub fn payload_range(&self) -> Range<usize> {
        self.payload_start as usize..self.payload_end as usize
    }

    /// The whole frame, headers included.
    pub fn frame(&self) -> &[u8] {
        self.buf.data()
    }

    /// Gives up the datagram, returning its buffer (the whole frame).
    pub fn into_buf(self) -> B {
        self.buf
    }
}
