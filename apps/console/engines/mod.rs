//! Forwarding engines, testpmd-style: one small file per engine behind one
//! table ([`ENGINES`]), which also drives `--forward-mode`, `set fwd` and
//! `help`. The table's last mode, `stack`, is no engine: its lcore runs
//! the TCP/IP stack (`crate::stack`).
//!
//! An engine does one burst of one stream ([`Engine::burst`]): receive from
//! the stream's rx port, act, transmit to its tx port. The engines that
//! forward what they receive (`io`, `mac`, `macswap`) only say how they
//! rewrite a burst ([`Rewrite`]). The forwarding loop picks the engine once
//! per start and is monomorphized per engine and per port type: no indirect
//! call per burst or per packet.

mod io;
mod mac;
mod macswap;
mod rxonly;
mod txonly;

pub use io::Io;
pub use mac::Mac;
pub use macswap::MacSwap;
pub use rxonly::RxOnly;
pub use txonly::TxOnly;

use crate::forward::{Stream, StreamCounters};
use arrayvec::ArrayVec;
use dpstack::stack::port::{send_burst, Port, MAX_BURST};

/// The forwarding modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForwardMode {
    /// Forward unchanged.
    Io,
    /// Rewrite source and destination MAC.
    Mac,
    /// Swap source and destination MAC.
    MacSwap,
    /// Receive and free.
    RxOnly,
    /// Generate UDP packets.
    TxOnly,
    /// Run dpstack's TCP/IP stack on the ports (no engine: see
    /// `crate::stack`).
    Stack,
}

/// One row of the engine table.
#[derive(Debug)]
pub struct EngineInfo {
    /// The mode.
    pub mode: ForwardMode,
    /// Its name on the command line and the console.
    pub name: &'static str,
    /// One line of help.
    pub help: &'static str,
}

/// Every engine, in the order `help` lists them.
pub const ENGINES: &[EngineInfo] = &[
    EngineInfo {
        mode: ForwardMode::Io,
        name: "io",
        help: "forward packets unchanged to the peer port",
    },
    EngineInfo {
        mode: ForwardMode::Mac,
        name: "mac",
        help: "set source MAC to the tx port's, destination to its peer (--eth-peer)",
    },
    EngineInfo {
        mode: ForwardMode::MacSwap,
        name: "macswap",
        help: "swap source and destination MAC, then forward",
    },
    EngineInfo {
        mode: ForwardMode::RxOnly,
        name: "rxonly",
        help: "receive and free packets",
    },
    EngineInfo {
        mode: ForwardMode::TxOnly,
        name: "txonly",
        help: "send 64-byte UDP/IPv4 packets, receive nothing",
    },
    EngineInfo {
        mode: ForwardMode::Stack,
        name: "stack",
        help:
            "run dpstack's TCP/IP stack on every port (help stack: addresses, routes, ping, echo)",
    },
];

impl ForwardMode {
    /// The mode called `name`, if any.
    pub fn from_name(name: &str) -> Option<ForwardMode> {
        ENGINES.iter().find(|e| e.name == name).map(|e| e.mode)
    }

    /// The mode's name.
    pub fn name(self) -> &'static str {
        ENGINES
            .iter()
            .find(|e| e.mode == self)
            .map_or("?", |e| e.name)
    }

    /// Every name, for completion and error messages.
    pub fn names() -> Vec<&'static str> {
        ENGINES.iter().map(|e| e.name).collect()
    }
}

/// What a stream's burst may touch.
pub struct BurstContext<'a, P: Port> {
    /// All forwarding ports (queue handles), indexed as in the streams.
    pub ports: &'a mut [P],
    /// Packets per burst.
    pub burst: usize,
    /// Extra tx attempts before the unsent tail is dropped.
    pub tx_retries: u32,
}

/// A forwarding engine.
pub trait Engine {
    /// Processes one burst of `stream`, updating its counters. Returns the
    /// number of packets it handled (received, or sent for txonly).
    fn burst<P: Port>(
        &mut self,
        stream: &Stream,
        ctx: &mut BurstContext<'_, P>,
        counters: &mut StreamCounters,
    ) -> usize;
}

/// An engine that forwards every packet it receives to the stream's tx
/// port, rewritten in place first (`io`, `mac`, `macswap`): the receive and
/// transmit around the rewrite are written once, here.
pub trait Rewrite {
    /// Rewrites one received, non-empty burst of `stream` before it is sent.
    fn rewrite<P: Port>(&mut self, stream: &Stream, ports: &[P], bufs: &mut [P::Buf]);
}

impl<R: Rewrite> Engine for R {
    #[inline]
    fn burst<P: Port>(
        &mut self,
        stream: &Stream,
        ctx: &mut BurstContext<'_, P>,
        counters: &mut StreamCounters,
    ) -> usize {
        let mut burst = ArrayVec::new();
        let n = receive(stream, ctx, &mut burst, counters);
        if n > 0 {
            self.rewrite(stream, ctx.ports, &mut burst);
            transmit(stream, ctx, &mut burst, counters);
        }
        n
    }
}

/// Receives up to `ctx.burst` packets on the stream's rx port.
#[inline]
pub(crate) fn receive<P: Port>(
    stream: &Stream,
    ctx: &mut BurstContext<'_, P>,
    burst: &mut ArrayVec<P::Buf, MAX_BURST>,
    counters: &mut StreamCounters,
) -> usize {
    let n = ctx.ports[stream.rx_port].rx_burst(burst, ctx.burst);
    counters.rx_packets += n as u64;
    n
}

/// Sends `burst` on the stream's tx port; counts sent and dropped.
#[inline]
pub(crate) fn transmit<P: Port>(
    stream: &Stream,
    ctx: &mut BurstContext<'_, P>,
    burst: &mut ArrayVec<P::Buf, MAX_BURST>,
    counters: &mut StreamCounters,
) {
    let outcome = send_burst(&mut ctx.ports[stream.tx_port], burst, ctx.tx_retries);
    counters.tx_packets += outcome.sent as u64;
    counters.tx_dropped += outcome.dropped as u64;
}

#[cfg(test)]
pub(crate) mod test_support {
    //! A pair of in-memory ports and a stream between them.
    use super::*;
    use dpstack::stack::port::memory::{MemPort, MemPortConfig};
    use dpstack::stack::port::MacAddr;

    pub fn two_ports() -> Vec<MemPort> {
        (1..=2u8)
            .map(|i| {
                MemPort::new(MemPortConfig {
                    mac: MacAddr([0x02, 0, 0, 0, 0xaa, i]),
                    ..MemPortConfig::default()
                })
            })
            .collect()
    }

    pub fn stream_0_to_1() -> Stream {
        Stream {
            rx_port: 0,
            rx_queue: 0,
            tx_port: 1,
            tx_queue: 0,
            peer_mac: MacAddr([0x02, 0, 0, 0, 0, 0x01]),
        }
    }

    /// A 64-byte frame: dst, src, ethertype IPv4, then a counter byte.
    pub fn frame(dst: [u8; 6], src: [u8; 6], tag: u8) -> Vec<u8> {
        let mut f = Vec::with_capacity(64);
        f.extend_from_slice(&dst);
        f.extend_from_slice(&src);
        f.extend_from_slice(&[0x08, 0x00]);
        f.resize(64, tag);
        f
    }

    pub fn run_one<E: Engine>(engine: &mut E, ports: &mut [MemPort]) -> StreamCounters {
        let stream = stream_0_to_1();
        let mut counters = StreamCounters::default();
        let mut ctx = BurstContext {
            ports,
            burst: 32,
            tx_retries: 0,
        };
        engine.burst(&stream, &mut ctx, &mut counters);
        counters
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_engine_is_found_by_its_name() {
        for engine in ENGINES {
            assert_eq!(ForwardMode::from_name(engine.name), Some(engine.mode));
            assert_eq!(engine.mode.name(), engine.name);
        }
        assert_eq!(ForwardMode::from_name("nosuch"), None);
    }
}
