//! Stack mode in the session: the stack's state between runs, its launch
//! on the forwarding lcore, and the requests of the stack commands.
//!
//! Invariant: the [`StackState`] is in `StackSlot::state` exactly while
//! stack mode does not run; a run takes it (or builds it, the first time
//! or after the port list changed) and `stop` puts it back, so the stack
//! keeps its addresses, routes, neighbours and services across runs.

use super::Session;
use crate::commands::PortSel;
use crate::forward::ForwardStats;
use crate::stack::{self, Envelope, LinkLine, Request, StackPort, StackState, NOT_RUNNING};
use crossbeam_channel::{Receiver, Sender};
use dpstack::clock::TscClock;
use dpstack::ethdev::EthQueue;
use dpstack::lcore::{launch, LaunchHandle};
use dpstack::mbuf::Mbuf;
use dpstack::stack::iface::Prefix;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// The stack between runs, and the addresses it starts with.
#[derive(Default)]
pub struct StackSlot {
    /// `(port id, address)` pairs the stack is built with (`--stack-ip`).
    pub setup: Vec<(u16, Prefix)>,
    state: Option<StackState<Mbuf>>,
}

/// A stack run's channels: requests to the lcore, the state back from it.
pub struct StackRun {
    requests: Sender<Envelope>,
    returned: Receiver<StackState<Mbuf>>,
}

impl Session {
    /// Launches the stack on the forwarding lcore over `queues` (one per
    /// port, in order).
    pub(super) fn launch_stack(
        &mut self,
        queues: Vec<EthQueue>,
        stats: Arc<ForwardStats>,
        stop: Arc<AtomicBool>,
    ) -> Result<(LaunchHandle, StackRun), String> {
        let ids = self.port_ids();
        let mut state = match self.stack.state.take() {
            Some(state) if state.port_ids() == ids => state,
            _ => self.new_stack()?,
        };
        let (requests, requested) = crossbeam_channel::unbounded::<Envelope>();
        let (give_back, returned) = crossbeam_channel::bounded(1);
        let handle = launch(self.lcores[0], move || {
            let mut ports: Vec<StackPort<EthQueue>> =
                queues.into_iter().map(StackPort::new).collect();
            let clock = TscClock::new();
            stack::run(
                &mut state,
                &mut ports,
                &requested,
                &stop,
                || clock.now(),
                &stats,
            );
            // The queues go before the state does: the ports may stop now.
            drop(ports);
            let _ = give_back.send(state);
            0
        })
        .map_err(|e| e.to_string())?;
        Ok((handle, StackRun { requests, returned }))
    }

    /// Takes the state back from a finished run.
    pub(super) fn stack_returned(&mut self, run: &StackRun) {
        self.stack.state = run.returned.try_recv().ok();
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

    /// Runs a stack command on the lcore and returns its text.
    pub fn stack_request(&self, request: Request) -> Result<String, String> {
        let run = self.running.as_ref().and_then(|r| r.stack.as_ref());
        let Some(run) = run else {
            return Err(NOT_RUNNING.into());
        };
        let (reply, answer) = crossbeam_channel::bounded(1);
        let timeout = request.timeout();
        run.requests
            .send(Envelope { request, reply })
            .map_err(|_| "The stack lcore has stopped".to_owned())?;
        answer
            .recv_timeout(timeout)
            .map_err(|_| "The stack lcore did not answer in time".to_owned())
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
