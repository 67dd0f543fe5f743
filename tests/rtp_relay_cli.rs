//! `dpstack-rtp-relay`'s command line refuses what it would otherwise
//! ignore or misread: flags that do not go together, zero values, an
//! address no interface can have, and a session file's mistakes, each
//! with a message that names the problem. All of these fail before EAL
//! initialises, so no DPDK process runs.

mod common;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Duration;

const RELAY: &str = env!("CARGO_BIN_EXE_dpstack-rtp-relay");

/// Runs the relay with `app` as its own arguments; its exit code and
/// stderr. A relay that starts running instead of refusing is killed after
/// 20 s and fails the test.
fn relay(app: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(RELAY)
        .args(["--no-huge", "--no-shconf", "--no-telemetry", "--"])
        .args(app)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("dpstack-rtp-relay runs");
    let status = common::wait_at_most(&mut child, Duration::from_secs(20))
        .unwrap_or_else(|| panic!("{app:?} did not exit within 20 s"));
    let mut stderr = String::new();
    let _ = child
        .stderr
        .take()
        .expect("piped")
        .read_to_string(&mut stderr);
    (status.code(), stderr)
}

#[test]
fn flags_that_do_not_go_together_are_refused() {
    for (app, needle) in [
        (&["--config", "x.conf", "--mux"][..], "cannot be used with"),
        (
            &["--config", "x.conf", "--port-base", "40000"][..],
            "cannot be used with",
        ),
        (
            &["--config", "x.conf", "--b-peer-base", "10.0.0.9:7000"][..],
            "cannot be used with",
        ),
        (
            &["--sessions", "2", "--port-range", "30000-30010"][..],
            "cannot be used with",
        ),
        (
            &[
                "--sessions",
                "1",
                "--connect-on-latch",
                "--relatch-after",
                "200",
            ][..],
            "cannot be used with",
        ),
    ] {
        let (code, stderr) = relay(app);
        assert_eq!(code, Some(2), "{app:?}: {stderr}");
        assert!(stderr.contains(needle), "{app:?}: {stderr}");
    }
}

#[test]
fn zero_values_and_impossible_addresses_are_refused() {
    for (app, needle) in [
        (
            &["--sessions", "1", "--stats-period", "0"][..],
            "--stats-period",
        ),
        (
            &["--sessions", "1", "--clock-rate", "0"][..],
            "--clock-rate",
        ),
        (&["--sessions", "1", "--probation", "0"][..], "--probation"),
        (
            &["--sessions", "1", "--ip", "224.0.0.1/24"][..],
            "cannot be the relay's address",
        ),
        (
            &["--sessions", "1", "--ip", "10.0.0.0/24"][..],
            "cannot be the relay's address",
        ),
        (
            &["--sessions", "1", "--ip", "10.0.0.255/24"][..],
            "cannot be the relay's address",
        ),
    ] {
        let (code, stderr) = relay(app);
        assert_eq!(code, Some(2), "{app:?}: {stderr}");
        assert!(stderr.contains(needle), "{app:?}: {stderr}");
    }
}

#[test]
fn session_mistakes_name_their_line_or_flag() {
    let dir = std::env::temp_dir().join(format!("dpstack-relay-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("sessions.conf");
    for (text, needle) in [
        (
            "session a 30000 30002\nsession b 30002 30004\n",
            "line 2: port 30002 is configured twice: session 'a' (line 1) has it already",
        ),
        (
            "session a 30000 30002 mux mux\n",
            "line 1: option 'mux' is given twice",
        ),
        (
            "session a 30000 30002 b-peer=10.0.0.3:65535\n",
            "line 1: peer 10.0.0.3:65535: port 65535 leaves no port for RTCP",
        ),
    ] {
        std::fs::write(&file, text).unwrap();
        let (code, stderr) = relay(&["--config", file.to_str().unwrap()]);
        assert_eq!(code, Some(1), "{text:?}: {stderr}");
        assert!(stderr.contains(needle), "{text:?}: {stderr}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
    let (code, stderr) = relay(&["--sessions", "2", "--b-peer-base", "10.0.0.3:65534"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("--a-peer-base/--b-peer-base: peer base 10.0.0.3:65534"),
        "{stderr}"
    );
    let (code, stderr) = relay(&["--sessions", "1", "--port-base", "30001"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("--port-base: port base 30001"), "{stderr}");
}

#[test]
fn the_relay_takes_one_address_of_each_family_in_the_shared_ip_syntax() {
    let (code, stderr) = relay(&[
        "--sessions",
        "1",
        "--ip",
        "10.0.0.1/24",
        "--ip",
        "10.0.0.2/24",
    ]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("--ip: one IPv4 address at most"),
        "{stderr}"
    );
    let (code, stderr) = relay(&[
        "--sessions",
        "1",
        "--ip",
        "2001:db8::1/64",
        "--ip",
        "fd00::1/64",
    ]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("--ip: one IPv6 address at most"),
        "{stderr}"
    );
}
