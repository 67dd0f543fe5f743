//! What the kernel request/response clients (`dpstack-kernel-udp rr`,
//! `dpstack-kernel-tcp rr`) share, so they measure as `dpstack-latency`
//! does: the options, the request (its sequence number in the first 8
//! bytes, then a fixed pattern), the warm-up and the run's end, and the
//! summary line and verdict of [`super::histogram`]. Included by both
//! apps with `#[path]`, beside `histogram.rs`.
//!
//! Per request: two clock reads (`std::time::Instant`, the vDSO), one
//! histogram increment, no allocation.

use super::histogram::{self, Histogram, Outcomes};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// Bytes of the sequence number at the start of every request.
pub const SEQ_BYTES: usize = 8;

/// The longest `--seconds` or `--warmup` (a day).
const MAX_SECONDS: f64 = 86_400.0;

/// The options of an `rr` client.
#[derive(Debug, clap::Args)]
pub struct RrArgs {
    /// The echo server (loopback, or with --namespaced an address in a
    /// namespace the caller made).
    #[arg(long)]
    pub target: SocketAddr,
    /// CPU to pin to.
    #[arg(long)]
    pub cpu: Option<usize>,
    /// Bytes of each request (and of its echo), at least 8.
    #[arg(long, default_value_t = 64)]
    pub size: usize,
    /// Seconds of measured requests (after the warm-up).
    #[arg(long, default_value_t = 5.0)]
    pub seconds: f64,
    /// Seconds of requests before the measured ones, not recorded.
    #[arg(long, default_value_t = 0.5)]
    pub warmup: f64,
    /// Milliseconds a UDP request waits for its echo before it is counted
    /// lost (TCP: how long an echo may take before the run fails).
    #[arg(long, value_name = "MS", default_value_t = 100)]
    pub timeout: u64,
    /// The target is in a network namespace the caller created.
    #[arg(long)]
    pub namespaced: bool,
}

impl RrArgs {
    /// Refuses a target off loopback without `--namespaced`, a size below
    /// the sequence number's or above `max`, and times out of range.
    pub fn check(&self, max: usize) -> Result<(), String> {
        if !self.target.ip().is_loopback() && !self.namespaced {
            return Err(
                "send to loopback, or pass --namespaced for a namespace you made".to_owned(),
            );
        }
        for (option, seconds) in [("--seconds", self.seconds), ("--warmup", self.warmup)] {
            if !(0.0..=MAX_SECONDS).contains(&seconds) {
                return Err(format!("{option} {seconds}: give 0 to {MAX_SECONDS}"));
            }
        }
        if !(SEQ_BYTES..=max).contains(&self.size) {
            return Err(format!("--size {}: give {SEQ_BYTES} to {max}", self.size));
        }
        Ok(())
    }

    /// The timeout.
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout.max(1))
    }
}

/// A run: its clock bounds, the request, the histogram and the outcomes.
pub struct Run {
    measure_from: Instant,
    end_at: Instant,
    /// The request: the sequence number, then the pattern.
    pub request: Vec<u8>,
    seq: u64,
    histogram: Histogram,
    /// What besides round trips happened.
    pub outcomes: Outcomes,
}

impl Run {
    /// A run starting now.
    pub fn new(args: &RrArgs) -> Run {
        let start = Instant::now();
        let measure_from = start + Duration::from_secs_f64(args.warmup);
        let mut request: Vec<u8> = (0..args.size).map(|i| (i * 7 + 11) as u8).collect();
        request[..SEQ_BYTES].fill(0);
        Run {
            measure_from,
            end_at: measure_from + Duration::from_secs_f64(args.seconds),
            request,
            seq: 0,
            histogram: Histogram::new(),
            outcomes: Outcomes::default(),
        }
    }

    /// Stamps the next request's sequence number and returns it with the
    /// time it leaves, or `None` once the run is over.
    #[inline]
    pub fn next(&mut self) -> Option<(u64, Instant)> {
        let now = Instant::now();
        if now >= self.end_at {
            return None;
        }
        self.seq += 1;
        self.request[..SEQ_BYTES].copy_from_slice(&self.seq.to_be_bytes());
        Some((self.seq, now))
    }

    /// Whether a request sent at `sent` is measured (past the warm-up).
    #[inline]
    pub fn measured(&self, sent: Instant) -> bool {
        sent >= self.measure_from
    }

    /// The echo of the request sent at `sent` came back now: record its
    /// round trip if it matched, else count the mismatch (if measured).
    #[inline]
    pub fn answered(&mut self, sent: Instant, echo: &[u8]) {
        let rtt = sent.elapsed();
        if !self.measured(sent) {
            return;
        }
        if echo == self.request.as_slice() {
            self.histogram
                .record(u64::try_from(rtt.as_nanos()).unwrap_or(u64::MAX));
        } else {
            self.outcomes.mismatched += 1;
        }
    }

    /// The request sent at `sent` got no echo in time.
    #[inline]
    pub fn lost(&mut self, sent: Instant) {
        if self.measured(sent) {
            self.outcomes.lost += 1;
        }
    }

    /// Prints the summary line; the run's verdict.
    pub fn finish(&self, proto: &str) -> Result<(), String> {
        println!(
            "{}",
            histogram::summary_line(proto, &self.histogram, self.outcomes)
        );
        histogram::verdict(&self.histogram, self.outcomes)
    }
}

/// The sequence number at the start of `echo`, if it is long enough.
#[inline]
pub fn seq_of(echo: &[u8]) -> Option<u64> {
    (echo.get(..SEQ_BYTES))
        .and_then(|b| b.try_into().ok())
        .map(u64::from_be_bytes)
}
