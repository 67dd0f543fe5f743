//! Queue-mode TCP for application threads: [`TcpListener`] and
//! [`TcpStream`], used like `std::net`'s while the connection itself lives
//! on the polling lcore.
//!
//! Bytes cross in packet buffers through two bounded queues per stream:
//! the lcore moves in-order received bytes into buffers on `rx` (only while
//! it has room: when the application does not read, the connection's own
//! buffer fills and its window closes — backpressure, never unbounded
//! buffering); `write` copies into pool buffers on `tx`, and the lcore takes
//! them as the connection's send buffer has room. After a read or write the
//! stream's id goes on the interface's attention queue so the lcore looks
//! at it on its next poll. State (open, end of stream, closed and why)
//! travels in atomics; a sleeping reader, writer or acceptor is woken
//! through a condition variable, and only when one sleeps.

use super::{BufPool, Command, Shared, SocketError};
use crate::port::Buf;
pub(crate) use crate::tcp::endpoint::stream::{AcceptQueue, StreamQueue};
use crate::tcp::endpoint::stream::{Waker, CLOSED, DROPPED, EOF, OPEN, SHUTDOWN, UNREAD};
use crate::tcp::TcpError;
use core::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Sleeping on a [`Waker`] (the application thread's side).
trait Sleep {
    /// Waits until `ready()` or `deadline`; returns `ready()`.
    fn wait_until(&self, deadline: Option<Instant>, ready: impl Fn() -> bool) -> bool;
}

impl Sleep for Waker {
    fn wait_until(&self, deadline: Option<Instant>, ready: impl Fn() -> bool) -> bool {
        let mut guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        while !ready() {
            match deadline {
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    // Re-check periodically too: a wake can race the check.
                    let step = left.min(Duration::from_millis(10));
                    guard = self
                        .wake
                        .wait_timeout(guard, step)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
                None => {
                    guard = self
                        .wake
                        .wait_timeout(guard, Duration::from_millis(10))
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
            }
        }
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
        drop(guard);
        ready()
    }
}

/// A TCP listener used from application threads. Dropping it stops
/// listening (connections already accepted carry on).
#[derive(Debug)]
pub struct TcpListener<P: BufPool> {
    local: SocketAddr,
    queue: Arc<AcceptQueue<P::Buf>>,
    shared: Arc<Shared<P::Buf>>,
    pool: Arc<P>,
}

/// A TCP connection used from application threads. Dropping it closes it
/// as Linux's `close` does: a FIN after what was written, a reset if
/// received data was left unread, and no wait for ever on a peer that
/// never closes its side.
#[derive(Debug)]
pub struct TcpStream<P: BufPool> {
    stream: Arc<StreamQueue<P::Buf>>,
    shared: Arc<Shared<P::Buf>>,
    pool: Arc<P>,
    /// A received buffer read partly: (buffer, bytes consumed).
    partial: Option<(P::Buf, usize)>,
    /// What dropping it does.
    on_drop: OnDrop,
}

/// What dropping a [`TcpStream`] or one of its halves does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OnDrop {
    /// A whole stream: `close`, the application lets go of the connection.
    Close,
    /// A writing half: `shutdown`, its reading half may read on.
    Shutdown,
    /// A reading half, or a stream once split.
    Nothing,
}

/// The reading half of a [`TcpStream`] (see [`TcpStream::split`]).
pub struct TcpReadHalf<P: BufPool>(TcpStream<P>);

/// The writing half of a [`TcpStream`]; dropping it closes our side.
pub struct TcpWriteHalf<P: BufPool>(TcpStream<P>);

impl<P: BufPool> core::fmt::Debug for TcpReadHalf<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("TcpReadHalf")
    }
}

impl<P: BufPool> core::fmt::Debug for TcpWriteHalf<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("TcpWriteHalf")
    }
}

impl<P: BufPool> TcpReadHalf<P> {
    /// As [`TcpStream::read`].
    pub fn read(
        &mut self,
        buf: &mut [u8],
        timeout: Option<Duration>,
    ) -> Result<usize, SocketError> {
        self.0.read(buf, timeout)
    }
}

impl<P: BufPool> TcpWriteHalf<P> {
    /// As [`TcpStream::write`].
    pub fn write(&mut self, data: &[u8], timeout: Option<Duration>) -> Result<usize, SocketError> {
        self.0.write(data, timeout)
    }

    /// As [`TcpStream::shutdown`].
    pub fn shutdown(&self) {
        self.0.shutdown();
    }
}

fn deadline(timeout: Option<Duration>) -> Option<Instant> {
    timeout.map(|t| Instant::now() + t)
}

impl<P: BufPool> TcpListener<P> {
    /// Listens on `local` through `stack` (std's spelling of
    /// [`StackHandle::tcp_listen`](super::StackHandle::tcp_listen)).
    pub fn bind(
        stack: &super::StackHandle<P>,
        local: impl Into<SocketAddr>,
        backlog: usize,
    ) -> Result<TcpListener<P>, SocketError> {
        stack.tcp_listen(local, backlog)
    }

    pub(crate) fn new(
        local: SocketAddr,
        queue: Arc<AcceptQueue<P::Buf>>,
        shared: Arc<Shared<P::Buf>>,
        pool: Arc<P>,
    ) -> TcpListener<P> {
        TcpListener {
            local,
            queue,
            shared,
            pool,
        }
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The next connection and its peer, waiting up to `timeout` (`None`:
    /// forever).
    pub fn accept(
        &self,
        timeout: Option<Duration>,
    ) -> Result<(TcpStream<P>, SocketAddr), SocketError> {
        let deadline = deadline(timeout);
        loop {
            if let Some(stream) = self.queue.streams.pop() {
                let peer = stream
                    .peer
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .unwrap_or(self.local);
                let stream =
                    TcpStream::new(stream, Arc::clone(&self.shared), Arc::clone(&self.pool));
                return Ok((stream, peer));
            }
            let queue = &self.queue;
            if !queue
                .waker
                .wait_until(deadline, || !queue.streams.is_empty())
            {
                return Err(SocketError::TimedOut);
            }
        }
    }
}

impl<P: BufPool> Drop for TcpListener<P> {
    fn drop(&mut self) {
        let _ = self.shared.commands.push(Command::TcpUnlisten {
            local: self.local,
            queue: Arc::clone(&self.queue),
        });
    }
}

impl<P: BufPool> TcpStream<P> {
    /// Connects to `remote` through `stack` (std's spelling of
    /// [`StackHandle::tcp_connect`](super::StackHandle::tcp_connect)).
    pub fn connect(
        stack: &super::StackHandle<P>,
        remote: impl Into<SocketAddr>,
        timeout: Option<Duration>,
    ) -> Result<TcpStream<P>, SocketError> {
        stack.tcp_connect(remote, timeout)
    }

    pub(crate) fn new(
        stream: Arc<StreamQueue<P::Buf>>,
        shared: Arc<Shared<P::Buf>>,
        pool: Arc<P>,
    ) -> TcpStream<P> {
        TcpStream {
            stream,
            shared,
            pool,
            partial: None,
            on_drop: OnDrop::Close,
        }
    }

    /// Splits the stream into a reading and a writing half, for one thread
    /// each (an echo reads while it writes).
    pub fn split(mut self) -> (TcpReadHalf<P>, TcpWriteHalf<P>) {
        let reader = TcpStream {
            stream: Arc::clone(&self.stream),
            shared: Arc::clone(&self.shared),
            pool: Arc::clone(&self.pool),
            partial: self.partial.take(),
            on_drop: OnDrop::Nothing,
        };
        let writer = TcpStream {
            stream: Arc::clone(&self.stream),
            shared: Arc::clone(&self.shared),
            pool: Arc::clone(&self.pool),
            partial: None,
            on_drop: OnDrop::Shutdown,
        };
        self.on_drop = OnDrop::Nothing;
        (TcpReadHalf(reader), TcpWriteHalf(writer))
    }

    /// Waits until the connection is open (a connect) or failed.
    pub(crate) fn wait_open(&self, timeout: Option<Duration>) -> Result<(), SocketError> {
        let s = &self.stream;
        let ready = s
            .waker
            .wait_until(deadline(timeout), || s.has(OPEN) || s.has(CLOSED));
        if s.has(OPEN) {
            return Ok(());
        }
        if !ready {
            return Err(SocketError::TimedOut);
        }
        Err(SocketError::Tcp(
            s.error().unwrap_or(TcpError::NotConnected),
        ))
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        *self.stream.peer.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn attention(&self) {
        let id = *self.stream.id.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(id) = id {
            self.shared.attend(id);
        }
    }

    /// Reads into `buf`, waiting up to `timeout` for the first byte.
    /// `Ok(0)`: the peer closed its side and everything was read.
    pub fn read(
        &mut self,
        buf: &mut [u8],
        timeout: Option<Duration>,
    ) -> Result<usize, SocketError> {
        if buf.is_empty() {
            return Ok(0);
        }
        let deadline = deadline(timeout);
        loop {
            if let Some((data, used)) = self.partial.take() {
                let left = &data.data()[used..];
                let n = left.len().min(buf.len());
                buf[..n].copy_from_slice(&left[..n]);
                if used + n < data.len() {
                    self.partial = Some((data, used + n));
                } else {
                    drop(data);
                    self.attention();
                }
                return Ok(n);
            }
            if let Some(data) = self.stream.rx.pop() {
                self.partial = Some((data, 0));
                continue;
            }
            let s = &self.stream;
            if s.has(EOF) && s.rx.is_empty() {
                return Ok(0);
            }
            if s.has(CLOSED) && s.rx.is_empty() {
                return match s.error() {
                    Some(error) => Err(SocketError::Tcp(error)),
                    None => Ok(0),
                };
            }
            let ready = s
                .waker
                .wait_until(deadline, || !s.rx.is_empty() || s.has(EOF) || s.has(CLOSED));
            if !ready {
                return Err(SocketError::TimedOut);
            }
        }
    }

    /// Writes all of `data` (copied into packet buffers), waiting up to
    /// `timeout` for room; returns how much was queued (less than all only
    /// on a timeout after some was).
    pub fn write(&mut self, data: &[u8], timeout: Option<Duration>) -> Result<usize, SocketError> {
        let deadline = deadline(timeout);
        let mut written = 0;
        while written < data.len() {
            let s = &self.stream;
            if s.has(CLOSED) {
                let error = s.error().unwrap_or(TcpError::NotConnected);
                return Err(SocketError::Tcp(error));
            }
            if s.has(SHUTDOWN) {
                return Err(SocketError::Tcp(TcpError::NotConnected));
            }
            if s.tx.is_full() {
                self.attention();
                let ready = s
                    .waker
                    .wait_until(deadline, || !s.tx.is_full() || s.has(CLOSED));
                if !ready {
                    return if written > 0 {
                        Ok(written)
                    } else {
                        Err(SocketError::TimedOut)
                    };
                }
                continue;
            }
            let mut buf = self.pool.alloc().ok_or(SocketError::NoBuffer)?;
            let room = buf.tailroom().min(data.len() - written);
            let Some(area) = buf.append(room) else {
                return Err(SocketError::NoBuffer);
            };
            area.copy_from_slice(&data[written..written + room]);
            written += room;
            if s.tx.push(buf).is_err() {
                written -= room;
            }
        }
        self.attention();
        Ok(written)
    }

    /// Closes our sending side once everything written went out (a FIN).
    pub fn shutdown(&self) {
        self.stream.set(SHUTDOWN);
        self.attention();
    }
}

impl<P: BufPool> Drop for TcpStream<P> {
    /// A whole stream: a `close`. What was written still goes, then a FIN;
    /// data left unread (now or arriving later) resets the connection, and
    /// it does not wait for the peer's FIN for ever (`Connection::orphan`).
    /// A writing half: a `shutdown`.
    fn drop(&mut self) {
        let flags = match self.on_drop {
            OnDrop::Close if self.partial.is_some() => SHUTDOWN | DROPPED | UNREAD,
            OnDrop::Close => SHUTDOWN | DROPPED,
            OnDrop::Shutdown => SHUTDOWN,
            OnDrop::Nothing => return,
        };
        self.stream.set(flags);
        self.attention();
    }
}

#[cfg(test)]
mod tests;
