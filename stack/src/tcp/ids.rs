//! The names TCP endpoints go by on an lcore: a connection's and an inline
//! listener's ids (slab index and generation, so a stale id never names a
//! later occupant), the table's packed value, the events handlers hear, and
//! the options and errors of a listen. They sit with TCP, not with the
//! interface, so the application-thread side (`socket/`) names connections
//! without reaching into the pipeline.

use crate::tcp::table::TableValue;
use crate::tcp::TcpError;

/// A connection, as handlers and the interface name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConnId {
    pub(crate) index: u32,
    pub(crate) generation: u32,
}

/// An inline listener, as [`Interface::tcp_listen`](crate::iface::Interface::tcp_listen)
/// returns it and [`TcpEvent::Accepted`] names it (a closed listener's id
/// never names a later one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ListenerId {
    pub(crate) index: u32,
    pub(crate) generation: u32,
}

/// What happened to a connection, for the handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcpEvent {
    /// A handshake on this listener completed: the connection is open (in
    /// an SO_REUSEPORT group, the member the flow hash picked).
    Accepted(ListenerId),
    /// Our connect completed.
    Connected,
    /// Data (or the end of the peer's stream) can be read, or room opened
    /// to write.
    Readable,
    /// The connection is gone (its id is no longer valid): `None` after an
    /// orderly close, else why.
    Closed(Option<TcpError>),
}

/// How a listener shares its address (the socket options of Linux's
/// `bind` and `listen` that matter here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ListenOptions {
    /// SO_REUSEPORT: join (or start) the group of listeners on the same
    /// address; each new connection goes to one member by a keyed hash of
    /// its addresses and ports. Every member must set it.
    pub reuse_port: bool,
    /// IPV6_V6ONLY: a listener on `[::]` hears IPv6 only, leaving IPv4 to
    /// a listener on `0.0.0.0` (without it, `[::]` hears both families and
    /// the two collide, as Linux's default `bindv6only=0`).
    pub v6_only: bool,
}

/// Why a listen failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListenError {
    /// Something already listens there.
    AddrInUse,
    /// Not one of our addresses.
    AddrNotAvailable,
}

impl core::fmt::Display for ListenError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            ListenError::AddrInUse => "address in use",
            ListenError::AddrNotAvailable => "address not available",
        })
    }
}

impl std::error::Error for ListenError {}

/// Bits of a connection id's generation (the rest of a [`ConnRef`]'s upper
/// half names the owning pipeline and TIME-WAIT).
pub(crate) const GENERATION_MASK: u32 = (1 << 23) - 1;

/// The table's value: the owning pipeline (bits 55-62), the connection's
/// slot (bits 0-31) and generation (bits 32-54) there, and whether it is in
/// TIME-WAIT (bit 63).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ConnRef(u64);

impl ConnRef {
    pub(crate) fn new(owner: u8, id: ConnId, time_wait: bool) -> ConnRef {
        ConnRef(
            u64::from(id.index)
                | u64::from(id.generation & GENERATION_MASK) << 32
                | u64::from(owner) << 55
                | u64::from(time_wait) << 63,
        )
    }

    pub(crate) fn id(self) -> ConnId {
        ConnId {
            index: self.0 as u32,
            generation: (self.0 >> 32) as u32 & GENERATION_MASK,
        }
    }

    /// The pipeline that owns the connection.
    #[inline]
    pub(crate) fn owner(self) -> u8 {
        (self.0 >> 55) as u8
    }
}

impl TableValue for ConnRef {
    fn in_time_wait(&self) -> bool {
        self.0 >> 63 == 1
    }
}
