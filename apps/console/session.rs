//! The console's state: open ports, the forwarding settings, and the
//! forwarding lcore while it runs. The prompt, `--cmdline-file` and the
//! non-interactive mode all drive it; every method returns the text to
//! print (errors as `Err` text).
//!
//! Invariants: forwarding runs only while every open port is started, and
//! while it runs no port is stopped or closed, so the port list (and the
//! stream indexes into it) cannot change under a run. Closed ports leave
//! the list: they are no longer valid port ids, as in testpmd.

mod ports;
mod stack;

pub use stack::StackSlot;

use crate::commands::PortSel;
use crate::display::{self, PortForwardTotals, StreamLine, ThroughputTracker};
use crate::engines::ForwardMode;
use crate::forward::{self, ForwardConfig, ForwardStats, Stream, Topology};
use dpstack::clock::TscClock;
use dpstack::ethdev::{EthPort, EthQueue, PortStats};
use dpstack::lcore::{launch, LaunchHandle, LaunchResult, Lcore};
use dpstack::stack::port::MacAddr;
use std::fmt::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

struct Running {
    handle: LaunchHandle,
    stop: Arc<AtomicBool>,
    record: RunRecord,
    /// Stack mode's channels.
    stack: Option<stack::StackRun>,
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
    /// Peer MAC of each port, by index in `ports`.
    peers: Vec<MacAddr>,
    /// Settings used by the next `start`.
    pub config: ForwardConfig,
    topology: Topology,
    lcore: Lcore,
    running: Option<Running>,
    finished: Option<Finished>,
    throughput: ThroughputTracker,
    tsc_mhz: u64,
    /// Stack mode's state between runs and its start-up addresses.
    pub stack: StackSlot,
}

impl Session {
    /// A session over `ports` (with their peer MACs), forwarding on `lcore`.
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
            stack: StackSlot::default(),
        }
    }

    /// The open ports.
    pub fn ports(&self) -> &[EthPort] {
        &self.ports
    }

    /// The ids of the open ports.
    pub fn port_ids(&self) -> Vec<u16> {
        self.ports.iter().map(EthPort::id).collect()
    }

    /// Indexes (into [`Session::ports`]) of the ports `sel` names, or
    /// testpmd's "Invalid port" message.
    pub fn select(&self, sel: PortSel) -> Result<Vec<usize>, String> {
        match sel {
            PortSel::All => Ok((0..self.ports.len()).collect()),
            PortSel::Id(id) => self
                .ports
                .iter()
                .position(|p| p.id() == id)
                .map(|i| vec![i])
                .ok_or_else(|| {
                    let ids: Vec<String> =
                        self.ports.iter().map(|p| format!(" {}", p.id())).collect();
                    format!(
                        "Invalid port {id}\nThe valid ports array is [{} ]",
                        ids.concat()
                    )
                }),
        }
    }

    /// True while forwarding runs.
    pub fn is_forwarding(&self) -> bool {
        self.running.is_some()
    }

    /// Starts forwarding (optionally with one txonly burst first).
    pub fn start(&mut self, tx_first: bool) -> Result<String, String> {
        if self.running.is_some() {
            return Ok("Packet forwarding already started\n".into());
        }
        if self.ports.is_empty() {
            return Err("No port to forward on: every port is closed".into());
        }
        if self.ports.iter().any(|p| !p.is_started()) {
            return Err("Not all ports were started".into());
        }
        let streams = self.streams();
        let mut text = self.forward_config()?;
        let _ = writeln!(
            text,
            "  {} packet forwarding packets/burst={}\n  nb forwarding cores=1 - nb forwarding \
             ports={}",
            self.config.mode.name(),
            self.config.burst,
            self.ports.len()
        );
        for p in &self.ports {
            let _ = writeln!(
                text,
                "  port {}: RX queue number: 1 Tx queue number: 1",
                p.id()
            );
        }
        let queues = self
            .ports
            .iter()
            .map(|p| p.queue(0, 0))
            .collect::<dpstack::Result<Vec<EthQueue>>>()
            .map_err(|e| e.to_string())?;
        let ports_at_start = self.port_stats().map_err(|e| e.to_string())?;
        let mut config = self.config.clone();
        config.tx_first = tx_first;
        let stats = Arc::new(ForwardStats::new(streams.len()));
        let stop = Arc::new(AtomicBool::new(false));
        let mut stack = None;
        let handle = if config.mode == ForwardMode::Stack {
            let (handle, run) = self.launch_stack(queues, Arc::clone(&stats), Arc::clone(&stop))?;
            stack = Some(run);
            handle
        } else {
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
            })
            .map_err(|e| e.to_string())?
        };
        self.running = Some(Running {
            handle,
            stop,
            stack,
            record: RunRecord {
                stats,
                streams,
                ports_at_start,
            },
        });
        self.finished = None;
        Ok(text)
    }

    /// The streams of the next run: the topology's, or in stack mode each
    /// port on itself (the stack answers through the port a request came
    /// in on).
    fn streams(&self) -> Vec<Stream> {
        let topology = match self.config.mode {
            ForwardMode::Stack => Topology::Loop,
            _ => self.topology,
        };
        forward::streams(topology, &self.peers)
    }

    /// `show config fwd`: the engine, lcore and streams of the current
    /// settings (what the next `start` uses), in testpmd's format.
    pub fn forward_config(&self) -> Result<String, String> {
        let socket = |i: usize| -> Result<u32, String> {
            let info = self.ports[i].info().map_err(|e| e.to_string())?;
            Ok(info.socket.map_or(0, |s| s.max(0) as u32))
        };
        let mut lines = Vec::new();
        let stack = self.config.mode == ForwardMode::Stack;
        for s in self.streams() {
            lines.push(StreamLine {
                rx_port: self.ports[s.rx_port].id(),
                rx_socket: socket(s.rx_port)?,
                tx_port: self.ports[s.tx_port].id(),
                tx_socket: socket(s.tx_port)?,
                peer: (!stack).then_some(s.peer_mac),
            });
        }
        Ok(display::forward_config(
            self.config.mode.name(),
            self.ports.len(),
            (self.lcore.0, self.lcore.socket()),
            &lines,
        ))
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
        if let Some(stack) = &running.stack {
            self.stack_returned(stack);
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

    /// `show fwd stats all`: live while forwarding, else the last run's;
    /// before any run, zeros for every port (as testpmd, whose stream
    /// counters start at zero).
    pub fn show_forward_stats(&self) -> String {
        match (&self.running, &self.finished) {
            (Some(running), _) => self.forward_report(&running.record),
            (None, Some(finished)) => finished.text.clone(),
            (None, None) => {
                let zeros: Vec<(u16, PortForwardTotals)> = (self.ports.iter())
                    .map(|p| (p.id(), PortForwardTotals::default()))
                    .collect();
                display::forward_stats(&zeros, None)
            }
        }
    }

    fn port_stats(&self) -> dpstack::Result<Vec<PortStats>> {
        self.ports.iter().map(EthPort::stats).collect()
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
