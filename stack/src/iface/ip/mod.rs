//! IP, once for both families where the two do the same: receive
//! (`input`: validation, reassembly, dispatch by protocol) and send
//! (`output`: fit the MTU or fragment, `fragment`), over the family trait
//! and the per-family state it reaches (`family`).
//!
//! The header formats differ, so each family keeps its own validation and
//! header writing; the flow (validate, reassemble, dispatch; fit the MTU,
//! fragment, transmit) is written once.

pub(crate) mod family;
mod fragment;
pub(crate) mod input;
mod output;

pub(crate) use fragment::MIN_MTU;
pub(crate) use output::{
    transmit6, transmit_ipv4, turn_around_ethernet, turn_around_ipv4, MIN_PATH_MTU4,
};

use crate::udp::{Datagram, SocketId};

/// A datagram the receive path accepted, with its socket.
pub(crate) type Delivered<B> = Option<(SocketId, Datagram<B>)>;
