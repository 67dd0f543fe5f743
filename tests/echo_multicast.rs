//! `dpstack-echo --join 239.1.2.3` with the Linux kernel as its peer, over
//! a `net_tap` port moved into a namespace the test creates: the kernel
//! sends UDP to the group (a socket with `IP_MULTICAST_IF` on the tap) and
//! gets each datagram echoed back from the stack's address; datagrams to a
//! group nobody joined are not; and an IGMPv3 general query sent from the
//! kernel side (a raw packet socket) is answered with an IGMPv3 report of
//! the group, captured on the same socket and checked byte by byte
//! (224.0.0.22, TTL 1, Router Alert, both checksums, the record). The
//! dual-stack `[::]` socket joins an IPv6 and an IPv4 group and gets both.
//! Everything stays in the namespace.

mod common;

use common::{app_counter, echo_with_kernel};

const STACK_IP: &str = "10.203.0.1";
const KERNEL_IP: &str = "10.203.0.2";
const KERNEL_MAC: &str = "02:00:00:00:03:02";
const GROUP: &str = "239.1.2.3";

/// Runs in the namespace: the query and the capture of its answer, then
/// the datagrams to the group and to another one. Prints one line per
/// finding; every wait is bounded.
const SCRIPT: &str = r#"
import socket, struct, sys, time
iface, kernel_ip, group = sys.argv[1], sys.argv[2], sys.argv[3]

def csum(b):
    if len(b) % 2: b += b'\0'
    s = sum(struct.unpack('!%dH' % (len(b) // 2), b))
    while s > 0xffff: s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff

raw = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
raw.bind((iface, 0))
raw.settimeout(0.5)
mac = raw.getsockname()[4]
# IGMPv3 general query: Max Resp Code 10 (1 s), QRV 2, QQIC 125.
igmp = bytearray(struct.pack('!BBH4sBBH', 0x11, 10, 0, bytes(4), 2, 125, 0))
igmp[2:4] = struct.pack('!H', csum(bytes(igmp)))
total = 24 + len(igmp)
ip = bytearray(struct.pack('!BBHHHBBH4s4s', 0x46, 0xc0, total, 1, 0, 1, 2, 0,
                           socket.inet_aton(kernel_ip), socket.inet_aton('224.0.0.1')))
ip += b'\x94\x04\x00\x00'
ip[10:12] = struct.pack('!H', csum(bytes(ip)))
frame = bytes.fromhex('01005e000001') + mac + b'\x08\x00' + bytes(ip) + bytes(igmp)
raw.send(frame)
print('query sent', flush=True)
deadline = time.time() + 5
while time.time() < deadline:
    try:
        data = raw.recv(2048)
    except socket.timeout:
        continue
    ip = data[14:]
    if len(ip) < 24 or ip[9] != 2:
        continue
    ihl = (ip[0] & 0x0f) * 4
    total = struct.unpack('!H', ip[2:4])[0]
    msg = ip[ihl:total]
    if msg[0] != 0x22:
        continue
    checks = [
        data[0:6] == bytes.fromhex('01005e000016'),
        ip[16:20] == socket.inet_aton('224.0.0.22'),
        ip[8] == 1,
        ihl == 24 and ip[20:24] == b'\x94\x04\x00\x00',
        csum(bytes(ip[:ihl])) == 0,
        csum(bytes(msg)) == 0,
    ]
    count = struct.unpack('!H', msg[6:8])[0]
    records = [(msg[8 + 8 * i], socket.inet_ntoa(msg[12 + 8 * i:16 + 8 * i]))
               for i in range(count)]
    print('report', all(checks), checks, records, flush=True)
    if (2, group) in records:
        break
raw.close()

def send_to(dst, n, tag):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(kernel_ip))
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
    s.bind((kernel_ip, 0))
    s.settimeout(1.0)
    echoed = 0
    for i in range(n):
        payload = ('%s %d' % (tag, i)).encode()
        s.sendto(payload, (dst, 5004))
        try:
            data, peer = s.recvfrom(2048)
            if data == payload:
                echoed += 1
                print('echo from', peer[0], flush=True)
        except socket.timeout:
            pass
    print('%s echoed %d of %d' % (tag, echoed, n), flush=True)

send_to(group, 5, 'joined')
send_to('239.1.2.4', 3, 'other')
"#;

#[test]
fn a_joined_group_is_received_and_reported_to_the_kernel() {
    let ip = format!("{STACK_IP}/24");
    let args = ["--ip", &ip, "--udp", "5004", "--join", GROUP];
    let kernel = format!("{KERNEL_IP}/24");
    let s = echo_with_kernel("dpsm", &args, "dpstack-mcast-", KERNEL_MAC, &[&kernel]);
    assert!(
        s.app
            .output_so_far()
            .contains(&format!("joined {GROUP} on port 0")),
        "{}",
        s.app.output_so_far()
    );
    let out =
        s.ns.exec_bounded(40, "python3", &["-c", SCRIPT, &s.iface, KERNEL_IP, GROUP]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{text}\n{err}");
    let report = text
        .lines()
        .find(|l| l.starts_with("report") && l.contains(&format!("(2, '{GROUP}')")))
        .unwrap_or_else(|| panic!("no IGMPv3 report of {GROUP} answered the query:\n{text}"));
    assert!(report.starts_with("report True"), "{report}");
    assert!(text.contains("joined echoed 5 of 5"), "{text}");
    assert!(
        text.contains(&format!("echo from {STACK_IP}")),
        "the echo comes from our address: {text}"
    );
    assert!(text.contains("other echoed 0 of 3"), "{text}");
    let done = s.app.stop_with(libc::SIGINT);
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    let counters = &done.stdout;
    assert_eq!(app_counter(counters, "IgmpInQueries"), 1, "{counters}");
    // The join's two unsolicited reports and the answer.
    assert!(app_counter(counters, "IgmpOutV3Reports") >= 3, "{counters}");
    assert_eq!(app_counter(counters, "UdpOutDatagrams"), 5, "{counters}");
}

/// Sends `n` datagrams to each group and counts the echoes: `GROUP PORT`
/// pairs after the interface and the kernel's two addresses.
const SEND_SCRIPT: &str = r#"
import socket, sys
iface, kernel4, kernel6 = sys.argv[1], sys.argv[2], sys.argv[3]
index = socket.if_nametoindex(iface)
for group in sys.argv[4:]:
    if ':' in group:
        s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, index)
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 1)
        s.bind((kernel6, 0))
    else:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(kernel4))
        s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
        s.bind((kernel4, 0))
    s.settimeout(1.0)
    echoed = 0
    for i in range(4):
        payload = ('%s %d' % (group, i)).encode()
        s.sendto(payload, (group, 5004))
        try:
            data, peer = s.recvfrom(2048)
            echoed += data == payload
        except socket.timeout:
            pass
    print('%s echoed %d of 4' % (group, echoed), flush=True)
"#;

#[test]
fn the_dual_stack_socket_joins_an_ipv6_and_an_ipv4_group() {
    let args = [
        "--ip",
        "10.204.0.1/24",
        "--ip",
        "2001:db8:204::1/64",
        "--no-dad",
        "--udp",
        "5004",
        "--join",
        "ff15::1234",
        "--join",
        "239.1.2.3",
    ];
    let (kernel4, kernel6) = ("10.204.0.2", "2001:db8:204::2");
    let addresses = [&format!("{kernel4}/24")[..], &format!("{kernel6}/64")[..]];
    let s = echo_with_kernel("dpsn", &args, "dpstack-mcast6-", KERNEL_MAC, &addresses);
    let start = s.app.output_so_far();
    assert!(start.contains("joined ff15::1234 on port 0"), "{start}");
    assert!(start.contains("joined 239.1.2.3 on port 0"), "{start}");
    let out = s.ns.exec_bounded(
        30,
        "python3",
        &[
            "-c",
            SEND_SCRIPT,
            &s.iface,
            kernel4,
            kernel6,
            "ff15::1234",
            "239.1.2.3",
            "ff15::99",
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{text}\n{err}");
    assert!(text.contains("ff15::1234 echoed 4 of 4"), "{text}");
    assert!(text.contains("239.1.2.3 echoed 4 of 4"), "{text}");
    assert!(
        text.contains("ff15::99 echoed 0 of 4"),
        "not joined: {text}"
    );
    let done = s.app.stop_with(libc::SIGINT);
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    // The IPv6 group was reported by MLD (the join's two reports at
    // least; the link's own groups add theirs).
    assert!(app_counter(&done.stdout, "Icmp6OutMldv2Reports") >= 2);
    assert!(app_counter(&done.stdout, "IgmpOutV3Reports") >= 2);
}
