//! The console's state: open ports, the forwarding settings, and the
//! forwarding lcore while it runs. Both the interactive prompt and the
//! non-interactive mode drive it; every method returns the text to print.

use crate::display::{self, PortForwardTotals, ThroughputTracker};
use crate::engines::ForwardMode;
use crate::forward::{self, ForwardConfig, ForwardStats, Stream, Topology};
use dpstack::clock::TscClock;
use dpstack::ethdev::{EthPort, EthQueue, PortStats};
use dpstack::lcore::{launch, LaunchHandle, LaunchResult, Lcore};
use dpstack::stack::port::MacAddr;
use dpstack::Result;
use std::fmt::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

struct Running {
    handle: LaunchHandle,
    stop: Arc<AtomicBool>,
    record: RunRecord,
}

/// What a forwarding run needs for its report.
struct RunRecord {
    stats: Arc<ForwardStats>,
    streams: Vec<Stream>,
    ports_at_start: Vec<PortStats>,
}

/// Forwarding totals kept after `stop`, for `show fwd stats all`.
struct Finished {
    text: String,
}

/// See the module documentation.
pub struct Session {
    ports: Vec<EthPort>,
    peers: Vec<MacAddr>,
    /// Settings used by the next `start`.
    pub config: ForwardConfig,
    topology: Topology,
    lcore: Lcore,
    running: Option<Running>,
    finished: Option<Finished>,
    throughput: ThroughputTracker,
    tsc_mhz: u64,
}

impl Session {
    /// A session over `ports`, forwarding on `lcore`.
    pub fn new(
        ports: Vec<EthPort>,
        peers: Vec<MacAddr>,
        config: ForwardConfig,
        topology: Topology,
        lcore: Lcore,
    ) -> Session {
        Session {
            ports,
            peers,
            config,
            topology,
            lcore,
            running: None,
            finished: None,
            throughput: ThroughputTracker::default(),
            tsc_mhz: TscClock::new().hz() / 1_000_000,
        }
    }

    /// The open ports.
    pub fn ports(&self) -> &[EthPort] {
        &self.ports
    }

    /// Starts forwarding (optionally with one txonly burst first).
    pub fn start(&mut self, tx_first: bool) -> Result<String> {
        if self.running.is_some() {
            return Ok("Packet forwarding already started\n".into());
        }
        let streams = forward::streams(self.topology, &self.peers);
        let queues = self
            .ports
            .iter()
            .map(|p| p.queue(0, 0))
            .collect::<Result<Vec<EthQueue>>>()?;
        let ports_at_start = self.port_stats()?;
        let mut config = self.config.clone();
        config.tx_first = tx_first;
        let stats = Arc::new(ForwardStats::new(streams.len()));
        let stop = Arc::new(AtomicBool::new(false));
        let text = self.start_banner(&streams);
        let handle = {
            let (stats, stop, streams) = (Arc::clone(&stats), Arc::clone(&stop), streams.clone());
            let mut queues = queues;
            launch(self.lcore, move || {
                forward::run(
                    &config,
                    &mut queues,
                    &streams,
                    &stats,
                    &stop,
                    TscClock::cycles,
                );
                0
            })?
        };
        self.running = Some(Running {
            handle,
            stop,
            record: RunRecord {
                stats,
                streams,
                ports_at_start,
            },
        });
        self.finished = None;
        Ok(text)
    }

    fn start_banner(&self, streams: &[Stream]) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{} packet forwarding - ports={} - cores=1 - streams={}",
            self.config.mode.name(),
            self.ports.len(),
            streams.len()
        );
        let _ = writeln!(
            out,
            "Logical Core {} (socket {}) forwards packets on {} streams:",
            self.lcore.0,
            self.lcore.socket(),
            streams.len()
        );
        for s in streams {
            let _ = writeln!(
                out,
                "  RX P={}/Q=0 -> TX P={}/Q=0 peer={}",
                self.ports[s.rx_port].id(),
                self.ports[s.tx_port].id(),
                s.peer_mac
            );
        }
        out
    }

    /// Stops forwarding and returns testpmd's stop report.
    pub fn stop(&mut self) -> String {
        let Some(running) = self.running.take() else {
            return "Packet forwarding not started\n".into();
        };
        let mut out = String::from("Telling cores to stop...\nWaiting for lcores to finish...\n");
        running.stop.store(true, Ordering::SeqCst);
        if running.handle.wait() == LaunchResult::Panicked {
            out.push_str("The forwarding lcore panicked; its counters may be incomplete.\n");
        }
        let report = self.forward_report(&running.record);
        out.push_str(&report);
        out.push_str("\nDone.\n");
        self.finished = Some(Finished { text: report });
        out
    }

    fn forward_report(&self, running: &RunRecord) -> String {
        let snapshot = running.stats.snapshot();
        let now = self.port_stats().unwrap_or_default();
        let mut totals: Vec<(u16, PortForwardTotals)> = self
            .ports
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let missed = match (now.get(i), running.ports_at_start.get(i)) {
                    (Some(n), Some(s)) => n.rx_missed.saturating_sub(s.rx_missed),
                    _ => 0,
                };
                let t = PortForwardTotals {
                    rx_dropped: missed,
                    ..PortForwardTotals::default()
                };
                (p.id(), t)
            })
            .collect();
        let mut busy = 0;
        for (stream, c) in running.streams.iter().zip(&snapshot) {
            totals[stream.rx_port].1.rx_packets += c.rx_packets;
            totals[stream.tx_port].1.tx_packets += c.tx_packets;
            totals[stream.tx_port].1.tx_dropped += c.tx_dropped;
            busy += c.busy_cycles;
        }
        let cycles = self.config.record_cycles.then_some((busy, self.tsc_mhz));
        display::forward_stats(&totals, cycles)
    }

    /// `show fwd stats all`: live while forwarding, else the last run's.
    pub fn show_forward_stats(&self) -> String {
        match (&self.running, &self.finished) {
            (Some(running), _) => self.forward_report(&running.record),
            (None, Some(finished)) => finished.text.clone(),
            (None, None) => "Packet forwarding not started\n".into(),
        }
    }

    fn port_stats(&self) -> Result<Vec<PortStats>> {
        self.ports.iter().map(EthPort::stats).collect()
    }

    /// `show port stats` for the ports at `indexes`.
    pub fn show_port_stats(&mut self, indexes: &[usize]) -> Result<String> {
        let mut out = String::new();
        for &i in indexes {
            let stats = self.ports[i].stats()?;
            let rates = self.throughput.update(i, Instant::now(), stats);
            out.push_str(&display::port_stats(self.ports[i].id(), &stats, &rates));
        }
        Ok(out)
    }

    /// `clear port stats` for the ports at `indexes`.
    pub fn clear_port_stats(&mut self, indexes: &[usize]) -> Result<String> {
        let mut out = String::new();
        for &i in indexes {
            self.ports[i].reset_stats()?;
            self.throughput.forget(i);
            let _ = writeln!(
                out,
                "\n  NIC statistics for port {} cleared",
                self.ports[i].id()
            );
        }
        Ok(out)
    }

    /// `show port xstats` for the ports at `indexes`.
    pub fn show_port_xstats(&self, indexes: &[usize]) -> Result<String> {
        let mut out = String::new();
        for &i in indexes {
            let _ = writeln!(
                out,
                "###### NIC extended statistics for port {}",
                self.ports[i].id()
            );
            for x in self.ports[i].xstats()? {
                let _ = writeln!(out, "{}: {}", x.name, x.value);
            }
        }
        Ok(out)
    }

    /// `show port summary all`.
    pub fn show_port_summary(&self) -> Result<String> {
        let mut out = format!("Number of available ports: {}\n", self.ports.len());
        let _ = writeln!(
            out,
            "{:<4} {:<17} {:<12} {:<14} {:<8} Link",
            "Port", "MAC Address", "Name", "Driver", "Status"
        );
        for p in &self.ports {
            let info = p.info()?;
            let link = p.link()?;
            let _ = writeln!(
                out,
                "{:<4} {} {:<12} {:<14} {:<8} {}",
                p.id(),
                p.mac(),
                info.name,
                info.driver,
                if link.up { "up" } else { "down" },
                link.speed_text()
            );
        }
        Ok(out)
    }

    /// `set fwd MODE`.
    pub fn set_forward_mode(&mut self, mode: ForwardMode) -> String {
        self.config.mode = mode;
        format!("Set {} packet forwarding mode\n", mode.name())
    }

    /// Stops forwarding if needed, then stops and closes every port.
    pub fn close(mut self) -> String {
        let mut out = String::new();
        if self.running.is_some() {
            out.push_str(&self.stop());
        }
        for p in &self.ports {
            let _ = writeln!(out, "Stopping port {}...", p.id());
            if let Err(e) = p.stop() {
                let _ = writeln!(out, "{e}");
            }
        }
        out.push_str("Done\n\n");
        for p in self.ports.drain(..) {
            let id = p.id();
            drop(p);
            let _ = writeln!(out, "Port {id} is closed");
        }
        out.push_str("Done\n\nBye...\n");
        out
    }
}
