//! `connect-crowded`: the rate of `connect()` port searches when 95% of the
//! ephemeral range towards one peer is in use, with the lock-free pre-check
//! (`RcuFirst`) and with the lock taken for every candidate (`LockFirst`,
//! what Linux did before it added the same pre-check).
//!
//! `cargo run --release -p dpstack-stack --example connect_crowded [SECS]
//! [READERS]` runs both modes alternately, three times each, on two threads
//! (each connects and closes in a loop, so the range stays 95% full), and
//! prints the rates and their ratio (`scripts/bench connect-crowded`
//! reports it). With READERS, as many more threads look connections up in
//! the same table without pause, as polling lcores do per received
//! segment, so the connects compete with readers on the buckets' cache
//! lines; the readers' lookup rate is printed too.

use dpstack_stack::tcp::table::{ConnTable, ConnectMode, FourTuple, PortSearch};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const RANGE: (u16, u16) = (32768, 60999);
const THREADS: usize = 2;

fn local() -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))
}

fn peer() -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)), 443)
}

/// Connects per second, and lookups per second of `readers` reading
/// threads, over `secs` with `mode`.
fn run(mode: ConnectMode, secs: f64, readers: usize) -> (f64, f64) {
    let table: Arc<ConnTable<u32>> = Arc::new(ConnTable::new(
        65536,
        0x1234_5678_9abc_def0,
        0x0fed_cba9_8765_4321,
    ));
    let size = usize::from(RANGE.1 - RANGE.0) + 1;
    // Fill 95% of the range, spread over it.
    let busy = size * 95 / 100;
    for i in 0..busy {
        let port = RANGE.0 + ((i * 20 / 19) % size) as u16;
        let _ = table.insert(
            FourTuple {
                local: SocketAddr::new(local(), port),
                remote: peer(),
            },
            0,
        );
    }
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..THREADS)
        .map(|_| {
            let (table, stop, done) = (Arc::clone(&table), Arc::clone(&stop), Arc::clone(&done));
            std::thread::spawn(move || {
                let mut count = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let Ok((port, _)) = table.connect(
                        PortSearch {
                            local_ip: local(),
                            remote: peer(),
                            range: RANGE,
                            mode,
                        },
                        1,
                        |_| false,
                        |_| false,
                    ) else {
                        continue;
                    };
                    table.remove(&FourTuple {
                        local: SocketAddr::new(local(), port),
                        remote: peer(),
                    });
                    count += 1;
                }
                done.fetch_add(count, Ordering::Relaxed);
            })
        })
        .collect();
    let looked_up = Arc::new(AtomicU64::new(0));
    let lookers: Vec<_> = (0..readers)
        .map(|reader| {
            let (table, stop, looked_up) = (
                Arc::clone(&table),
                Arc::clone(&stop),
                Arc::clone(&looked_up),
            );
            std::thread::spawn(move || {
                let mut count = 0u64;
                let mut port = RANGE.0.wrapping_add(reader as u16 * 7919);
                while !stop.load(Ordering::Relaxed) {
                    // Every port of the range in turn: most are in use,
                    // some are being connected or closed right now.
                    port = if port >= RANGE.1 { RANGE.0 } else { port + 1 };
                    let key = FourTuple {
                        local: SocketAddr::new(local(), port),
                        remote: peer(),
                    };
                    std::hint::black_box(table.lookup(&key));
                    count += 1;
                }
                looked_up.fetch_add(count, Ordering::Relaxed);
            })
        })
        .collect();
    let start = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(secs));
    stop.store(true, Ordering::Relaxed);
    for worker in workers.into_iter().chain(lookers) {
        let _ = worker.join();
    }
    let elapsed = start.elapsed().as_secs_f64();
    (
        done.load(Ordering::Relaxed) as f64 / elapsed,
        looked_up.load(Ordering::Relaxed) as f64 / elapsed,
    )
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let secs: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2.0);
    let readers: usize = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let (mut rcu, mut lock, mut lookups) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..3 {
        let (connects, looked) = run(ConnectMode::RcuFirst, secs, readers);
        rcu.push(connects);
        lookups.push(looked);
        lock.push(run(ConnectMode::LockFirst, secs, readers).0);
    }
    let (ours, reference) = (median(rcu), median(lock));
    let reading = match readers {
        0 => String::new(),
        n => format!(
            ", {n} reader threads looking up without pause ({:.0} lookups/s beside ours)",
            median(lookups)
        ),
    };
    println!(
        "connect-crowded ratio={:.2} ours={:.0} connects/s reference={:.0} connects/s \
         readers={readers} (ours: lock-free pre-check; reference: bucket lock for every \
         candidate; 95% of {} ports in use, {THREADS} connecting threads{reading}, median \
         of 3 runs)",
        ours / reference,
        ours,
        reference,
        usize::from(RANGE.1 - RANGE.0) + 1
    );
}
