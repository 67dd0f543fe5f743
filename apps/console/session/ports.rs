//! Port-level operations of the session: statistics, information, start,
//! stop, close, promiscuous mode, link up/down, RSS configuration. Each takes indexes into the session's
//! port list (see [`Session::select`]) and returns testpmd's text.

use super::Session;
use crate::display;
use crate::display::port_info::PortFacts;
use crate::display::rss;
use dpstack::ethdev::{device_capability_name, EthPort};
use dpstack::DpdkError;
use std::fmt::Write;
use std::time::Instant;

/// DPDK's reason for a failed port call ("Operation not supported"), or
/// the whole message for other errors.
fn reason(error: &DpdkError) -> String {
    match error {
        DpdkError::Port { reason, .. } => reason.clone(),
        other => other.to_string(),
    }
}

impl Session {
    /// `show port stats` for the ports at `indexes`.
    pub fn show_port_stats(&mut self, indexes: &[usize]) -> Result<String, String> {
        let mut out = String::new();
        for &i in indexes {
            let port = &self.ports[i];
            let stats = port.stats().map_err(|e| e.to_string())?;
            let rates = self
                .throughput
                .update(usize::from(port.id()), Instant::now(), stats);
            out.push_str(&display::port_stats(port.id(), &stats, &rates));
        }
        Ok(out)
    }

    /// `clear port stats` for the ports at `indexes`.
    pub fn clear_port_stats(&mut self, indexes: &[usize]) -> Result<String, String> {
        let mut out = String::new();
        for &i in indexes {
            let id = self.ports[i].id();
            self.ports[i].reset_stats().map_err(|e| e.to_string())?;
            self.throughput.forget(usize::from(id));
            let _ = writeln!(out, "\n  NIC statistics for port {id} cleared");
        }
        Ok(out)
    }

    /// `show port xstats` for the ports at `indexes`.
    pub fn show_port_xstats(&self, indexes: &[usize]) -> Result<String, String> {
        let mut out = String::new();
        for &i in indexes {
            let port = &self.ports[i];
            let _ = writeln!(
                out,
                "###### NIC extended statistics for port {:<2}",
                port.id()
            );
            for x in port.xstats().map_err(|e| e.to_string())? {
                let _ = writeln!(out, "{}: {}", x.name, x.value);
            }
        }
        Ok(out)
    }

    /// `show port summary` for the ports at `indexes`.
    pub fn show_port_summary(&self, indexes: &[usize]) -> Result<String, String> {
        let mut out = format!("Number of available ports: {}\n", self.ports.len());
        let _ = writeln!(
            out,
            "{:<4} {:<17} {:<12} {:<14} {:<8} Link",
            "Port", "MAC Address", "Name", "Driver", "Status"
        );
        for &i in indexes {
            let p = &self.ports[i];
            let info = p.info().map_err(|e| e.to_string())?;
            let link = p.link().map_err(|e| e.to_string())?;
            let _ = writeln!(
                out,
                "{:<4} {} {:<12} {:<14} {:<8} {}",
                p.id(),
                p.mac(),
                info.name,
                info.driver,
                if link.up { "up" } else { "down" },
                link.speed_text()
            );
        }
        Ok(out)
    }

    /// `show port info` for the ports at `indexes`.
    pub fn show_port_info(&self, indexes: &[usize]) -> Result<String, String> {
        let mut out = String::new();
        for &i in indexes {
            let p = &self.ports[i];
            let info = p.info().map_err(|e| e.to_string())?;
            let link = p.link().map_err(|e| e.to_string())?;
            let settings = p.settings().map_err(|e| e.to_string())?;
            let facts = PortFacts {
                port: p.id(),
                mac: p.mac(),
                info: &info,
                settings: &settings,
                link: &link,
                promiscuous: p.promiscuous(),
            };
            out.push_str(&display::port_info(&facts, device_capability_name));
        }
        Ok(out)
    }

    /// `port start`: starts the stopped ones among the ports at `indexes`.
    pub fn start_ports(&mut self, indexes: &[usize]) -> String {
        let mut out = String::new();
        let mut started = 0;
        let mut tried = 0;
        for &i in indexes {
            let p = &self.ports[i];
            if p.is_started() {
                let _ = writeln!(out, "Port {} is now not stopped", p.id());
                continue;
            }
            tried += 1;
            match p.start() {
                Ok(()) => {
                    started += 1;
                    let _ = writeln!(out, "Port {}: {}", p.id(), p.mac());
                }
                Err(e) => {
                    let _ = writeln!(out, "Fail to start port {}: {}", p.id(), reason(&e));
                }
            }
        }
        if started > 0 {
            out.push_str("Checking link statuses...\nDone\n");
        } else if tried == 0 {
            out.push_str("Please stop the ports first\n");
        }
        out
    }

    /// `port stop`: stops the started ones among the ports at `indexes`,
    /// unless they are forwarding.
    pub fn stop_ports(&mut self, indexes: &[usize]) -> String {
        let mut out = String::from("Stopping ports...\n");
        let mut stopped = 0;
        for &i in indexes {
            let p = &self.ports[i];
            if self.is_forwarding() {
                let _ = writeln!(
                    out,
                    "Port {} is forwarding: stop forwarding first (stop)",
                    p.id()
                );
                continue;
            }
            if !p.is_started() {
                continue;
            }
            match p.stop() {
                Ok(()) => stopped += 1,
                Err(e) => {
                    let _ = writeln!(out, "Fail to stop port {}: {}", p.id(), reason(&e));
                }
            }
        }
        if stopped > 0 {
            out.push_str("Checking link statuses...\n");
        }
        out.push_str("Done\n");
        out
    }

    /// `port close`: closes the stopped ones among the ports at `indexes`;
    /// they leave the port list.
    pub fn close_ports(&mut self, indexes: &[usize]) -> String {
        let mut out = String::from("Closing ports...\n");
        let mut closing: Vec<usize> = Vec::new();
        for &i in indexes {
            let id = self.ports[i].id();
            if self.ports[i].is_started() {
                let _ = writeln!(
                    out,
                    "Cannot close started device (port {id}): stop it first (port stop {id})"
                );
            } else {
                closing.push(i);
            }
        }
        let mut closed: Vec<EthPort> = Vec::new();
        for &i in closing.iter().rev() {
            self.peers.remove(i);
            closed.push(self.ports.remove(i));
        }
        for port in closed.into_iter().rev() {
            let id = port.id();
            self.throughput.forget(usize::from(id));
            drop(port);
            let _ = writeln!(out, "Port {id} is closed");
        }
        out.push_str("Done\n");
        out
    }

    /// `show port N rss-hash [key]` for the port at `index`, with testpmd's
    /// messages for devices without RSS.
    pub fn show_rss_hash(&self, index: usize, show_key: bool) -> String {
        let port = &self.ports[index];
        match port.info() {
            Ok(info) if info.hash_key_size == 0 || info.hash_key_size > rss::MAX_KEY => {
                return format!("{}\n", rss::NO_KEY_SIZE);
            }
            Ok(_) => {}
            Err(e) => return format!("{e}\n"),
        }
        match port.rss_hash_conf() {
            Ok(conf) => rss::rss_hash(conf.rss_hf, show_key.then_some(conf.key.as_slice())),
            Err(DpdkError::Port { errno, .. }) => rss::rss_error(port.id(), errno),
            Err(e) => format!("{e}\n"),
        }
    }

    /// `set link-up|link-down port N` for the port at `index`: silent on
    /// success, testpmd's message on failure.
    pub fn set_link(&self, index: usize, up: bool) -> String {
        let port = &self.ports[index];
        let done = if up {
            port.set_link_up()
        } else {
            port.set_link_down()
        };
        match done {
            Ok(()) => String::new(),
            Err(_) => format!("\nSet link {} fail.\n", if up { "up" } else { "down" }),
        }
    }

    /// `set promisc`: turns promiscuous mode on or off on the ports at
    /// `indexes`; prints only failures, as testpmd.
    pub fn set_promiscuous(&mut self, indexes: &[usize], on: bool) -> String {
        let mut out = String::new();
        for &i in indexes {
            let p = &self.ports[i];
            if let Err(e) = p.set_promiscuous(on) {
                let _ = writeln!(
                    out,
                    "Error during {} promiscuous mode for port {}: {}",
                    if on { "enabling" } else { "disabling" },
                    p.id(),
                    reason(&e)
                );
            }
        }
        out
    }
}
