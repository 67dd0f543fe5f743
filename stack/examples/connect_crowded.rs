//! `connect-crowded`: the rate of `connect()` port searches when 95% of the
//! ephemeral range towards one peer is in use, with the lock-free pre-check
//! (`RcuFirst`) and with the lock taken for every candidate (`LockFirst`,
//! what Linux did before it added the same pre-check).
//!
//! `cargo run --release -p dpstack-stack --example connect_crowded [SECS]`
//! runs both modes alternately, three times each, on two threads (each
//! connects and closes in a loop, so the range stays 95% full), and prints
//! the rates and their ratio (`scripts/bench connect-crowded` reports it).

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

/// Connects per second over `secs` with `mode`.
fn run(mode: ConnectMode, secs: f64) -> f64 {
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
    let start = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(secs));
    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        let _ = worker.join();
    }
    done.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64()
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
    let (mut rcu, mut lock) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        rcu.push(run(ConnectMode::RcuFirst, secs));
        lock.push(run(ConnectMode::LockFirst, secs));
    }
    let (ours, reference) = (median(rcu), median(lock));
    println!(
        "connect-crowded ratio={:.2} ours={:.0} connects/s reference={:.0} connects/s \
         (ours: lock-free pre-check; reference: bucket lock for every candidate; \
         95% of {} ports in use, {THREADS} threads, median of 3 runs)",
        ours / reference,
        ours,
        reference,
        usize::from(RANGE.1 - RANGE.0) + 1
    );
}
