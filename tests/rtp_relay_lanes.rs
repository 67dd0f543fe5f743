//! `dpstack-rtp-relay --nb-cores 2` on a 2-queue `net_tap` whose kernel
//! side is in a namespace the test creates: the kernel spreads its flows
//! over the tap's queues by its own flow hash, so a session's two legs
//! (two flows) often land on two lanes. A Python script stands for both
//! peers of 32 sessions: every leg's media must reach the other leg's peer
//! from that leg's port, both lanes must have received some, latches must
//! have crossed lanes, and the statistics at exit (every lane's, merged)
//! must count what was relayed.

mod common;

use common::{kernel_side, lane_counter, unique_name, AppProcess};
use dpstack::eal::EalArgs;

const RELAY_IP: &str = "10.204.0.1";
const PEER_IP: &str = "10.204.0.2";
const PEER_MAC: &str = "02:00:00:00:04:02";
const SESSIONS: u32 = 32;
/// RTP packets each peer sends once both legs are latched.
const PACKETS: u32 = 5;

#[test]
fn sessions_whose_legs_land_on_two_lanes_are_relayed_both_ways() {
    let iface = unique_name("dpsrl");
    let vdev = format!("net_tap0,iface={iface}");
    let eal = EalArgs::for_test(3).vdev(&vdev).to_vec().split_off(1);
    let relay = env!("CARGO_BIN_EXE_dpstack-rtp-relay");
    let ip = format!("{RELAY_IP}/24");
    let sessions = SESSIONS.to_string();
    let app = AppProcess::spawn(
        relay,
        &eal,
        &[
            "--ip",
            &ip,
            "--sessions",
            &sessions,
            "--port-base",
            "30000",
            "--nb-cores",
            "2",
        ],
    );
    app.wait_for_output("relaying");
    assert!(
        app.output_so_far().contains("polling on 2 lcores"),
        "{}",
        app.output_so_far()
    );
    let ns = kernel_side(
        "dpstack-relay-lanes-",
        &iface,
        PEER_MAC,
        &[&format!("{PEER_IP}/24")],
    );
    // Session i: leg A's peer at 5000+2i sends to 30000+4i, leg B's at
    // 6000+2i to 30002+4i. A first packet each way latches (the first of
    // each direction may find the other leg unlatched: no_peer), then
    // PACKETS more each way must all arrive, from the port the peer sends
    // to (symmetric RTP), with the other peer's SSRC.
    let script = format!(
        "import select, socket, struct, time\n\
         n, packets = {SESSIONS}, {PACKETS}\n\
         def rtp(ssrc, seq):\n\
         \x20   return struct.pack('!BBHII', 0x80, 0, seq, seq * 160, ssrc) + bytes(160)\n\
         socks = []\n\
         for i in range(n):\n\
         \x20   for leg, base in ((0, 5000), (1, 6000)):\n\
         \x20       s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
         \x20       s.bind(('{PEER_IP}', base + 2 * i))\n\
         \x20       s.setblocking(False)\n\
         \x20       socks.append((i, leg, s))\n\
         def send(seq):\n\
         \x20   for i, leg, s in socks:\n\
         \x20       s.sendto(rtp(0x1000 * (leg + 1) + i, seq), ('{RELAY_IP}', 30000 + 4 * i + 2 * leg))\n\
         def drain(until):\n\
         \x20   got = {{}}\n\
         \x20   while time.time() < until:\n\
         \x20       ready, _, _ = select.select([s for _, _, s in socks], [], [], 0.1)\n\
         \x20       for i, leg, s in socks:\n\
         \x20           if s in ready:\n\
         \x20               data, src = s.recvfrom(2048)\n\
         \x20               ok = src == ('{RELAY_IP}', 30000 + 4 * i + 2 * leg)\n\
         \x20               ok = ok and struct.unpack('!I', data[8:12])[0] == 0x1000 * (2 - leg) + i\n\
         \x20               if not ok:\n\
         \x20                   print('wrong', i, leg, src, data[:12].hex())\n\
         \x20               key = (i, leg, ok)\n\
         \x20               got[key] = got.get(key, 0) + 1\n\
         \x20   return got\n\
         send(1)\n\
         drain(time.time() + 1)\n\
         for seq in range(2, 2 + packets):\n\
         \x20   send(seq)\n\
         \x20   time.sleep(0.02)\n\
         got = drain(time.time() + 2)\n\
         complete = sum(1 for i, leg, _ in socks if got.get((i, leg, True), 0) == packets)\n\
         wrong = sum(v for (i, leg, ok), v in got.items() if not ok)\n\
         print('complete', complete, 'wrong', wrong)\n"
    );
    let out = ns.exec_bounded(60, "python3", &["-c", &script]);
    let summary = String::from_utf8_lossy(&out.stdout).into_owned();
    let done = app.stop_with(libc::SIGINT);
    drop(ns);
    let output = done.stdout;
    assert_eq!(done.code, Some(0), "{output}{}", done.stderr);
    assert!(
        out.status.success(),
        "{summary}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        summary.contains(&format!("complete {} wrong 0", 2 * SESSIONS)),
        "{summary}\n{output}"
    );
    for lane in 0..2 {
        let udp_in = lane_counter(&output, lane, "UdpInDatagrams");
        assert!(udp_in > 0, "lane {lane} received nothing:\n{output}");
    }
    // Latches crossed lanes: some lane took another's news.
    let taken: u64 = output
        .lines()
        .filter(|l| l.contains("latch news sent"))
        .filter_map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let at = words.iter().position(|w| *w == "taken")?;
            words.get(at + 1)?.parse::<u64>().ok()
        })
        .sum();
    assert!(taken > 0, "{output}");
    // The merged statistics: every session active, every packet after the
    // first of each direction forwarded (and counted once).
    let total = output
        .lines()
        .find(|l| l.starts_with("total sessions"))
        .unwrap_or_else(|| panic!("no totals:\n{output}"));
    assert!(
        total.starts_with(&format!("total sessions {SESSIONS} active {SESSIONS} ")),
        "{total}"
    );
    let words: Vec<&str> = total.split_whitespace().collect();
    let value = |name: &str| -> u64 {
        let at = words.iter().position(|w| *w == name).expect(name);
        words[at + 1].parse().expect(name)
    };
    assert_eq!(
        value("packets"),
        u64::from(2 * SESSIONS * (PACKETS + 1)),
        "{total}"
    );
    let forwarded = value("forwarded");
    assert!(
        forwarded >= u64::from(2 * SESSIONS * PACKETS) && forwarded <= value("packets"),
        "{total}"
    );
}
