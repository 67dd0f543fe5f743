//! The receive queue of queue-mode UDP sockets and groups, and the send and
//! control helpers they share: a bounded queue the lcore fills and
//! application threads drain, with a sleeping reader woken at most once per
//! poll; sends copied (or, for a forward, trimmed) into buffers queued for
//! the lcore; binds and closes as commands.
//!
//! Invariants: the lcore never blocks on a queue (a full one drops and
//! counts); it takes the condition variable's lock only when a reader
//! sleeps; queued data is read before a pending error, as in the kernel.

use super::{BufPool, Command, SendRequest, Shared, SocketError, HEADERS};
use crate::port::Buf;
use crate::udp::{BindOptions, Datagram, PeerError, SocketId};
use core::net::SocketAddr;
use crossbeam_queue::ArrayQueue;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// A socket's receive queue. Filled by the lcore, drained by app threads.
#[derive(Debug)]
pub struct SocketQueue<B: Buf> {
    datagrams: ArrayQueue<Datagram<B>>,
    sleepers: AtomicUsize,
    lock: Mutex<()>,
    wake: Condvar,
    dropped: AtomicU64,
    wakeups: AtomicU64,
    /// A pending [`PeerError`] ([`PeerError::to_bits`]), 0 for none.
    error: AtomicU64,
    /// The socket the pending error concerns (a group's queue serves many).
    error_socket: AtomicU32,
}

impl<B: Buf> SocketQueue<B> {
    pub(super) fn new(capacity: usize) -> SocketQueue<B> {
        SocketQueue {
            datagrams: ArrayQueue::new(capacity.max(1)),
            sleepers: AtomicUsize::new(0),
            lock: Mutex::new(()),
            wake: Condvar::new(),
            dropped: AtomicU64::new(0),
            wakeups: AtomicU64::new(0),
            error: AtomicU64::new(0),
            error_socket: AtomicU32::new(0),
        }
    }

    /// Lcore side: queues datagrams for this socket; returns how many were
    /// queued and how many did not fit (dropped). Wakes no one: the lcore
    /// calls [`Self::wake`] once after the whole burst.
    pub(crate) fn push_all(&self, batch: impl Iterator<Item = Datagram<B>>) -> (usize, usize) {
        let (mut pushed, mut dropped) = (0, 0);
        for datagram in batch {
            match self.datagrams.push(datagram) {
                Ok(()) => pushed += 1,
                Err(full) => {
                    drop(full);
                    dropped += 1;
                }
            }
        }
        if dropped > 0 {
            self.dropped.fetch_add(dropped as u64, Ordering::Relaxed);
        }
        (pushed, dropped)
    }

    /// Lcore side, at `socket`'s close: drops the datagrams queued for it
    /// and its pending error, and keeps the others, in order; returns how
    /// many of those found no room again (only if other pipelines filled
    /// the queue meanwhile). Linux frees a closed socket's queue and
    /// `sk_err` with it; a group's queue outlives its members, and the
    /// closed member's id names the next socket bound, which must not be
    /// handed what this one received nor be named by its error. Control
    /// path: one pass over what the queue holds, taken out and put back (a
    /// reader meanwhile finds it empty, and is woken after).
    pub(crate) fn purge(&self, socket: SocketId) -> usize {
        if self.error_socket.load(Ordering::Relaxed) == socket.index() {
            self.error.store(0, Ordering::Release);
        }
        let queued = self.datagrams.len();
        if queued == 0 {
            return 0;
        }
        let mut kept = Vec::with_capacity(queued);
        for _ in 0..queued {
            match self.datagrams.pop() {
                Some(datagram) if datagram.socket != socket => kept.push(datagram),
                Some(_) => {}
                None => break,
            }
        }
        let (pushed, dropped) = self.push_all(kept.into_iter());
        if pushed > 0 {
            self.wake();
        }
        dropped
    }

    /// Lcore side: records an error for the next receive (the latest one
    /// wins, as the kernel's `sk_err`); the caller wakes the receivers.
    pub(crate) fn set_error(&self, socket: SocketId, error: PeerError) {
        self.error_socket.store(socket.index(), Ordering::Relaxed);
        self.error.store(error.to_bits(), Ordering::Release);
    }

    /// Takes the pending error, if any, with the index of its socket.
    fn take_error(&self) -> Option<(u32, PeerError)> {
        if self.error.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let error = PeerError::from_bits(self.error.swap(0, Ordering::Acquire))?;
        Some((self.error_socket.load(Ordering::Relaxed), error))
    }

    /// Datagrams dropped because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Times the lcore woke a receiver.
    pub fn wakeups(&self) -> u64 {
        self.wakeups.load(Ordering::Relaxed)
    }

    /// Threads blocked in a receive on this queue right now.
    pub fn sleepers(&self) -> usize {
        self.sleepers.load(Ordering::SeqCst)
    }

    /// Datagrams waiting to be read.
    pub fn len(&self) -> usize {
        self.datagrams.len()
    }

    /// True if no datagram waits.
    pub fn is_empty(&self) -> bool {
        self.datagrams.is_empty()
    }

    /// Moves up to `max` queued datagrams into `out`, waiting up to
    /// `timeout` (`None`: forever) for the first; queued data comes before
    /// a pending error, as in the kernel. Returns how many, or the error
    /// with its socket's index.
    pub(super) fn recv_into(
        &self,
        out: &mut Vec<Datagram<B>>,
        max: usize,
        timeout: Option<Duration>,
    ) -> Result<usize, RecvError> {
        loop {
            let mut got = 0;
            while got < max {
                let Some(datagram) = self.datagrams.pop() else {
                    break;
                };
                out.push(datagram);
                got += 1;
            }
            if got > 0 || max == 0 {
                return Ok(got);
            }
            if let Some((socket, error)) = self.take_error() {
                return Err(RecvError::Peer(socket, error));
            }
            if !self.wait(timeout) {
                return Err(RecvError::TimedOut);
            }
        }
    }

    /// Lcore side: wakes the receivers if any sleeps (once per burst).
    pub(crate) fn wake(&self) {
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.wake.notify_all();
            self.wakeups.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Waits until a datagram is queued or `timeout` passes.
    fn wait(&self, timeout: Option<Duration>) -> bool {
        let guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        let ready = if !self.datagrams.is_empty() || self.error.load(Ordering::Acquire) != 0 {
            true
        } else {
            match timeout {
                Some(t) => {
                    let (_guard, result) = self
                        .wake
                        .wait_timeout(guard, t)
                        .unwrap_or_else(|e| e.into_inner());
                    !result.timed_out()
                        || !self.datagrams.is_empty()
                        || self.error.load(Ordering::Acquire) != 0
                }
                None => {
                    let _guard = self.wake.wait(guard).unwrap_or_else(|e| e.into_inner());
                    true
                }
            }
        };
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
        ready
    }
}

/// Why [`SocketQueue::recv_into`] returned nothing.
pub(super) enum RecvError {
    /// An ICMP error for the socket with this index.
    Peer(u32, PeerError),
    TimedOut,
}

/// Copies `payload` into a pool buffer and queues it for the lcore to send
/// from `socket` to `dst` (the send path of queue-mode sockets and groups).
pub(super) fn queue_send<P: BufPool>(
    shared: &Shared<P::Buf>,
    pool: &P,
    socket: SocketId,
    payload: &[u8],
    dst: SocketAddr,
) -> Result<usize, SocketError> {
    if dst.port() == 0 {
        return Err(SocketError::PortZero);
    }
    let mut buf = pool.alloc().ok_or(SocketError::NoBuffer)?;
    if buf.tailroom() < payload.len() {
        buf = pool.alloc_large().ok_or(SocketError::TooLarge)?;
    }
    if buf.headroom() < HEADERS {
        return Err(SocketError::TooLarge);
    }
    buf.append(payload.len())
        .ok_or(SocketError::TooLarge)?
        .copy_from_slice(payload);
    queue_buffer(shared, socket, buf, dst)?;
    Ok(payload.len())
}

/// Queues a buffer holding a payload (with room for headers in front) for
/// the lcore to send.
pub(super) fn queue_buffer<B: Buf>(
    shared: &Shared<B>,
    socket: SocketId,
    buf: B,
    dst: SocketAddr,
) -> Result<(), SocketError> {
    shared
        .sends
        .push(SendRequest { socket, dst, buf })
        .map_err(|_| SocketError::Busy)
}

/// Sends a received datagram's payload from `socket` to `dst` in its own
/// buffer (the headers in front of the payload are dropped and rebuilt by
/// the lcore: no copy), or copied if the buffer lacks room in front.
pub(super) fn queue_forward<P: BufPool>(
    shared: &Shared<P::Buf>,
    pool: &P,
    socket: SocketId,
    datagram: Datagram<P::Buf>,
    dst: SocketAddr,
) -> Result<usize, SocketError> {
    if dst.port() == 0 {
        return Err(SocketError::PortZero);
    }
    let range = datagram.payload_range();
    if datagram.buf.headroom() + range.start < HEADERS {
        // Not with the stack's own buffers (an mbuf keeps 128 bytes in
        // front of the frame); kept for foreign ones.
        return queue_send(shared, pool, socket, datagram.payload(), dst);
    }
    let mut buf = datagram.into_buf();
    let len = buf.len();
    // The payload lies in the first segment, so the front always comes off.
    if !buf.adjust(range.start) {
        let payload = buf.data().get(range.clone()).unwrap_or_default();
        return queue_send(shared, pool, socket, payload, dst);
    }
    if !buf.trim(len - range.end) {
        let payload = buf.data().get(..range.len()).unwrap_or_default();
        return queue_send(shared, pool, socket, payload, dst);
    }
    queue_buffer(shared, socket, buf, dst)?;
    Ok(range.len())
}

/// Asks the lcore to bind a socket delivering into `queue`; waits for the
/// answer.
pub(super) fn bind_queue<B: Buf>(
    shared: &Shared<B>,
    local: SocketAddr,
    options: BindOptions,
    queue: &Arc<SocketQueue<B>>,
) -> Result<(SocketId, SocketAddr), SocketError> {
    shared.request(
        |reply| Command::Bind {
            local,
            options,
            queue: Arc::clone(queue),
            reply,
        },
        SocketError::Bind,
    )
}

/// Queues a close for the lcore, waiting (yielding the CPU) for room: the
/// lcore drains commands on every poll; if it is gone, gives up after a
/// bounded number of tries.
pub(super) fn queue_close<B: Buf>(shared: &Shared<B>, socket: SocketId) {
    let mut close = Command::Close { socket };
    for _ in 0..1_000_000 {
        match shared.commands.push(close) {
            Ok(()) => return,
            Err(back) => close = back,
        }
        std::thread::yield_now();
    }
}

/// Runs sends until one fails: how many succeeded, or the first error if
/// none did.
pub(super) fn send_all(
    sends: impl Iterator<Item = Result<usize, SocketError>>,
) -> Result<usize, SocketError> {
    let mut sent = 0;
    for result in sends {
        match result {
            Ok(_) => sent += 1,
            Err(error) if sent == 0 => return Err(error),
            Err(_) => break,
        }
    }
    Ok(sent)
}
