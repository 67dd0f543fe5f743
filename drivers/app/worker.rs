//! The polling lcores and the main thread around them: the signal flags
//! ([`Signals`]), the worker-lcore launch with its one error message
//! ([`launch_worker`]), the canonical poll loop that runs an [`App`] over
//! the ports (wrapped in [`FaultPort`] by `--faults`, and in
//! [`CycleCountingPort`] for an app that counts its cycles) on one lcore
//! ([`run_on_worker`]) or one per lane ([`run_on_workers`]: lane i on EAL's
//! worker lcore i, each with its own handler), and the main thread's wait
//! that prints statistics on SIGUSR1 and every `--stats-period`.
//!
//! The loop is the hot path: one TSC read and one poll per iteration, plus
//! the app's [`App::done`] check (inlined; no allocation, no lock, no
//! logging), the same on every lane: lanes share nothing in it but the stop
//! flag, read once per iteration. Everything else here runs on the main
//! thread.

use super::args::StackArgs;
use super::counters::{counters_block, counters_text, lanes_text, snapshot, sum_snapshots};
use super::setup::Lane;
use crate::clock::TscClock;
use crate::cycles::CycleCountingPort;
use crate::ethdev::EthQueue;
use crate::fault::{FaultCounts, FaultPort, FaultSpec};
use crate::lcore::{launch, LaunchHandle, Lcore};
use crate::mbuf::Mbuf;
use crate::stack::counters::{Counters, Stat};
use crate::stack::iface::CounterSnapshot;
use crate::stack::iface::{InlineHandler, Interface};
use crate::stack::port::Port;
use crate::stack::time::Instant;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The flags the signals set: SIGINT/SIGTERM (stop) and SIGUSR1 (print the
/// statistics and go on).
pub struct Signals {
    stop: Arc<AtomicUsize>,
    usr1: Arc<AtomicBool>,
}

impl Signals {
    /// Installs the handlers.
    pub fn install() -> Result<Signals, String> {
        let usr1 = Arc::new(AtomicBool::new(false));
        signal_hook::flag::register(signal_hook::consts::SIGUSR1, Arc::clone(&usr1))
            .map_err(|e| format!("cannot install a handler for SIGUSR1: {e}"))?;
        Ok(Signals {
            stop: stop_signal()?,
            usr1,
        })
    }

    /// The number of the stop signal received, 0 if none yet.
    pub fn received(&self) -> usize {
        self.stop.load(Ordering::SeqCst)
    }

    /// Whether SIGUSR1 arrived since the last call.
    pub fn take_usr1(&self) -> bool {
        self.usr1.swap(false, Ordering::SeqCst)
    }

    /// Waits until a stop signal arrives or `done()` says so, calling
    /// `report` on SIGUSR1 ([`Tick::Request`]) and every `period` seconds
    /// ([`Tick::Period`]); at most one of them each 20 ms step.
    pub fn wait(
        &self,
        period: Option<u64>,
        mut done: impl FnMut() -> bool,
        mut report: impl FnMut(Tick),
    ) {
        let period = period.map(|p| Duration::from_secs(p.max(1)));
        let mut last = std::time::Instant::now();
        while self.received() == 0 && !done() {
            std::thread::sleep(Duration::from_millis(20));
            if self.take_usr1() {
                report(Tick::Request);
            } else if period.is_some_and(|p| last.elapsed() >= p) {
                last = std::time::Instant::now();
                report(Tick::Period);
            }
        }
    }
}

/// Why [`Signals::wait`] asks for a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tick {
    /// SIGUSR1 asked for one.
    Request,
    /// A `--stats-period` passed.
    Period,
}

/// The counters report of the apps: on request, the counters and a line
/// `end of counters`; each period, the counters and the frame rates since
/// the last period (`rx-pps: N tx-pps: M`). With several lanes the counters
/// are their total, followed by a line per lane ([`lanes_text`]).
pub struct CounterReport {
    lanes: Vec<Arc<Counters>>,
    last: (std::time::Instant, u64, u64),
}

impl CounterReport {
    /// A report of one lane's `counters`, its rates counted from now.
    pub fn new(counters: Arc<Counters>) -> CounterReport {
        CounterReport::of_lanes(vec![counters])
    }

    /// A report of every lane's counters (in lane order), its rates
    /// counted from now.
    pub fn of_lanes(lanes: Vec<Arc<Counters>>) -> CounterReport {
        let total = frames(&lanes);
        CounterReport {
            lanes,
            last: (std::time::Instant::now(), total.0, total.1),
        }
    }

    /// Prints what `tick` asks for.
    pub fn print(&mut self, tick: Tick) {
        print_lane_counters(&self.lanes);
        match tick {
            Tick::Request => println!("end of counters"),
            Tick::Period => {
                let now = std::time::Instant::now();
                let (rx, tx) = frames(&self.lanes);
                let secs = now.duration_since(self.last.0).as_secs_f64();
                println!(
                    "rx-pps: {:.0} tx-pps: {:.0}",
                    (rx - self.last.1) as f64 / secs,
                    (tx - self.last.2) as f64 / secs
                );
                self.last = (now, rx, tx);
            }
        }
    }
}

/// Frames received and sent by all `lanes`.
fn frames(lanes: &[Arc<Counters>]) -> (u64, u64) {
    (lanes.iter()).fold((0, 0), |(rx, tx), c| {
        (
            rx + c.get(Stat::EthInFrames),
            tx + c.get(Stat::EthOutFrames),
        )
    })
}

/// Prints the counters block of one lane as [`print_counters`] does; of
/// several, their total, then a line per lane ([`lanes_text`]).
pub fn print_lane_counters(lanes: &[Arc<Counters>]) {
    print!("{}", lane_counters_block(lanes));
}

/// What [`print_lane_counters`] prints.
pub fn lane_counters_block(lanes: &[Arc<Counters>]) -> String {
    match lanes {
        [one] => counters_block(one),
        _ => {
            let snapshots: Vec<CounterSnapshot> = lanes.iter().map(|c| snapshot(c)).collect();
            format!(
                "counters:\n{}{}",
                counters_text(&sum_snapshots(&snapshots)),
                lanes_text(&snapshots)
            )
        }
    }
}

/// A flag set to the signal number when SIGINT or SIGTERM arrives.
pub fn stop_signal() -> Result<Arc<AtomicUsize>, String> {
    let signal = Arc::new(AtomicUsize::new(0));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_usize(sig, Arc::clone(&signal), sig as usize)
            .map_err(|e| format!("cannot install a handler for signal {sig}: {e}"))?;
    }
    Ok(signal)
}

/// The error of every app whose EAL has no worker lcore, saying how to
/// give it one.
pub const NO_WORKER_LCORE: &str =
    "no worker lcore: give EAL two lcores (e.g. -l 0-1, or --lcores=0@0,1@0 on a single CPU)";

/// Runs `job` on the first worker lcore, or fails with [`NO_WORKER_LCORE`].
pub fn launch_worker(job: impl FnOnce() -> i32 + Send + 'static) -> Result<LaunchHandle, String> {
    launch_on_worker(0, job)
}

/// Runs `job` on EAL's worker lcore `n` (counted from 0), or fails saying
/// how to give EAL more.
fn launch_on_worker(
    n: usize,
    job: impl FnOnce() -> i32 + Send + 'static,
) -> Result<LaunchHandle, String> {
    let workers = Lcore::workers();
    let lcore = match workers.get(n) {
        Some(&lcore) => lcore,
        None if workers.is_empty() => return Err(NO_WORKER_LCORE.into()),
        None => {
            return Err(format!(
                "lane {n} has no worker lcore: EAL has {} (give it more with -l or --lcores)",
                workers.len()
            ))
        }
    };
    launch(lcore, job).map_err(|e| e.to_string())
}

/// An app's side of the poll loop: its inline handler, with hooks before,
/// during and after the loop. Every hook has a default, so an app that only
/// handles traffic implements [`InlineHandler`] and writes `impl App for X {}`.
pub trait App: InlineHandler<Mbuf> + Send + 'static {
    /// Once, on the lcore, before the loop (e.g. wait for duplicate
    /// address detection, open connections).
    fn start<P: Port<Buf = Mbuf>>(&mut self, _poller: &mut Poller<'_, P>) {}

    /// After every poll: whether the app is done (the loop then ends as on
    /// a stop). Runs per poll, so it must be cheap.
    #[inline]
    fn done(&mut self, _iface: &Interface<Mbuf>) -> bool {
        false
    }

    /// Once, on the lcore, after the loop (e.g. let the last segments
    /// leave, say goodbye).
    fn finish<P: Port<Buf = Mbuf>>(&mut self, _poller: &mut Poller<'_, P>) {}
}

/// The lcore's view of the stack in [`App`]'s hooks: the interface, the
/// ports, the clock and the stop flag.
pub struct Poller<'a, P> {
    /// The interface.
    pub iface: &'a mut Interface<Mbuf>,
    /// The ports, in link order.
    pub ports: &'a mut [P],
    clock: &'a TscClock,
    stop: &'a AtomicBool,
}

impl<P: Port<Buf = Mbuf>> Poller<'_, P> {
    /// The time now.
    #[inline]
    pub fn now(&self) -> Instant {
        self.clock.now()
    }

    /// Whether the main thread asked the loop to stop.
    #[inline]
    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// One poll of every port with `handler`.
    #[inline]
    pub fn poll<H: InlineHandler<Mbuf>>(&mut self, handler: &mut H) -> usize {
        self.iface.poll_ports(self.ports, self.clock.now(), handler)
    }

    /// Polls with `handler` while `more` says so and no stop was asked.
    pub fn poll_while<H: InlineHandler<Mbuf>>(
        &mut self,
        handler: &mut H,
        mut more: impl FnMut(&Interface<Mbuf>, &H) -> bool,
    ) {
        while !self.stopping() && more(&*self.iface, &*handler) {
            self.poll(handler);
        }
    }

    /// Polls with `handler` for `duration`, stop or not (so the last
    /// segments and acknowledgements leave).
    pub fn linger<H: InlineHandler<Mbuf>>(&mut self, handler: &mut H, duration: Duration) {
        let until = self.clock.now() + duration;
        while self.clock.now() < until {
            self.poll(handler);
        }
    }
}

/// What the lcore hands back when its loop ended.
pub struct Finished<H> {
    /// The app's handler.
    pub handler: H,
    /// The interface (for its neighbours, counters, ...).
    pub iface: Interface<Mbuf>,
    /// `--faults`' counts, one per port (empty without faults).
    pub faults: Vec<Arc<FaultCounts>>,
    /// The cycles' summary line ([`run_on_worker_counting_cycles`]).
    pub cycles: Option<String>,
}

impl<H> Finished<H> {
    /// `faults on port N: ...` for each port with faults.
    pub fn fault_lines(&self) -> String {
        (self.faults.iter().enumerate())
            .map(|(port, c)| format!("faults on port {port}: {}\n", c.summary()))
            .collect()
    }
}

/// `--faults`' counts of every lane: lane 0's lines as with one lane, the
/// others' prefixed `lane N `.
pub fn lanes_fault_lines<H>(lanes: &[Finished<H>]) -> String {
    let mut out = String::new();
    for (n, finished) in lanes.iter().enumerate() {
        for line in finished.fault_lines().lines() {
            if n > 0 {
                out.push_str(&format!("lane {n} "));
            }
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The running poll loop: stop it with [`Worker::stop`].
pub struct Worker<H> {
    handle: LaunchHandle,
    stop: Arc<AtomicBool>,
    ended: Arc<AtomicBool>,
    result: crossbeam_channel::Receiver<Finished<H>>,
}

impl<H> Worker<H> {
    /// Whether the loop ended by itself ([`App::done`]).
    pub fn ended(&self) -> bool {
        self.ended.load(Ordering::SeqCst)
    }

    /// Stops the loop, waits for the lcore, and takes back what it had
    /// (`None` if the job panicked).
    pub fn stop(self) -> Option<Finished<H>> {
        self.stop.store(true, Ordering::SeqCst);
        let _ = self.handle.wait();
        self.result.try_recv().ok()
    }
}

/// Runs `app` over `queues` on the first worker lcore, in the canonical
/// loop: [`App::start`], then poll every port and check [`App::done`]
/// until done or stopped, then [`App::finish`]. `args.faults` puts a
/// [`FaultPort`] in front of every queue.
pub fn run_on_worker<H: App>(
    iface: Interface<Mbuf>,
    queues: Vec<EthQueue>,
    app: H,
    args: &StackArgs,
) -> Result<Worker<H>, String> {
    spawn::<H, false>(0, iface, queues, app, args.faults, false, Arc::default())
}

/// [`run_on_worker`] for an app that offers `--record-core-cycles`: with
/// `record`, a [`CycleCountingPort`] counts the cycles of the bursts
/// ([`Finished::cycles`]). A separate entry because it compiles a second
/// copy of the pipeline, over the counting port: apps without the option do
/// not carry it (more copies change how the pipeline inlines, which shows
/// in the instructions per packet).
pub fn run_on_worker_counting_cycles<H: App>(
    iface: Interface<Mbuf>,
    queues: Vec<EthQueue>,
    app: H,
    args: &StackArgs,
    record: bool,
) -> Result<Worker<H>, String> {
    spawn::<H, true>(0, iface, queues, app, args.faults, record, Arc::default())
}

/// The running poll loops of every lane: stop them with [`Workers::stop`].
pub struct Workers<H> {
    lanes: Vec<Worker<H>>,
}

impl<H> Workers<H> {
    /// Whether some lane's loop ended by itself ([`App::done`]).
    pub fn ended(&self) -> bool {
        self.lanes.iter().any(Worker::ended)
    }

    /// Whether every lane's loop ended by itself ([`App::done`]).
    pub fn all_ended(&self) -> bool {
        self.lanes.iter().all(Worker::ended)
    }

    /// Stops every loop, waits for the lcores, and takes back what each
    /// had, in lane order (`None` if some lane's job panicked).
    pub fn stop(self) -> Option<Vec<Finished<H>>> {
        // One flag for all: set, then every lcore is waited for.
        if let Some(first) = self.lanes.first() {
            first.stop.store(true, Ordering::SeqCst);
        }
        let finished: Vec<Option<Finished<H>>> = self.lanes.into_iter().map(Worker::stop).collect();
        finished.into_iter().collect()
    }
}

/// Runs one canonical loop per lane ([`run_on_worker`]'s), lane i on EAL's
/// worker lcore i with the handler `make(i)` returns: `lanes[0]` is the
/// home pipeline's ([`super::Stack::iface`] and its queues), the rest
/// [`super::Stack::more_lanes`]. `args.faults` puts a [`FaultPort`] in
/// front of every queue of every lane. If a lane cannot start, the lanes
/// already running are stopped and the error is returned.
pub fn run_on_workers<H: App>(
    lanes: Vec<Lane>,
    make: impl FnMut(usize) -> H,
    args: &StackArgs,
) -> Result<Workers<H>, String> {
    on_workers::<H, false>(lanes, make, args, false)
}

/// [`run_on_workers`] for an app that offers `--record-core-cycles`: with
/// `record`, each lane counts the cycles of its bursts
/// ([`Finished::cycles`], per lane), as [`run_on_worker_counting_cycles`].
pub fn run_on_workers_counting_cycles<H: App>(
    lanes: Vec<Lane>,
    make: impl FnMut(usize) -> H,
    args: &StackArgs,
    record: bool,
) -> Result<Workers<H>, String> {
    on_workers::<H, true>(lanes, make, args, record)
}

fn on_workers<H: App, const CYCLES: bool>(
    lanes: Vec<Lane>,
    mut make: impl FnMut(usize) -> H,
    args: &StackArgs,
    record: bool,
) -> Result<Workers<H>, String> {
    let stop = Arc::new(AtomicBool::new(false));
    let mut running = Workers { lanes: Vec::new() };
    for (n, lane) in lanes.into_iter().enumerate() {
        let app = make(n);
        let stop = Arc::clone(&stop);
        match spawn::<H, CYCLES>(n, lane.iface, lane.queues, app, args.faults, record, stop) {
            Ok(worker) => running.lanes.push(worker),
            Err(e) => {
                let _ = running.stop();
                return Err(e);
            }
        }
    }
    Ok(running)
}

/// Launches the loop on worker lcore `lcore` (counted from 0), stopped by
/// `stop`; `CYCLES` says whether the counting copy exists.
fn spawn<H: App, const CYCLES: bool>(
    lcore: usize,
    iface: Interface<Mbuf>,
    queues: Vec<EthQueue>,
    app: H,
    faults: Option<FaultSpec>,
    record: bool,
    stop: Arc<AtomicBool>,
) -> Result<Worker<H>, String> {
    let ended = Arc::new(AtomicBool::new(false));
    let (done_tx, result) = crossbeam_channel::bounded(1);
    let job = {
        let (stop, ended) = (Arc::clone(&stop), Arc::clone(&ended));
        move || {
            let finished = on_ports::<H, CYCLES>(iface, queues, app, &stop, faults, record);
            ended.store(true, Ordering::SeqCst);
            let _ = done_tx.send(finished);
            0
        }
    };
    let handle = launch_on_worker(lcore, job)?;
    Ok(Worker {
        handle,
        stop,
        ended,
        result,
    })
}

/// The loop over the queues as `faults` and `record` wrap them.
fn on_ports<H: App, const CYCLES: bool>(
    iface: Interface<Mbuf>,
    queues: Vec<EthQueue>,
    app: H,
    stop: &AtomicBool,
    faults: Option<FaultSpec>,
    record: bool,
) -> Finished<H> {
    match faults {
        Some(spec) => {
            let ports: Vec<FaultPort<EthQueue>> = (queues.into_iter())
                .map(|q| FaultPort::new(q, spec))
                .collect();
            let counts = ports.iter().map(|p| Arc::clone(p.counts())).collect();
            let finished = counting_cycles::<_, _, CYCLES>(iface, ports, app, stop, record);
            Finished {
                faults: counts,
                ..finished
            }
        }
        None => counting_cycles::<_, _, CYCLES>(iface, queues, app, stop, record),
    }
}

/// The loop, with the bursts' cycles counted if `CYCLES` and `record`. An
/// app that offers counting (`CYCLES`) always runs its ports wrapped, the
/// count switched on or off at run time: one loop in the binary, not a
/// plain one beside a counting one (with two, the compiler kept less of
/// the plain loop's state in registers: 15 instructions a packet of the
/// echo).
fn counting_cycles<P: Port<Buf = Mbuf>, H: App, const CYCLES: bool>(
    iface: Interface<Mbuf>,
    ports: Vec<P>,
    app: H,
    stop: &AtomicBool,
    record: bool,
) -> Finished<H> {
    if !CYCLES {
        let (iface, _, handler) = poll_loop(iface, ports, app, stop);
        return Finished {
            handler,
            iface,
            faults: Vec::new(),
            cycles: None,
        };
    }
    let clock = TscClock::new();
    let start = TscClock::cycles();
    let ports: Vec<CycleCountingPort<P>> = (ports.into_iter())
        .map(|port| CycleCountingPort::counting(port, record))
        .collect();
    let (iface, ports, handler) = poll_loop(iface, ports, app, stop);
    let total = TscClock::cycles().wrapping_sub(start);
    let line = ports.first().map(|p| p.counts().summary(total, clock.hz()));
    Finished {
        handler,
        iface,
        faults: Vec::new(),
        cycles: line.filter(|_| record),
    }
}

/// The canonical loop: one TSC read and one poll per iteration.
fn poll_loop<P: Port<Buf = Mbuf>, H: App>(
    mut iface: Interface<Mbuf>,
    mut ports: Vec<P>,
    mut app: H,
    stop: &AtomicBool,
) -> (Interface<Mbuf>, Vec<P>, H) {
    let clock = TscClock::new();
    let mut poller = Poller {
        iface: &mut iface,
        ports: &mut ports,
        clock: &clock,
        stop,
    };
    app.start(&mut poller);
    while !stop.load(Ordering::Relaxed) && !app.done(&*poller.iface) {
        poller.iface.poll_ports(poller.ports, clock.now(), &mut app);
    }
    app.finish(&mut poller);
    (iface, ports, app)
}
