//! Queue mode: UDP sockets and TCP listeners and streams ([`tcp`]) used
//! from any application thread while the interface runs on its polling
//! lcore. This is the application-thread side of the crate, the one part
//! that blocks and reads the clock (its timeouts); the lcore side it talks
//! to stays sans-IO.
//!
//! - **Control** (bind, connect, close) goes to the lcore as a [`Command`] on a
//!   bounded queue; the caller blocks for the answer (microseconds: the lcore
//!   drains commands on every poll).
//! - **Receive**: each socket has a bounded queue of received datagrams
//!   (zero-copy: the buffer itself). The lcore pushes a burst's datagrams for
//!   a socket, then wakes a sleeping receiver **once per burst**, and only if
//!   one sleeps (a wakeup per packet is what makes a kernel socket's receive
//!   of small datagrams expensive). A
//!   full queue drops and counts; it never blocks the lcore.
//! - **Send**: the payload is copied into a buffer from the port's pool (with
//!   headroom) on the calling thread and queued on the interface's
//!   multi-producer send queue; the lcore adds the headers and transmits.
//!
//! The lcore side takes no lock in the common case; the only lock is the
//! condition variable's, taken by the lcore only when a receiver sleeps.

mod group;
mod queue;
pub mod tcp;

pub use group::UdpGroup;
pub use queue::SocketQueue;
use queue::{bind_queue, queue_close, queue_forward, queue_send, send_all, RecvError};

pub use tcp::{TcpListener, TcpReadHalf, TcpStream, TcpWriteHalf};

use crate::port::Buf;
pub use crate::port::BufPool;
use crate::tcp::ids::{ConnId, ListenError, ListenOptions};
use crate::tcp::TcpError;
use crate::udp::membership::{GroupLink, JoinError};
use crate::udp::{BindError, BindOptions, Datagram, PeerError, SocketId};
use core::net::{IpAddr, SocketAddr};
use crossbeam_queue::ArrayQueue;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Why a socket call failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SocketError {
    /// Bind failed.
    Bind(BindError),
    /// The interface's command or send queue is full (the lcore is behind).
    Busy,
    /// The interface is gone (its lcore stopped).
    Closed,
    /// No buffer for the payload.
    NoBuffer,
    /// The payload does not fit one buffer.
    TooLarge,
    /// `recv` timed out.
    TimedOut,
    /// The destination port is 0, which no socket can listen on (Linux's
    /// `EINVAL` for a `sendto` to port 0).
    PortZero,
    /// The peer (or a router) answered an earlier datagram of this
    /// connected socket with an error.
    Peer(PeerError),
    /// A peer (or a router) answered an earlier datagram of this connected
    /// member of a [`UdpGroup`] with an error.
    PeerOn(SocketId, PeerError),
    /// The socket is not a member of this [`UdpGroup`].
    NotMember,
    /// The socket cannot connect to that peer: a family it does not hear
    /// (an IPv4 socket and an IPv6 peer, an IPv6-only socket and an IPv4
    /// one), or the socket is gone.
    CannotConnect,
    /// A TCP connection failed (refused, reset, timed out, no port).
    Tcp(TcpError),
    /// A TCP listen failed.
    Listen(ListenError),
    /// A multicast join or leave failed.
    Join(JoinError),
}

impl core::fmt::Display for SocketError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            SocketError::Bind(e) => write!(f, "bind: {e}"),
            SocketError::Busy => f.write_str("the stack's queue is full; try again"),
            SocketError::Closed => f.write_str("the stack is not running"),
            SocketError::NoBuffer => f.write_str("no packet buffer available"),
            SocketError::TooLarge => f.write_str("payload too large for one buffer"),
            SocketError::TimedOut => f.write_str("timed out"),
            SocketError::PortZero => f.write_str("destination port 0 (no socket listens there)"),
            SocketError::Peer(e) => e.fmt(f),
            SocketError::PeerOn(socket, e) => write!(f, "socket {}: {e}", socket.index()),
            SocketError::NotMember => f.write_str("not a socket of this group"),
            SocketError::CannotConnect => {
                f.write_str("the socket cannot connect there (a family it does not hear)")
            }
            SocketError::Tcp(e) => e.fmt(f),
            SocketError::Listen(e) => write!(f, "listen: {e}"),
            SocketError::Join(e) => write!(f, "multicast membership: {e}"),
        }
    }
}

impl std::error::Error for SocketError {}

/// A control request for the lcore.
#[derive(Debug)]
pub(crate) enum Command<B: Buf> {
    Bind {
        local: SocketAddr,
        options: BindOptions,
        queue: Arc<SocketQueue<B>>,
        reply: crossbeam_channel::Sender<Result<(SocketId, SocketAddr), BindError>>,
    },
    Connect {
        socket: SocketId,
        remote: SocketAddr,
        reply: crossbeam_channel::Sender<Result<(), ()>>,
    },
    Close {
        socket: SocketId,
    },
    /// A multicast join (`join`) or leave.
    Join {
        socket: SocketId,
        group: IpAddr,
        on: GroupLink,
        join: bool,
        reply: crossbeam_channel::Sender<Result<usize, JoinError>>,
    },
    TcpListen {
        local: SocketAddr,
        backlog: usize,
        options: ListenOptions,
        queue: Arc<tcp::AcceptQueue<B>>,
        reply: crossbeam_channel::Sender<Result<(), ListenError>>,
    },
    TcpUnlisten {
        local: SocketAddr,
        queue: Arc<tcp::AcceptQueue<B>>,
    },
    TcpConnect {
        remote: SocketAddr,
        stream: Arc<tcp::StreamQueue<B>>,
        reply: crossbeam_channel::Sender<Result<(), TcpError>>,
    },
}

/// Asks the lcore to connect `socket` to `remote` and waits for the answer.
pub(crate) fn connect_queued<B: Buf>(
    shared: &Shared<B>,
    socket: SocketId,
    remote: SocketAddr,
) -> Result<(), SocketError> {
    shared.request(
        |reply| Command::Connect {
            socket,
            remote,
            reply,
        },
        |()| SocketError::CannotConnect,
    )
}

/// Asks the lcore to make `socket` join (`join`) or leave `group` on `on`
/// and waits for the answer: the link.
pub(crate) fn membership_queued<B: Buf>(
    shared: &Shared<B>,
    socket: SocketId,
    (group, on): (IpAddr, GroupLink),
    join: bool,
) -> Result<usize, SocketError> {
    shared.request(
        |reply| Command::Join {
            socket,
            group,
            on,
            join,
            reply,
        },
        SocketError::Join,
    )
}

/// A datagram for the lcore to send; `buf` holds the payload only.
#[derive(Debug)]
pub(crate) struct SendRequest<B> {
    pub(crate) socket: SocketId,
    pub(crate) dst: SocketAddr,
    pub(crate) buf: B,
}

/// What application threads share with the lcore.
#[derive(Debug)]
pub(crate) struct Shared<B: Buf> {
    pub(crate) commands: ArrayQueue<Command<B>>,
    pub(crate) sends: ArrayQueue<SendRequest<B>>,
    /// TCP streams an application thread read from or wrote to since the
    /// lcore last looked.
    pub(crate) attention: ArrayQueue<ConnId>,
    /// The attention queue overflowed: the lcore looks at every stream.
    pub(crate) attend_all: AtomicBool,
}

impl<B: Buf> Shared<B> {
    pub(crate) fn new(capacity: usize) -> Shared<B> {
        Shared {
            commands: ArrayQueue::new(64),
            sends: ArrayQueue::new(capacity),
            attention: ArrayQueue::new(4096),
            attend_all: AtomicBool::new(false),
        }
    }

    /// Queues `command` for the lcore: [`SocketError::Busy`] if its queue
    /// is full.
    pub(crate) fn send_command(&self, command: Command<B>) -> Result<(), SocketError> {
        self.commands.push(command).map_err(|_| SocketError::Busy)
    }

    /// Queues the command `make` builds around a reply channel and waits up
    /// to 5 s for the lcore's answer ([`SocketError::Closed`] if none comes:
    /// the lcore is gone); a refusal `E` becomes `refused(E)`.
    pub(crate) fn request<T, E>(
        &self,
        make: impl FnOnce(crossbeam_channel::Sender<Result<T, E>>) -> Command<B>,
        refused: impl FnOnce(E) -> SocketError,
    ) -> Result<T, SocketError> {
        let (reply, answer) = crossbeam_channel::bounded(1);
        self.send_command(make(reply))?;
        answer
            .recv_timeout(Duration::from_secs(5))
            .map_err(|_| SocketError::Closed)?
            .map_err(refused)
    }

    /// Asks the lcore to look at stream `id` on its next poll.
    pub(crate) fn attend(&self, id: ConnId) {
        if self.attention.push(id).is_err() {
            self.attend_all.store(true, Ordering::Release);
        }
    }
}

/// A UDP socket used from application threads. Dropping it closes it.
#[derive(Debug)]
pub struct UdpSocket<P: BufPool> {
    id: SocketId,
    local: SocketAddr,
    queue: Arc<SocketQueue<P::Buf>>,
    shared: Arc<Shared<P::Buf>>,
    pool: Arc<P>,
}

/// Headroom left in front of a payload for Ethernet, IPv6 (or IPv4) and UDP headers.
pub(crate) const HEADERS: usize = 14 + 40 + 8;

/// Creates queue-mode sockets for one interface; cheap to clone and `Send`.
#[derive(Debug)]
pub struct StackHandle<P: BufPool> {
    shared: Arc<Shared<P::Buf>>,
    pool: Arc<P>,
    queue_len: usize,
}

impl<P: BufPool> Clone for StackHandle<P> {
    fn clone(&self) -> Self {
        StackHandle {
            shared: Arc::clone(&self.shared),
            pool: Arc::clone(&self.pool),
            queue_len: self.queue_len,
        }
    }
}

impl<P: BufPool> StackHandle<P> {
    pub(crate) fn new(shared: Arc<Shared<P::Buf>>, pool: P, queue_len: usize) -> StackHandle<P> {
        StackHandle {
            shared,
            pool: Arc::new(pool),
            queue_len,
        }
    }

    /// Binds a socket (port 0: an ephemeral port), as `UdpSocket::bind`.
    pub fn udp_bind(&self, local: impl Into<SocketAddr>) -> Result<UdpSocket<P>, SocketError> {
        self.udp_bind_with(local, BindOptions::default())
    }

    /// Binds with options (SO_REUSEPORT, device, the pipeline it serves).
    pub fn udp_bind_with(
        &self,
        local: impl Into<SocketAddr>,
        options: BindOptions,
    ) -> Result<UdpSocket<P>, SocketError> {
        let queue = Arc::new(SocketQueue::new(self.queue_len));
        let (id, local) = bind_queue(&self.shared, local.into(), options, &queue)?;
        Ok(UdpSocket {
            id,
            local,
            queue,
            shared: Arc::clone(&self.shared),
            pool: Arc::clone(&self.pool),
        })
    }
}

impl<P: BufPool> StackHandle<P> {
    /// Listens for TCP connections on `local` (an unspecified address takes
    /// every address; `[::]` both families), with room for `backlog`
    /// connections not yet accepted.
    pub fn tcp_listen(
        &self,
        local: impl Into<SocketAddr>,
        backlog: usize,
    ) -> Result<TcpListener<P>, SocketError> {
        self.tcp_listen_with(local, backlog, ListenOptions::default())
    }

    /// [`StackHandle::tcp_listen`] with socket options ([`ListenOptions`]):
    /// with `reuse_port`, listeners on the same address share its
    /// connections, each flow going to one of them by a keyed hash; with
    /// `v6_only`, `[::]` hears IPv6 only.
    pub fn tcp_listen_with(
        &self,
        local: impl Into<SocketAddr>,
        backlog: usize,
        options: ListenOptions,
    ) -> Result<TcpListener<P>, SocketError> {
        let local = local.into();
        let queue = Arc::new(tcp::AcceptQueue::new(backlog));
        self.shared.request(
            |reply| Command::TcpListen {
                local,
                backlog,
                options,
                queue: Arc::clone(&queue),
                reply,
            },
            SocketError::Listen,
        )?;
        Ok(TcpListener::new(
            local,
            queue,
            Arc::clone(&self.shared),
            Arc::clone(&self.pool),
        ))
    }

    /// Opens a TCP connection to `remote`, waiting up to `timeout` for the
    /// handshake (`None`: as long as the SYN retries last).
    pub fn tcp_connect(
        &self,
        remote: impl Into<SocketAddr>,
        timeout: Option<Duration>,
    ) -> Result<TcpStream<P>, SocketError> {
        let stream = Arc::new(tcp::StreamQueue::new());
        self.shared.request(
            |reply| Command::TcpConnect {
                remote: remote.into(),
                stream: Arc::clone(&stream),
                reply,
            },
            SocketError::Tcp,
        )?;
        let stream = TcpStream::new(stream, Arc::clone(&self.shared), Arc::clone(&self.pool));
        stream.wait_open(timeout)?;
        Ok(stream)
    }
}

impl<P: BufPool> UdpSocket<P> {
    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Only exchange datagrams with `remote` from now on; waits for the
    /// lcore's answer. [`SocketError::CannotConnect`] for a peer of a
    /// family the socket does not hear.
    pub fn connect(&self, remote: impl Into<SocketAddr>) -> Result<(), SocketError> {
        connect_queued(&self.shared, self.id, remote.into())
    }

    /// Joins multicast `group` on `on` (`IP_ADD_MEMBERSHIP`,
    /// `IPV6_JOIN_GROUP`), waiting for the lcore's answer: the socket then
    /// receives the group's datagrams to its port that arrive on that
    /// link. Returns the link. Closing the socket leaves its groups.
    pub fn join(&self, group: IpAddr, on: GroupLink) -> Result<usize, SocketError> {
        membership_queued(&self.shared, self.id, (group, on), true)
    }

    /// Leaves `group` on `on` (`IP_DROP_MEMBERSHIP`, `IPV6_LEAVE_GROUP`).
    pub fn leave(&self, group: IpAddr, on: GroupLink) -> Result<usize, SocketError> {
        membership_queued(&self.shared, self.id, (group, on), false)
    }

    /// Moves up to `max` received datagrams into `out` (zero-copy), waiting
    /// up to `timeout` (`None`: forever) for the first. Returns how many.
    pub fn recv_batch(
        &self,
        out: &mut Vec<Datagram<P::Buf>>,
        max: usize,
        timeout: Option<Duration>,
    ) -> Result<usize, SocketError> {
        self.queue
            .recv_into(out, max, timeout)
            .map_err(|e| match e {
                RecvError::Peer(_, error) => SocketError::Peer(error),
                RecvError::TimedOut => SocketError::TimedOut,
            })
    }

    /// Receives one datagram into `buf` (copying), as `UdpSocket::recv_from`.
    /// A datagram longer than `buf` is truncated.
    pub fn recv_from(
        &self,
        buf: &mut [u8],
        timeout: Option<Duration>,
    ) -> Result<(usize, SocketAddr), SocketError> {
        let mut one = Vec::with_capacity(1);
        self.recv_batch(&mut one, 1, timeout)?;
        let datagram = one.pop().ok_or(SocketError::TimedOut)?;
        let payload = datagram.payload();
        let n = payload.len().min(buf.len());
        buf[..n].copy_from_slice(&payload[..n]);
        Ok((n, datagram.src()))
    }

    /// Sends `payload` to `dst`: copied into a pool buffer here, headers and
    /// transmission on the lcore.
    pub fn send_to(
        &self,
        payload: &[u8],
        dst: impl Into<SocketAddr>,
    ) -> Result<usize, SocketError> {
        queue_send(&self.shared, &*self.pool, self.id, payload, dst.into())
    }

    /// Sends each `(dst, payload)` (batch send: one call for many
    /// datagrams, each copied into a pool buffer and queued for the lcore).
    /// Returns how many were queued; stops at the first that cannot be
    /// (no buffer, queue full), which is the error if it is the first.
    pub fn send_batch<'d>(
        &self,
        datagrams: impl IntoIterator<Item = (SocketAddr, &'d [u8])>,
    ) -> Result<usize, SocketError> {
        send_all(
            datagrams
                .into_iter()
                .map(|(dst, payload)| queue_send(&self.shared, &*self.pool, self.id, payload, dst)),
        )
    }

    /// Sends a received datagram's payload on from this socket to `dst`
    /// without copying it (its buffer is reused; the lcore rebuilds the
    /// headers): a relay's forward in queue mode.
    pub fn forward(
        &self,
        datagram: Datagram<P::Buf>,
        dst: impl Into<SocketAddr>,
    ) -> Result<usize, SocketError> {
        queue_forward(&self.shared, &*self.pool, self.id, datagram, dst.into())
    }

    /// Datagrams waiting to be read.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Datagrams dropped because this socket's queue was full.
    pub fn dropped(&self) -> u64 {
        self.queue.dropped()
    }

    /// Times the lcore woke a receiver of this socket.
    pub fn wakeups(&self) -> u64 {
        self.queue.wakeups()
    }

    /// Threads blocked in a receive on this socket right now (a group
    /// member counts its group's readers).
    pub fn blocked_readers(&self) -> usize {
        self.queue.sleepers()
    }
}

impl<P: BufPool> Drop for UdpSocket<P> {
    fn drop(&mut self) {
        queue_close(&self.shared, self.id);
    }
}

#[cfg(test)]
mod tests;
