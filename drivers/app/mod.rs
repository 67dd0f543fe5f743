//! The app layer: what every dpstack binary shares, so that an app is its
//! `main` plus a handler.
//!
//! - [`args`]: the stack's options as one clap struct, [`StackArgs`], that an
//!   app flattens into its own (`#[command(flatten)]`): one `--ip
//!   ADDR/PREFIX` syntax for both families and every port, `--gateway`,
//!   `--route`, `--mtu`, `--no-dad`, `--accept-ra`, `--pacing`, `--ecn`,
//!   `--total-num-mbufs`, `--faults`, `--stats-period`, `--nb-cores`;
//! - [`setup`]: [`run_app`], the body of `main` (arguments, the embedded
//!   EAL default, exit codes 0/1/2), and [`set_up`]: EAL -> pool -> ports ->
//!   [`Interface`](crate::stack::iface::Interface) with its config, and
//!   with `--nb-cores N` the other N - 1 [`Lane`]s (a pipeline of the same
//!   stack and its own queue pair of every port each);
//! - [`worker`]: the signals, the worker-lcore launch, and the canonical
//!   poll loop that runs an [`App`] over the ports, behind the fault
//!   injector if `--faults` asks: on one lcore ([`run_on_worker`]) or on
//!   one per lane, each with its own handler ([`run_on_workers`]);
//! - [`counters`]: the counters printer (also the console's `show
//!   counters`), with a total and a line per lane when there are several;
//! - [`multicast`]: the ports' multicast filters kept in step with the
//!   groups the stack's sockets join ([`MulticastSync`]).
//!
//! A whole app (`examples/app_echo.rs` is this one, built with the rest):
//!
//! ```no_run
//! use clap::Parser;
//! use dpstack::app::{self, App, AppSpec, CounterReport, StackArgs};
//! use dpstack::mbuf::Mbuf;
//! use dpstack::stack::iface::{Batch, InlineHandler, LcoreContext};
//! use dpstack::stack::port::Port;
//! use dpstack::stack::udp::{BindOptions, SocketId};
//!
//! const SPEC: AppSpec = AppSpec::new("my-echo", &["net_tap0,iface=dpstack9"]);
//!
//! #[derive(Parser)]
//! #[command(name = "my-echo", version)]
//! struct Cli {
//!     #[command(flatten)]
//!     stack: StackArgs,
//! }
//!
//! /// Sends every datagram back from its own buffer.
//! struct Echo;
//!
//! impl InlineHandler<Mbuf> for Echo {
//!     fn on_datagrams<P: Port<Buf = Mbuf>>(
//!         &mut self,
//!         _socket: SocketId,
//!         batch: &mut Batch<Mbuf>,
//!         ctx: &mut LcoreContext<'_, P>,
//!     ) {
//!         for datagram in batch.drain(..) {
//!             ctx.reply(datagram);
//!         }
//!     }
//! }
//!
//! impl App for Echo {}
//!
//! fn main() -> std::process::ExitCode {
//!     app::run_app::<Cli>(&SPEC, |eal_args, cli| {
//!         let signals = app::Signals::install()?;
//!         let mut stack = app::set_up(&SPEC, eal_args, &cli.stack, |_| {})?;
//!         let any = std::net::SocketAddr::from(([0u16; 8], 7));
//!         (stack.iface.udp_bind(any, BindOptions::default()))
//!             .map_err(|e| format!("cannot bind {any}: {e}"))?;
//!         let mut report = CounterReport::new(stack.iface.counters().clone());
//!         let worker = app::run_on_worker(stack.iface, stack.queues, Echo, &cli.stack)?;
//!         signals.wait(cli.stack.stats_period, || false, |tick| report.print(tick));
//!         if let Some(finished) = worker.stop() {
//!             app::print_counters(finished.iface.counters());
//!         }
//!         Ok(())
//!     })
//! }
//! ```

pub mod args;
pub mod counters;
pub mod multicast;
pub mod setup;
pub mod worker;

pub use args::{parse_ip, parse_route, IpArg, RouteArg, StackArgs};
pub use counters::{counters_block, counters_text, lanes_text, print_counters, sum_snapshots};
pub use multicast::MulticastSync;
pub use setup::{packet_pool, pool_need, port_banner, run_app, set_up, AppSpec, Lane, Stack};
pub use worker::{
    lane_counters_block, lanes_fault_lines, launch_worker, print_lane_counters, run_on_worker,
    run_on_worker_counting_cycles, run_on_workers, run_on_workers_counting_cycles, stop_signal,
    App, CounterReport, Finished, Poller, Signals, Tick, Worker, Workers, NO_WORKER_LCORE,
};
