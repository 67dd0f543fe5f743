//! What a [`FaultPort`](super::FaultPort) injects: the [`FaultSpec`] parsed
//! from the apps' `--faults` option, and the [`FaultCounts`] it reports.
//! Setup code only (parsing, formatting); nothing here runs per packet
//! except the counters' relaxed increments.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Which way faults apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Received packets only.
    Rx,
    /// Transmitted packets only.
    Tx,
    /// Both ways.
    Both,
}

/// What to inject. Probabilities are per packet, in `0.0..=1.0`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FaultSpec {
    /// Chance a packet is dropped.
    pub drop: f64,
    /// Chance a packet is sent (or received) twice.
    pub duplicate: f64,
    /// Chance a packet is held back until a later packet of the same
    /// direction has passed it (or, if traffic stops, for
    /// [`REORDER_IDLE_POLLS`](super::REORDER_IDLE_POLLS) polls).
    pub reorder: f64,
    /// Every packet waits this long (zero: no delay).
    pub delay: Duration,
    /// The generator's seed (same seed, same faults for the same traffic).
    pub seed: u64,
    /// Where faults apply.
    pub direction: Direction,
}

impl Default for FaultSpec {
    fn default() -> FaultSpec {
        FaultSpec {
            drop: 0.0,
            duplicate: 0.0,
            reorder: 0.0,
            delay: Duration::ZERO,
            seed: 1,
            direction: Direction::Both,
        }
    }
}

impl FaultSpec {
    /// True if faults apply to received packets.
    pub fn applies_to_rx(&self) -> bool {
        matches!(self.direction, Direction::Rx | Direction::Both)
    }

    /// True if faults apply to transmitted packets.
    pub fn applies_to_tx(&self) -> bool {
        matches!(self.direction, Direction::Tx | Direction::Both)
    }
}

impl core::str::FromStr for FaultSpec {
    type Err = String;

    /// `drop=P,dup=P,reorder=P,delay=Nms|Nus,seed=N,dir=rx|tx|both`, any
    /// subset, in any order.
    fn from_str(text: &str) -> Result<FaultSpec, String> {
        let mut spec = FaultSpec::default();
        for item in text.split(',').filter(|i| !i.is_empty()) {
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| format!("'{item}' is not KEY=VALUE (e.g. drop=0.01)"))?;
            let chance = || -> Result<f64, String> {
                match value.parse::<f64>() {
                    Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
                    _ => Err(format!("{key}={value}: give a probability from 0 to 1")),
                }
            };
            match key {
                "drop" => spec.drop = chance()?,
                "dup" | "duplicate" => spec.duplicate = chance()?,
                "reorder" => spec.reorder = chance()?,
                "delay" => spec.delay = parse_duration(value)?,
                "seed" => {
                    spec.seed = value
                        .parse()
                        .map_err(|_| format!("seed={value}: give a number"))?;
                }
                "dir" => {
                    spec.direction = match value {
                        "rx" => Direction::Rx,
                        "tx" => Direction::Tx,
                        "both" => Direction::Both,
                        _ => return Err(format!("dir={value}: give rx, tx or both")),
                    };
                }
                _ => {
                    return Err(format!(
                        "unknown fault '{key}': use drop, dup, reorder, delay, seed, dir"
                    ))
                }
            }
        }
        if spec.drop + spec.duplicate + spec.reorder > 1.0 {
            return Err("drop + dup + reorder must not exceed 1".into());
        }
        Ok(spec)
    }
}

fn parse_duration(value: &str) -> Result<Duration, String> {
    let bad = || format!("delay={value}: give a time like 500us or 2ms");
    if let Some(n) = value.strip_suffix("us") {
        return n.parse().map(Duration::from_micros).map_err(|_| bad());
    }
    if let Some(n) = value.strip_suffix("ms") {
        return n.parse().map(Duration::from_millis).map_err(|_| bad());
    }
    Err(bad())
}

/// What was injected so far (readable from any thread).
#[derive(Debug, Default)]
pub struct FaultCounts {
    /// Packets dropped: by the dice, past the held bound, or refused by the
    /// device with the held queue full.
    pub dropped: AtomicU64,
    /// Extra copies made.
    pub duplicated: AtomicU64,
    /// Packets held behind later ones.
    pub reordered: AtomicU64,
    /// Packets delayed.
    pub delayed: AtomicU64,
}

impl FaultCounts {
    pub(super) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// "dropped N duplicated N reordered N delayed N".
    pub fn summary(&self) -> String {
        format!(
            "dropped {} duplicated {} reordered {} delayed {}",
            self.dropped.load(Ordering::Relaxed),
            self.duplicated.load(Ordering::Relaxed),
            self.reordered.load(Ordering::Relaxed),
            self.delayed.load(Ordering::Relaxed)
        )
    }
}
