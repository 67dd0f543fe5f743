//! Control-path views of an [`Interface`] for consoles and monitoring, one
//! file per topic: [`addresses`] (and run-time changes to them), [`routes`]
//! (every route of both tables), [`neighbours`], [`sockets`] (every UDP
//! socket with its queue depth), [`tcp`] (every connection and listener),
//! [`counters`], and [`echo`] (echo requests for a `ping` command, and
//! [`parse_echo_reply`] to recognise the answers).
//!
//! Invariants: every view is a copy (plain structs, allocated: control
//! path only, never per packet) taken on the lcore that owns the interface;
//! the views read the tables the stack itself uses, so they list
//! everything there is (not only what the caller created).
//!
//! [`Interface`]: crate::iface::Interface

mod addresses;
mod counters;
mod echo;
mod neighbours;
mod routes;
mod sockets;
mod tcp;

pub use addresses::{AddressInfo, AddressState, Prefix};
pub use counters::CounterSnapshot;
pub use echo::{parse_echo_reply, EchoReply};
pub use neighbours::NeighborInfo;
pub use routes::RouteInfo;
pub use sockets::UdpSocketInfo;
pub use tcp::{TcpBufferMemory, TcpConnInfo, TcpListenerInfo};

#[cfg(test)]
mod tests;
