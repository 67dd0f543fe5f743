//! Text output in testpmd's formats, so people's muscle memory and parsing
//! scripts carry over: `show port stats`, forward statistics on `stop`,
//! the forwarding configuration; `show port info` in [`port_info`] and
//! `show port N rss-hash` in [`rss`].

pub mod port_info;
pub mod rss;

pub use port_info::port_info;

use crate::forward::StreamCounters;
use dpstack::ethdev::PortStats;
use dpstack::stack::port::MacAddr;
use std::fmt::Write;
use std::time::Instant;

/// Rates since the previous `show port stats` of a port.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Throughput {
    /// Received packets per second.
    pub rx_pps: u64,
    /// Received bits per second.
    pub rx_bps: u64,
    /// Sent packets per second.
    pub tx_pps: u64,
    /// Sent bits per second.
    pub tx_bps: u64,
}

/// Remembers each port's last shown counters to compute rates, as testpmd.
#[derive(Debug, Default)]
pub struct ThroughputTracker {
    last: Vec<Option<(Instant, PortStats)>>,
}

impl ThroughputTracker {
    /// Rates of `port` since its previous call (zero on the first call).
    pub fn update(&mut self, port: usize, now: Instant, stats: PortStats) -> Throughput {
        if self.last.len() <= port {
            self.last.resize(port + 1, None);
        }
        let previous = self.last[port].replace((now, stats));
        let Some((then, old)) = previous else {
            return Throughput::default();
        };
        let nanos = now.duration_since(then).as_nanos().max(1);
        let rate = |new: u64, old: u64| -> u64 {
            (u128::from(new.saturating_sub(old)) * 1_000_000_000 / nanos) as u64
        };
        Throughput {
            rx_pps: rate(stats.rx_packets, old.rx_packets),
            rx_bps: rate(stats.rx_bytes, old.rx_bytes) * 8,
            tx_pps: rate(stats.tx_packets, old.tx_packets),
            tx_bps: rate(stats.tx_bytes, old.tx_bytes) * 8,
        }
    }

    /// Forgets `port`'s last counters (after they were reset).
    pub fn forget(&mut self, port: usize) {
        if let Some(slot) = self.last.get_mut(port) {
            *slot = None;
        }
    }
}

const NIC_BORDER: &str = "########################";
const FWD_BORDER: &str = "----------------------";
/// testpmd's border of a stream's forward statistics.
const STREAM_BORDER: &str = "-------";

/// The `show port stats` block of one port.
pub fn port_stats(port: u16, s: &PortStats, t: &Throughput) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n  {NIC_BORDER} NIC statistics for port {port:<2} {NIC_BORDER}"
    );
    let _ = writeln!(
        out,
        "  RX-packets: {:<10} RX-missed: {:<10} RX-bytes:  {}",
        s.rx_packets, s.rx_missed, s.rx_bytes
    );
    let _ = writeln!(out, "  RX-errors: {}", s.rx_errors);
    let _ = writeln!(out, "  RX-nombuf:  {:<10}", s.rx_nombuf);
    let _ = writeln!(
        out,
        "  TX-packets: {:<10} TX-errors: {:<10} TX-bytes:  {}",
        s.tx_packets, s.tx_errors, s.tx_bytes
    );
    let _ = writeln!(out, "\n  Throughput (since last show)");
    let _ = writeln!(
        out,
        "  Rx-pps: {:>12}          Rx-bps: {:>12}",
        t.rx_pps, t.rx_bps
    );
    let _ = writeln!(
        out,
        "  Tx-pps: {:>12}          Tx-bps: {:>12}",
        t.tx_pps, t.tx_bps
    );
    let _ = writeln!(out, "  {NIC_BORDER}{}", "#".repeat(52));
    out
}

/// Forwarding totals of one port (or of all ports).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PortForwardTotals {
    /// Packets the engine received on the port.
    pub rx_packets: u64,
    /// Packets the device dropped on receive (missed) since start.
    pub rx_dropped: u64,
    /// Packets the engine sent on the port.
    pub tx_packets: u64,
    /// Packets the device refused on transmit.
    pub tx_dropped: u64,
}

impl PortForwardTotals {
    fn lines(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "  RX-packets: {:<14} RX-dropped: {:<14}RX-total: {}",
            self.rx_packets,
            self.rx_dropped,
            self.rx_packets + self.rx_dropped
        );
        let _ = writeln!(
            out,
            "  TX-packets: {:<14} TX-dropped: {:<14}TX-total: {}",
            self.tx_packets,
            self.tx_dropped,
            self.tx_packets + self.tx_dropped
        );
    }
}

/// The forward statistics testpmd prints on `stop` and `show fwd stats all`:
/// one block per forwarding port (idle ones too, as testpmd 22.11), then the
/// accumulated block.
/// `cycles` is `(busy cycles, TSC MHz)` with --record-core-cycles.
pub fn forward_stats(ports: &[(u16, PortForwardTotals)], cycles: Option<(u64, u64)>) -> String {
    let mut out = String::new();
    let mut total = PortForwardTotals::default();
    for (port, t) in ports {
        total.rx_packets += t.rx_packets;
        total.rx_dropped += t.rx_dropped;
        total.tx_packets += t.tx_packets;
        total.tx_dropped += t.tx_dropped;
        let _ = writeln!(
            out,
            "\n  {FWD_BORDER} Forward statistics for port {port:<2} {FWD_BORDER}"
        );
        t.lines(&mut out);
        let _ = writeln!(out, "  {}", "-".repeat(76));
    }
    let plus = "+".repeat(15);
    let _ = writeln!(
        out,
        "\n  {plus} Accumulated forward statistics for all ports{plus}"
    );
    total.lines(&mut out);
    let _ = writeln!(out, "  {}", "+".repeat(76));
    if let Some((busy, mhz)) = cycles {
        let (kind, packets) = if total.rx_packets > 0 {
            ("RX", total.rx_packets)
        } else {
            ("TX", total.tx_packets)
        };
        if packets > 0 {
            let _ = writeln!(
                out,
                "\n  CPU cycles/packet={:.2} (busy cycles={busy} / total {kind} packets={packets}) at {mhz} MHz Clock",
                busy as f64 / packets as f64
            );
        }
    }
    out
}

/// One stream of the forwarding configuration, by port id, queue and
/// socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamLine {
    /// The receiving port.
    pub rx_port: u16,
    /// Its rx queue.
    pub rx_queue: u16,
    /// Its NUMA socket.
    pub rx_socket: u32,
    /// The transmitting port.
    pub tx_port: u16,
    /// Its tx queue.
    pub tx_queue: u16,
    /// Its NUMA socket.
    pub tx_socket: u32,
    /// The peer MAC the `mac` and `txonly` engines write (`None` in stack
    /// mode, where the stack resolves its neighbours).
    pub peer: Option<MacAddr>,
}

/// One forwarding lcore and its streams.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LcoreLine {
    /// The lcore id.
    pub lcore: u32,
    /// Its NUMA socket.
    pub socket: u32,
    /// The streams it forwards.
    pub streams: Vec<StreamLine>,
}

/// The forwarding configuration as testpmd prints it on `start` and
/// `show config fwd`. One pool on any socket is testpmd's "NUMA support
/// disabled" with native allocation.
pub fn forward_config(mode: &str, ports: usize, lcores: &[LcoreLine]) -> String {
    let mut out = String::new();
    let streams: usize = lcores.iter().map(|l| l.streams.len()).sum();
    let _ = writeln!(
        out,
        "{mode} packet forwarding - ports={ports} - cores={} - streams={streams} - NUMA \
         support disabled, MP allocation mode: native",
        lcores.len()
    );
    for l in lcores {
        let _ = writeln!(
            out,
            "Logical Core {} (socket {}) forwards packets on {} streams:",
            l.lcore,
            l.socket,
            l.streams.len()
        );
        for s in &l.streams {
            let _ = write!(
                out,
                "  RX P={}/Q={} (socket {}) -> TX P={}/Q={} (socket {})",
                s.rx_port, s.rx_queue, s.rx_socket, s.tx_port, s.tx_queue, s.tx_socket
            );
            match s.peer {
                Some(peer) => {
                    let _ = writeln!(out, " peer={peer}");
                }
                None => out.push('\n'),
            }
        }
    }
    out.push('\n');
    out
}

/// One stream's forward statistics, in testpmd's format (printed when
/// there are more streams than ports); nothing for a stream that moved
/// nothing, as testpmd. `ends` is ((rx port, queue), (tx port, queue)).
pub fn stream_stats(ends: ((u16, u16), (u16, u16)), c: &StreamCounters) -> String {
    if c.rx_packets == 0 && c.tx_packets == 0 && c.tx_dropped == 0 {
        return String::new();
    }
    let ((rx_port, rx_queue), (tx_port, tx_queue)) = ends;
    format!(
        "\n  {STREAM_BORDER} Forward Stats for RX Port={rx_port:2}/Queue={rx_queue:2} -> TX \
         Port={tx_port:2}/Queue={tx_queue:2} {STREAM_BORDER}\n  RX-packets: {:<14} TX-packets: \
         {:<14} TX-dropped: {:<14}\n",
        c.rx_packets, c.tx_packets, c.tx_dropped
    )
}

/// One forwarding lcore's share of `--record-core-cycles`.
pub fn lcore_cycles(lcore: u32, busy: u64, packets: u64) -> String {
    if packets == 0 {
        return String::new();
    }
    format!(
        "  Lcore {lcore}: CPU cycles/packet={:.2} (busy cycles={busy} / packets={packets})\n",
        busy as f64 / packets as f64
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn port_stats_block_matches_testpmd_layout() {
        let s = PortStats {
            rx_packets: 23968768,
            tx_packets: 23724512,
            ..PortStats::default()
        };
        let t = Throughput {
            rx_pps: 5952363,
            tx_pps: 5891704,
            ..Throughput::default()
        };
        let text = port_stats(0, &s, &t);
        let expected = "
  ######################## NIC statistics for port 0  ########################
  RX-packets: 23968768   RX-missed: 0          RX-bytes:  0
  RX-errors: 0
  RX-nombuf:  0         
  TX-packets: 23724512   TX-errors: 0          TX-bytes:  0

  Throughput (since last show)
  Rx-pps:      5952363          Rx-bps:            0
  Tx-pps:      5891704          Tx-bps:            0
  ############################################################################
";
        assert_eq!(text, expected);
    }

    #[test]
    fn forward_stats_match_testpmd_layout_with_idle_ports_too() {
        let busy = PortForwardTotals {
            rx_packets: 80202112,
            tx_packets: 80202112,
            ..PortForwardTotals::default()
        };
        let text = forward_stats(&[(0, busy), (1, PortForwardTotals::default())], None);
        let expected = "
  ---------------------- Forward statistics for port 0  ----------------------
  RX-packets: 80202112       RX-dropped: 0             RX-total: 80202112
  TX-packets: 80202112       TX-dropped: 0             TX-total: 80202112
  ----------------------------------------------------------------------------

  ---------------------- Forward statistics for port 1  ----------------------
  RX-packets: 0              RX-dropped: 0             RX-total: 0
  TX-packets: 0              TX-dropped: 0             TX-total: 0
  ----------------------------------------------------------------------------

  +++++++++++++++ Accumulated forward statistics for all ports+++++++++++++++
  RX-packets: 80202112       RX-dropped: 0             RX-total: 80202112
  TX-packets: 80202112       TX-dropped: 0             TX-total: 80202112
  ++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++
";
        assert_eq!(text, expected);
    }

    #[test]
    fn cycles_per_packet_is_busy_cycles_over_packets() {
        let t = PortForwardTotals {
            rx_packets: 1000,
            tx_packets: 1000,
            ..PortForwardTotals::default()
        };
        let text = forward_stats(&[(0, t)], Some((32_500, 2100)));
        assert!(text.contains(
            "CPU cycles/packet=32.50 (busy cycles=32500 / total RX packets=1000) at 2100 MHz Clock"
        ));
    }

    #[test]
    fn throughput_is_the_rate_since_the_previous_show() {
        let mut tracker = ThroughputTracker::default();
        let t0 = Instant::now();
        let mut s = PortStats::default();
        assert_eq!(tracker.update(0, t0, s), Throughput::default());
        s.rx_packets = 500;
        s.rx_bytes = 1000;
        let t = tracker.update(0, t0 + Duration::from_millis(500), s);
        assert_eq!((t.rx_pps, t.rx_bps), (1000, 16000));
    }

    #[test]
    fn forward_config_matches_testpmd_layout() {
        let stream = |rx, tx, queue| StreamLine {
            rx_port: rx,
            rx_queue: queue,
            rx_socket: 0,
            tx_port: tx,
            tx_queue: queue,
            tx_socket: 0,
            peer: Some(MacAddr([2, 0, 0, 0, 0, tx as u8])),
        };
        let lcore = |lcore, queue| LcoreLine {
            lcore,
            socket: 0,
            streams: vec![stream(0, 1, queue), stream(1, 0, queue)],
        };
        let text = forward_config("io", 2, &[lcore(1, 0), lcore(2, 1)]);
        let expected = "\
io packet forwarding - ports=2 - cores=2 - streams=4 - NUMA support disabled, MP allocation mode: native
Logical Core 1 (socket 0) forwards packets on 2 streams:
  RX P=0/Q=0 (socket 0) -> TX P=1/Q=0 (socket 0) peer=02:00:00:00:00:01
  RX P=1/Q=0 (socket 0) -> TX P=0/Q=0 (socket 0) peer=02:00:00:00:00:00
Logical Core 2 (socket 0) forwards packets on 2 streams:
  RX P=0/Q=1 (socket 0) -> TX P=1/Q=1 (socket 0) peer=02:00:00:00:00:01
  RX P=1/Q=1 (socket 0) -> TX P=0/Q=1 (socket 0) peer=02:00:00:00:00:00

";
        assert_eq!(text, expected);
    }

    #[test]
    fn stream_stats_match_testpmd_and_skip_idle_streams() {
        let c = StreamCounters {
            rx_packets: 32352,
            tx_packets: 32352,
            ..StreamCounters::default()
        };
        assert_eq!(
            stream_stats(((0, 1), (1, 1)), &c),
            "\n  ------- Forward Stats for RX Port= 0/Queue= 1 -> TX Port= 1/Queue= 1 -------\n  \
             RX-packets: 32352          TX-packets: 32352          TX-dropped: 0             \n"
        );
        assert_eq!(
            stream_stats(((0, 1), (1, 1)), &StreamCounters::default()),
            ""
        );
    }
}
