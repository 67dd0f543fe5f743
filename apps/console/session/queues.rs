//! Multi-queue operations of the session: queue counts (`port config all
//! rxq|txq N`), queue facts and counters, and RSS at run time (hash types,
//! key, redirection table), each returning testpmd's text.

use super::{with_rss, Session};
use dpstack::ethdev::{QueueInfo, RssConfig};
use dpstack::sys;
use std::fmt::Write;

/// `port config all rss TYPE`: testpmd's names for common hash types.
pub const RSS_TYPES: &[&str] = &["all", "default", "ip", "tcp", "udp", "none"];

fn rss_bits(name: &str) -> u64 {
    match name {
        "all" => sys::RTE_ETH_RSS_IP | sys::RTE_ETH_RSS_TCP | sys::RTE_ETH_RSS_UDP,
        "default" | "ip" => sys::RTE_ETH_RSS_IP,
        "tcp" => sys::RTE_ETH_RSS_TCP,
        "udp" => sys::RTE_ETH_RSS_UDP,
        _ => 0,
    }
}

fn on_off(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        "off"
    }
}

impl Session {
    /// `port config all rxq|txq N`: every port is configured anew with the
    /// new counts (ports must be stopped, as testpmd requires) and stays
    /// stopped until `port start`.
    pub fn configure_queues(&mut self, rx: Option<u16>, tx: Option<u16>) -> Result<String, String> {
        if self.is_forwarding() {
            return Err("Please stop forwarding first".into());
        }
        if self.ports.iter().any(|p| p.is_started()) {
            return Err("Please stop all ports first".into());
        }
        let mut config = self.port_config.clone();
        config.rx_queues = rx.unwrap_or(config.rx_queues);
        config.tx_queues = tx.unwrap_or(config.tx_queues);
        if !(1..=64).contains(&config.rx_queues) || !(1..=64).contains(&config.tx_queues) {
            return Err("a port takes 1 to 64 queues each way".into());
        }
        let mut out = String::new();
        for port in &mut self.ports {
            let (port_config, note) = with_rss(&config, &self.rss, port.id());
            if let Some(note) = note {
                let _ = writeln!(out, "{note}");
            }
            port.reconfigure(&port_config).map_err(|e| e.to_string())?;
        }
        self.port_config = config;
        Ok(out)
    }

    /// `show rxq|txq info PORT QUEUE` for the port at `index`.
    pub fn show_queue_info(&self, index: usize, queue: u16, rx: bool) -> String {
        let port = &self.ports[index];
        let (kind, facts) = if rx {
            ("RX", port.rx_queue_info(queue))
        } else {
            ("TX", port.tx_queue_info(queue))
        };
        let info: QueueInfo = match facts {
            Ok(info) => info,
            Err(e) => {
                return format!(
                    "Failed to retrieve information for port: {}, {kind} queue: {queue}\nerror \
                     desc: {e}\n",
                    port.id()
                )
            }
        };
        let mut out = format!(
            "\n********************* Infos for port {} , {kind} queue {queue}  *********************\n",
            port.id()
        );
        if rx {
            let _ = writeln!(out, "Mempool: {}", port.pool().name());
        }
        let (p, h, w) = info.thresholds;
        let _ = writeln!(out, "{kind} prefetch threshold: {p}");
        let _ = writeln!(out, "{kind} host threshold: {h}");
        let _ = writeln!(out, "{kind} writeback threshold: {w}");
        let _ = writeln!(out, "{kind} free threshold: {}", info.free_threshold);
        if rx {
            let _ = writeln!(out, "RX drop packets: {}", on_off(info.drop_when_full));
        } else {
            let _ = writeln!(out, "TX RS threshold: {}", info.rs_threshold);
        }
        let _ = writeln!(
            out,
            "{kind} deferred start: {}",
            on_off(info.deferred_start)
        );
        if rx {
            let _ = writeln!(out, "RX scattered packets: {}", on_off(info.scattered));
        }
        let state = if info.started { "started" } else { "stopped" };
        let _ = writeln!(out, "{kind} queue state: {state}");
        let _ = writeln!(out, "Number of {kind}Ds: {}", info.descriptors);
        out
    }

    /// `show port N queue-stats`: each queue's packets and bytes.
    pub fn show_queue_stats(&self, indexes: &[usize]) -> Result<String, String> {
        let mut out = String::new();
        for &i in indexes {
            let port = &self.ports[i];
            let stats = port.queue_stats().map_err(|e| e.to_string())?;
            let _ = writeln!(
                out,
                "\n  ######## Queue statistics for port {} ########",
                port.id()
            );
            for (q, s) in stats.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "  Queue {q:2}: RX-packets: {:<12} RX-bytes: {:<14} RX-errors: {:<10} \
                     TX-packets: {:<12} TX-bytes: {}",
                    s.rx_packets, s.rx_bytes, s.rx_errors, s.tx_packets, s.tx_bytes
                );
            }
        }
        Ok(out)
    }

    /// `show port N rss reta`: every entry of the redirection table, as
    /// testpmd prints the entries a mask selects.
    pub fn show_reta(&self, index: usize) -> String {
        let port = &self.ports[index];
        match port.rss_reta() {
            Ok(table) => table
                .iter()
                .enumerate()
                .map(|(i, q)| format!("RSS RETA configuration: hash index={i}, queue={q}\n"))
                .collect(),
            Err(e) => format!("{e}\n"),
        }
    }

    /// `show port N rss reta SIZE (MASK0[,MASK1]*)`: the entries whose bit
    /// is set in the masks (64 entries a mask, as testpmd); SIZE must be the
    /// table's.
    pub fn show_reta_masked(&self, index: usize, size: u16, masks: &str) -> Result<String, String> {
        let table = self.ports[index].rss_reta().map_err(|e| e.to_string())?;
        if usize::from(size) != table.len() {
            return Err(format!(
                "Invalid redirection table size {size}: port {} has {} entries",
                self.ports[index].id(),
                table.len()
            ));
        }
        let masks = parse_masks(masks)?;
        Ok(table
            .iter()
            .enumerate()
            .filter(|(i, _)| masks.get(i / 64).is_some_and(|m| m >> (i % 64) & 1 == 1))
            .map(|(i, q)| format!("RSS RETA configuration: hash index={i}, queue={q}\n"))
            .collect())
    }

    /// `port config N rss reta (entry,queue)[,(entry,queue)]`.
    pub fn set_reta(&self, index: usize, pairs: &str) -> Result<String, String> {
        let entries = parse_reta_pairs(pairs)?;
        self.ports[index]
            .set_rss_reta(&entries)
            .map(|()| String::new())
            .map_err(|e| e.to_string())
    }

    /// `port config all rss TYPE`: the hash types of every port with RSS.
    pub fn set_rss_types(&mut self, name: &str) -> String {
        let hash_types = rss_bits(name);
        self.rss.hash_types = hash_types;
        let mut out = String::new();
        for port in &self.ports {
            let result = if hash_types == 0 {
                port.disable_rss()
            } else {
                port.set_rss_hash(&RssConfig {
                    hash_types,
                    key: None,
                })
            };
            if let Err(e) = result {
                let _ = writeln!(out, "Port {}: {e}", port.id());
            }
        }
        out
    }

    /// `port config N rss-hash-key TYPE HEX`: the key (and hash types).
    pub fn set_rss_key(&mut self, index: usize, name: &str, hex: &str) -> Result<String, String> {
        let key = parse_hex(hex)?;
        let rss = RssConfig {
            hash_types: rss_bits(name),
            key: Some(key.clone()),
        };
        self.ports[index]
            .set_rss_hash(&rss)
            .map_err(|e| e.to_string())?;
        self.rss.key = Some(key);
        Ok(String::new())
    }
}

/// `(0,1),(5,0)` into entry/queue pairs.
fn parse_reta_pairs(text: &str) -> Result<Vec<(u16, u16)>, String> {
    let bad = || {
        format!("bad redirection table entries {text:?}: expected (entry,queue)[,(entry,queue)]")
    };
    let mut pairs = Vec::new();
    for pair in text.split("),") {
        let inner = pair.trim_start_matches('(').trim_end_matches(')');
        let (entry, queue) = inner.split_once(',').ok_or_else(bad)?;
        pairs.push((
            entry.trim().parse().map_err(|_| bad())?,
            queue.trim().parse().map_err(|_| bad())?,
        ));
    }
    Ok(pairs)
}

/// `(0xffff,0x0f)` or `0xffff,0x0f` into 64-bit masks.
fn parse_masks(text: &str) -> Result<Vec<u64>, String> {
    text.trim_start_matches('(')
        .trim_end_matches(')')
        .split(',')
        .map(|m| {
            let m = m.trim();
            let hex = m
                .strip_prefix("0x")
                .or_else(|| m.strip_prefix("0X"))
                .unwrap_or(m);
            u64::from_str_radix(hex, 16).map_err(|_| format!("bad mask {m:?}: expected 64-bit hex"))
        })
        .collect()
}

/// A hex string into bytes.
fn parse_hex(text: &str) -> Result<Vec<u8>, String> {
    if text.len() % 2 != 0 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!(
            "bad RSS key {text:?}: expected hex digits, two per byte"
        ));
    }
    Ok((0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("checked hex"))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reta_pairs_and_keys_parse_or_say_why_not() {
        assert_eq!(parse_reta_pairs("(0,1),(5,0)"), Ok(vec![(0, 1), (5, 0)]));
        assert_eq!(parse_reta_pairs("(7,1)"), Ok(vec![(7, 1)]));
        assert!(parse_reta_pairs("(7;1)").is_err());
        assert!(parse_reta_pairs("(x,1)").is_err());
        assert_eq!(parse_hex("6d5aFF"), Ok(vec![0x6d, 0x5a, 0xff]));
        assert_eq!(
            parse_masks("(0x3,0xffffffffffffffff)"),
            Ok(vec![3, u64::MAX])
        );
        assert!(parse_masks("(0xg)").is_err());
        assert!(parse_hex("6d5").is_err());
        assert!(parse_hex("zz").is_err());
    }
}
