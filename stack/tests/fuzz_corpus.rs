//! Replays every committed fuzz input (fuzz/corpus/TARGET and
//! fuzz/regressions/TARGET) through the same harness the libFuzzer targets
//! run (fuzz/harness, included here by path), on stable: an invariant a
//! corpus input once held, or a fixed crash, that breaks again fails CI
//! without nightly or cargo-fuzz. One test per target, so a failure names
//! it; each failing input is named with its panic message.

#[path = "../../fuzz/harness/mod.rs"]
mod harness;

use std::panic;
use std::path::{Path, PathBuf};

/// The committed inputs of `target`, corpus and regressions.
fn inputs(target: &str) -> Vec<PathBuf> {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    let mut files = Vec::new();
    for dir in ["corpus", "regressions"] {
        let Ok(entries) = std::fs::read_dir(fuzz.join(dir).join(target)) else {
            continue;
        };
        files.extend(entries.flatten().map(|e| e.path()).filter(|p| p.is_file()));
    }
    files.sort();
    files
}

fn replay(target: &str) {
    let (_, run) = harness::TARGETS
        .iter()
        .find(|(name, _)| *name == target)
        .expect("a harness target");
    let files = inputs(target);
    assert!(!files.is_empty(), "no committed inputs for {target}");
    let mut failures = Vec::new();
    for file in &files {
        let data = std::fs::read(file).expect("readable input");
        if let Err(panic) = panic::catch_unwind(|| run(&data)) {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            failures.push(format!("{}: {message}", file.display()));
        }
    }
    assert!(
        failures.is_empty(),
        "{target}: {} of {} inputs break an invariant:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

macro_rules! replay_tests {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                replay(stringify!($name));
            }
        )*

        #[test]
        fn every_harness_target_is_replayed() {
            let replayed = [$(stringify!($name)),*];
            for (name, _) in harness::TARGETS {
                assert!(replayed.contains(name), "{name} has no replay test");
            }
        }
    };
}

replay_tests!(
    wire_ethernet,
    wire_arp,
    wire_ipv4,
    wire_ipv6,
    wire_icmpv4,
    wire_icmpv6,
    wire_udp,
    wire_tcp,
    rtp,
    rtcp,
    relay_spec,
    reassembly_ipv4,
    reassembly_ipv6,
    tcp_conn,
    ingress,
);
