//! A test that a signal ends (nextest sends SIGTERM to one that overruns
//! its timeout) leaves nothing behind: the helpers register what they
//! make (`common::cleanup`), and on the signal the namespaces, files and
//! processes go.
//!
//! The test runs itself as a child process in a holding role: the child
//! makes a namespace, a socket file, a process of its own and one inside
//! the namespace, says so and waits; the parent checks that they exist,
//! sends SIGTERM, and checks that they are gone.

mod common;

use common::{unique_name, wait_until, Netns, RemoveOnDrop};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Set in the child: the role it plays.
const HOLD: &str = "DPSTACK_SIGNAL_CLEANUP_HOLD";
const NAME: &str = "a_test_ended_by_sigterm_leaves_no_namespace_file_or_process_behind";

#[test]
fn a_test_ended_by_sigterm_leaves_no_namespace_file_or_process_behind() {
    if std::env::var_os(HOLD).is_some() {
        return hold_leftovers();
    }
    let mut child = Command::new(std::env::current_exe().expect("the test binary"))
        .args(["--exact", NAME, "--nocapture", "--test-threads=1"])
        .env(HOLD, "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the test binary runs again");
    let stdout = BufReader::new(child.stdout.take().expect("piped"));
    // What follows "holding" on the child's line (after libtest's "test
    // NAME ... "; bounded: the child gives up after 30 s).
    let held = stdout
        .lines()
        .map_while(Result::ok)
        .find_map(|line| line.split("holding ").nth(1).map(str::to_owned))
        .expect("the child says what it holds");
    let [netns, file, own, in_netns]: [&str; 4] = held
        .split(' ')
        .collect::<Vec<_>>()
        .try_into()
        .expect("four things held");
    let pids = [own, in_netns].map(|p| p.parse::<u32>().expect("a pid"));
    let netns_exists = || {
        String::from_utf8_lossy(
            &Command::new("ip")
                .args(["netns", "list"])
                .output()
                .unwrap()
                .stdout,
        )
        .split_whitespace()
        .any(|n| n == netns)
    };
    let running = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            !stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
    };
    assert!(netns_exists(), "the child made namespace {netns}");
    assert!(Path::new(file).exists(), "the child made {file}");
    assert!(
        pids.iter().all(|&p| running(p)),
        "the child started {pids:?}"
    );

    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = common::wait_at_most(&mut child, Duration::from_secs(20))
        .expect("the child exits after SIGTERM");
    assert_eq!(
        status.code(),
        Some(128 + libc::SIGTERM),
        "it exits as SIGTERM would"
    );
    assert!(!netns_exists(), "namespace {netns} is deleted");
    assert!(!Path::new(file).exists(), "{file} is removed");
    assert!(
        wait_until(Duration::from_secs(5), || pids.iter().all(|&p| !running(p))),
        "the processes {pids:?} are ended"
    );
}

/// The child's role: make the things, say what they are, wait for the
/// signal (30 s at most).
fn hold_leftovers() {
    let netns = Netns::create(&unique_name("dpscl"));
    let file = format!("/tmp/{}.sock", unique_name("dpscl"));
    std::fs::write(&file, b"").expect("a file in /tmp");
    let _file = RemoveOnDrop::new(&file);
    let mut own = Command::new("sleep").arg("60").spawn().expect("sleep");
    let mut in_netns = netns
        .command("sleep")
        .arg("60")
        .spawn()
        .expect("sleep in the namespace");
    println!(
        "holding {} {file} {} {}",
        netns.name,
        own.id(),
        in_netns.id()
    );
    std::thread::sleep(Duration::from_secs(30));
    // Its processes share its output: ended here, so that the parent's
    // read ends too.
    common::cleanup::clean_up();
    let _ = (own.wait(), in_netns.wait());
    panic!("no signal came within 30 s");
}
