//! Stack mode in the session: the stack's state between runs, its launch
//! on the forwarding lcores (one pipeline per lcore), and the requests of
//! the stack commands: most go to the home lcore; `show tcp`, `show
//! sockets` and the echo services go to every pipeline, and `show
//! counters` reads every pipeline's counters directly.
//!
//! Invariant: the [`StackState`] (with its lanes) is in `StackSlot::state`
//! exactly while stack mode does not run; a run takes it (or builds it,
//! the first time or after the port list changed) and `stop` puts it and
//! the lanes back, so the stack keeps its addresses, routes, neighbours
//! and services across runs.

use super::Session;
use crate::commands::PortSel;
use crate::forward::ForwardStats;
use crate::stack::lanes::{self, SocketsPart};
use crate::stack::{
    self, text, Envelope, Lane, LaneAnswer, LaneEnvelope, LaneRequest, LinkLine, Request,
    StackPort, StackState, NOT_RUNNING,
};
use crossbeam_channel::{Receiver, Sender};
use dpstack::app::counters;
use dpstack::clock::TscClock;
use dpstack::ethdev::EthQueue;
use dpstack::lcore::{launch, LaunchHandle, Lcore};
use dpstack::mbuf::Mbuf;
use dpstack::stack::counters::Counters;
use dpstack::stack::iface::{CounterSnapshot, Prefix};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The stack between runs, and the addresses it starts with.
#[derive(Default)]
pub struct StackSlot {
    /// `(port id, address)` pairs the stack is built with (`--stack-ip`).
    pub setup: Vec<(u16, Prefix)>,
    state: Option<StackState<Mbuf>>,
}

/// A stack run's channels: commands to the home lcore, requests to every
/// pipeline, the pipelines' counters, and the state and lanes back.
pub struct StackRun {
    requests: Sender<Envelope>,
    /// Pipeline `i`'s request channel (0: the home lcore's).
    lane_requests: Vec<Sender<LaneEnvelope>>,
    /// Pipeline `i`'s counters, read from the console thread.
    counters: Vec<Arc<Counters>>,
    /// Pipeline `i`'s DPDK lcore.
    lcores: Vec<u32>,
    returned: Receiver<StackState<Mbuf>>,
    lanes_returned: Receiver<(usize, Lane<Mbuf>)>,
}

impl Session {
    /// Launches the stack on the forwarding lcores, pipeline `i` on lcore
    /// `i` over `queues[i]` (its queue of every port, in port order), its
    /// ports' figures as streams `i * ports..` (the streams are
    /// queue-major).
    pub(super) fn launch_stack(
        &mut self,
        queues: Vec<Vec<EthQueue>>,
        stats: Arc<ForwardStats>,
        stop: Arc<AtomicBool>,
    ) -> Result<(Vec<LaunchHandle>, StackRun), String> {
        let ids = self.port_ids();
        let mut state = match self.stack.state.take() {
            Some(state) if state.port_ids() == ids => state,
            _ => self.new_stack()?,
        };
        let pipelines = queues.len().max(1);
        if let Err(e) = state.add_lanes(pipelines) {
            self.stack.state = Some(state);
            return Err(e);
        }
        let lcores: Vec<Lcore> = self.lcores[..pipelines].to_vec();
        state.lcore_ids = lcores.iter().map(|l| l.0).collect();
        let lanes: Vec<Lane<Mbuf>> = state.lanes.drain(..pipelines - 1).collect();
        let capture = Arc::clone(state.capture());
        let mut counters = vec![Arc::clone(state.counters())];
        counters.extend(lanes.iter().map(|l| Arc::clone(l.counters())));
        let (requests, requested) = crossbeam_channel::unbounded::<Envelope>();
        let (give_back, returned) = crossbeam_channel::bounded(1);
        let (give_lane_back, lanes_returned) = crossbeam_channel::unbounded();
        let (lane_requests, mut lane_requested): (Vec<_>, Vec<_>) = (0..pipelines)
            .map(|_| crossbeam_channel::unbounded::<LaneEnvelope>())
            .unzip();
        let run = StackRun {
            requests,
            lane_requests,
            counters,
            lcores: state.lcore_ids.clone(),
            returned,
            lanes_returned,
        };
        let mut queues = queues.into_iter();
        let home_queues = queues.next().unwrap_or_default();
        let home_requested = lane_requested.remove(0);
        let (home_stats, home_stop) = (Arc::clone(&stats), Arc::clone(&stop));
        let home_capture = Arc::clone(&capture);
        let home = launch(lcores[0], move || {
            let mut ports: Vec<StackPort<EthQueue>> = (home_queues.into_iter())
                .map(|q| StackPort::new(q, &home_capture))
                .collect();
            let clock = TscClock::new();
            stack::run(
                &mut state,
                &mut ports,
                (&requested, &home_requested),
                &home_stop,
                || clock.now(),
                &home_stats,
            );
            // The queues go before the state does: the ports may stop now.
            drop(ports);
            let _ = give_back.send(state);
            0
        });
        let mut handles = vec![home.map_err(|e| e.to_string())?];
        let lanes = lanes.into_iter().zip(queues).zip(lane_requested);
        for (i, ((mut lane, queues), requested)) in lanes.enumerate() {
            let index = i + 1;
            let (lane_stats, lane_stop) = (Arc::clone(&stats), Arc::clone(&stop));
            let give_back = give_lane_back.clone();
            let capture = Arc::clone(&capture);
            let launched = launch(lcores[index], move || {
                let mut ports: Vec<StackPort<EthQueue>> = (queues.into_iter())
                    .map(|q| StackPort::new(q, &capture))
                    .collect();
                let clock = TscClock::new();
                let first_stream = index * ports.len();
                lanes::run(
                    &mut lane,
                    &mut ports,
                    &requested,
                    &lane_stop,
                    || clock.now(),
                    (&lane_stats, first_stream),
                );
                drop(ports);
                let _ = give_back.send((index, lane));
                0
            });
            match launched {
                Ok(handle) => handles.push(handle),
                Err(e) => {
                    stop.store(true, Ordering::SeqCst);
                    for handle in handles {
                        handle.wait();
                    }
                    self.stack_returned(&run);
                    return Err(e.to_string());
                }
            }
        }
        Ok((handles, run))
    }

    /// Takes the state back from a finished run, its lanes first in
    /// pipeline order (then those the run did not use).
    pub(super) fn stack_returned(&mut self, run: &StackRun) {
        let Ok(mut state) = run.returned.try_recv() else {
            return;
        };
        let mut back: Vec<(usize, Lane<Mbuf>)> = run.lanes_returned.try_iter().collect();
        back.sort_by_key(|(index, _)| *index);
        let unused = std::mem::take(&mut state.lanes);
        state.lanes = back.into_iter().map(|(_, lane)| lane).collect();
        state.lanes.extend(unused);
        self.stack.state = Some(state);
    }

    /// A stack for the current ports, with the `--stack-ip` addresses.
    fn new_stack(&self) -> Result<StackState<Mbuf>, String> {
        let mut links = Vec::new();
        for port in &self.ports {
            let info = port.info().map_err(|e| e.to_string())?;
            links.push(LinkLine {
                port: port.id(),
                mac: port.mac(),
                mtu: usize::from(info.mtu),
            });
        }
        let mut setup = Vec::new();
        for &(id, prefix) in &self.stack.setup {
            match self.ports.iter().position(|p| p.id() == id) {
                Some(link) => setup.push((link, prefix)),
                None => return Err(format!("--stack-ip {id},{prefix}: there is no port {id}")),
            }
        }
        // Pings are told apart by an identifier, as ping(8) uses its pid.
        StackState::new(links, &setup, std::process::id() as u16)
    }

    /// Runs a stack command and returns its text: on the home lcore, or,
    /// for what each pipeline has of its own (TCP sockets, echo services,
    /// counters), on every pipeline, merging their answers.
    pub fn stack_request(&self, request: Request) -> Result<String, String> {
        let run = self.running.as_ref().and_then(|r| r.stack.as_ref());
        let Some(run) = run else {
            return Err(NOT_RUNNING.into());
        };
        match request {
            Request::ShowCounters => {
                let each: Vec<CounterSnapshot> =
                    run.counters.iter().map(|c| counters::snapshot(c)).collect();
                Ok(text::counters(&each, &run.lcores))
            }
            Request::ShowSockets => Ok(text::sockets(&text::socket_lines(&run.sockets()?))),
            Request::ShowTcp => {
                let each: Vec<CounterSnapshot> =
                    run.counters.iter().map(|c| counters::snapshot(c)).collect();
                let total = text::total(&each);
                Ok(text::tcp(&run.sockets()?, &total, &run.lcores))
            }
            Request::Echo { proto, port, start } => {
                let request = LaneRequest::Echo { proto, port, start };
                // The home pipeline first: it binds the UDP socket the
                // others then echo.
                let mut out = match run.ask(0, request)? {
                    LaneAnswer::Echo(Ok(text)) => text,
                    LaneAnswer::Echo(Err(unchanged)) => return Ok(unchanged),
                    LaneAnswer::Sockets(_) => return Err(OUT_OF_TURN.into()),
                };
                // Each other pipeline does the same (a refusal is said).
                for (i, lcore) in run.lcores.iter().enumerate().skip(1) {
                    if let LaneAnswer::Echo(Err(refused)) = run.ask(i, request)? {
                        out.push_str(&format!("lcore {lcore}: {refused}"));
                    }
                }
                Ok(out)
            }
            request => run.command(request),
        }
    }

    /// The stack's link for port `sel`, or, without one, the only port's.
    pub fn stack_link(&self, sel: Option<PortSel>) -> Result<usize, String> {
        match sel {
            Some(sel) => Ok(self.select(sel)?.first().copied().unwrap_or(0)),
            None if self.ports.len() == 1 => Ok(0),
            None => Err("Several ports: name one (... port N)".into()),
        }
    }
}

impl StackRun {
    /// Runs a command on the home lcore and returns its text.
    fn command(&self, request: Request) -> Result<String, String> {
        let (reply, answer) = crossbeam_channel::bounded(1);
        let timeout = request.timeout();
        self.requests
            .send(Envelope { request, reply })
            .map_err(|_| "The stack lcore has stopped".to_owned())?;
        answer
            .recv_timeout(timeout)
            .map_err(|_| "The stack lcore did not answer in time".to_owned())
    }

    /// Asks pipeline `index` and returns its answer.
    fn ask(&self, index: usize, request: LaneRequest) -> Result<LaneAnswer, String> {
        let (reply, answer) = crossbeam_channel::bounded(1);
        self.lane_requests[index]
            .send(LaneEnvelope { request, reply })
            .map_err(|_| format!("The stack lcore {} has stopped", self.lcores[index]))?;
        answer.recv_timeout(ANSWER_TIMEOUT).map_err(|_| {
            format!(
                "The stack lcore {} did not answer in time",
                self.lcores[index]
            )
        })
    }

    /// Every pipeline's sockets.
    fn sockets(&self) -> Result<Vec<SocketsPart>, String> {
        (0..self.lane_requests.len())
            .map(|i| match self.ask(i, LaneRequest::Sockets)? {
                LaneAnswer::Sockets(part) => Ok(part),
                LaneAnswer::Echo(_) => Err(OUT_OF_TURN.into()),
            })
            .collect()
    }
}

/// What a pipeline's answer of the wrong kind says (a bug).
const OUT_OF_TURN: &str = "A stack lcore answered another request";

/// How long the console waits for a pipeline's answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(3);
