//! `dpstack-echo --nb-cores 2` on a 2-queue `net_tap` whose kernel side is
//! in a namespace the test creates, with the kernel as the peer: the
//! kernel spreads flows over the tap's queues by its own flow hash, so each
//! of the two lanes (pipelines on their worker lcores) serves some of them.
//! UDP flows, concurrent TCP connections, ping and ND must all work
//! whichever lane a flow lands on, and the app's per-lane counter lines
//! (printed at exit) show both lanes at work.

mod common;

use common::{app_counter, kernel_side, lane_counter, unique_name, AppProcess, Netns};
use dpstack::eal::EalArgs;

const STACK_IP: &str = "10.203.0.1";
const KERNEL_IP: &str = "10.203.0.2";
const STACK6: &str = "2001:db8:203::1";
const KERNEL_MAC: &str = "02:00:00:00:02:33";

/// The echo on two lanes and the namespace of its kernel peer (the app
/// first: it is stopped before the namespace goes).
struct TwoLanes {
    app: AppProcess,
    ns: Netns,
}

/// Starts `dpstack-echo --nb-cores 2 ARGS` on a `net_tap` port with two
/// queue pairs (EAL with three lcores: main and two workers, floating over
/// the CPUs as every test's EAL does), waits until it listens, then moves
/// the tap into a namespace with `kernel_addresses`.
fn start(args: &[&str], kernel_addresses: &[&str]) -> TwoLanes {
    let iface = unique_name("dpsl");
    let vdev = format!("net_tap0,iface={iface}");
    let eal = EalArgs::for_test(3).vdev(&vdev).to_vec().split_off(1);
    let mut app_args = vec!["--nb-cores", "2"];
    app_args.extend_from_slice(args);
    let app = AppProcess::echo(&eal, &app_args);
    app.wait_for_output("UDP port(s)");
    assert!(
        app.output_so_far().contains("polling on 2 lcores"),
        "{}",
        app.output_so_far()
    );
    let ns = kernel_side("dpstack-lcores-", &iface, KERNEL_MAC, kernel_addresses);
    TwoLanes { app, ns }
}

/// Stops the app with SIGINT and returns its output, checking it exited 0.
fn stop(setup: TwoLanes) -> String {
    let TwoLanes { app, ns } = setup;
    let done = app.stop_with(libc::SIGINT);
    drop(ns);
    assert_eq!(done.code, Some(0), "{}{}", done.stdout, done.stderr);
    done.stdout
}

/// Runs a Python script in the namespace (at most `seconds`) and returns
/// what it printed, failing the test with its output if it failed.
fn python(ns: &Netns, seconds: u32, script: &str) -> String {
    let out = ns.exec_bounded(seconds, "python3", &["-c", script]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "python3 failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn sixty_four_udp_flows_are_all_echoed_and_both_lanes_serve_some() {
    udp_flows_echoed_by_both_lanes(&[], true);
}

#[test]
fn queue_mode_sockets_hear_the_flows_of_both_lanes() {
    // Application threads talk to lane 0; the datagrams that lane 1
    // receives reach the same socket queues.
    udp_flows_echoed_by_both_lanes(&["--queue-mode"], false);
}

/// 64 UDP flows from the kernel, each echoed, with `extra` options; both
/// lanes received some, and with `inline` both sent some (each echoes
/// what it received; queue mode's application threads send through lane
/// 0).
fn udp_flows_echoed_by_both_lanes(extra: &[&str], inline: bool) {
    let ip = format!("{STACK_IP}/24");
    let mut args = vec!["--ip", &ip, "--udp", "7"];
    args.extend_from_slice(extra);
    let s = start(&args, &[&format!("{KERNEL_IP}/24")]);
    // 64 sockets, distinct source ports; each sends its number until it is
    // echoed (a round a second, at most 10), and only its own comes back.
    let script = format!(
        "import select, socket, time\n\
         flows = 64\n\
         socks = []\n\
         for i in range(flows):\n\
         \x20   s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
         \x20   s.bind(('{KERNEL_IP}', 41000 + i))\n\
         \x20   s.setblocking(False)\n\
         \x20   socks.append(s)\n\
         answered, wrong, rounds = set(), 0, 0\n\
         while len(answered) < flows and rounds < 10:\n\
         \x20   rounds += 1\n\
         \x20   for i, s in enumerate(socks):\n\
         \x20       if i not in answered:\n\
         \x20           s.sendto(b'flow %d' % i, ('{STACK_IP}', 7))\n\
         \x20   end = time.time() + 1\n\
         \x20   while len(answered) < flows and time.time() < end:\n\
         \x20       waiting = [s for i, s in enumerate(socks) if i not in answered]\n\
         \x20       ready, _, _ = select.select(waiting, [], [], 0.1)\n\
         \x20       for s in ready:\n\
         \x20           i = socks.index(s)\n\
         \x20           data, src = s.recvfrom(2048)\n\
         \x20           if data == b'flow %d' % i and src == ('{STACK_IP}', 7):\n\
         \x20               answered.add(i)\n\
         \x20           else:\n\
         \x20               wrong += 1\n\
         print('answered', len(answered), 'wrong', wrong, 'rounds', rounds)\n"
    );
    let summary = python(&s.ns, 60, &script);
    // SIGUSR1's block: the total, a line per lane, then its end.
    s.app.signal(libc::SIGUSR1);
    s.app.wait_for_output("end of counters");
    let block = s.app.output_so_far();
    let at = |needle: &str| {
        (block
            .find("counters:")
            .and_then(|start| Some(start + block[start..].find(needle)?)))
        .unwrap_or_else(|| panic!("no {needle:?} in the SIGUSR1 block:\n{block}"))
    };
    assert!(
        at("lane 0: ") < at("lane 1: ") && at("lane 1: ") < at("end of counters"),
        "{block}"
    );
    let output = stop(s);
    assert!(
        summary.contains("answered 64 wrong 0 "),
        "{summary}\n{output}"
    );
    for lane in 0..2 {
        let udp_in = lane_counter(&output, lane, "UdpInDatagrams");
        let udp_out = lane_counter(&output, lane, "UdpOutDatagrams");
        assert!(udp_in > 0, "lane {lane}:\n{output}");
        if inline {
            assert_eq!(udp_out, udp_in, "lane {lane}:\n{output}");
        }
    }
    assert!(app_counter(&output, "UdpOutDatagrams") >= 64, "{output}");
    assert!(app_counter(&output, "UdpInDatagrams") >= 64, "{output}");
}

/// A Python script in which `n` kernel clients connect to our port 7 at
/// once (a barrier), each sends `size` random bytes and reads the echo
/// back; it prints `intact K of N` and a line per failed connection.
fn tcp_clients(n: usize, size: usize) -> String {
    format!(
        "import hashlib, os, socket, threading\n\
         n, size = {n}, {size}\n\
         results = [None] * n\n\
         barrier = threading.Barrier(n)\n\
         def client(i):\n\
         \x20   try:\n\
         \x20       data = os.urandom(size)\n\
         \x20       s = socket.create_connection(('{STACK_IP}', 7), timeout=30)\n\
         \x20       barrier.wait(timeout=30)\n\
         \x20       sender = threading.Thread(target=s.sendall, args=(data,))\n\
         \x20       sender.start()\n\
         \x20       back = bytearray()\n\
         \x20       while len(back) < size:\n\
         \x20           chunk = s.recv(65536)\n\
         \x20           if not chunk:\n\
         \x20               break\n\
         \x20           back += chunk\n\
         \x20       sender.join()\n\
         \x20       s.close()\n\
         \x20       same = hashlib.sha256(data).digest() == hashlib.sha256(bytes(back)).digest()\n\
         \x20       results[i] = True if same else 'got %d bytes, digest differs' % len(back)\n\
         \x20   except Exception as e:\n\
         \x20       results[i] = repr(e)\n\
         threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]\n\
         for t in threads:\n\
         \x20   t.start()\n\
         for t in threads:\n\
         \x20   t.join()\n\
         print('intact', sum(r is True for r in results), 'of', n)\n\
         for i, r in enumerate(results):\n\
         \x20   if r is not True:\n\
         \x20       print('connection', i, r)\n"
    )
}

#[test]
fn two_hundred_concurrent_tcp_connections_come_back_intact_on_both_lanes() {
    let ip = format!("{STACK_IP}/24");
    let s = start(
        &["--ip", &ip, "--udp", "7", "--tcp", "7"],
        &[&format!("{KERNEL_IP}/24")],
    );
    // 200 connections, all open at once, 40 kB each; sha256 compared.
    let summary = python(&s.ns, 120, &tcp_clients(200, 40_000));
    let output = stop(s);
    assert!(
        summary.starts_with("intact 200 of 200"),
        "{summary}\n{output}"
    );
    let opens: Vec<u64> = (0..2)
        .map(|lane| lane_counter(&output, lane, "TcpPassiveOpens"))
        .collect();
    assert!(opens.iter().all(|&n| n > 0), "per lane {opens:?}\n{output}");
    assert_eq!(opens.iter().sum::<u64>(), 200, "{output}");
    assert_eq!(app_counter(&output, "TcpPassiveOpens"), 200, "{output}");
}

#[test]
fn queue_mode_connections_landing_on_the_other_lane_are_steered_to_the_first() {
    // Queue mode's listeners live on lane 0 (application threads talk to
    // it): what the kernel's hash puts on lane 1 finds no listener there
    // and is handed to lane 0, which owns every connection; the segments
    // that follow on lane 1 are handed over too.
    let ip = format!("{STACK_IP}/24");
    let s = start(
        &["--ip", &ip, "--udp", "7", "--tcp", "7", "--queue-mode"],
        &[&format!("{KERNEL_IP}/24")],
    );
    let summary = python(&s.ns, 120, &tcp_clients(50, 20_000));
    let output = stop(s);
    assert!(
        summary.starts_with("intact 50 of 50"),
        "{summary}\n{output}"
    );
    assert_eq!(lane_counter(&output, 0, "TcpPassiveOpens"), 50, "{output}");
    let handed = lane_counter(&output, 1, "TcpSteeredOut");
    assert!(handed > 0, "{output}");
    assert_eq!(lane_counter(&output, 0, "TcpSteeredIn"), handed, "{output}");
    assert_eq!(app_counter(&output, "TcpOutRsts"), 0, "{output}");
    assert_eq!(
        app_counter(&output, "drop_tcp_steer_ring_full"),
        0,
        "{output}"
    );
}

#[test]
fn pings_and_neighbour_discovery_are_answered_from_either_lane() {
    let (ip, ip6) = (format!("{STACK_IP}/24"), format!("{STACK6}/64"));
    // Eight source addresses of each family: the kernel hashes ICMP by
    // addresses only, so the sources spread over the two queues.
    let sources: Vec<String> = (2..10).map(|i| format!("10.203.0.{i}")).collect();
    let sources6: Vec<String> = (2..10).map(|i| format!("2001:db8:203::{i}")).collect();
    let mut kernel: Vec<String> = sources.iter().map(|a| format!("{a}/24")).collect();
    kernel.extend(sources6.iter().map(|a| format!("{a}/64")));
    let kernel: Vec<&str> = kernel.iter().map(String::as_str).collect();
    let s = start(&["--ip", &ip, "--ip", &ip6, "--udp", "7"], &kernel);
    let mut failures = Vec::new();
    for (source, target, family) in (sources.iter().map(|a| (a, STACK_IP, "-4")))
        .chain(sources6.iter().map(|a| (a, STACK6, "-6")))
    {
        let out = s.ns.exec_bounded(
            20,
            "ping",
            &[
                family, "-c", "3", "-i", "0.2", "-W", "3", "-I", source, target,
            ],
        );
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if !text.contains(" 3 received") {
            failures.push(format!("{source} -> {target}: {text}"));
        }
    }
    let output = stop(s);
    assert!(failures.is_empty(), "{failures:#?}\n{output}");
    for lane in 0..2 {
        let echoes = lane_counter(&output, lane, "IcmpInEchos")
            + lane_counter(&output, lane, "Icmp6InEchos");
        assert!(echoes > 0, "lane {lane} answered no ping:\n{output}");
    }
    assert_eq!(app_counter(&output, "IcmpInEchos"), 24, "{output}");
    assert_eq!(app_counter(&output, "Icmp6InEchos"), 24, "{output}");
}

/// `dpstack-echo EAL -- ARGS` on a `net_null` port with `lcores` EAL
/// lcores; it must fail at start-up: its stderr.
fn refused(lcores: u32, args: &[&str]) -> String {
    let eal = EalArgs::for_test(lcores)
        .vdev("net_null0")
        .to_vec()
        .split_off(1);
    let done = AppProcess::echo(&eal, args).wait();
    assert_eq!(done.code, Some(1), "{}{}", done.stdout, done.stderr);
    done.stderr
}

#[test]
fn more_lanes_than_worker_lcores_are_refused_saying_how_to_give_more() {
    let stderr = refused(2, &["--nb-cores", "2"]);
    assert!(
        stderr.contains("--nb-cores 2: EAL has 1 worker lcore(s)") && stderr.contains("--lcores="),
        "{stderr}"
    );
}

#[test]
fn the_pool_holds_every_lanes_rings_and_every_polling_lcores_cache() {
    // Two lanes: two rx and two tx rings of 1024, and the caches (1.5 x
    // 256) of the main lcore and both workers.
    let stderr = refused(3, &["--nb-cores", "2", "--total-num-mbufs", "64"]);
    let minimum = 2 * 1024 + 2 * 1024 + 3 * 384;
    assert!(
        stderr.contains(&format!(
            "--total-num-mbufs 64 is too few: this port needs at least {minimum} "
        )),
        "{stderr}"
    );
}
