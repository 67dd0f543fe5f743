//! `ping ADDR [count N]` on the stack lcore: one echo request a second
//! (56 data bytes, as Linux's ping), each reply matched by identifier and
//! sequence number, and Linux ping's lines and summary as the result.
//!
//! The run ends when every request got its reply, or [`WAIT`] after the
//! last request; only then is its text handed back to the console.

use dpstack::stack::iface::EchoReply;
use dpstack::stack::time::{Duration, Instant};
use std::fmt::Write;
use std::net::IpAddr;

/// Time between requests (Linux's default).
pub const INTERVAL: Duration = Duration::from_secs(1);

/// How long to wait for replies after the last request.
pub const WAIT: Duration = Duration::from_secs(1);

/// The payload of every request: Linux's 56 data bytes.
pub const DATA: [u8; 56] = {
    let mut data = [0u8; 56];
    let mut i = 0;
    while i < data.len() {
        data[i] = 0x10 + i as u8;
        i += 1;
    }
    data
};

/// One ping run. See the module documentation.
#[derive(Debug)]
pub struct PingRun {
    dst: IpAddr,
    /// The identifier of its requests.
    pub ident: u16,
    count: u16,
    /// When each request left (index: sequence number - 1), and whether
    /// it was answered.
    sent_at: Vec<(Instant, bool)>,
    /// Round-trip times of the replies, in nanoseconds.
    rtts: Vec<u64>,
    text: String,
}

impl PingRun {
    /// A run of `count` requests to `dst` with identifier `ident`.
    pub fn new(dst: IpAddr, ident: u16, count: u16) -> PingRun {
        let text = match dst {
            IpAddr::V4(_) => format!(
                "PING {dst} ({dst}) {}({}) bytes of data.\n",
                DATA.len(),
                DATA.len() + 28
            ),
            IpAddr::V6(_) => format!("PING {dst}({dst}) {} data bytes\n", DATA.len()),
        };
        PingRun {
            dst,
            ident,
            count: count.max(1),
            sent_at: Vec::with_capacity(usize::from(count.max(1))),
            rtts: Vec::new(),
            text,
        }
    }

    /// The destination.
    pub fn dst(&self) -> IpAddr {
        self.dst
    }

    /// The sequence number of the request due at `now`, if one is.
    pub fn due(&self, now: Instant) -> Option<u16> {
        let sent = self.sent_at.len();
        let time = (self.sent_at.last()).is_none_or(|&(last, _)| now >= last + INTERVAL);
        (sent < usize::from(self.count) && time).then_some(sent as u16 + 1)
    }

    /// Notes that request `seq` left at `now` (or was lost on the way).
    pub fn sent(&mut self, now: Instant) {
        self.sent_at.push((now, false));
    }

    /// A reply that arrived at `now`: a line, if it answers one of our
    /// requests for the first time (duplicates are ignored).
    pub fn on_reply(&mut self, reply: &EchoReply, now: Instant) {
        let index = usize::from(reply.seq).wrapping_sub(1);
        let Some((at, answered)) = self.sent_at.get_mut(index) else {
            return;
        };
        if reply.ident != self.ident || reply.src != self.dst || *answered {
            return;
        }
        *answered = true;
        let at = *at;
        let rtt = now.saturating_duration_since(at).as_nanos() as u64;
        self.rtts.push(rtt);
        let _ = writeln!(
            self.text,
            "{} bytes from {}: icmp_seq={} ttl={} time={}",
            reply.len,
            reply.src,
            reply.seq,
            reply.ttl,
            millis(rtt)
        );
    }

    /// True once every request was answered, or [`WAIT`] after the last.
    pub fn finished(&self, now: Instant) -> bool {
        let all_sent = self.sent_at.len() == usize::from(self.count);
        let answered = self.rtts.len() >= self.sent_at.len();
        let waited = (self.sent_at.last()).is_some_and(|&(last, _)| now >= last + WAIT);
        all_sent && (answered || waited)
    }

    /// The lines so far and Linux ping's summary, as of `now`.
    pub fn report(mut self, now: Instant) -> String {
        let sent = self.sent_at.len();
        let received = self.rtts.len().min(sent);
        let loss = ((sent - received) * 100).checked_div(sent).unwrap_or(0);
        let elapsed = match self.sent_at.first() {
            Some(&(first, _)) => now.saturating_duration_since(first).as_millis(),
            None => 0,
        };
        let _ = write!(
            self.text,
            "\n--- {} ping statistics ---\n{sent} packets transmitted, {received} received, \
             {loss}% packet loss, time {elapsed}ms\n",
            self.dst
        );
        if received > 0 {
            let n = self.rtts.len() as f64;
            let ms: Vec<f64> = self.rtts.iter().map(|&r| r as f64 / 1e6).collect();
            let min = ms.iter().copied().fold(f64::INFINITY, f64::min);
            let max = ms.iter().copied().fold(0.0, f64::max);
            let avg = ms.iter().sum::<f64>() / n;
            let mdev = (ms.iter().map(|m| (m - avg) * (m - avg)).sum::<f64>() / n).sqrt();
            let _ = writeln!(
                self.text,
                "rtt min/avg/max/mdev = {min:.3}/{avg:.3}/{max:.3}/{mdev:.3} ms"
            );
        }
        self.text
    }
}

/// A round-trip time as Linux's ping writes it: three significant figures
/// below 100 ms.
fn millis(nanos: u64) -> String {
    let ms = nanos as f64 / 1e6;
    if ms >= 100.0 {
        format!("{ms:.0} ms")
    } else if ms >= 10.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.3} ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(ms)
    }

    fn reply(seq: u16) -> EchoReply {
        EchoReply {
            src: "10.0.0.2".parse().expect("ip"),
            ident: 7,
            seq,
            ttl: 64,
            len: 64,
        }
    }

    #[test]
    fn requests_leave_a_second_apart_and_the_summary_is_linuxs() {
        let mut run = PingRun::new("10.0.0.2".parse().expect("ip"), 7, 3);
        assert_eq!(run.due(at(0)), Some(1));
        run.sent(at(0));
        assert_eq!(run.due(at(999)), None);
        run.on_reply(&reply(1), at(2));
        assert_eq!(run.due(at(1000)), Some(2));
        run.sent(at(1000));
        run.on_reply(&reply(2), at(1001));
        run.on_reply(&reply(2), at(1001));
        run.on_reply(&reply(9), at(1001));
        run.sent(at(2000));
        assert!(!run.finished(at(2500)), "waiting for the third reply");
        assert!(run.finished(at(3000)));
        let text = run.report(at(3000));
        assert_eq!(
            text,
            "PING 10.0.0.2 (10.0.0.2) 56(84) bytes of data.
64 bytes from 10.0.0.2: icmp_seq=1 ttl=64 time=2.000 ms
64 bytes from 10.0.0.2: icmp_seq=2 ttl=64 time=1.000 ms

--- 10.0.0.2 ping statistics ---
3 packets transmitted, 2 received, 33% packet loss, time 3000ms
rtt min/avg/max/mdev = 1.000/1.500/2.000/0.500 ms
"
        );
    }

    #[test]
    fn lost_replies_are_loss_and_ipv6_has_its_own_header() {
        let mut run = PingRun::new("2001:db8::2".parse().expect("ip"), 7, 2);
        run.sent(at(0));
        run.sent(at(1000));
        assert!(run.finished(at(2000)));
        let text = run.report(at(2000));
        assert!(text.starts_with("PING 2001:db8::2(2001:db8::2) 56 data bytes\n"));
        assert!(text.contains("2 packets transmitted, 0 received, 100% packet loss"));
        assert!(!text.contains("rtt"), "no rtt line without replies");
    }
}
