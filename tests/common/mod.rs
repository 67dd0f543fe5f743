//! Helpers shared by the integration tests.
//!
//! Every DPDK test runs in its own process (cargo-nextest's default), because
//! EAL can be initialised only once per process.
#![allow(dead_code)]

pub mod cleanup;

use cleanup::Leftover;
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

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// EAL options for a child DPDK process of a test: two floating lcores,
/// ordinary memory, no shared files, plus `vdevs`.
pub fn child_eal_args(vdevs: &[&str]) -> Vec<String> {
    let mut args = EalArgs::for_test(2);
    for vdev in vdevs {
        args = args.vdev(vdev);
    }
    args.to_vec().split_off(1)
}

/// A dpstack app process started by a test; killed if the test fails.
/// Its standard output is collected by a reader thread as it is printed.
pub struct AppProcess {
    child: Option<Child>,
    stdout: Arc<Mutex<String>>,
    reader: Option<std::thread::JoinHandle<()>>,
    /// The child's EAL runtime directory (removed, if left empty, after the
    /// child is killed: a killed EAL cannot clean up after itself).
    runtime_dir: Option<std::path::PathBuf>,
}

impl AppProcess {
    /// Starts `dpstack-console EAL -- APP`.
    pub fn console(eal: &[String], app: &[&str]) -> AppProcess {
        AppProcess::spawn(env!("CARGO_BIN_EXE_dpstack-console"), eal, app)
    }

    /// Starts `dpstack-echo EAL -- APP`.
    pub fn echo(eal: &[String], app: &[&str]) -> AppProcess {
        AppProcess::spawn(env!("CARGO_BIN_EXE_dpstack-echo"), eal, app)
    }

    /// Starts `dpstack-echo EAL -- APP` inside network namespace `netns`
    /// (`ip netns exec` execs it: the child is the app itself).
    pub fn echo_in(netns: &str, eal: &[String], app: &[&str]) -> AppProcess {
        let binary = env!("CARGO_BIN_EXE_dpstack-echo");
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", netns, binary]);
        AppProcess::spawn_command(cmd, binary, eal, app)
    }

    /// Starts `BINARY EAL -- APP` with piped stdin and stdout.
    pub fn spawn(binary: &str, eal: &[String], app: &[&str]) -> AppProcess {
        AppProcess::spawn_command(Command::new(binary), binary, eal, app)
    }

    fn spawn_command(mut cmd: Command, binary: &str, eal: &[String], app: &[&str]) -> AppProcess {
        if !eal.is_empty() {
            cmd.args(eal).arg("--");
        } else if !app.is_empty() {
            cmd.arg("--");
        }
        let mut child = cmd
            .args(app)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {binary}: {e}"));
        let stdout = Arc::new(Mutex::new(String::new()));
        let mut pipe = child.stdout.take().expect("piped");
        let sink = Arc::clone(&stdout);
        let reader = std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .expect("not poisoned")
                    .push_str(&String::from_utf8_lossy(&chunk[..n]));
            }
        });
        let runtime_dir = eal
            .iter()
            .find_map(|a| a.strip_prefix("--file-prefix="))
            .map(|prefix| std::path::Path::new("/var/run/dpdk").join(prefix));
        if let Some(dir) = &runtime_dir {
            cleanup::register(Leftover::EmptyDir(dir.clone()));
        }
        AppProcess {
            child: Some(child),
            stdout,
            reader: Some(reader),
            runtime_dir,
        }
    }

    /// Waits until the output contains `needle` (at most 20 s); panics with
    /// the output so far if it never does.
    pub fn wait_for_output(&self, needle: &str) {
        let found = wait_until(Duration::from_secs(20), || {
            self.stdout.lock().expect("not poisoned").contains(needle)
        });
        assert!(
            found,
            "the app never printed {needle:?}; output so far:\n{}",
            self.stdout.lock().expect("not poisoned")
        );
    }

    /// The output printed so far.
    pub fn output_so_far(&self) -> String {
        self.stdout.lock().expect("not poisoned").clone()
    }

    /// Waits until forwarding has started (the ports are up).
    pub fn wait_until_forwarding(&self) {
        self.wait_for_output("packet forwarding - ports=");
    }

    /// The child's stdin, for interactive commands.
    pub fn stdin(&mut self) -> std::process::ChildStdin {
        self.child
            .as_mut()
            .and_then(|c| c.stdin.take())
            .expect("stdin is piped once")
    }

    /// The running app's process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Whether the app is still running (it has neither exited nor been
    /// killed).
    pub fn running(&mut self) -> bool {
        let child = self.child.as_mut().expect("not waited for yet");
        child.try_wait().expect("wait").is_none()
    }

    /// Sends `signal` to the running app (e.g. SIGUSR1 for its counters).
    pub fn signal(&self, signal: i32) {
        let child = self.child.as_ref().expect("running");
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe { libc::kill(child.id() as i32, signal) };
    }

    /// Sends `signal` and waits (at most 20 s) for the exit.
    pub fn stop_with(self, signal: i32) -> ConsoleOutput {
        let child = self.child.as_ref().expect("running");
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe { libc::kill(child.id() as i32, signal) };
        self.wait()
    }

    /// Waits (at most 20 s) for the process to exit by itself.
    pub fn wait(self) -> ConsoleOutput {
        self.wait_up_to(Duration::from_secs(20))
    }

    /// [`AppProcess::wait`] for an app whose run is known to be long.
    pub fn wait_up_to(mut self, limit: Duration) -> ConsoleOutput {
        let mut child = self.child.take().expect("running");
        let status = wait_at_most(&mut child, limit)
            .unwrap_or_else(|| panic!("the app did not exit within {limit:?}"));
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .expect("piped")
            .read_to_string(&mut stderr)
            .ok();
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        let signal = std::os::unix::process::ExitStatusExt::signal(&status);
        if signal.is_some() {
            self.remove_runtime_dir();
        }
        let stdout = std::mem::take(&mut *self.stdout.lock().expect("not poisoned"));
        ConsoleOutput {
            code: status.code(),
            signal,
            stdout,
            stderr,
        }
    }

    /// Removes the exited child's EAL runtime directory if it is empty
    /// (only then: never anything a live process still uses): an app killed
    /// by a signal cannot remove it itself.
    fn remove_runtime_dir(&self) {
        if let Some(dir) = &self.runtime_dir {
            let _ = std::fs::remove_dir(dir);
            cleanup::release(&Leftover::EmptyDir(dir.clone()));
        }
    }
}

impl Drop for AppProcess {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
            self.remove_runtime_dir();
        }
    }
}

/// What a console process printed and how it exited.
#[derive(Debug)]
pub struct ConsoleOutput {
    /// Exit code (None if killed by a signal).
    pub code: Option<i32>,
    /// The signal that killed it, if one did.
    pub signal: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl ConsoleOutput {
    /// (RX-packets, TX-packets, TX-dropped) of the accumulated forward
    /// statistics block.
    pub fn accumulated(&self) -> (u64, u64, u64) {
        let block = self
            .stdout
            .split("Accumulated forward statistics for all ports")
            .nth(1)
            .unwrap_or_else(|| panic!("no forward statistics in:\n{}", self.stdout));
        let field = |name: &str| -> u64 {
            block
                .split(name)
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("no {name} in:\n{block}"))
        };
        (
            field("RX-packets:"),
            field("TX-packets:"),
            field("TX-dropped:"),
        )
    }
}

/// Where `program` is on the PATH (or `program` itself when it is a path to
/// a file), or `None`.
pub fn find_program(program: &str) -> Option<std::path::PathBuf> {
    if program.contains('/') {
        let path = std::path::PathBuf::from(program);
        return path.is_file().then_some(path);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(candidate)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Fails the test up front, naming `program`, when it is not installed: a
/// missing tool must not show up later as a puzzling parse error or an
/// empty output. `scripts/setup` installs every program the tests run
/// (tests/setup_installs.rs keeps its list complete).
#[track_caller]
pub fn require(program: &str) {
    assert!(
        find_program(program).is_some(),
        "this test runs `{program}`, which is not installed: run scripts/setup \
         (it installs every program the tests run)"
    );
}

/// Runs a shell-free command and panics with its output if it fails.
#[track_caller]
pub fn run(program: &str, args: &[&str]) -> String {
    require(program);
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e} (scripts/setup installs it)"));
    assert!(
        out.status.success(),
        "{program} {args:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The last value an app printed for counter `name` (in its counters
/// block), or 0 if it never printed it.
pub fn app_counter(output: &str, name: &str) -> u64 {
    output
        .lines()
        .rev()
        .filter_map(|l| l.trim().strip_prefix(name))
        .find_map(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Counter `name` of lane `lane` from the app's last per-lane line
/// (`lane N: NAME VALUE ...`; 0 if the line does not show it).
pub fn lane_counter(output: &str, lane: usize, name: &str) -> u64 {
    let prefix = format!("lane {lane}:");
    let line = output
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no line for lane {lane} in:\n{output}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    // Counters a lane line shows only when not zero (the TCP hand-offs)
    // read as 0 when absent.
    words
        .chunks(2)
        .find(|pair| pair[0] == name)
        .map_or(0, |pair| {
            (pair.get(1).and_then(|v| v.parse().ok()))
                .unwrap_or_else(|| panic!("{name} on lane {lane} is no number: {line}"))
        })
}

/// Runs `socat - ADDRESS` inside namespace `netns`, feeding it `input` from
/// a thread of its own (so a large echo cannot deadlock on full pipes); it
/// gives up after 2 s of silence. Returns what it printed.
pub fn socat_in(netns: &str, address: &str, input: &[u8]) -> std::process::Output {
    socat_with(netns, address, input, &["-T", "2"])
}

/// [`socat_in`] that waits up to `silence` seconds for the peer (for paths
/// with loss, where backed-off retransmissions leave long gaps), also after
/// its input ended (socat's `-t`, 0.5 s by default, would cut off the tail
/// of an echo that is still being retransmitted).
pub fn socat_patient(
    netns: &str,
    address: &str,
    input: &[u8],
    silence: u32,
) -> std::process::Output {
    let silence = silence.to_string();
    socat_with(netns, address, input, &["-T", &silence, "-t", &silence])
}

/// `socat OPTIONS - ADDRESS` in `netns`, fed `input` from its own thread.
fn socat_with(netns: &str, address: &str, input: &[u8], options: &[&str]) -> std::process::Output {
    use std::io::Write;
    require("socat");
    let mut child = Command::new("ip")
        .args(["netns", "exec", netns, "socat"])
        .args(options)
        .args(["-", address])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("socat (scripts/setup installs it)");
    let mut stdin = child.stdin.take().expect("piped");
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let output = child.wait_with_output().expect("socat ran");
    let _ = writer.join();
    output
}

/// `dpstack-echo` on a `net_tap` port of its own, past its start line,
/// with the Linux kernel at the other end of the tap in a namespace.
pub struct EchoWithKernel {
    /// The running app.
    pub app: AppProcess,
    /// The namespace holding the kernel's side.
    pub ns: Netns,
    /// The tap's name (the port's kernel side).
    pub iface: String,
    /// The port's MAC in lower case, as the start line names it.
    pub stack_mac: String,
}

/// Starts `dpstack-echo -- ARGS` on a `net_tap` port whose kernel side is a
/// tap named after `tap_prefix`, waits until it listens ("UDP port(s)"),
/// then moves the tap into a namespace named after `ns_prefix` as
/// [`kernel_side`] does, with `kernel_mac` and `kernel_addresses`.
pub fn echo_with_kernel(
    tap_prefix: &str,
    args: &[&str],
    ns_prefix: &str,
    kernel_mac: &str,
    kernel_addresses: &[&str],
) -> EchoWithKernel {
    let iface = unique_name(tap_prefix);
    let vdev = format!("net_tap0,iface={iface}");
    let app = AppProcess::echo(&child_eal_args(&[&vdev]), args);
    app.wait_for_output("UDP port(s)");
    let stack_mac = app
        .output_so_far()
        .split(", ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .expect("the start line names the MAC")
        .to_lowercase();
    let ns = kernel_side(ns_prefix, &iface, kernel_mac, kernel_addresses);
    EchoWithKernel {
        app,
        ns,
        iface,
        stack_mac,
    }
}

/// Moves tap `iface` (a net_tap port's kernel side) into a new namespace
/// named after `prefix` and makes it the kernel's end of the link: MAC
/// `mac`, the `addresses` (IPv6 ones without duplicate address detection),
/// up.
pub fn kernel_side(prefix: &str, iface: &str, mac: &str, addresses: &[&str]) -> Netns {
    let ns = Netns::create(&unique_name(prefix));
    let n = ns.name.clone();
    run("ip", &["link", "set", iface, "netns", &n]);
    run("ip", &["-n", &n, "link", "set", iface, "address", mac]);
    let no_dad = format!("net.ipv6.conf.{iface}.accept_dad=0");
    assert!(ns.exec("sysctl", &["-qw", &no_dad]).status.success());
    for address in addresses {
        let mut args = vec!["-n", &n, "addr", "add", address, "dev", iface];
        if address.contains(':') {
            args.push("nodad");
        }
        run("ip", &args);
    }
    run("ip", &["-n", &n, "link", "set", iface, "up"]);
    ns
}

/// A network namespace that is deleted when dropped.
pub struct Netns {
    /// Its name.
    pub name: String,
}

impl Netns {
    /// Runs `socat - ADDRESS` inside the namespace (e.g. `UDP:10.0.0.1:7`,
    /// `UDP6:[2001:db8::1]:7,bind=...`), feeding it `input`; it gives up
    /// after 2 s of silence. Returns what it printed.
    pub fn socat(&self, address: &str, input: &[u8]) -> std::process::Output {
        socat_in(&self.name, address, input)
    }

    /// Creates a namespace (replacing a stale one of the same name),
    /// deleted also if a signal ends the test ([`cleanup`]).
    pub fn create(name: &str) -> Netns {
        let _ = Command::new("ip").args(["netns", "del", name]).output();
        run("ip", &["netns", "add", name]);
        cleanup::register(Leftover::Netns(name.to_owned()));
        Netns {
            name: name.to_owned(),
        }
    }

    /// Runs `program args` inside the namespace.
    #[track_caller]
    pub fn exec(&self, program: &str, args: &[&str]) -> std::process::Output {
        self.command(program)
            .args(args)
            .output()
            .expect("ip netns exec")
    }

    /// Runs `program args` inside the namespace, killed if it runs longer
    /// than `seconds` (a stuck peer fails its test instead of hanging it).
    #[track_caller]
    pub fn exec_bounded(&self, seconds: u32, program: &str, args: &[&str]) -> std::process::Output {
        self.command_bounded(seconds, program)
            .args(args)
            .output()
            .expect("ip netns exec")
    }

    /// Loads the nftables ruleset `rules` (`nft -f -` syntax) in the
    /// namespace: the kernel's side of the faults and marks tests inject
    /// (random drops, CE marks, filtered ICMP); fails the test, with nft's
    /// complaint, if nft refuses it.
    #[track_caller]
    pub fn nft(&self, rules: &str) {
        use std::io::Write;
        let mut nft = self
            .command("nft")
            .args(["-f", "-"])
            .stdin(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("nft (scripts/setup installs nftables)");
        nft.stdin
            .take()
            .expect("piped")
            .write_all(rules.as_bytes())
            .expect("rules written");
        let out = nft.wait_with_output().expect("nft ran");
        assert!(
            out.status.success(),
            "nft refused {rules}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A command that runs `program` inside the namespace (arguments,
    /// pipes and spawning are the caller's); the test fails up front,
    /// naming it, if `program` is not installed.
    #[track_caller]
    pub fn command(&self, program: &str) -> Command {
        require("ip");
        require(program);
        let mut command = Command::new("ip");
        command.args(["netns", "exec", &self.name, program]);
        command
    }

    /// [`Netns::command`] under `timeout`: killed after `seconds` (and
    /// with SIGKILL 5 s later if it ignores the SIGTERM).
    #[track_caller]
    pub fn command_bounded(&self, seconds: u32, program: &str) -> Command {
        require("timeout");
        require(program);
        let mut command = self.command("timeout");
        command.args(["-k", "5", &seconds.to_string(), program]);
        command
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        cleanup::delete_netns(&self.name);
        cleanup::release(&Leftover::Netns(self.name.clone()));
    }
}

/// Waits for `child` to exit, at most `limit`; if it has not by then, kills
/// and reaps it and returns `None`.
pub fn wait_at_most(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until `condition` holds, at most `timeout`.
pub fn wait_until(timeout: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if condition() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    condition()
}

/// Removes a file (a memif socket, a pid file) when dropped, also when the
/// test fails or a signal ends it ([`cleanup`]).
pub struct RemoveOnDrop(String);

impl RemoveOnDrop {
    /// Removes `path` when dropped.
    pub fn new(path: &str) -> RemoveOnDrop {
        cleanup::register(Leftover::File(path.into()));
        RemoveOnDrop(path.to_owned())
    }
}

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        cleanup::release(&Leftover::File(self.0.as_str().into()));
    }
}

/// Stops a memif pair: the server first, then the client (which must have
/// stopped polling, e.g. holding with `--hold`), so neither polls while its
/// memif peer disconnects (DPDK 22.11's memif PMD can crash a process that
/// does). Returns (client, server) outputs.
pub fn stop_memif_pair(server: AppProcess, client: AppProcess) -> (ConsoleOutput, ConsoleOutput) {
    let server = server.stop_with(libc::SIGINT);
    let client = client.stop_with(libc::SIGINT);
    (client, server)
}

/// The console's prompt.
pub const PROMPT: &str = "dpstack> ";

/// `dpstack-console -i` at its prompt, fed one command at a time.
pub struct Prompt {
    pub app: AppProcess,
    pub stdin: std::process::ChildStdin,
}

impl Prompt {
    /// Starts the console with EAL arguments `eal` and options `app`
    /// (after `-i`) and waits for its prompt.
    pub fn start(eal: &[String], app: &[&str]) -> Prompt {
        let mut args = vec!["-i"];
        args.extend_from_slice(app);
        let mut app = AppProcess::console(eal, &args);
        let stdin = app.stdin();
        app.wait_for_output(PROMPT);
        Prompt { app, stdin }
    }

    /// Runs `line` and returns its output (up to the next prompt).
    pub fn say(&mut self, line: &str) -> String {
        use std::io::Write;
        let before = self.app.output_so_far().matches(PROMPT).count();
        writeln!(self.stdin, "{line}").expect("write a command");
        let answered = wait_until(Duration::from_secs(15), || {
            self.app.output_so_far().matches(PROMPT).count() > before
        });
        let out = self.app.output_so_far();
        assert!(answered, "no prompt after {line:?}; output:\n{out}");
        let start = out
            .match_indices(PROMPT)
            .nth(before - 1)
            .map_or(0, |(i, _)| i);
        let text = &out[start + PROMPT.len()..];
        text[..text.find(PROMPT).unwrap_or(text.len())].to_owned()
    }

    /// Sends `quit` and waits for a clean exit; returns what it printed.
    pub fn quit(mut self) -> String {
        use std::io::Write;
        writeln!(self.stdin, "quit").expect("write quit");
        let out = self.app.wait();
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        out.stdout
    }
}

/// The summary line of a latency client (`dpstack-latency`,
/// `dpstack-kernel-udp rr`, `dpstack-kernel-tcp rr`): `latency PROTO
/// samples=N lost=L ... p50_us=.. p99_us=.. max_us=..`, parsed.
#[derive(Debug)]
pub struct LatencySummary {
    /// `udp` or `tcp`.
    pub proto: String,
    /// The line itself.
    pub line: String,
}

impl LatencySummary {
    /// Finds and parses the summary line in `output`; panics, showing the
    /// output, if it has none.
    #[track_caller]
    pub fn parse(output: &str) -> LatencySummary {
        let line = output
            .lines()
            .find(|l| l.starts_with("latency "))
            .unwrap_or_else(|| panic!("no latency summary line in:\n{output}"));
        let proto = line.split_whitespace().nth(1).unwrap_or("").to_owned();
        LatencySummary {
            proto,
            line: line.to_owned(),
        }
    }

    /// The value of field `name` (e.g. `samples`, `p99_us`); panics if it
    /// is missing or not a number.
    #[track_caller]
    pub fn get(&self, name: &str) -> f64 {
        let key = format!("{name}=");
        self.line
            .split_whitespace()
            .find_map(|w| w.strip_prefix(key.as_str()))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no number {name} in: {}", self.line))
    }

    /// Checks what every clean run shows: samples, ordered percentiles
    /// (min <= p50 <= p99 <= p99.9 <= max), no mismatched echo.
    #[track_caller]
    pub fn assert_sane(&self) {
        assert!(self.get("samples") > 0.0, "{}", self.line);
        assert_eq!(self.get("mismatched"), 0.0, "{}", self.line);
        let order = ["min_us", "p50_us", "p99_us", "p999_us", "max_us"].map(|f| self.get(f));
        assert!(
            order.windows(2).all(|w| w[0] <= w[1]) && order[0] > 0.0,
            "percentiles out of order: {}",
            self.line
        );
    }
}

/// Runs `dpstack-latency -- CLIENT_ARGS` against `dpstack-echo --udp 7
/// --tcp 7 SERVER_ARGS` over a `net_memif` pair (10.208.0.2 -> 10.208.0.1),
/// the client with `--hold`; stops the pair once the client has printed
/// its summary. Returns (client, server) outputs.
pub fn latency_over_memif(
    name: &str,
    server_args: &[&str],
    client_args: &[&str],
) -> (ConsoleOutput, ConsoleOutput) {
    let socket = format!("/tmp/{}.sock", unique_name(name));
    let _ = std::fs::remove_file(&socket);
    let _cleanup = RemoveOnDrop::new(&socket);
    let vdev = |role: &str| format!("net_memif0,role={role},socket={socket},socket-abstract=no");
    let mut server = vec![
        "--ip",
        "10.208.0.1/24",
        "--no-dad",
        "--udp",
        "7",
        "--tcp",
        "7",
    ];
    server.extend_from_slice(server_args);
    let server = AppProcess::echo(&child_eal_args(&[&vdev("server")]), &server);
    server.wait_for_output("UDP port(s)");
    let mut client = vec!["--ip", "10.208.0.2/24", "--no-dad", "--hold"];
    client.extend_from_slice(client_args);
    let client = AppProcess::spawn(
        env!("CARGO_BIN_EXE_dpstack-latency"),
        &child_eal_args(&[&vdev("client")]),
        &client,
    );
    client.wait_for_output("holding the port open");
    stop_memif_pair(server, client)
}

/// Runs a kernel `rr` client (`program`: `dpstack-kernel-udp` or
/// `dpstack-kernel-tcp`) in `ns` against `target` for one second after a
/// 0.3 s warm-up; asserts it succeeded and its summary is sane, and returns
/// the summary.
#[track_caller]
pub fn kernel_rr_in(ns: &Netns, program: &str, target: &str) -> LatencySummary {
    let out = ns.exec_bounded(
        30,
        program,
        &[
            "rr",
            "--target",
            target,
            "--namespaced",
            "--seconds",
            "1",
            "--warmup",
            "0.3",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = LatencySummary::parse(&stdout);
    summary.assert_sane();
    summary
}

/// `len` bytes that do not repeat with any short period.
pub fn payload(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
