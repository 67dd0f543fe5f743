//! Helpers shared by the integration tests.
//!
//! Every DPDK test runs in its own process (cargo-nextest's default), because
//! EAL can be initialised only once per process.
#![allow(dead_code)]

use dpstack::eal::{Eal, EalArgs};

/// Initialises EAL for this test process with `lcores` lcores and `vdevs`.
pub fn eal(lcores: u32, vdevs: &[&str]) -> Eal {
    let mut args = EalArgs::for_test(lcores);
    for vdev in vdevs {
        args = args.vdev(vdev);
    }
    match Eal::init(&args.to_vec()) {
        Ok(eal) => eal,
        Err(e) => panic!(
            "{e}\n(DPDK tests need a process each: run them with `cargo nextest run`, \
             as scripts/test does)"
        ),
    }
}

/// A unique-enough name for per-test resources (tap interfaces, sockets).
pub fn unique_name(prefix: &str) -> String {
    format!("{prefix}{}", std::process::id() % 100_000)
}
