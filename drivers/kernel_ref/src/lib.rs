//! Kernel UDP sockets with batched system calls (`recvmmsg`/`sendmmsg`),
//! socket options (TOS, receive buffer) and CPU pinning: the Linux
//! reference that `scripts/bench udp-vs-kernel` and `rtp-vs-kernel`
//! measure dpstack against. Not part of the stack's data path, and not of
//! the `dpstack` library: this crate (`dpstack-kernel-ref`) serves only the
//! kernel reference apps (apps/kernel_*).
//!
//! Invariant: every call passes the kernel arrays it owns for the duration
//! of the call only; nothing the kernel writes outlives the borrow.

use std::io;
use std::net::{SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;

/// Most datagrams one batched call moves.
pub const MAX_BATCH: usize = 64;

/// Bytes per datagram buffer.
pub const DATAGRAM_SIZE: usize = 2048;

/// Pins the calling thread to `cpu`.
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_SET writes inside it; the call
    // reads exactly size_of::<cpu_set_t>() bytes from it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// A batch of received datagrams.
pub struct Batch {
    buffers: Box<[[u8; DATAGRAM_SIZE]; MAX_BATCH]>,
    lengths: [usize; MAX_BATCH],
    peers: [SocketAddrV4; MAX_BATCH],
    truncated: [bool; MAX_BATCH],
    count: usize,
}

impl Default for Batch {
    fn default() -> Self {
        Batch {
            buffers: Box::new([[0; DATAGRAM_SIZE]; MAX_BATCH]),
            lengths: [0; MAX_BATCH],
            peers: [SocketAddrV4::new(std::net::Ipv4Addr::UNSPECIFIED, 0); MAX_BATCH],
            truncated: [false; MAX_BATCH],
            count: 0,
        }
    }
}

impl Batch {
    /// Datagrams in the batch.
    pub fn len(&self) -> usize {
        self.count
    }

    /// True if the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Datagram `i`: its payload and its sender.
    pub fn get(&self, i: usize) -> (&[u8], SocketAddrV4) {
        (&self.buffers[i][..self.lengths[i]], self.peers[i])
    }

    /// True if datagram `i` was longer than [`DATAGRAM_SIZE`] (cut there).
    pub fn is_truncated(&self, i: usize) -> bool {
        self.truncated[i]
    }
}

fn to_sockaddr(addr: SocketAddrV4) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: addr.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(*addr.ip()).to_be(),
        },
        sin_zero: [0; 8],
    }
}

fn from_sockaddr(sa: &libc::sockaddr_in) -> SocketAddrV4 {
    SocketAddrV4::new(
        u32::from_be(sa.sin_addr.s_addr).into(),
        u16::from_be(sa.sin_port),
    )
}

/// Receives up to [`MAX_BATCH`] datagrams with one `recvmmsg`, waiting for
/// the first. Returns how many arrived.
pub fn recv_batch(socket: &UdpSocket, batch: &mut Batch) -> io::Result<usize> {
    recv_up_to::<MAX_BATCH>(socket, batch, libc::MSG_WAITFORONE)
}

/// Receives up to `N` (at most [`MAX_BATCH`]) datagrams with one
/// `recvmmsg` without waiting: 0 when none is queued (`EAGAIN`). A
/// datagram longer than [`DATAGRAM_SIZE`] is cut there and marked
/// ([`Batch::is_truncated`]). For a nonblocking socket polled by epoll:
/// only `N` headers are set up per call, so a small `N` keeps the call
/// cheap when most calls find one or two datagrams.
pub fn recv_nowait<const N: usize>(socket: &UdpSocket, batch: &mut Batch) -> io::Result<usize> {
    match recv_up_to::<N>(socket, batch, libc::MSG_DONTWAIT) {
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
            batch.count = 0;
            Ok(0)
        }
        other => other,
    }
}

fn recv_up_to<const N: usize>(
    socket: &UdpSocket,
    batch: &mut Batch,
    flags: libc::c_int,
) -> io::Result<usize> {
    const { assert!(N > 0 && N <= MAX_BATCH) };
    // SAFETY: zeroed sockaddr_in/iovec/mmsghdr are valid plain data.
    let mut addrs: [libc::sockaddr_in; N] = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut iovecs: [libc::iovec; N] = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut headers: [libc::mmsghdr; N] = unsafe { std::mem::zeroed() };
    for i in 0..N {
        iovecs[i].iov_base = batch.buffers[i].as_mut_ptr().cast();
        iovecs[i].iov_len = DATAGRAM_SIZE;
        headers[i].msg_hdr.msg_name = (&mut addrs[i] as *mut libc::sockaddr_in).cast();
        headers[i].msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as u32;
        headers[i].msg_hdr.msg_iov = &mut iovecs[i];
        headers[i].msg_hdr.msg_iovlen = 1;
    }
    // SAFETY: every header points at a buffer, an iovec and an address that
    // live until the call returns; the kernel writes at most their sizes.
    let n = unsafe {
        libc::recvmmsg(
            socket.as_raw_fd(),
            headers.as_mut_ptr(),
            N as u32,
            flags,
            std::ptr::null_mut(),
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let n = n as usize;
    for i in 0..n {
        batch.lengths[i] = (headers[i].msg_len as usize).min(DATAGRAM_SIZE);
        batch.peers[i] = from_sockaddr(&addrs[i]);
        batch.truncated[i] = headers[i].msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
    }
    batch.count = n;
    Ok(n)
}

/// Sets the IPv4 TOS byte of what `socket` sends (DSCP << 2).
pub fn set_tos(socket: &UdpSocket, tos: u8) -> io::Result<()> {
    set_int_option(
        socket,
        libc::IPPROTO_IP,
        libc::IP_TOS,
        libc::c_int::from(tos),
    )
}

/// Asks for a receive buffer of `bytes` (the kernel doubles it for its
/// bookkeeping; as root, `SO_RCVBUFFORCE` passes `net.core.rmem_max`).
pub fn set_recv_buffer(socket: &UdpSocket, bytes: usize) -> io::Result<()> {
    let bytes = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    set_int_option(socket, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, bytes)
        .or_else(|_| set_int_option(socket, libc::SOL_SOCKET, libc::SO_RCVBUF, bytes))
}

fn set_int_option(
    socket: &UdpSocket,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: the option value is a c_int that lives for the call; the
    // kernel reads exactly the length passed.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sends `payloads[i]` to `peers[i]` with one `sendmmsg`. Returns how many
/// the kernel took.
pub fn send_batch(
    socket: &UdpSocket,
    payloads: &[&[u8]],
    peers: &[SocketAddrV4],
) -> io::Result<usize> {
    let n = payloads.len().min(peers.len()).min(MAX_BATCH);
    let mut addrs = [to_sockaddr(SocketAddrV4::new(std::net::Ipv4Addr::UNSPECIFIED, 0)); MAX_BATCH];
    // SAFETY: zeroed iovec/mmsghdr are valid plain data.
    let mut iovecs: [libc::iovec; MAX_BATCH] = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut headers: [libc::mmsghdr; MAX_BATCH] = unsafe { std::mem::zeroed() };
    for i in 0..n {
        addrs[i] = to_sockaddr(peers[i]);
        iovecs[i].iov_base = payloads[i].as_ptr().cast_mut().cast();
        iovecs[i].iov_len = payloads[i].len();
        headers[i].msg_hdr.msg_name = (&mut addrs[i] as *mut libc::sockaddr_in).cast();
        headers[i].msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as u32;
        headers[i].msg_hdr.msg_iov = &mut iovecs[i];
        headers[i].msg_hdr.msg_iovlen = 1;
    }
    // SAFETY: the headers point at payloads and addresses borrowed for the
    // call; the kernel only reads them.
    let sent = unsafe { libc::sendmmsg(socket.as_raw_fd(), headers.as_mut_ptr(), n as u32, 0) };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(sent as usize)
}
