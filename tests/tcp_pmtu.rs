//! Path MTU discovery against the kernel as a router: `dpstack-tcpload`
//! (link MTU 1500) talks to a `socat` echo server two kernel routers away,
//! over a middle link of MTU 1280:
//!
//! ```text
//! dpstack --tap-- [R1] --1280-- [R2] --1500-- [B: socat echo]
//! ```
//!
//! Both ends announce an MSS of 1460, so neither handshake sees the small
//! link: our full-size segments (DF set) reach R1, which cannot forward
//! them and answers "fragmentation needed, MTU 1280"; the transfer must
//! lower its MSS and finish, the echo checked byte for byte. (R2 does the
//! same for B's segments, and B's kernel its own discovery.) Then the same
//! with R1's errors dropped by nftables: a black hole, found by
//! packetization-layer probing. Every namespace is the test's own and
//! deleted when dropped.

mod common;

use common::{app_counter, child_eal_args, unique_name, AppProcess, Netns};

const CLIENT_IP: &str = "10.205.0.1";
const R1_IP: &str = "10.205.0.2";
const SERVER_IP: &str = "10.205.2.2";
const KERNEL_MAC: &str = "02:00:00:00:02:45";

/// `socat` echo server in B; killed when dropped.
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `ip -n NS ARGS`, which must succeed.
fn ip(ns: &Netns, args: &[&str]) {
    let mut all = vec!["-n", ns.name.as_str()];
    all.extend_from_slice(args);
    common::run("ip", &all);
}

fn forward(ns: &Netns) {
    let out = ns.exec("sysctl", &["-qw", "net.ipv4.ip_forward=1"]);
    assert!(out.status.success(), "{out:?}");
}

/// A veth pair from `a` (as `a_name`, `a_addr`) to `b`, both ends at `mtu`.
fn veth(a: (&Netns, &str, &str), b: (&Netns, &str, &str), mtu: &str) {
    let (a, a_name, a_addr) = a;
    let (b, b_name, b_addr) = b;
    let peer = ["peer", "name", b_name, "netns", b.name.as_str()];
    let mut add = vec!["link", "add", a_name, "type", "veth"];
    add.extend_from_slice(&peer);
    ip(a, &add);
    for (ns, name, addr) in [(a, a_name, a_addr), (b, b_name, b_addr)] {
        ip(ns, &["link", "set", name, "mtu", mtu]);
        ip(ns, &["addr", "add", addr, "dev", name]);
        ip(ns, &["link", "set", name, "up"]);
    }
}

/// Runs `dpstack-tcpload` through the two routers (R1 dropping its own
/// "fragmentation needed" errors if `black_hole`); returns its output once
/// the echo is verified.
fn transfer_through_routers(black_hole: bool) -> String {
    // The whole path is up before our tap joins it: a router without a
    // route would answer our SYN with a destination unreachable, which
    // (rightly) fails a connect.
    let r1 = Netns::create(&unique_name("dpstack-pmtu-r1-"));
    let r2 = Netns::create(&unique_name("dpstack-pmtu-r2-"));
    let b = Netns::create(&unique_name("dpstack-pmtu-b-"));
    veth(
        (&r1, "narrow", "10.205.1.1/24"),
        (&r2, "narrow", "10.205.1.2/24"),
        "1280",
    );
    veth(
        (&r2, "wide", "10.205.2.1/24"),
        (&b, "wide", "10.205.2.2/24"),
        "1500",
    );
    forward(&r1);
    forward(&r2);
    if black_hole {
        // R1 still drops what does not fit, but tells no one: the errors
        // it makes leave through its output hook, and die there.
        let rules = "table inet dpstack_black_hole {\n chain out {\n  type filter hook output \
                     priority 0;\n  icmp type destination-unreachable icmp code frag-needed \
                     drop\n }\n}\n";
        r1.nft(rules);
    }
    ip(&b, &["link", "set", "lo", "up"]);
    ip(&b, &["route", "add", "default", "via", "10.205.2.1"]);
    ip(&r2, &["route", "add", "10.205.0.0/24", "via", "10.205.1.1"]);
    ip(&r1, &["route", "add", "10.205.2.0/24", "via", "10.205.1.2"]);
    let echo = Server(
        // Run directly (not under `timeout`), so dropping `Server` kills
        // socat itself and nothing outlives the namespace.
        b.command("socat")
            .args(["-t", "30", "TCP4-LISTEN:7,fork,reuseaddr", "EXEC:cat"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("socat"),
    );
    let iface = unique_name("dppm");
    let vdev = format!("net_tap0,iface={iface}");
    let ip_arg = format!("{CLIENT_IP}/24");
    let server = format!("{SERVER_IP}:7");
    let app = AppProcess::spawn(
        env!("CARGO_BIN_EXE_dpstack-tcpload"),
        &child_eal_args(&[&vdev]),
        &[
            "--ip",
            &ip_arg,
            "--gateway",
            R1_IP,
            "--no-dad",
            "--timeout",
            "40",
            "--connect",
            &server,
            "--bytes",
            "2097152",
        ],
    );
    app.wait_for_output("connecting to");
    // Until the tap is in R1, our ARP and SYN go unanswered: both are
    // retried.
    common::run("ip", &["link", "set", &iface, "netns", &r1.name]);
    ip(&r1, &["link", "set", &iface, "address", KERNEL_MAC]);
    ip(&r1, &["addr", "add", &format!("{R1_IP}/24"), "dev", &iface]);
    ip(&r1, &["link", "set", &iface, "up"]);
    // A black hole costs two retransmission timeouts (seconds: the SYN's
    // wait for the tap counts in the first RTT sample) before the search.
    let done = app.wait_up_to(std::time::Duration::from_secs(45));
    assert_eq!(done.code, Some(0), "{}\n{}", done.stdout, done.stderr);
    assert!(
        done.stdout.contains("verified 1, failed 0"),
        "{}",
        done.stdout
    );
    drop(echo);
    drop((b, r2, r1));
    done.stdout
}

#[test]
fn a_transfer_through_a_kernel_router_to_a_smaller_mtu_completes() {
    let out = transfer_through_routers(false);
    // R1's "fragmentation needed" reached the connection and lowered its
    // MSS (to 1280 less headers and timestamps).
    assert!(app_counter(&out, "TcpIcmpTooBigs") >= 1, "{out}");
    assert!(app_counter(&out, "TcpMssLowered") >= 1, "{out}");
    assert_eq!(app_counter(&out, "TcpMtuBlackHole"), 0, "{out}");
}

/// The same path with R1's ICMP errors filtered: a black hole. Two
/// timeouts lower the MSS, probes (RFC 4821) find the largest size that
/// passes, and the echo completes.
#[test]
fn a_transfer_through_a_router_that_filters_icmp_finds_the_mtu_by_probing() {
    let out = transfer_through_routers(true);
    assert_eq!(app_counter(&out, "TcpIcmpTooBigs"), 0, "{out}");
    assert!(app_counter(&out, "TcpMtuBlackHole") >= 1, "{out}");
    assert!(app_counter(&out, "TcpMtupSuccess") >= 1, "{out}");
}
