//! Start-up shared by the apps: EAL arguments (with the embedded default),
//! the SIGINT/SIGTERM flag, and the packet pool. Included by each binary with
//! `#[path]`; control path only.

use clap::Parser;
use dpstack::eal::{split_args, EalArgs};
use std::process::ExitCode;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

/// The body of every app's `main`: split the arguments, parse the app
/// options as `C`, then take the embedded default EAL options if none were
/// given, run, and turn the outcome into an exit code (2 for a usage error,
/// 1 for a failure, whose message goes to stderr). Help and version requests
/// (`APP --help`, `APP -V`, `APP -- --help`) print and exit 0 before anything
/// about EAL is decided or printed.
pub fn run_app<C: Parser>(
    program: &str,
    vdevs: &[&str],
    memory_mb: u32,
    run: impl FnOnce(&[String], &C) -> Result<(), String>,
) -> ExitCode {
    let (eal_args, app_args) = split_args(std::env::args());
    let cli = match C::try_parse_from(std::iter::once(program.to_owned()).chain(app_args)) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let eal_args = eal_args_or_default(eal_args, program, vdevs, memory_mb);
    match run(&eal_args, &cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{program}: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The EAL part of the command line; without EAL options, the embedded
/// default for `program` with `vdevs`, and a line says so.
fn eal_args_or_default(
    eal: Vec<String>,
    program: &str,
    vdevs: &[&str],
    memory_mb: u32,
) -> Vec<String> {
    if eal.len() > 1 {
        return eal;
    }
    let default = EalArgs::embedded_default(program, vdevs, memory_mb);
    let eal = default.to_vec();
    println!(
        "No EAL options given: using the embedded default ({}):\n  {}",
        if default.uses_hugepages() {
            "hugepages, in memory"
        } else {
            "no hugepages"
        },
        eal[1..].join(" ")
    );
    eal
}

/// A flag set to the signal number when SIGINT or SIGTERM arrives.
pub fn stop_signal() -> Result<Arc<AtomicUsize>, String> {
    let signal = Arc::new(AtomicUsize::new(0));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_usize(sig, Arc::clone(&signal), sig as usize)
            .map_err(|e| format!("cannot install a handler for signal {sig}: {e}"))?;
    }
    Ok(signal)
}
