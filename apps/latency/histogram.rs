//! Round-trip times as a log-linear histogram, and the one summary line
//! every latency client prints (`dpstack-latency`, and the `rr` modes of
//! `dpstack-kernel-udp` and `dpstack-kernel-tcp`, which include this file
//! with `#[path]` so that all three count and print alike).
//!
//! Layout: values below [`SUB_BUCKETS`] nanoseconds have a bucket each;
//! above, every power of two is cut into [`SUB_BUCKETS`] equal buckets, so
//! a bucket is at most 1/128 (0.8%) of its values wide at any magnitude.
//! The buckets are allocated once, when the histogram is made: recording a
//! sample is a few shifts and one increment, with no allocation. The
//! minimum, maximum and sum are kept exactly; a percentile is the midpoint
//! of the bucket holding the sample of its rank, kept within [min, max].

/// Buckets per power of two (and the values below it, one each).
pub const SUB_BUCKETS: u64 = 128;

/// log2 of [`SUB_BUCKETS`].
const SUB_BITS: u32 = 7;

/// Buckets in all: the linear ones, then 128 for each power of two from
/// 2^7 to 2^63.
const BUCKETS: usize = (SUB_BUCKETS as usize) * (64 - SUB_BITS as usize + 1);

/// A histogram of nanosecond values.
pub struct Histogram {
    counts: Box<[u64]>,
    samples: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram::new()
    }
}

impl Histogram {
    /// An empty histogram (the one allocation it makes).
    pub fn new() -> Histogram {
        Histogram {
            counts: vec![0; BUCKETS].into_boxed_slice(),
            samples: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    /// Records one value (nanoseconds).
    #[inline]
    pub fn record(&mut self, nanos: u64) {
        self.counts[bucket_of(nanos)] += 1;
        self.samples += 1;
        self.sum += u128::from(nanos);
        self.min = self.min.min(nanos);
        self.max = self.max.max(nanos);
    }

    /// Values recorded.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// The smallest value recorded (0 if none).
    pub fn min(&self) -> u64 {
        if self.samples == 0 {
            0
        } else {
            self.min
        }
    }

    /// The largest value recorded (0 if none).
    pub fn max(&self) -> u64 {
        self.max
    }

    /// The mean of the values recorded (0 if none).
    pub fn mean(&self) -> f64 {
        if self.samples == 0 {
            0.0
        } else {
            self.sum as f64 / self.samples as f64
        }
    }

    /// The value at `quantile` (0 to 1): that of the sample of rank
    /// ceil(quantile * samples), to the bucket's precision (exact for the
    /// first and last ranks; 0 if none).
    pub fn quantile(&self, quantile: f64) -> u64 {
        if self.samples == 0 {
            return 0;
        }
        let rank = ((quantile.clamp(0.0, 1.0) * self.samples as f64).ceil() as u64).max(1);
        // The extremes are known exactly.
        if rank == 1 {
            return self.min;
        }
        if rank >= self.samples {
            return self.max;
        }
        let mut seen = 0;
        for (index, &count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                let (low, width) = bucket_range(index);
                return (low + width / 2).clamp(self.min, self.max);
            }
        }
        self.max
    }
}

/// The bucket of `value`.
#[inline]
fn bucket_of(value: u64) -> usize {
    if value < SUB_BUCKETS {
        return value as usize;
    }
    let magnitude = 63 - value.leading_zeros(); // at least SUB_BITS
    let shift = magnitude - SUB_BITS;
    // (value >> shift) is in SUB_BUCKETS..2 * SUB_BUCKETS.
    ((shift as u64 + 1) * SUB_BUCKETS + ((value >> shift) - SUB_BUCKETS)) as usize
}

/// The lowest value of bucket `index` and its width.
fn bucket_range(index: usize) -> (u64, u64) {
    let index = index as u64;
    if index < SUB_BUCKETS {
        return (index, 1);
    }
    let shift = index / SUB_BUCKETS - 1;
    let sub = index % SUB_BUCKETS;
    ((SUB_BUCKETS + sub) << shift, 1 << shift)
}

/// What a latency client counts besides the round trips.
#[derive(Debug, Default, Clone, Copy)]
pub struct Outcomes {
    /// Requests whose echo did not come back within the timeout.
    pub lost: u64,
    /// Echoes that came back after their request was counted lost (or
    /// answered nothing we asked).
    pub late: u64,
    /// Echoes of the request in flight whose bytes differed from it.
    pub mismatched: u64,
}

/// The summary line: `latency PROTO samples=N lost=L late=K mismatched=M
/// min_us=.. p50_us=.. p90_us=.. p99_us=.. p999_us=.. max_us=.. mean_us=..`
/// (microseconds, two decimals).
pub fn summary_line(proto: &str, histogram: &Histogram, outcomes: Outcomes) -> String {
    let us = |nanos: u64| nanos as f64 / 1000.0;
    format!(
        "latency {proto} samples={} lost={} late={} mismatched={} min_us={:.2} p50_us={:.2} \
         p90_us={:.2} p99_us={:.2} p999_us={:.2} max_us={:.2} mean_us={:.2}",
        histogram.samples(),
        outcomes.lost,
        outcomes.late,
        outcomes.mismatched,
        us(histogram.min()),
        us(histogram.quantile(0.50)),
        us(histogram.quantile(0.90)),
        us(histogram.quantile(0.99)),
        us(histogram.quantile(0.999)),
        us(histogram.max()),
        histogram.mean() / 1000.0,
    )
}

/// Why a latency client's run failed, if it did: no round trip measured,
/// or an echo that differed from its request.
pub fn verdict(histogram: &Histogram, outcomes: Outcomes) -> Result<(), String> {
    if outcomes.mismatched > 0 {
        return Err(format!(
            "{} echo(es) differed from their request",
            outcomes.mismatched
        ));
    }
    if histogram.samples() == 0 {
        return Err(format!(
            "no round trip measured ({} request(s) lost)",
            outcomes.lost
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_lands_in_a_bucket_that_holds_it() {
        let mut values: Vec<u64> = (0..5000).collect();
        values.extend((0..64).map(|bit| 1u64 << bit));
        values.extend((1..64).map(|bit| (1u64 << bit) - 1));
        values.extend([u64::MAX, 123_456_789, 999_999_999_999]);
        for value in values {
            let index = bucket_of(value);
            assert!(index < BUCKETS, "{value} -> bucket {index}");
            let (low, width) = bucket_range(index);
            assert!(
                low <= value && value - low < width,
                "{value} in bucket {index} = [{low}, +{width})"
            );
            // A bucket is at most 1/128 of its values wide.
            assert!(width == 1 || width <= low / (SUB_BUCKETS - 1), "{value}");
        }
    }

    #[test]
    fn buckets_are_ordered_and_contiguous() {
        let mut next = 0;
        for index in 0..BUCKETS {
            let (low, width) = bucket_range(index);
            assert_eq!(low, next, "bucket {index}");
            next = low.wrapping_add(width);
        }
        assert_eq!(next, 0, "the last bucket ends at 2^64");
    }

    #[test]
    fn percentiles_of_a_known_distribution() {
        let mut h = Histogram::new();
        // 1..=10,000 µs in nanoseconds: p50 is 5,000 µs, p99 9,900 µs.
        for us in 1..=10_000u64 {
            h.record(us * 1000);
        }
        let near = |got: u64, want: u64| {
            let error = (got as f64 - want as f64).abs() / want as f64;
            assert!(error < 0.008, "{got} against {want}");
        };
        near(h.quantile(0.5), 5_000_000);
        near(h.quantile(0.99), 9_900_000);
        near(h.quantile(0.999), 9_990_000);
        assert_eq!(h.quantile(1.0), 10_000_000);
        assert_eq!(h.quantile(0.0), 1000);
        assert_eq!((h.min(), h.max(), h.samples()), (1000, 10_000_000, 10_000));
        assert!((h.mean() - 5_000_500.0).abs() < 1e-6);
    }

    #[test]
    fn a_tail_shows_in_the_high_percentiles_only() {
        let mut h = Histogram::new();
        for _ in 0..9_980 {
            h.record(3_000);
        }
        for _ in 0..20 {
            h.record(80_000);
        }
        assert!(h.quantile(0.5) <= 3_020 && h.quantile(0.99) <= 3_020);
        assert!(h.quantile(0.999) >= 79_000, "{}", h.quantile(0.999));
        assert_eq!(h.max(), 80_000);
    }

    #[test]
    fn the_summary_line_parses_back() {
        let mut h = Histogram::new();
        for v in [2_000, 3_000, 4_000, 100_000] {
            h.record(v);
        }
        let outcomes = Outcomes {
            lost: 2,
            late: 1,
            mismatched: 0,
        };
        let line = summary_line("udp", &h, outcomes);
        assert!(line.starts_with("latency udp samples=4 lost=2 late=1 mismatched=0 "));
        let field = |name: &str| -> f64 {
            let key = format!("{name}=");
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(key.as_str()))
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("no {name} in {line}"))
        };
        assert_eq!(field("min_us"), 2.0);
        assert_eq!(field("max_us"), 100.0);
        assert!(field("p50_us") <= field("p99_us") && field("p99_us") <= field("max_us"));
        assert_eq!(field("mean_us"), 27.25);
        assert!(verdict(&h, outcomes).is_ok());
    }

    #[test]
    fn no_sample_or_a_mismatch_fails_the_run() {
        let empty = Histogram::new();
        assert_eq!(empty.quantile(0.99), 0);
        assert!(verdict(&empty, Outcomes::default()).is_err());
        let mut h = Histogram::new();
        h.record(5);
        let mismatched = Outcomes {
            mismatched: 1,
            ..Outcomes::default()
        };
        assert!(verdict(&h, mismatched).is_err());
    }
}
