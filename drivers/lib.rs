//! dpstack: a userspace TCP/IP stack on DPDK.
//!
//! This crate is the driver layer, the only place with `unsafe`: EAL start-up
//! ([`eal`]), packet buffer pools ([`mempool`]), owned packet buffers
//! ([`mbuf`]), ethdev ports and queues ([`ethdev`]), lcore threads
//! ([`lcore`]), the TSC clock ([`clock`]), vector header shuffles
//! ([`simd`]), the fault injector ([`fault`]) and burst cycle counting
//! ([`cycles`]). It implements the stack's [`stack::port::Port`] and
//! [`stack::port::Buf`] traits for DPDK, and re-exports the pure protocol
//! crate as [`stack`] and the media library (RTP/RTCP and the relay, above
//! the stack's handler API) as [`media`]. Above them, [`app`] is what every
//! app shares: the stack's command-line options, set-up, the polling
//! lcore's loop and the counters printer, so that an app is its `main` plus
//! a handler.
//!
//! Invariants: every `unsafe` block carries a `// SAFETY:` comment saying why
//! it holds; the fast-path calls (rx/tx burst, alloc/free) allocate nothing,
//! log nothing and take no lock.

pub use dpstack_media as media;
pub use dpstack_stack as stack;

pub mod app;
pub mod clock;
pub mod cycles;
pub mod eal;
pub mod error;
pub mod ethdev;
pub mod fault;
pub mod lcore;
pub mod mbuf;
pub mod mempool;
pub mod simd;
pub mod sys;

pub use error::{DpdkError, Result};
