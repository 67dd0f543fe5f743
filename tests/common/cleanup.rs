//! What a test leaves behind when a signal ends it: nextest ends a test
//! that overruns its timeout with SIGTERM (and SIGKILL ten seconds later),
//! a user ends a run with Ctrl-C. Drop handlers do not run then, so the
//! namespaces, socket files and runtime directories a test made, and the
//! processes it started, would outlive it.
//!
//! The helpers that make such things register them here
//! ([`register`], [`release`] once their own drop handler took care of
//! them). The first registration starts a thread that waits for SIGTERM,
//! SIGINT or SIGHUP; on one it ends every process this test started (its
//! descendants, found through `/proc`) and whatever runs in its registered
//! namespaces, deletes the namespaces, removes the files and the empty
//! directories, and exits with 128 + the signal, as the signal would have.

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, Once};

/// Something a test made that must not outlive it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Leftover {
    /// A network namespace (and whatever runs in it).
    Netns(String),
    /// A file: a memif socket, a pid file.
    File(PathBuf),
    /// A directory removed only if empty: a DPDK runtime directory.
    EmptyDir(PathBuf),
}

static LEFTOVERS: Mutex<Vec<Leftover>> = Mutex::new(Vec::new());

/// Notes `leftover`, to be removed if a signal ends the test.
pub fn register(leftover: Leftover) {
    clean_up_on_signals();
    lock().push(leftover);
}

/// Forgets `leftover` (its owner removed it).
pub fn release(leftover: &Leftover) {
    let mut leftovers = lock();
    if let Some(at) = leftovers.iter().position(|l| l == leftover) {
        leftovers.swap_remove(at);
    }
}

fn lock() -> std::sync::MutexGuard<'static, Vec<Leftover>> {
    LEFTOVERS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Starts, once, the thread that cleans up on a terminating signal.
fn clean_up_on_signals() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let mut signals = Signals::new([SIGTERM, SIGINT, SIGHUP])
            .unwrap_or_else(|e| panic!("cannot handle SIGTERM, SIGINT and SIGHUP: {e}"));
        std::thread::spawn(move || {
            if let Some(signal) = signals.forever().next() {
                eprintln!("signal {signal}: removing what this test made");
                clean_up();
                std::process::exit(128 + signal);
            }
        });
    });
}

/// Ends this process's descendants, then removes every registered
/// leftover: namespaces (with what runs in them), files, empty
/// directories.
pub fn clean_up() {
    kill(&descendants(std::process::id()));
    let leftovers = std::mem::take(&mut *lock());
    for leftover in &leftovers {
        match leftover {
            Leftover::Netns(name) => delete_netns(name),
            Leftover::File(path) => {
                let _ = std::fs::remove_file(path);
            }
            Leftover::EmptyDir(path) => {
                let _ = std::fs::remove_dir(path);
            }
        }
    }
}

/// Deletes namespace `name` after ending whatever still runs in it (a
/// server's forked children, say: started in it by this test).
pub fn delete_netns(name: &str) {
    if let Ok(pids) = Command::new("ip").args(["netns", "pids", name]).output() {
        let pids: Vec<u32> = String::from_utf8_lossy(&pids.stdout)
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        kill(&pids);
    }
    let _ = Command::new("ip").args(["netns", "del", name]).output();
}

/// Sends SIGKILL to `pids`.
fn kill(pids: &[u32]) {
    if !pids.is_empty() {
        let pids: Vec<String> = pids.iter().map(u32::to_string).collect();
        let _ = Command::new("kill").arg("-KILL").args(&pids).output();
    }
}

/// The processes below `root` in the process tree, read from `/proc`.
pub fn descendants(root: u32) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        if let Some(parent) = parent_of(pid) {
            children.entry(parent).or_default().push(pid);
        }
    }
    let (mut found, mut next) = (Vec::new(), vec![root]);
    while let Some(pid) = next.pop() {
        for &child in children.get(&pid).into_iter().flatten() {
            // A pid reused while /proc was read could close a circle.
            if child != root && !found.contains(&child) {
                found.push(child);
                next.push(child);
            }
        }
    }
    found
}

/// A process's parent, from `/proc/PID/stat` (the field after the
/// parenthesised command name, which may itself hold spaces and
/// parentheses).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(1)?.parse().ok()
}
