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
    /// The frame, headers included.
    pub buf: B,
    /// The sender.
    pub src: SocketAddrV4,
    /// The address it was sent to (one of ours).
    pub dst: SocketAddrV4,
    /// The payload's byte range within `buf.data()`.
    pub payload: Range<usize>,
}

impl<B: Buf> Datagram<B> {
    /// The payload bytes.
    pub fn payload(&self) -> &[u8] {
        &self.buf.data()[self.payload.clone()]
    }

    /// The payload bytes, writable in place.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let range = self.payload.clone();
        &mut self.buf.data_mut()[range]
    }
}
