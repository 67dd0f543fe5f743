//! TCP (RFC 9293) as a sans-IO state machine: segments and the time go in,
//! segments to send come out of [`Connection::poll_transmit`]; no clock is
//! read, and buffer storage comes from a [`BufferPool`] the caller passes,
//! only when data needs it.
//!
//! Files by responsibility: [`seq`] (wrapping sequence numbers), [`conn`]
//! (the TCB and the application's calls), [`input`] (segment arrival),
//! [`output`] (what to send), [`timers`], [`buffer`] (send ring, receive
//! ring with out-of-order reassembly), [`pool`] (ring storage: the
//! stack's buffer-memory budget and the lcore's pool), `autotune`
//! (receive-window auto-tuning), [`rtt`] (RFC 6298), [`congestion`]
//! (a small trait over NewReno and CUBIC, the default, with HyStart++), [`sack`] (SACK blocks out, the scoreboard in), `recovery`
//! (RFC 6675 loss recovery from the scoreboard), [`rack`] (lost
//! retransmissions by RACK's rule), [`table`] (the connection
//! table `connect()` searches), [`wheel`] (the per-lcore timer wheel),
//! [`challenge`] (RFC 5961's limit on challenge ACKs, per lcore), [`ecn`]
//! (Explicit Congestion Notification, RFC 3168), and
//! `endpoint` (the lcore's connections, listeners, queue pump and timers,
//! talking to the IP layer through its `SegmentOut` trait). Options
//! (MSS, window scale, timestamps, SACK permitted, SACK blocks) are parsed
//! in [`crate::wire::tcp`]. SYN cookies have their place: the listener's
//! SYN queue.

mod autotune;
pub mod buffer;
pub mod challenge;
mod config;
pub mod congestion;
pub mod conn;
pub mod cookie;
pub mod ecn;
pub(crate) mod endpoint;
mod header;
pub mod ids;
pub mod input;
mod output;
pub mod pacing;
mod path_mtu;
pub mod plpmtud;
pub mod pool;
pub mod rack;
mod recovery;
pub mod rtt;
pub mod sack;
pub mod send_times;
pub mod seq;
pub mod table;
mod timers;
pub mod wheel;

pub use config::TcpConfig;
pub use congestion::Algorithm as CongestionAlgorithm;
pub use conn::{ConnStats, Connection, State, TcpError};
pub use ecn::EcnMode;
pub use input::{Refusal, Verdict};
pub use pool::{BufferBudget, BufferPool};
pub use sack::LossEvents;
pub use seq::Seq;
pub use timers::PERSIST_MAX;

#[cfg(test)]
mod tests;
