//! The client's `-J` document, with iperf3 3.12's key layout: `start`
//! (connections, cookie, test parameters), `intervals` (per stream and
//! summed), `end` (per-stream sender/receiver figures, `sum_sent`,
//! `sum_received`, CPU use of both hosts).

use crate::client::Client;
use crate::proto::{Results, StreamResults};
use crate::report::percent;
use serde_json::{json, Value};

/// The whole document for a finished test.
pub fn document(client: &Client, ours: &Results, theirs: &Results) -> Value {
    let test = &client.test;
    let p = &test.params;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let start = json!({
        "connected": client.connected(),
        "version": concat!("dpstack-iperf ", env!("CARGO_PKG_VERSION")),
        "system_info": "dpstack (userspace TCP/IP on DPDK)",
        "timestamp": {"timesecs": now},
        "connecting_to": {"host": client.server().ip().to_string(), "port": client.server().port()},
        "cookie": client.cookie(),
        "tcp_mss_default": client.control_mss(),
        "target_bitrate": p.bandwidth,
        "sock_bufsize": 0,
        "sndbuf_actual": client.buffers().0,
        "rcvbuf_actual": client.buffers().1,
        "test_start": {
            "protocol": if p.udp { "UDP" } else { "TCP" },
            "num_streams": p.parallel, "blksize": p.block_len(), "omit": p.omit,
            "duration": p.time, "bytes": p.num, "blocks": p.blockcount,
            "reverse": u8::from(p.reverse), "tos": 0, "target_bitrate": p.bandwidth,
        },
    });
    let mut streams = Vec::new();
    let mut sum_sent = Sums::default();
    let mut sum_received = Sums::default();
    for (stream, mine) in test.streams.iter().zip(&ours.streams) {
        let remote = theirs.streams.iter().find(|r| r.id == stream.id);
        let (sent, received) = if stream.sender {
            (Some(mine), remote)
        } else {
            (remote, Some(mine))
        };
        if p.udp {
            // iperf3 reports one UDP object per stream: the receiver's view
            // of loss and jitter with the sender's byte count.
            let r = received.or(sent).cloned().unwrap_or_default();
            let s = sent.cloned().unwrap_or_default();
            // Out-of-order datagrams are counted where they arrive and not
            // exchanged: ours when we receive, 0 when we send (as iperf3).
            let late = if stream.sender {
                0
            } else {
                stream.total().out_of_order
            };
            let mut udp = udp_figures(stream.id, &s, &r, stream.sender);
            udp["out_of_order"] = json!(late);
            streams.push(json!({ "udp": udp }));
        } else {
            let entry = |r: Option<&StreamResults>, sender: bool| {
                r.map(|r| {
                    let mut v = figures(stream.id, r, stream.sender);
                    if sender && r.retransmits >= 0 {
                        v["retransmits"] = json!(r.retransmits);
                    }
                    v
                })
            };
            streams.push(json!({"sender": entry(sent, true), "receiver": entry(received, false)}));
        }
        if let Some(s) = sent {
            sum_sent.add(s);
        }
        if let Some(r) = received {
            sum_received.add(r);
        }
    }
    let mut end = json!({
        "streams": streams,
        "sum_sent": sum_sent.value(true, p.udp),
        "sum_received": sum_received.value(false, p.udp),
        "cpu_utilization_percent": {
            "host_total": ours.cpu_util_total, "host_user": ours.cpu_util_user,
            "host_system": ours.cpu_util_system, "remote_total": theirs.cpu_util_total,
            "remote_user": theirs.cpu_util_user, "remote_system": theirs.cpu_util_system,
        },
    });
    if p.udp {
        end["sum"] = sum_received.value(false, true);
    } else {
        end["sender_tcp_congestion"] = json!("newreno");
        end["receiver_tcp_congestion"] = json!("newreno");
    }
    json!({"start": start, "intervals": test.reporter.intervals, "end": end})
}

fn figures(id: u32, r: &StreamResults, sender: bool) -> Value {
    let seconds = r.end_time.max(1e-9);
    json!({
        "socket": id, "start": 0, "end": r.end_time, "seconds": r.end_time, "bytes": r.bytes,
        "bits_per_second": r.bytes as f64 * 8.0 / seconds, "sender": sender,
    })
}

fn udp_figures(id: u32, sent: &StreamResults, received: &StreamResults, sender: bool) -> Value {
    let seconds = sent.end_time.max(received.end_time).max(1e-9);
    json!({
        "socket": id, "start": 0, "end": seconds, "seconds": seconds, "bytes": sent.bytes,
        "bits_per_second": sent.bytes as f64 * 8.0 / seconds,
        "jitter_ms": received.jitter * 1000.0, "lost_packets": received.errors,
        "packets": received.packets.max(sent.packets),
        "lost_percent": percent(received.errors, received.packets.max(sent.packets)),
        "sender": sender,
    })
}

#[derive(Default)]
struct Sums {
    bytes: u64,
    seconds: f64,
    retransmits: i64,
    lost: i64,
    packets: i64,
    jitter: f64,
}

impl Sums {
    fn add(&mut self, r: &StreamResults) {
        self.bytes += r.bytes;
        self.seconds = self.seconds.max(r.end_time);
        self.retransmits += r.retransmits.max(0);
        self.lost += r.errors.max(0);
        self.packets += r.packets.max(0);
        self.jitter = self.jitter.max(r.jitter);
    }

    fn value(&self, sender: bool, udp: bool) -> Value {
        let seconds = self.seconds.max(1e-9);
        let mut v = json!({
            "start": 0, "end": self.seconds, "seconds": self.seconds, "bytes": self.bytes,
            "bits_per_second": self.bytes as f64 * 8.0 / seconds, "sender": sender,
        });
        if udp {
            v["jitter_ms"] = json!(self.jitter * 1000.0);
            v["lost_packets"] = json!(self.lost);
            v["packets"] = json!(self.packets);
            v["lost_percent"] = json!(percent(self.lost, self.packets));
        } else if sender {
            v["retransmits"] = json!(self.retransmits);
        }
        v
    }
}
