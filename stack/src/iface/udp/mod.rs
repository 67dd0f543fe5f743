//! UDP in the pipeline, both families, in one place: the fast paths that
//! take the common datagram straight from the frame (`fast4`, `fast6`,
//! and what they share in `fast`), the general receive path (`input`),
//! the copies of a broadcast or group datagram for every socket that hears
//! it (`fanout`), replies built in the request's buffer (`reply`), sends
//! from a socket (`send`) and zero-copy forwarding (`forward`).
//!
//! Written once over the address family where the two do the same thing:
//! [`family::UdpFamily`] says what differs (addresses, pseudo-header,
//! lookup, headers, routes), and `v4` and `v6` implement it beside their
//! header writers. Only the hand-tuned per-packet work stays per family:
//! the fast paths, the in-place turn-around of an echo, and the IPv4
//! forward from a socket's kept route.
//!
//! Below this module: the transmit context, the pipeline state, the
//! neighbour hand-off (`next_hop`) and the IP layers' transmit and ICMP
//! errors. Nothing below imports it back.

mod family;
mod fanout;
mod fast;
mod fast4;
mod fast6;
mod forward;
mod input;
mod reply;
mod send;
mod template;
mod v4;
mod v6;

pub(crate) use family::UdpIn;
pub(crate) use fanout::{copy as copy_datagram, other_hearers};
pub(crate) use fast::{BurstView, Fast};
pub(crate) use fast4::try_udp;
pub(crate) use fast6::try_udp6;
pub(crate) use forward::{forward_udp, forward_udp6};
pub(crate) use reply::reply_udp_in_place;
pub(crate) use send::{send_any, send_buffer};
pub(crate) use v6::path6;

pub(crate) use super::ip::Delivered;
