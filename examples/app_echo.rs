//! A whole dpstack app in one page: a UDP echo server on port 7 (both
//! families), built on `dpstack::app`: the stack's options flattened into
//! the app's, one set-up call, a handler, the canonical poll loop on the
//! worker lcore, and the counters at exit and every `--stats-period`.
//!
//! `cargo run --example app_echo -- --ip 192.0.2.1/24` (root, for the
//! embedded default's `net_tap` port `dpstack9`).

use clap::Parser;
use dpstack::app::{self, App, AppSpec, CounterReport, StackArgs};
use dpstack::mbuf::Mbuf;
use dpstack::stack::iface::{Batch, InlineHandler, LcoreContext};
use dpstack::stack::port::Port;
use dpstack::stack::udp::{BindOptions, SocketId};
use std::net::SocketAddr;
use std::process::ExitCode;

const SPEC: AppSpec = AppSpec::new("app-echo", &["net_tap0,iface=dpstack9"]);

/// A UDP echo server on dpstack.
#[derive(Debug, Parser)]
#[command(name = "app-echo", version)]
struct Cli {
    #[command(flatten)]
    stack: StackArgs,
}

/// Sends every datagram back from its own buffer.
struct Echo;

impl InlineHandler<Mbuf> for Echo {
    #[inline]
    fn on_datagrams<P: Port<Buf = Mbuf>>(
        &mut self,
        _socket: SocketId,
        batch: &mut Batch<Mbuf>,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        for datagram in batch.drain(..) {
            ctx.reply(datagram);
        }
    }
}

impl App for Echo {}

fn main() -> ExitCode {
    app::run_app::<Cli>(&SPEC, run)
}

fn run(eal_args: &[String], cli: &Cli) -> Result<(), String> {
    let signals = app::Signals::install()?;
    let mut stack = app::set_up(&SPEC, eal_args, &cli.stack, |_| {})?;
    let any = SocketAddr::from(([0u16; 8], 7));
    (stack.iface.udp_bind(any, BindOptions::default()))
        .map_err(|e| format!("cannot bind UDP {any}: {e}"))?;
    let mut report = CounterReport::new(stack.iface.counters().clone());
    let worker = app::run_on_worker(stack.iface, stack.queues, Echo, &cli.stack)?;
    println!("{}: echoing UDP port 7", SPEC.program);
    signals.wait(cli.stack.stats_period, || false, |tick| report.print(tick));
    if let Some(finished) = worker.stop() {
        app::print_counters(finished.iface.counters());
        print!("{}", finished.fault_lines());
    }
    Ok(())
}
