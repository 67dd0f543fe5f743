//! Text output in testpmd's formats, so people's muscle memory and parsing
//! scripts carry over: `show port stats`, forward statistics on `stop`,
//! the forwarding configuration; `show port info` in [`port_info`] and
//! `show port N rss-hash` in [`rss`].

pub mod port_info;
pub mod rss;

pub use port_info::port_info;

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

/// One stream of the forwarding configuration, by port id and socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamLine {
    /// The receiving port.
    pub rx_port: u16,
    /// Its NUMA socket.
    pub rx_socket: u32,
    /// The transmitting port.
    pub tx_port: u16,
    /// Its NUMA socket.
    pub tx_socket: u32,
    /// The peer MAC the `mac` and `txonly` engines write (`None` in stack
    /// mode, where the stack resolves its neighbours).
    pub peer: Option<MacAddr>,
}

/// The forwarding configuration as testpmd prints it on `start` and
/// `show config fwd`. `lcore` is (lcore id, socket). One pool on any socket
/// is testpmd's "NUMA support disabled" with native allocation.
pub fn forward_config(
    mode: &str,
    ports: usize,
    lcore: (u32, u32),
    streams: &[StreamLine],
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{mode} packet forwarding - ports={ports} - cores=1 - streams={} - NUMA support \
         disabled, MP allocation mode: native",
        streams.len()
    );
    let _ = writeln!(
        out,
        "Logical Core {} (socket {}) forwards packets on {} streams:",
        lcore.0,
        lcore.1,
        streams.len()
    );
    for s in streams {
        let _ = write!(
            out,
            "  RX P={}/Q=0 (socket {}) -> TX P={}/Q=0 (socket {})",
            s.rx_port, s.rx_socket, s.tx_port, s.tx_socket
        );
        match s.peer {
            Some(peer) => {
                let _ = writeln!(out, " peer={peer}");
            }
            None => out.push('\n'),
        }
    }
    out.push('\n');
    out
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
        let stream = |rx, tx| StreamLine {
            rx_port: rx,
            rx_socket: 0,
            tx_port: tx,
            tx_socket: 0,
            peer: Some(MacAddr([2, 0, 0, 0, 0, tx as u8])),
        };
        let text = forward_config("io", 2, (1, 0), &[stream(0, 1), stream(1, 0)]);
        let expected = "\
io packet forwarding - ports=2 - cores=1 - streams=2 - NUMA support disabled, MP allocation mode: native
Logical Core 1 (socket 0) forwards packets on 2 streams:
  RX P=0/Q=0 (socket 0) -> TX P=1/Q=0 (socket 0) peer=02:00:00:00:00:01
  RX P=1/Q=0 (socket 0) -> TX P=0/Q=0 (socket 0) peer=02:00:00:00:00:00

";
        assert_eq!(text, expected);
    }
}
