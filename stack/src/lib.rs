//! dpstack's protocol code: pure Rust, sans-IO.
//!
//! Invariants of this crate:
//! - it never names DPDK, and `forbid(unsafe_code)` holds for all of it;
//! - it reads no clock and starts no thread: callers pass `now`
//!   ([`time::Instant`]) into every entry point. The one exception is
//!   [`socket`], the application-thread side of queue mode, whose calls
//!   block (with timeouts) while the lcore side stays sans-IO;
//! - it is generic over the [`port::Port`] / [`port::Buf`] traits, so each
//!   driver gets its own monomorphized copy and no packet goes through a
//!   `dyn` call.
//!
//! The in-memory port ([`port::memory`]) lets everything here be tested on any
//! machine, without DPDK.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod bind_views;
pub mod counters;
mod hash;
pub mod iface;
pub mod keys;
pub mod neighbor;
pub mod port;
pub mod reassembly;
pub mod route;
pub mod rss;
pub mod socket;
pub mod tcp;
pub mod time;
pub mod udp;
pub mod wire;
