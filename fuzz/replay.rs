//! The stable replay of committed fuzz inputs (fuzz/corpus/TARGET and
//! fuzz/regressions/TARGET) through a harness's targets, shared by
//! stack/tests/fuzz_corpus.rs (fuzz/harness) and media/tests/fuzz_corpus.rs
//! (fuzz/media_harness), which include it with `#[path]` and `#[macro_use]`
//! as a module named `replay`. Both crates sit one directory below the
//! repository root, where fuzz/ is.

use std::panic;
use std::path::{Path, PathBuf};

/// A target: its name (the directory under fuzz/corpus and
/// fuzz/regressions) and its entry point, as both harnesses declare it.
pub type Target = (&'static str, fn(&[u8]));

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

/// Runs every committed input of `target` (one of `targets`); fails naming
/// each input that panics, with its panic message.
pub fn replay(targets: &[Target], target: &str) {
    let (_, run) = targets
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

/// One test per named target of `$targets`, so a failure names it, and a
/// test that every target of `$targets` has one.
macro_rules! replay_tests {
    ($targets:expr; $($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                $crate::replay::replay($targets, stringify!($name));
            }
        )*

        #[test]
        fn every_harness_target_is_replayed() {
            let replayed = [$(stringify!($name)),*];
            for (name, _) in $targets {
                assert!(replayed.contains(name), "{name} has no replay test");
            }
        }
    };
}
