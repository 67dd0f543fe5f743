# Hostile and malformed frames for tests/hostile_barrage.rs, sent raw
# (AF_PACKET) from the kernel side of a net_tap inside the test's
# namespace. Reads kind names on stdin, one a line; for each it sends that
# kind's frames, then checks the stack still echoes UDP over IPv4 and IPv6
# and prints "alive NAME" or "dead NAME". "kinds" prints every name;
# "probe" only checks ("alive" or "dead").
# Standard library only (no scapy): every byte is spelt out below.
import socket, struct, sys

IFACE, STACK_MAC, KERNEL_MAC, KIP, SIP, KIP6, SIP6, SLL = sys.argv[1:9]
DST, SRC = bytes.fromhex(STACK_MAC.replace(':', '')), bytes.fromhex(KERNEL_MAC.replace(':', ''))
K4, S4 = socket.inet_aton(KIP), socket.inet_aton(SIP)
K6, S6 = socket.inet_pton(socket.AF_INET6, KIP6), socket.inet_pton(socket.AF_INET6, SIP6)
SLL6 = socket.inet_pton(socket.AF_INET6, SLL)
NET = KIP.rsplit('.', 1)[0]


def a4(s):
    return socket.inet_aton(s)


def a6(s):
    return socket.inet_pton(socket.AF_INET6, s)


def csum(b):
    if len(b) % 2:
        b += b'\0'
    s = sum(struct.unpack('!%dH' % (len(b) // 2), b))
    while s > 0xffff:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def eth(payload, ethertype=0x0800, src=SRC, dst=DST):
    return dst + src + struct.pack('!H', ethertype) + payload


def ip4(proto, payload, src=K4, dst=S4, ttl=64, ver_ihl=0x45, total=None,
        frag=0x4000, ident=1, options=b'', good=True):
    total = 20 + len(options) + len(payload) if total is None else total
    h = struct.pack('!BBHHHBBH4s4s', ver_ihl, 0, total, ident, frag, ttl,
                    proto, 0, src, dst) + options
    c = csum(h) if good else (csum(h) ^ 0x5555)
    return h[:10] + struct.pack('!H', c) + h[12:] + payload


def udp4(sport, dport, data, src=K4, dst=S4, length=None, good=True):
    length = 8 + len(data) if length is None else length
    h = struct.pack('!HHHH', sport, dport, length, 0) + data
    c = csum(src + dst + struct.pack('!BBH', 0, 17, len(h)) + h)
    c = (c or 0xffff) if good else (c ^ 0x5555) or 1
    return h[:6] + struct.pack('!H', c) + h[8:]


def tcp4(sport, dport, flags, seq=1000, ack=0, options=b'', offset=None,
         src=K4, dst=S4, good=True, data=b''):
    offset = (20 + len(options)) // 4 if offset is None else offset
    h = struct.pack('!HHIIBBHHH', sport, dport, seq, ack, offset << 4, flags,
                    8000, 0, 0) + options + data
    c = csum(src + dst + struct.pack('!BBH', 0, 6, len(h)) + h)
    c = c if good else c ^ 0x5555
    return h[:16] + struct.pack('!H', c) + h[18:]


def icmp4(typ, code, rest, good=True):
    h = struct.pack('!BBH', typ, code, 0) + rest
    c = csum(h) if good else csum(h) ^ 0x5555
    return h[:2] + struct.pack('!H', c) + h[4:]


def arp(op=1, sender=K4, target=S4, smac=SRC, hw=1, proto=0x0800, hlen=6,
        plen=4, tmac=b'\0' * 6):
    return struct.pack('!HHBBH', hw, proto, hlen, plen, op) + smac + sender + tmac + target


def ip6(nh, payload, src=K6, dst=S6, hop=64, ver=6, plen=None):
    plen = len(payload) if plen is None else plen
    return struct.pack('!IHBB', ver << 28, plen, nh, hop) + src + dst + payload


def icmp6(typ, code, body, src=K6, dst=S6, good=True):
    m = struct.pack('!BBH', typ, code, 0) + body
    c = csum(src + dst + struct.pack('!IxxxB', len(m), 58) + m)
    c = c if good else c ^ 0x5555
    return m[:2] + struct.pack('!H', c) + m[4:]


def udp6(sport, dport, data, src=K6, dst=S6):
    h = struct.pack('!HHHH', sport, dport, 8 + len(data), 0) + data
    c = csum(src + dst + struct.pack('!IxxxB', len(h), 17) + h) or 0xffff
    return h[:6] + struct.pack('!H', c) + h[8:]


def ext(nh, body=b'\x01\x04\0\0\0\0'):
    # An extension header of 8 bytes: next header, length 0, a PadN.
    return bytes([nh, 0]) + body


def frag6(nh, offset, more, ident, data):
    return struct.pack('!BBHI', nh, 0, (offset << 3) | more, ident) + data


def echo4():
    return icmp4(8, 0, struct.pack('!HH', 0x77, 1) + b'barrage')


def echo6():
    return icmp6(128, 0, struct.pack('!HH', 0x77, 1) + b'barrage')


def ns6(target, options, hop=255, src=K6, dst=None):
    # To the target's solicited-node group unless told otherwise.
    body = b'\0' * 4 + target + options
    dst = dst or a6('ff02::1:ff00:0')[:13] + target[13:]
    return ip6(58, icmp6(135, 0, body, src=src, dst=dst), src=src, dst=dst, hop=hop)


def na6(target, options, src=K6, dst=S6, hop=255):
    body = struct.pack('!I', 0x20000000) + target + options
    return ip6(58, icmp6(136, 0, body, src=src, dst=dst), src=src, dst=dst, hop=hop)


LLA = b'\x01\x01' + SRC  # source link-layer address option
PING = ip4(1, echo4())
UDP = udp4(5000, 7, b'x' * 16)
QUOTE = b'\x45' + b'\xa5' * 27  # "an IPv4 header" of garbage

KINDS = {
    # Ethernet
    # (A runt under 14 bytes cannot be sent: the kernel refuses a frame
    # shorter than the tap's header. The header alone is the shortest.)
    'eth_header_only': [eth(b'')],
    'eth_unknown_ethertype': [eth(b'\0' * 46, 0x88b5)],
    'eth_vlan_tagged': [eth(struct.pack('!HH', 5, 0x0800) + PING, 0x8100)],
    'eth_qinq_tagged': [eth(struct.pack('!HH', 5, 0x8100) + struct.pack('!HH', 6, 0x0800) + PING, 0x88a8)],
    'eth_group_source': [eth(PING, src=bytes.fromhex('01005e000001'))],
    'eth_broadcast_source': [eth(PING, src=b'\xff' * 6)],
    'eth_other_unicast_dst': [eth(PING, dst=bytes.fromhex('029999999999'))],
    # ARP
    'arp_truncated': [eth(arp()[:12], 0x0806)],
    'arp_bad_hardware_size': [eth(arp(hlen=7) + b'\0\0', 0x0806)],
    'arp_bad_protocol_size': [eth(arp(plen=16) + b'\0' * 24, 0x0806)],
    'arp_bad_hardware_type': [eth(arp(hw=6), 0x0806)],
    'arp_bad_protocol_type': [eth(arp(proto=0x86dd), 0x0806)],
    'arp_bad_operation': [eth(arp(op=9), 0x0806)],
    'arp_martian_broadcast_sender': [eth(arp(sender=a4(NET + '.255')), 0x0806)],
    'arp_martian_loopback_sender': [eth(arp(sender=a4('127.0.0.1')), 0x0806)],
    'arp_martian_multicast_sender': [eth(arp(sender=a4('224.0.0.1')), 0x0806)],
    'arp_for_another_host': [eth(arp(target=a4(NET + '.77')), 0x0806)],
    'arp_claiming_our_address': [eth(arp(sender=S4, target=a4(NET + '.78')), 0x0806)],
    # IPv4
    'ipv4_bad_version': [eth(ip4(1, echo4(), ver_ihl=0x65))],
    'ipv4_bad_ihl': [eth(ip4(1, echo4(), ver_ihl=0x44))],
    'ipv4_total_length_past_frame': [eth(ip4(1, echo4(), total=400))],
    'ipv4_total_length_below_header': [eth(ip4(1, echo4(), total=12))],
    'ipv4_bad_checksum': [eth(ip4(1, echo4(), good=False))],
    'ipv4_with_options': [eth(ip4(1, echo4(), ver_ihl=0x46, options=b'\x01\x01\x01\x00'))],
    'ipv4_ttl_zero': [eth(ip4(1, echo4(), ttl=0))],
    'ipv4_loopback_source': [eth(ip4(1, echo4(), src=a4('127.0.0.1')))],
    'ipv4_broadcast_source': [eth(ip4(1, echo4(), src=a4('255.255.255.255')))],
    'ipv4_subnet_broadcast_source': [eth(ip4(1, echo4(), src=a4(NET + '.255')))],
    'ipv4_multicast_source': [eth(ip4(1, echo4(), src=a4('224.0.0.5')))],
    'ipv4_our_own_source': [eth(ip4(1, echo4(), src=S4))],
    'ipv4_not_for_us': [eth(ip4(1, echo4(), dst=a4(NET + '.99')))],
    'ipv4_unknown_protocol': [eth(ip4(253, b'\0' * 16))],
    'ipv4_fragments_overlapping': [
        eth(ip4(17, udp4(5000, 7, b'a' * 40)[:24], frag=0x2000, ident=901)),
        eth(ip4(17, b'b' * 24, frag=0x2000 | 1, ident=901)),
    ],
    'ipv4_fragment_not_multiple_of_8': [eth(ip4(17, b'c' * 13, frag=0x2000, ident=902))],
    'ipv4_fragment_past_64k': [eth(ip4(17, b'd' * 200, frag=8180, ident=903))],
    'ipv4_fragment_duplicated': [
        eth(ip4(17, b'e' * 16, frag=0x2000 | 2, ident=904)),
        eth(ip4(17, b'e' * 16, frag=0x2000 | 2, ident=904)),
    ],
    # ICMP
    'icmp_truncated': [eth(ip4(1, b'\x08\x00\x00'))],
    'icmp_bad_checksum': [eth(ip4(1, icmp4(8, 0, b'\0\x01\0\x01', good=False)))],
    'icmp_error_quoting_garbage': [eth(ip4(1, icmp4(3, 3, b'\0' * 4 + QUOTE)))],
    'icmp_unhandled_type': [eth(ip4(1, icmp4(13, 0, b'\0' * 16)))],
    # IPv6
    'ipv6_bad_version': [eth(ip6(58, echo6(), ver=4), 0x86dd)],
    'ipv6_payload_length_past_frame': [eth(ip6(58, echo6(), plen=900), 0x86dd)],
    'ipv6_extension_chain_too_long': [eth(ip6(60, b''.join(ext(60) for _ in range(40)) + ext(59)), 0x86dd)],
    'ipv6_hop_by_hop_not_first': [eth(ip6(60, ext(0) + ext(59)), 0x86dd)],
    'ipv6_extension_past_packet': [eth(ip6(60, bytes([60, 30]) + b'\0' * 6), 0x86dd)],
    'ipv6_unknown_next_header': [eth(ip6(253, b'\0' * 16), 0x86dd)],
    'ipv6_hop_by_hop_bad_option': [eth(ip6(0, bytes([59, 0]) + b'\x9f\x04\0\0\0\0'), 0x86dd)],
    'ipv6_fragments_overlapping': [
        eth(ip6(44, frag6(17, 0, 1, 905, udp6(5000, 7, b'f' * 40)[:24])), 0x86dd),
        eth(ip6(44, frag6(17, 1, 1, 905, b'g' * 24)), 0x86dd),
    ],
    'ipv6_loopback_source': [eth(ip6(58, echo6(), src=a6('::1')), 0x86dd)],
    'ipv6_multicast_source': [eth(ip6(58, echo6(), src=a6('ff02::1')), 0x86dd)],
    'ipv6_hop_limit_zero': [eth(ip6(58, echo6(), hop=0), 0x86dd)],
    'ipv6_not_for_us': [eth(ip6(58, echo6(), dst=a6('2001:db8:7::99')), 0x86dd)],
    # ICMPv6 and Neighbor Discovery
    'icmp6_bad_checksum': [eth(ip6(58, icmp6(128, 0, b'\0\x01\0\x01', good=False)), 0x86dd)],
    'icmp6_truncated': [eth(ip6(58, b'\x80\x00'), 0x86dd)],
    'icmp6_error_quoting_garbage': [eth(ip6(58, icmp6(1, 4, b'\0' * 4 + b'\x60' + b'\xa5' * 47)), 0x86dd)],
    'nd_solicitation_hop_limit_64': [eth(ns6(S6, LLA, hop=64), 0x86dd)],
    'nd_option_overrunning': [eth(ns6(S6, b'\x01\x04' + SRC), 0x86dd)],
    'nd_option_zero_length': [eth(ns6(S6, b'\x01\x00' + SRC), 0x86dd)],
    # (To our unicast address: the target's own group we never joined.)
    'nd_solicitation_not_ours': [eth(ns6(a6('2001:db8:7::99'), LLA, dst=S6), 0x86dd)],
    'nd_advertisement_not_ours': [eth(na6(a6('2001:db8:7::98'), b'\x02\x01' + SRC), 0x86dd)],
    'nd_group_link_address': [eth(ns6(S6, b'\x01\x01' + b'\x33\x33\0\0\0\x01'), 0x86dd)],
    # UDP
    'udp_length_past_packet': [eth(ip4(17, udp4(5000, 7, b'h' * 8, length=200)))],
    'udp_length_below_header': [eth(ip4(17, udp4(5000, 7, b'h' * 8, length=4)))],
    'udp_bad_checksum': [eth(ip4(17, udp4(5000, 7, b'i' * 8, good=False)))],
    'udp_source_port_zero': [eth(ip4(17, udp4(0, 7, b'j' * 8)))],
    'udp_destination_port_zero': [eth(ip4(17, udp4(5000, 0, b'k' * 8)))],
    # TCP (a listener on port 7; 9 is closed)
    'tcp_data_offset_below_header': [eth(ip4(6, tcp4(6000, 7, 0x02, offset=3)))],
    'tcp_data_offset_past_segment': [eth(ip4(6, tcp4(6000, 7, 0x02, offset=15)))],
    'tcp_options_overrunning': [eth(ip4(6, tcp4(6000, 7, 0x02, options=b'\x02\x0a\x05\xb4')))],
    'tcp_bad_checksum': [eth(ip4(6, tcp4(6000, 7, 0x02, good=False)))],
    'tcp_syn_fin_to_listener': [eth(ip4(6, tcp4(6001, 7, 0x03)))],
    'tcp_syn_rst_to_listener': [eth(ip4(6, tcp4(6002, 7, 0x06)))],
    'tcp_no_flags_to_listener': [eth(ip4(6, tcp4(6003, 7, 0x00)))],
    'tcp_xmas_to_listener': [eth(ip4(6, tcp4(6004, 7, 0x29)))],
    'tcp_syn_to_closed_port': [eth(ip4(6, tcp4(6005, 9, 0x02)))],
    'tcp_ack_to_listener': [eth(ip4(6, tcp4(6006, 7, 0x10, ack=77)))],
}


def alive():
    """A UDP echo round trip over each family (three tries each)."""
    for family, addr in ((socket.AF_INET, (SIP, 7)), (socket.AF_INET6, (SIP6, 7))):
        s = socket.socket(family, socket.SOCK_DGRAM)
        s.settimeout(0.5)
        ok = False
        for _ in range(3):
            s.sendto(b'alive?', addr)
            try:
                ok = s.recv(64) == b'alive?'
            except socket.timeout:
                continue
            if ok:
                break
        s.close()
        if not ok:
            return False
    return True


raw = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
raw.bind((IFACE, 0))
for line in sys.stdin:
    name = line.strip()
    if name == 'kinds':
        print(' '.join(KINDS), flush=True)
        continue
    if name == 'probe':
        print('alive' if alive() else 'dead', flush=True)
        continue
    for frame in KINDS[name]:
        raw.send(frame)
    print(('alive ' if alive() else 'dead ') + name, flush=True)
