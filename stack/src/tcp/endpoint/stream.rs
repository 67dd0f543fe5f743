//! The queues a connection shares with an application thread in queue
//! mode (the endpoint's side of `socket::tcp`): a stream's two bounded
//! queues of packet buffers with its state flags and close reason in
//! atomics, and a listener's queue of accepted streams.
//!
//! The lcore is the only producer of `rx` and of accepted streams, and the
//! only consumer of `tx`. It never blocks or reads a clock here: it only
//! wakes sleepers, and only when one sleeps; the blocking side is in
//! `socket::tcp`.

use crate::port::Buf;
use crate::tcp::ids::ConnId;
use crate::tcp::TcpError;
use core::net::SocketAddr;
use crossbeam_queue::ArrayQueue;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// Buffers each way per stream.
pub(crate) const STREAM_QUEUE: usize = 64;

/// Stream flags.
pub(crate) const OPEN: u8 = 1;
/// Every byte before the peer's FIN is on `rx`.
pub(crate) const EOF: u8 = 2;
/// The connection is gone.
pub(crate) const CLOSED: u8 = 4;
/// The application shut its sending side.
pub(crate) const SHUTDOWN: u8 = 8;
/// The application dropped its handle: nothing will read the stream.
pub(crate) const DROPPED: u8 = 16;
/// ... with received data it had taken but not read.
pub(crate) const UNREAD: u8 = 32;

/// Sleeping and waking, shared by streams and listeners.
#[derive(Debug, Default)]
pub(crate) struct Waker {
    /// Threads asleep in the waker (the application side counts itself in
    /// and out).
    pub(crate) sleepers: AtomicUsize,
    pub(crate) lock: Mutex<()>,
    pub(crate) wake: Condvar,
}

impl Waker {
    /// Lcore side: wakes sleepers, if any.
    pub(crate) fn wake(&self) {
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.wake.notify_all();
        }
    }
}

/// What a stream's two sides share.
#[derive(Debug)]
pub(crate) struct StreamQueue<B: Buf> {
    pub(crate) rx: ArrayQueue<B>,
    pub(crate) tx: ArrayQueue<B>,
    pub(crate) flags: AtomicU8,
    /// Why it closed ([`error_code`]), 0 for an orderly close.
    pub(crate) error: AtomicU8,
    /// The connection's id (set by the lcore; for attention).
    pub(crate) id: Mutex<Option<ConnId>>,
    pub(crate) waker: Waker,
    pub(crate) peer: Mutex<Option<SocketAddr>>,
}

impl<B: Buf> StreamQueue<B> {
    pub(crate) fn new() -> StreamQueue<B> {
        StreamQueue {
            rx: ArrayQueue::new(STREAM_QUEUE),
            tx: ArrayQueue::new(STREAM_QUEUE),
            flags: AtomicU8::new(0),
            error: AtomicU8::new(0),
            id: Mutex::new(None),
            waker: Waker::default(),
            peer: Mutex::new(None),
        }
    }

    pub(crate) fn has(&self, flag: u8) -> bool {
        self.flags.load(Ordering::Acquire) & flag != 0
    }

    pub(crate) fn set(&self, flag: u8) {
        self.flags.fetch_or(flag, Ordering::AcqRel);
    }

    /// Why it closed, if not in order (the decoding of [`error_code`]).
    pub(crate) fn error(&self) -> Option<TcpError> {
        match self.error.load(Ordering::Acquire) {
            1 => Some(TcpError::Refused),
            2 => Some(TcpError::Reset),
            3 => Some(TcpError::TimedOut),
            4 => Some(TcpError::AddressNotAvailable),
            5 => Some(TcpError::NotConnected),
            6 => Some(TcpError::Unreachable),
            7 => Some(TcpError::ConnectionLimit),
            8 => Some(TcpError::NoBufferMemory),
            _ => None,
        }
    }
}

/// The code a [`TcpError`] travels as (0: none).
pub(crate) fn error_code(error: Option<TcpError>) -> u8 {
    match error {
        None => 0,
        Some(TcpError::Refused) => 1,
        Some(TcpError::Reset) => 2,
        Some(TcpError::TimedOut) => 3,
        Some(TcpError::AddressNotAvailable) => 4,
        Some(TcpError::NotConnected) => 5,
        Some(TcpError::Unreachable) => 6,
        Some(TcpError::ConnectionLimit) => 7,
        Some(TcpError::NoBufferMemory) => 8,
    }
}

/// A listener's queue of accepted streams.
#[derive(Debug)]
pub(crate) struct AcceptQueue<B: Buf> {
    pub(crate) streams: ArrayQueue<Arc<StreamQueue<B>>>,
    pub(crate) waker: Waker,
}

impl<B: Buf> AcceptQueue<B> {
    pub(crate) fn new(backlog: usize) -> AcceptQueue<B> {
        AcceptQueue {
            streams: ArrayQueue::new(backlog.max(1)),
            waker: Waker::default(),
        }
    }
}
