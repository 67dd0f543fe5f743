//! The kernel as the oracle for socket lookup: random socket configurations
//! are built both as Linux sockets (in a network namespace, by
//! `tests/data/lookup_oracle.py`) and as dpstack sockets, the same datagrams
//! (UDP) and connections (TCP) are sent to both, and both must pick the
//! same socket, and accept and refuse the same binds.
//!
//! Two namespaces joined by a veth pair: "local" holds the sockets under
//! test (10.9.0.1-3, fd09::1-3), "remote" the senders (10.9.0.11-13,
//! fd09::11-13). The senders live apart so that connect() narrows a
//! wildcard bind to the address routing picks (10.9.0.1, the primary), as
//! it does on a real host; were they local, routing would pick the
//! destination itself.
//!
//! Seeds: every run prints its seed; `DPSTACK_ORACLE_SEED=N` replays one,
//! `DPSTACK_ORACLE_CASES=N` scales the case counts (default 2,000 UDP and
//! 600 TCP cases). A mismatch is shrunk (sockets and datagrams dropped while
//! it persists, each round one kernel run) and printed as a minimal case.
//! Differences documented in docs/TESTING.md are reported, not failed.

#[path = "../common/mod.rs"]
mod common;
mod tcp;
mod udp;

use common::Netns;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::process::Stdio;
use std::time::Instant;

/// The addresses of the namespace under test (the first is the primary:
/// the source routing picks).
const LOCAL4: [&str; 3] = ["10.9.0.1", "10.9.0.2", "10.9.0.3"];
const LOCAL6: [&str; 3] = ["fd09::1", "fd09::2", "fd09::3"];
/// The senders' addresses.
const REMOTE4: [&str; 3] = ["10.9.0.11", "10.9.0.12", "10.9.0.13"];
const REMOTE6: [&str; 3] = ["fd09::11", "fd09::12", "fd09::13"];

/// xorshift64*: small, seeded, the same sequence on every machine.
pub struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A value in `0..n`.
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// True with probability `percent` / 100.
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

/// One socket of a case, as the helper script reads it.
#[derive(Debug, Clone, Serialize)]
pub struct Sock {
    v6: bool,
    ip: String,
    port: u16,
    v6only: bool,
    reuseport: bool,
    /// UDP only: connect() to this peer after every bind.
    connect: Option<(String, u16)>,
}

/// A datagram or connection: (source ip, source port, destination ip,
/// destination port).
pub type Flow = (String, u16, String, u16);

/// What the kernel answered for one case.
#[derive(Debug, Clone, Deserialize)]
pub struct KernelAnswer {
    bind: Vec<String>,
    #[serde(default)]
    connect: Vec<Option<String>>,
    #[serde(default)]
    local: Vec<Option<(String, u16)>>,
    #[serde(default)]
    listen: Vec<Option<String>>,
    /// Per flow: the index of the socket that got it, or -1.
    got: Vec<i64>,
}

/// The two namespaces, deleted (by their guards) when dropped.
pub struct Oracle {
    local: Netns,
    remote: Netns,
}

impl Oracle {
    fn new() -> Oracle {
        let pid = std::process::id() % 100_000;
        let local = Netns::create(&format!("dpoL{pid}"));
        let remote = Netns::create(&format!("dpoR{pid}"));
        let (l, r) = (local.name.as_str(), remote.name.as_str());
        common::run(
            "ip",
            &[
                "link", "add", "ol0", "netns", l, "type", "veth", "peer", "name", "or0", "netns", r,
            ],
        );
        for (ns, dev, v4, v6) in [(l, "ol0", LOCAL4, LOCAL6), (r, "or0", REMOTE4, REMOTE6)] {
            common::run("ip", &["-n", ns, "link", "set", "lo", "up"]);
            for a in v4 {
                common::run(
                    "ip",
                    &["-n", ns, "addr", "add", &format!("{a}/24"), "dev", dev],
                );
            }
            for a in v6 {
                let cidr = format!("{a}/64");
                common::run("ip", &["-n", ns, "addr", "add", &cidr, "dev", dev, "nodad"]);
            }
            common::run("ip", &["-n", ns, "link", "set", dev, "up"]);
        }
        Oracle { local, remote }
    }

    /// Runs the helper over `udp` and `tcp` cases (one process, bounded in
    /// time); its answers, in order.
    fn ask(&self, udp: &[udp::Case], tcp: &[tcp::Case]) -> (Vec<KernelAnswer>, Vec<KernelAnswer>) {
        #[derive(Serialize)]
        struct Job<'a> {
            udp: &'a [udp::Case],
            tcp: &'a [tcp::Case],
        }
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/lookup_oracle.py");
        let remote = format!("/run/netns/{}", self.remote.name);
        let mut child = self
            .local
            .command_bounded(120, "python3")
            .args([script, &remote])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("python3 (scripts/setup installs it)");
        let job = serde_json::to_vec(&Job { udp, tcp }).expect("serializable");
        let mut stdin = child.stdin.take().expect("piped");
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(&job);
        });
        let out = child.wait_with_output().expect("the helper ran");
        let _ = writer.join();
        assert!(
            out.status.success(),
            "the kernel helper failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut answers = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line per case"))
            .collect::<Vec<KernelAnswer>>();
        assert_eq!(answers.len(), udp.len() + tcp.len(), "an answer per case");
        let tcp_answers = answers.split_off(udp.len());
        (answers, tcp_answers)
    }
}

/// A difference between the kernel and dpstack in one case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// What differs, for the report.
    what: String,
    /// The documented difference it is (see docs/TESTING.md), if it is one.
    known: Option<&'static str>,
}

fn seed() -> u64 {
    match std::env::var("DPSTACK_ORACLE_SEED") {
        Ok(s) => s.trim().parse().expect("DPSTACK_ORACLE_SEED is a number"),
        Err(_) => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64),
    }
}

fn scale() -> usize {
    std::env::var("DPSTACK_ORACLE_CASES")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(2000)
}

/// Most failing cases of each protocol shrunk and printed (shrinking asks
/// the kernel again per round; the rest are counted).
const SHRUNK: usize = 12;

/// A generated case: what the kernel and dpstack must agree on.
pub trait OracleCase: Clone + std::fmt::Display {
    /// Where dpstack's answer differs from the kernel's (empty: agreed).
    fn judge(&self, kernel: &KernelAnswer) -> Vec<Mismatch>;
    /// Every variant one socket or flow smaller (for shrinking).
    fn smaller(&self) -> Vec<Self>;
    /// Datagrams or connections sent.
    fn flows(&self) -> usize;
}

/// The variants of a case one socket or one flow smaller (for
/// shrinking): each flow alone with every socket, then every socket but
/// one with every flow.
pub fn smaller_parts<S: Clone>(sockets: &[S], flows: &[Flow]) -> Vec<(Vec<S>, Vec<Flow>)> {
    let mut variants = Vec::new();
    if flows.len() > 1 {
        variants.extend(flows.iter().map(|f| (sockets.to_vec(), vec![f.clone()])));
    }
    variants.extend((0..sockets.len()).map(|drop| {
        let mut fewer = sockets.to_vec();
        fewer.remove(drop);
        (fewer, flows.to_vec())
    }));
    variants
}

/// A case as a minimal report prints it: its sockets (`kind`, e.g.
/// "udp"), then its flows (`verb`, e.g. "datagram").
pub fn write_case<S: std::fmt::Display>(
    f: &mut std::fmt::Formatter<'_>,
    (kind, sockets): (&str, &[S]),
    (verb, flows): (&str, &[Flow]),
) -> std::fmt::Result {
    for (i, s) in sockets.iter().enumerate() {
        writeln!(f, "  #{i} {kind} {s}")?;
    }
    for (src_ip, src_port, dst_ip, dst_port) in flows {
        writeln!(
            f,
            "  {verb} {src_ip} port {src_port} -> {dst_ip} port {dst_port}"
        )?;
    }
    Ok(())
}

fn flows<C: OracleCase>(cases: &[C]) -> usize {
    cases.iter().map(C::flows).sum()
}

/// The documented differences `m` holds (None: an undocumented one).
fn kinds(m: &[Mismatch]) -> Vec<Option<&'static str>> {
    let mut kinds: Vec<_> = m.iter().map(|m| m.known).collect();
    kinds.sort();
    kinds.dedup();
    kinds
}

/// True if `m` holds a difference not documented in docs/TESTING.md.
fn undocumented(m: &[Mismatch]) -> bool {
    m.iter().any(|m| m.known.is_none())
}

/// Judges every case; shrinks and prints the first [`SHRUNK`] that differ,
/// undocumented differences first. Returns (cases with an undocumented
/// difference, cases that differ at all).
fn examine<C: OracleCase>(
    oracle: &Oracle,
    kind: &str,
    cases: &[C],
    answers: &[KernelAnswer],
    ask: impl Fn(&Oracle, &[C]) -> Vec<KernelAnswer>,
) -> (usize, usize) {
    let judged: Vec<(&C, Vec<Mismatch>)> = (cases.iter().zip(answers))
        .map(|(c, a)| (c, c.judge(a)))
        .filter(|(_, m)| !m.is_empty())
        .collect();
    let unknown = judged.iter().filter(|(_, m)| undocumented(m)).count();
    // Every undocumented difference (up to SHRUNK), and one example of
    // each documented one.
    let mut labels = std::collections::HashSet::new();
    let mut first: Vec<(C, Vec<Option<&str>>)> = (judged.iter().filter(|(_, m)| undocumented(m)))
        .take(SHRUNK)
        .chain(
            judged
                .iter()
                .filter(|(_, m)| !undocumented(m) && m.iter().any(|m| labels.insert(m.known))),
        )
        .map(|(c, m)| ((*c).clone(), kinds(m)))
        .collect();
    // Bounded: every round removes a socket or a flow from each case.
    for _ in 0..24 {
        let variants: Vec<(usize, C)> = (first.iter().enumerate())
            .flat_map(|(i, (c, _))| c.smaller().into_iter().map(move |v| (i, v)))
            .collect();
        if variants.is_empty() {
            break;
        }
        let asked: Vec<C> = variants.iter().map(|(_, v)| v.clone()).collect();
        let answers = ask(oracle, &asked);
        let mut taken = vec![false; first.len()];
        for ((i, variant), answer) in variants.into_iter().zip(&answers) {
            // A variant is kept only if it still fails the same way, so
            // an undocumented difference does not shrink into a
            // documented one.
            let m = variant.judge(answer);
            if !taken[i] && !m.is_empty() && kinds(&m) == first[i].1 {
                first[i].0 = variant;
                taken[i] = true;
            }
        }
        if !taken.contains(&true) {
            break;
        }
    }
    let minimal: Vec<C> = first.into_iter().map(|(c, _)| c).collect();
    let answers = ask(oracle, &minimal);
    let mut printed = std::collections::HashSet::new();
    for (case, answer) in minimal.iter().zip(&answers) {
        let text = case.to_string();
        if !printed.insert(text.clone()) {
            continue;
        }
        for m in case.judge(answer) {
            let label = m
                .known
                .map_or("MISMATCH".to_owned(), |k| format!("documented ({k})"));
            println!("{kind} {label}: {}\n{text}", m.what);
        }
    }
    (unknown, judged.len())
}

#[test]
fn kernel_and_dpstack_pick_the_same_socket() {
    common::require("python3");
    let seed = seed();
    println!("lookup oracle seed {seed} (replay: DPSTACK_ORACLE_SEED={seed})");
    let started = Instant::now();
    let mut rng = Rng::new(seed);
    let scale = scale();
    let udp_cases: Vec<udp::Case> = (0..scale).map(|i| udp::Case::random(&mut rng, i)).collect();
    let tcp_cases: Vec<tcp::Case> = (0..scale * 3 / 10)
        .map(|i| tcp::Case::random(&mut rng, i))
        .collect();
    let oracle = Oracle::new();
    let (udp_answers, tcp_answers) = oracle.ask(&udp_cases, &tcp_cases);
    let asked = started.elapsed();

    let (udp_unknown, udp_failing) = examine(&oracle, "UDP", &udp_cases, &udp_answers, |o, c| {
        o.ask(c, &[]).0
    });
    let (tcp_unknown, tcp_failing) = examine(&oracle, "TCP", &tcp_cases, &tcp_answers, |o, c| {
        o.ask(&[], c).1
    });
    let counts = [
        ("UDP", udp_cases.len(), flows(&udp_cases), udp_failing),
        ("TCP", tcp_cases.len(), flows(&tcp_cases), tcp_failing),
    ];
    for (kind, cases, flows, failing) in counts {
        println!("{kind}: {cases} cases, {flows} flows, {failing} cases differ");
    }
    println!(
        "kernel {:.1} s, whole test {:.1} s (seed {seed})",
        asked.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    assert_eq!(
        udp_unknown + tcp_unknown,
        0,
        "the kernel and dpstack disagree (minimal cases above; replay with \
         DPSTACK_ORACLE_SEED={seed})"
    );
}

impl std::fmt::Display for Sock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let family = if self.v6 { "v6" } else { "v4" };
        let ip = if self.v6 {
            format!("[{}]", self.ip)
        } else {
            self.ip.clone()
        };
        write!(f, "{family} bind {ip}:{}", self.port)?;
        if self.v6only {
            f.write_str(" v6only")?;
        }
        if self.reuseport {
            f.write_str(" reuseport")?;
        }
        if let Some((ip, port)) = &self.connect {
            write!(f, " connect {ip} port {port}")?;
        }
        Ok(())
    }
}
