//! The console's state: open ports, the forwarding settings, and the
//! forwarding lcores while they run. The prompt, `--cmdline-file` and the
//! non-interactive mode all drive it; every method returns the text to
//! print (errors as `Err` text).
//!
//! Invariants: forwarding runs only while every open port is started, and
//! while it runs no port is stopped or closed, so the port list (and the
//! stream indexes into it) cannot change under a run. Closed ports leave
//! the list: they are no longer valid port ids, as in testpmd.

mod ports;
mod queues;
mod stack;

pub use queues::RSS_TYPES;

pub use stack::StackSlot;

use crate::commands::PortSel;
use crate::display::{self, LcoreLine, PortForwardTotals, StreamLine, ThroughputTracker};
use crate::engines::ForwardMode;
use crate::forward::{self, ForwardConfig, ForwardStats, LcorePlan, Stream, Topology};
use dpstack::clock::TscClock;
use dpstack::ethdev::{EthPort, EthQueue, PortConfig, PortInfo, PortStats, RssConfig};
use dpstack::lcore::{launch, LaunchHandle, LaunchResult, Lcore};
use dpstack::stack::port::MacAddr;
use std::fmt::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// `base` for port `id`, with `rss` when it has several rx queues and its
/// device hashes flows; otherwise without, and a note that says what the
/// device does with flows instead (as testpmd, which enables RSS only where
/// the device has it).
pub fn with_rss(base: &PortConfig, rss: &RssConfig, id: u16) -> (PortConfig, Option<String>) {
    let mut config = base.clone();
    if base.rx_queues < 2 {
        return (config, None);
    }
    let Ok(info) = PortInfo::query(id) else {
        return (config, None);
    };
    let spreading = dpstack::ethdev::QueueSpreading::of(&info);
    if spreading.is_predictable() {
        config.rss = Some(rss.clone());
        (config, None)
    } else {
        let note = format!(
            "Port {id}: {} has no RSS ({spreading}); its {} rx queues are not spread by hash",
            info.driver, base.rx_queues
        );
        (config, Some(note))
    }
}

struct Running {
    handles: Vec<LaunchHandle>,
    stop: Arc<AtomicBool>,
    record: RunRecord,
    /// Stack mode's channels.
    stack: Option<stack::StackRun>,
}

/// What a forwarding run needs for its report.
struct RunRecord {
    stats: Arc<ForwardStats>,
    streams: Vec<Stream>,
    /// Each forwarding lcore and the block of `streams` it runs.
    lcores: Vec<(Lcore, std::ops::Range<usize>)>,
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
    /// The worker lcores forwarding may use.
    lcores: Vec<Lcore>,
    /// How many of them the next `start` uses (`--nb-cores`, `set nbcore`).
    nb_cores: usize,
    /// How the ports are configured (queue counts, descriptors), for
    /// `port config`; RSS is added per port where the device has it.
    port_config: PortConfig,
    /// The RSS hash types and key asked for (`--rss-ip`, `--rss-udp`).
    rss: RssConfig,
    running: Option<Running>,
    finished: Option<Finished>,
    throughput: ThroughputTracker,
    tsc_mhz: u64,
    /// Stack mode's state between runs and its start-up addresses.
    pub stack: StackSlot,
}

impl Session {
    /// A session over `ports` (with their peer MACs), configured with
    /// `port_config`, forwarding on the first `nb_cores` of `lcores`.
    pub fn new(
        ports: Vec<EthPort>,
        peers: Vec<MacAddr>,
        (config, topology): (ForwardConfig, Topology),
        (lcores, nb_cores): (Vec<Lcore>, usize),
        (port_config, rss): (PortConfig, RssConfig),
    ) -> Session {
        Session {
            ports,
            peers,
            config,
            topology,
            lcores,
            nb_cores,
            port_config,
            rss,
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
        if self.config.mode == ForwardMode::Stack {
            self.stack_queues_fit()?;
        }
        let streams = self.streams();
        let blocks = self.lcore_blocks(streams.len());
        let mut text = self.forward_config()?;
        text.push_str(&self.rxtx_config());
        let ports_at_start = self.port_stats().map_err(|e| e.to_string())?;
        let mut config = self.config.clone();
        config.tx_first = tx_first;
        let stats = Arc::new(ForwardStats::new(streams.len()));
        let stop = Arc::new(AtomicBool::new(false));
        let mut stack = None;
        let mut handles = Vec::new();
        if config.mode == ForwardMode::Stack {
            // Pipeline `q` polls queue `q` of every port.
            let mut queues = Vec::new();
            for q in 0..blocks.len() as u16 {
                let lane = (self.ports.iter())
                    .map(|p| p.queue(q, q))
                    .collect::<dpstack::Result<Vec<EthQueue>>>()
                    .map_err(|e| e.to_string())?;
                queues.push(lane);
            }
            let (launched, run) =
                self.launch_stack(queues, Arc::clone(&stats), Arc::clone(&stop))?;
            stack = Some(run);
            handles = launched;
        } else {
            // Take every lcore's queues before launching any, so a refusal
            // leaves nothing running.
            let mut planned = Vec::new();
            for (lcore, block) in &blocks {
                let plan = LcorePlan::new(&streams, block.clone());
                let queues = plan
                    .handles
                    .iter()
                    .map(|&(port, rx, tx)| self.ports[port].queue_parts(rx, tx))
                    .collect::<dpstack::Result<Vec<EthQueue>>>()
                    .map_err(|e| e.to_string())?;
                planned.push((*lcore, plan, queues));
            }
            for (lcore, plan, mut queues) in planned {
                let (lcore_stats, lcore_stop) = (Arc::clone(&stats), Arc::clone(&stop));
                let lcore_config = config.clone();
                let launched = launch(lcore, move || {
                    forward::run(
                        &lcore_config,
                        &mut queues,
                        (&plan.streams, plan.first),
                        &lcore_stats,
                        &lcore_stop,
                        TscClock::cycles,
                    );
                    0
                });
                match launched {
                    Ok(handle) => handles.push(handle),
                    Err(e) => {
                        stop.store(true, Ordering::SeqCst);
                        for handle in handles {
                            handle.wait();
                        }
                        return Err(e.to_string());
                    }
                }
            }
        }
        self.running = Some(Running {
            handles,
            stop,
            stack,
            record: RunRecord {
                stats,
                streams,
                lcores: blocks,
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
        forward::streams(topology, &self.peers, self.queues())
    }

    /// The rx and tx queues each port has.
    pub fn queues(&self) -> (u16, u16) {
        (self.port_config.rx_queues, self.port_config.tx_queues)
    }

    /// The forwarding lcores of a run of `streams` streams and the block
    /// of streams each runs (stack mode: lcore `q` runs the streams of
    /// queue `q`, a pipeline polling that queue of every port).
    fn lcore_blocks(&self, streams: usize) -> Vec<(Lcore, std::ops::Range<usize>)> {
        self.lcores
            .iter()
            .copied()
            .zip(forward::lcore_blocks(streams, self.nb_cores))
            .collect()
    }

    /// Stack mode runs one pipeline per lcore on its own queue of every
    /// port, so every rx queue needs its lcore and every lcore its tx
    /// queue.
    fn stack_queues_fit(&self) -> Result<(), String> {
        let (rxq, txq) = self.queues();
        let cores = self.nb_cores;
        if usize::from(rxq) == cores && usize::from(txq) >= cores {
            return Ok(());
        }
        Err(format!(
            "stack mode runs a pipeline per lcore on its queue of each port: {cores} lcore(s) \
             need {cores} rx queue(s) and at least {cores} tx queue(s) (set nbcore N; port stop \
             all, port config all rxq N, port config all txq N, port start all); {rxq} rx and \
             {txq} tx queues are configured"
        ))
    }

    /// `set nbcore N`: at most the worker lcores EAL was given.
    pub fn set_nb_cores(&mut self, n: usize) -> Result<String, String> {
        if n == 0 {
            return Err("nb fwd cores 0: at least 1 - ignored".into());
        }
        if n > self.lcores.len() {
            return Err(format!(
                "nb fwd cores {n} > {} (max. number of configured lcores) - ignored",
                self.lcores.len()
            ));
        }
        self.nb_cores = n;
        Ok(format!("Number of forwarding cores set to {n}\n"))
    }

    /// `show config rxtx`: the engine, burst, cores and each port's queues.
    pub fn rxtx_config(&self) -> String {
        let (rxq, txq) = self.queues();
        let mut text = String::new();
        let cores = self.lcore_blocks(self.streams().len()).len();
        let _ = writeln!(
            text,
            "  {} packet forwarding packets/burst={}\n  nb forwarding cores={cores} - nb \
             forwarding ports={}",
            self.config.mode.name(),
            self.config.burst,
            self.ports.len()
        );
        for p in &self.ports {
            let _ = writeln!(
                text,
                "  port {}: RX queue number: {rxq} Tx queue number: {txq}",
                p.id()
            );
            // testpmd shows queue 0's settings: the device's where it
            // reports them, else what was asked for.
            let rx = p.rx_queue_info(0).unwrap_or_default();
            let tx = p.tx_queue_info(0).unwrap_or_default();
            let desc = |reported: u16, asked: u16| if reported > 0 { reported } else { asked };
            let _ = writeln!(
                text,
                "    Rx offloads=0x{:x} Tx offloads=0x{:x}\n    RX queue: 0\n      RX desc={} - RX free \
                 threshold={}\n      RX threshold registers: pthresh={} hthresh={}  wthresh={}\n      \
                 RX Offloads=0x{:x}\n    TX queue: 0\n      TX desc={} - TX free threshold={}\n      \
                 TX threshold registers: pthresh={} hthresh={}  wthresh={}\n      TX offloads=0x{:x} - \
                 TX RS bit threshold={}",
                rx.offloads,
                tx.offloads,
                desc(rx.descriptors, self.port_config.rx_descriptors),
                rx.free_threshold,
                rx.thresholds.0,
                rx.thresholds.1,
                rx.thresholds.2,
                rx.offloads,
                desc(tx.descriptors, self.port_config.tx_descriptors),
                tx.free_threshold,
                tx.thresholds.0,
                tx.thresholds.1,
                tx.thresholds.2,
                tx.offloads,
                tx.rs_threshold
            );
        }
        text
    }

    /// `show config fwd`: the engine, lcore and streams of the current
    /// settings (what the next `start` uses), in testpmd's format.
    pub fn forward_config(&self) -> Result<String, String> {
        let socket = |i: usize| -> Result<u32, String> {
            let info = self.ports[i].info().map_err(|e| e.to_string())?;
            Ok(info.socket.map_or(0, |s| s.max(0) as u32))
        };
        let stack = self.config.mode == ForwardMode::Stack;
        let streams = self.streams();
        let mut lcores = Vec::new();
        for (lcore, block) in self.lcore_blocks(streams.len()) {
            let mut lines = Vec::new();
            for s in &streams[block] {
                lines.push(StreamLine {
                    rx_port: self.ports[s.rx_port].id(),
                    rx_queue: s.rx_queue,
                    rx_socket: socket(s.rx_port)?,
                    tx_port: self.ports[s.tx_port].id(),
                    tx_queue: s.tx_queue,
                    tx_socket: socket(s.tx_port)?,
                    peer: (!stack).then_some(s.peer_mac),
                });
            }
            lcores.push(LcoreLine {
                lcore: lcore.0,
                socket: lcore.socket(),
                streams: lines,
            });
        }
        Ok(display::forward_config(
            self.config.mode.name(),
            self.ports.len(),
            &lcores,
        ))
    }

    /// Stops forwarding and returns testpmd's stop report.
    pub fn stop(&mut self) -> String {
        let Some(running) = self.running.take() else {
            return "Packet forwarding not started\n".into();
        };
        let mut out = String::from("Telling cores to stop...\nWaiting for lcores to finish...\n");
        running.stop.store(true, Ordering::SeqCst);
        for handle in running.handles {
            let lcore = handle.lcore().0;
            if handle.wait() == LaunchResult::Panicked {
                let _ = writeln!(
                    out,
                    "Forwarding lcore {lcore} panicked; its counters may be incomplete."
                );
            }
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
        // testpmd shows each stream when there are more streams than ports.
        let mut out = String::new();
        if running.streams.len() > self.ports.len() {
            for (s, c) in running.streams.iter().zip(&snapshot) {
                let ends = (
                    (self.ports[s.rx_port].id(), s.rx_queue),
                    (self.ports[s.tx_port].id(), s.tx_queue),
                );
                out.push_str(&display::stream_stats(ends, c));
            }
        }
        let cycles = self.config.record_cycles.then_some((busy, self.tsc_mhz));
        out.push_str(&display::forward_stats(&totals, cycles));
        if self.config.record_cycles && running.lcores.len() > 1 {
            for (lcore, block) in &running.lcores {
                let (mut busy, mut packets) = (0, 0);
                for c in &snapshot[block.clone()] {
                    busy += c.busy_cycles;
                    packets += if c.rx_packets > 0 {
                        c.rx_packets
                    } else {
                        c.tx_packets
                    };
                }
                out.push_str(&display::lcore_cycles(lcore.0, busy, packets));
            }
        }
        out
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
