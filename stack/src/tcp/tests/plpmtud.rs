//! Path MTU probing (RFC 4821) in a connection: a path that silently
//! drops every segment over its size (an MTU black hole: no ICMP error
//! comes back). Two timeouts in a row lower the MSS; probes then search
//! back up to the largest size the path takes, and the transfer completes
//! with every byte acknowledged.

use super::*;

/// The peer behind the path: what it has received, and the ACK (with
/// SACK blocks) it sends for each segment that gets through.
#[derive(Default)]
struct Peer {
    rcv_nxt: u32,
    /// Received above `rcv_nxt`, merged, in order.
    above: Vec<(u32, u32)>,
}

impl Peer {
    fn take(&mut self, start: u32, end: u32) {
        self.above.push((start, end));
        self.above.sort_unstable();
        let mut merged: Vec<(u32, u32)> = Vec::new();
        for (s, e) in self.above.drain(..) {
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        self.above = merged;
        while let Some(&(s, e)) = self.above.first() {
            if s > self.rcv_nxt {
                break;
            }
            self.rcv_nxt = self.rcv_nxt.max(e);
            self.above.remove(0);
        }
    }

    fn ack_line(&self, at: Instant) -> String {
        let secs = at.as_nanos() as f64 / 1e9;
        let blocks: Vec<String> = (self.above.iter().rev().take(3))
            .map(|(s, e)| format!("{s}:{e}"))
            .collect();
        let sack = if blocks.is_empty() {
            String::new()
        } else {
            format!(" <sack {}>", blocks.join(" "))
        };
        format!("{secs:.9} < . 1:1(0) ack {} win 65535{sack}", self.rcv_nxt)
    }
}

/// Sends `total` bytes over a path whose largest segment payload is
/// `path_mss` (MSS 1460 agreed, SACK on); returns the connection once all
/// is acknowledged and the largest segment that got through after the
/// MSS first went down.
fn transfer_through_a_black_hole(path_mss: usize, total: usize) -> (Script, usize) {
    let mut t = Script::passive(&config(), "0 < S 0:0(0) win 65535 <mss 1460,sackOK>");
    t.run(
        "
        +0 > S. 0:0(0) ack 1 <mss 1460,sackOK>
        +0.01 < . 1:1(0) ack 1 win 65535
        ",
    );
    let mut peer = Peer {
        rcv_nxt: 1,
        ..Peer::default()
    };
    let mut written = 0;
    let mut largest_after = 0;
    for _ in 0..20_000 {
        t.write_towards(&mut written, total, 16 * 1024, 3);
        let sent: Vec<_> = t.sent.drain(..).collect();
        if sent.is_empty() {
            if written == total && t.conn.send_buf.is_empty() {
                return (t, largest_after);
            }
            let next = t.conn.next_deadline().expect("a timer while data is out");
            t.advance(next);
            continue;
        }
        let at = t.now + Duration::from_millis(5);
        let mut acks = Vec::new();
        for (_, seg, payload) in sent {
            if payload.is_empty() || payload.len() > path_mss {
                continue; // dropped without a word
            }
            if t.conn.mss < 1460 {
                largest_after = largest_after.max(payload.len());
            }
            let start = seg.seq.wrapping_sub(OUR_ISS);
            peer.take(start, start + payload.len() as u32);
            acks.push(peer.ack_line(at));
        }
        for line in acks {
            t.run(&line);
        }
        t.advance(at);
    }
    panic!("the transfer did not complete");
}

#[test]
fn a_black_hole_lowers_the_mss_and_probes_find_the_path_s_size() {
    let (t, largest) = transfer_through_a_black_hole(1240, 2 << 20);
    let loss = &t.conn.loss;
    assert_eq!(loss.mtu_black_holes, 1, "two timeouts lowered the MSS once");
    assert!(loss.mtu_probe_successes >= 3, "{loss:?}");
    assert!(loss.mtu_probe_failures >= 1, "{loss:?}");
    let mss = usize::from(t.conn.mss);
    assert!(
        (1240 - usize::from(super::super::plpmtud::PROBE_THRESHOLD)..=1240).contains(&mss),
        "the search settled at {mss}"
    );
    assert_eq!(largest, mss, "nothing bigger got through");
    assert!(!t.conn.path_probe.searching(), "the search ended");

    // Ten minutes on, the path may have changed: the search opens again and
    // the next new data carries a probe above the settled MSS.
    let mut t = t;
    let later = t.now + super::super::plpmtud::REPROBE_INTERVAL;
    t.advance(later);
    t.sent.clear();
    t.write(&[4u8; 8000]);
    let mut payload = vec![0u8; 2048];
    let mut sizes = Vec::new();
    for _ in 0..8 {
        let room = usize::from(t.conn.segment_room());
        match t.conn.poll_transmit(t.now, &mut payload[..room]) {
            Some((_, len)) => sizes.push(len),
            None => break,
        }
    }
    sizes.extend(t.sent.drain(..).map(|(_, _, p)| p.len()));
    assert!(t.conn.path_probe.searching(), "searching again");
    assert!(
        sizes.iter().any(|&len| len > mss),
        "a probe went out: {sizes:?}"
    );
}

#[test]
fn without_a_black_hole_nothing_is_probed() {
    let (t, largest) = transfer_through_a_black_hole(1460, 1 << 20);
    let loss = &t.conn.loss;
    assert_eq!(
        (
            loss.mtu_black_holes,
            loss.mtu_probe_successes,
            loss.mtu_probe_failures
        ),
        (0, 0, 0)
    );
    assert_eq!(t.conn.mss, 1460);
    assert_eq!(largest, 0);
}
