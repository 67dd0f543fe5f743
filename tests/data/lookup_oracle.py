#!/usr/bin/env python3
"""The kernel's side of tests/lookup_oracle.rs: which socket gets each datagram
(UDP) or connection (TCP), as Linux decides.

Runs inside the test's "local" namespace; the senders live in the "remote"
namespace named by argv[1] (a path like /run/netns/NAME), entered with
setns(2) only while a sender socket is created (a socket keeps the namespace
it was made in). Reads one JSON document on stdin:

  {"udp": [case, ...], "tcp": [case, ...]}
  udp case: {"sockets": [sock, ...], "datagrams": [[src_ip, src_port, dst_ip, dst_port], ...]}
  tcp case: {"sockets": [sock, ...], "conns": [[src_ip, src_port, dst_ip, dst_port], ...]}
  sock: {"v6": bool, "ip": str, "port": int, "v6only": bool, "reuseport": bool,
         "connect": [ip, port] or null}   (connect: UDP only)

and prints one JSON line per case, in order:

  {"bind": ["ok" | errno name, ...], "connect": ["ok" | errno name | null, ...],
   "local": [[ip, port] or null, ...], "got": [socket index or -1, ...]}

"local" is getsockname() after the connects (connect() narrows a wildcard
bind to the source address routing picks). Every wait is bounded: a datagram
not seen within a few milliseconds was not delivered (veth delivery runs in
the sender's softirq, before sendto() returns), a connect gives up after 1 s.
"""

import ctypes
import errno
import json
import os
import select
import socket
import struct
import sys

CLONE_NEWNET = 0x40000000
libc = ctypes.CDLL(None, use_errno=True)


def setns(fd):
    if libc.setns(fd, CLONE_NEWNET) != 0:
        e = ctypes.get_errno()
        raise OSError(e, "setns: " + os.strerror(e))


HOME = os.open("/proc/self/ns/net", os.O_RDONLY)
REMOTE = os.open(sys.argv[1], os.O_RDONLY)


def in_remote(make):
    """Calls make() with this thread in the remote namespace."""
    setns(REMOTE)
    try:
        return make()
    finally:
        setns(HOME)


def err_name(e):
    return errno.errorcode.get(e.errno, str(e.errno))


def family(v6):
    return socket.AF_INET6 if v6 else socket.AF_INET


def make_socket(spec, kind):
    s = socket.socket(family(spec["v6"]), kind)
    if spec["v6"]:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1 if spec["v6only"] else 0)
    if spec["reuseport"]:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    s.setblocking(False)
    return s


def bind_all(specs, kind):
    """Binds each socket in order; a refused one is closed and left None."""
    socks, binds = [], []
    for spec in specs:
        s = make_socket(spec, kind)
        try:
            s.bind((spec["ip"], spec["port"]))
            socks.append(s)
            binds.append("ok")
        except OSError as e:
            s.close()
            socks.append(None)
            binds.append(err_name(e))
    return socks, binds


SENDERS = {}


def udp_sender(v6, ip, port):
    """A sender bound to (ip, port) in the remote namespace, made once."""
    key = (v6, ip, port)
    if key not in SENDERS:
        def make():
            s = socket.socket(family(v6), socket.SOCK_DGRAM)
            s.bind((ip, port))
            return s
        SENDERS[key] = in_remote(make)
    return SENDERS[key]


def drain(socks, got, final_wait):
    """Reads every queued datagram; waits final_wait seconds once for more."""
    live = [s for s in socks if s is not None]
    if not live:
        return
    index = {s.fileno(): i for i, s in enumerate(socks) if s is not None}
    waited = False
    while True:
        ready, _, _ = select.select(live, [], [], 0 if not waited else final_wait)
        if not ready:
            if waited:
                return
            waited = True
            continue
        for s in ready:
            while True:
                try:
                    data = s.recv(64)
                except BlockingIOError:
                    break
                except OSError:
                    break  # e.g. ECONNREFUSED on a connected socket
                (n,) = struct.unpack("!I", data[:4])
                if 0 <= n < len(got):
                    got[n] = index[s.fileno()]


def run_udp(case):
    socks, binds = bind_all(case["sockets"], socket.SOCK_DGRAM)
    connects, local = [], []
    for s, spec in zip(socks, case["sockets"]):
        target = spec.get("connect")
        if s is None or target is None:
            connects.append(None)
            continue
        try:
            s.connect((target[0], target[1]))
            connects.append("ok")
        except OSError as e:
            connects.append(err_name(e))
    for s in socks:
        local.append(list(s.getsockname()[:2]) if s is not None else None)
    got = [-1] * len(case["datagrams"])
    for n, (src_ip, src_port, dst_ip, dst_port) in enumerate(case["datagrams"]):
        v6 = ":" in dst_ip
        sender = udp_sender(v6, src_ip, src_port)
        sender.sendto(struct.pack("!I", n), (dst_ip, dst_port))
    drain(socks, got, 0.003)
    for s in socks:
        if s is not None:
            s.close()
    return {"bind": binds, "connect": connects, "local": local, "got": got}


def tcp_client(v6, src_ip, src_port):
    def make():
        s = socket.socket(family(v6), socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Close with a reset: no TIME-WAIT left behind to collide with a
        # later case's 4-tuple.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.bind((src_ip, src_port))
        s.settimeout(1.0)
        return s
    return in_remote(make)


def run_tcp(case):
    socks, binds = bind_all(case["sockets"], socket.SOCK_STREAM)
    listens = []
    for s in socks:
        if s is None:
            listens.append(None)
            continue
        try:
            s.listen(8)
            listens.append("ok")
        except OSError as e:
            listens.append(err_name(e))
    listening = [s if l == "ok" else None for s, l in zip(socks, listens)]
    live = [s for s in listening if s is not None]
    index = {s.fileno(): i for i, s in enumerate(listening) if s is not None}
    got = []
    for src_ip, src_port, dst_ip, dst_port in case["conns"]:
        v6 = ":" in dst_ip
        client = tcp_client(v6, src_ip, src_port)
        winner = -1
        try:
            client.connect((dst_ip, dst_port))
            ready, _, _ = select.select(live, [], [], 0.5)
            for s in ready:
                try:
                    conn, _ = s.accept()
                    conn.close()
                    winner = index[s.fileno()]
                except BlockingIOError:
                    pass
        except OSError:
            pass  # refused: no listener
        client.close()
        got.append(winner)
    for s in socks:
        if s is not None:
            s.close()
    return {"bind": binds, "listen": listens, "got": got}


def main():
    job = json.load(sys.stdin)
    out = sys.stdout
    for case in job.get("udp", []):
        out.write(json.dumps(run_udp(case)) + "\n")
    for case in job.get("tcp", []):
        out.write(json.dumps(run_tcp(case)) + "\n")
    out.flush()


main()
