//! Many kernel UDP sockets behind one epoll: bound on loopback, one per
//! port, nonblocking, registered level-triggered for input with their
//! index in the set as the event's data. Also raises the open-file limit
//! to fit them. Control path, except [`SocketSet::wait`].
//!
//! Invariant: the event data of socket `i` is `i`, and `i < len()`.

use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use nix::sys::resource::{getrlimit, setrlimit, Resource};
use std::net::{SocketAddrV4, UdpSocket};
use std::time::Duration;

/// File descriptors kept free beside the sockets (stdio, epoll, ...).
const SPARE_FDS: u64 = 64;

/// Raises `RLIMIT_NOFILE` so that `sockets` more descriptors fit.
pub fn raise_fd_limit(sockets: usize) -> Result<(), String> {
    let needed = sockets as u64 + SPARE_FDS;
    let (soft, hard) =
        getrlimit(Resource::RLIMIT_NOFILE).map_err(|e| format!("getrlimit(NOFILE): {e}"))?;
    if soft >= needed {
        return Ok(());
    }
    setrlimit(Resource::RLIMIT_NOFILE, needed, hard.max(needed)).map_err(|e| {
        format!(
            "{sockets} sockets need {needed} open files, but the limit is {soft} (hard {hard}) \
             and raising it failed ({e}): run as root or raise `ulimit -n`"
        )
    })
}

/// The sockets and their epoll instance.
pub struct SocketSet {
    sockets: Vec<UdpSocket>,
    epoll: Epoll,
}

impl SocketSet {
    /// Binds one socket per address of `addrs`, in order, and registers
    /// each; `configure` runs on each socket before it is registered.
    pub fn bind(
        addrs: impl ExactSizeIterator<Item = SocketAddrV4>,
        mut configure: impl FnMut(&UdpSocket) -> std::io::Result<()>,
    ) -> Result<SocketSet, String> {
        raise_fd_limit(addrs.len())?;
        let epoll = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)
            .map_err(|e| format!("epoll_create1: {e}"))?;
        let mut sockets = Vec::with_capacity(addrs.len());
        for addr in addrs {
            if !addr.ip().is_loopback() {
                return Err(format!("{addr} is not a loopback address"));
            }
            let socket = UdpSocket::bind(addr).map_err(|e| format!("cannot bind {addr}: {e}"))?;
            socket
                .set_nonblocking(true)
                .map_err(|e| format!("{addr}: cannot make it nonblocking: {e}"))?;
            configure(&socket).map_err(|e| format!("{addr}: {e}"))?;
            let event = EpollEvent::new(EpollFlags::EPOLLIN, sockets.len() as u64);
            epoll
                .add(&socket, event)
                .map_err(|e| format!("{addr}: epoll_ctl: {e}"))?;
            sockets.push(socket);
        }
        Ok(SocketSet { sockets, epoll })
    }

    /// Sockets in the set.
    pub fn len(&self) -> usize {
        self.sockets.len()
    }

    /// Socket `index`.
    #[inline]
    pub fn get(&self, index: usize) -> Option<&UdpSocket> {
        self.sockets.get(index)
    }

    /// Waits at most `timeout` for ready sockets; returns how many events
    /// `events` got (0 on timeout or on a signal).
    #[inline]
    pub fn wait(&self, events: &mut [EpollEvent], timeout: Duration) -> Result<usize, String> {
        let ms = u16::try_from(timeout.as_millis()).unwrap_or(u16::MAX);
        match self.epoll.wait(events, EpollTimeout::from(ms)) {
            Ok(n) => Ok(n),
            Err(nix::errno::Errno::EINTR) => Ok(0),
            Err(e) => Err(format!("epoll_wait: {e}")),
        }
    }
}
