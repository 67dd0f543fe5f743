//! `tcp-cost`: what one TCP segment of a bulk echo costs the stack, counted
//! by callgrind (exact, so a change to the TCP path can be judged on this
//! noisy machine without `scripts/bench tcp-bulk`). Two in-memory stacks
//! in this process (no DPDK, no device: the in-memory port's copy stands in
//! for the PMD's) run `tcp-bulk`'s workload: the client sends BYTES and
//! reads their echo, the server echoes what it reads, both inline, at MTU
//! 1500 unless given. Everything both sides do (send, receive, ACK, echo)
//! is counted; the figure is instructions per data segment, from two sizes
//! so start-up cancels out.
//!
//! `cargo run --release -p dpstack-stack --example tcp_cost [BYTES [MTU]]`
//! prints `tcp-cost bytes=B segments=S`; under `valgrind --tool=callgrind`
//! at two sizes (20 and 60 MB), the difference of the instruction totals
//! over the difference of the segment counts is the cost per segment. The
//! in-memory port zeroes each new buffer (a DPDK pool does not), so
//! `memset` is its cost, not the stack's.

use dpstack_stack::counters::Stat;
use dpstack_stack::iface::{
    ConnId, InlineHandler, Interface, InterfaceConfig, LcoreContext, TcpEvent,
};
use dpstack_stack::port::memory::{MemBuf, MemPort, MemPortConfig};
use dpstack_stack::port::{MacAddr, Port};
use dpstack_stack::route::Ipv4Cidr;
use dpstack_stack::time::{Duration, Instant};
use std::net::{Ipv4Addr, SocketAddrV4};

const SERVER_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const CLIENT_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

/// Echoes what it reads, as `dpstack-echo --tcp` does.
struct Echo {
    buf: Vec<u8>,
}

impl InlineHandler<MemBuf> for Echo {
    fn on_tcp<P: Port<Buf = MemBuf>>(
        &mut self,
        conn: ConnId,
        event: TcpEvent,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        if event != TcpEvent::Readable {
            return;
        }
        loop {
            let room = ctx.tcp_room(conn).0.min(self.buf.len());
            let n = ctx.tcp_recv(conn, &mut self.buf[..room]).unwrap_or(0);
            if n == 0 {
                break;
            }
            let sent = ctx.tcp_send(conn, &self.buf[..n]).unwrap_or(0);
            assert_eq!(sent, n, "the echo had the room it asked for");
        }
    }
}

/// Sends `total` bytes and reads their echo, as `dpstack-tcpload` does.
struct Client {
    conn: Option<ConnId>,
    total: usize,
    sent: usize,
    echoed: usize,
    data: Vec<u8>,
    buf: Vec<u8>,
}

impl Client {
    fn work<P: Port<Buf = MemBuf>>(&mut self, conn: ConnId, ctx: &mut LcoreContext<'_, P>) {
        while self.sent < self.total {
            let chunk = (self.total - self.sent).min(self.data.len());
            let n = ctx.tcp_send(conn, &self.data[..chunk]).unwrap_or(0);
            if n == 0 {
                break;
            }
            self.sent += n;
        }
        loop {
            let n = ctx.tcp_recv(conn, &mut self.buf).unwrap_or(0);
            if n == 0 {
                break;
            }
            self.echoed += n;
        }
    }
}

impl InlineHandler<MemBuf> for Client {
    fn on_tcp<P: Port<Buf = MemBuf>>(
        &mut self,
        conn: ConnId,
        event: TcpEvent,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        if matches!(event, TcpEvent::Connected | TcpEvent::Readable) {
            self.conn = Some(conn);
            self.work(conn, ctx);
        }
    }
}

fn stack(mac: MacAddr, ip: Ipv4Addr, mtu: u16) -> (Interface<MemBuf>, MemPort) {
    let mut config = InterfaceConfig::new(mac, Ipv4Cidr::new(ip, 24).unwrap());
    config.dad_transmits = 0;
    config.links[0].mtu = usize::from(mtu);
    let iface = Interface::new(config).expect("an in-memory interface");
    let port = MemPort::new(MemPortConfig {
        mac,
        buf_size: usize::from(mtu).max(2048) + 256,
        ..MemPortConfig::default()
    });
    (iface, port)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let total: usize = args
        .next()
        .map(|a| a.parse().expect("BYTES: a number"))
        .unwrap_or(100 << 20);
    let mtu: u16 = args
        .next()
        .map(|a| a.parse().expect("MTU: a number"))
        .unwrap_or(1500);
    let (mut server, mut server_port) = stack(MacAddr([2, 0, 0, 0, 0, 1]), SERVER_IP, mtu);
    let (mut client, mut client_port) = stack(MacAddr([2, 0, 0, 0, 0, 2]), CLIENT_IP, mtu);
    server
        .tcp_listen(SocketAddrV4::new(SERVER_IP, 7), 16)
        .expect("listen");
    let mut echo = Echo {
        buf: vec![0; 64 * 1024],
    };
    let mut load = Client {
        conn: None,
        total,
        sent: 0,
        echoed: 0,
        data: (0..64 * 1024).map(|i| (i % 251) as u8).collect(),
        buf: vec![0; 64 * 1024],
    };
    let mut now = Instant::from_nanos(1_000_000);
    client
        .tcp_connect(
            core::slice::from_mut(&mut client_port),
            now,
            SocketAddrV4::new(SERVER_IP, 7),
        )
        .expect("connect");
    // Bounded: each step moves at least a window's worth once running.
    for _ in 0..total / 100 + 100_000 {
        if load.echoed == total {
            break;
        }
        now = now + Duration::from_micros(20);
        client.poll(&mut client_port, now, &mut load);
        client_port.deliver_to(&mut server_port);
        server.poll(&mut server_port, now, &mut echo);
        server_port.deliver_to(&mut client_port);
    }
    assert_eq!(load.echoed, total, "the whole echo came back");
    let segments =
        client.counters().get(Stat::TcpOutSegs) + server.counters().get(Stat::TcpOutSegs);
    println!("tcp-cost bytes={total} segments={segments} mtu={mtu}");
}
