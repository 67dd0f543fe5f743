//! `tcp-mem`: memory per established, idle TCP connection. Two in-memory
//! stacks in this process (no DPDK) open N connections between them (one
//! million by default) and leave them idle; the process's resident memory
//! grows by what both stacks hold for them (connection slabs, the
//! connection tables, timers, any buffers), and that growth, divided by
//! the 2N endpoints, is the figure. Both stacks are built after the first
//! reading, so their fixed costs count against the connections too.
//!
//! `cargo run --release -p dpstack-stack --example tcp_mem [N]` prints
//! `tcp-mem ours endpoints=2N bytes_per_endpoint=B ...`; `scripts/bench
//! tcp-mem` sets it beside the kernel's figure.

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
/// Server ports: each gives the client 64,512 local ports.
const SERVER_PORTS: u16 = 20;
/// Connects started per step (the in-memory tx ring holds 1,024 frames).
const BATCH: usize = 256;

/// Counts opened connections.
#[derive(Default)]
struct Opened(u64);

impl InlineHandler<MemBuf> for Opened {
    fn on_tcp<P: Port<Buf = MemBuf>>(
        &mut self,
        _: ConnId,
        event: TcpEvent,
        _: &mut LcoreContext<'_, P>,
    ) {
        if matches!(event, TcpEvent::Accepted(_) | TcpEvent::Connected) {
            self.0 += 1;
        }
    }
}

/// Resident bytes of this process.
fn resident() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: usize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .expect("resident pages in /proc/self/statm");
    pages * 4096
}

fn stack(mac: MacAddr, ip: Ipv4Addr, connections: usize) -> (Interface<MemBuf>, MemPort) {
    let mut config = InterfaceConfig::new(mac, Ipv4Cidr::new(ip, 24).unwrap());
    config.dad_transmits = 0;
    config.tcp.conn_buckets = (connections.next_power_of_two()).max(1024);
    config.tcp.max_connections = connections + 1;
    config.tcp.ephemeral_ports = (1024, 65535);
    let iface = Interface::new(config).expect("an in-memory interface");
    let port = MemPort::new(MemPortConfig {
        mac,
        ..MemPortConfig::default()
    });
    (iface, port)
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("N: a number of connections"))
        .unwrap_or(1_000_000);
    assert!(
        n <= usize::from(SERVER_PORTS) * 64_512,
        "at most {} connections",
        usize::from(SERVER_PORTS) * 64_512
    );
    let before = resident();
    let (mut server, mut server_port) = stack(MacAddr([2, 0, 0, 0, 0, 1]), SERVER_IP, n);
    let (mut client, mut client_port) = stack(MacAddr([2, 0, 0, 0, 0, 2]), CLIENT_IP, n);
    for p in 0..SERVER_PORTS {
        server
            .tcp_listen(SocketAddrV4::new(SERVER_IP, 7 + p), 4096)
            .expect("listen");
    }
    let (mut accepted, mut connected) = (Opened::default(), Opened::default());
    let mut now = Instant::from_nanos(1_000_000);
    let started = std::time::Instant::now();
    let mut requested = 0;
    // Bounded: every connection needs a few steps; SYNs lost to a full
    // ring are sent again after a second of virtual time.
    for _ in 0..(n / BATCH + 1) * 100 {
        if connected.0 as usize == n && accepted.0 as usize == n {
            break;
        }
        let in_flight = requested - connected.0 as usize;
        for _ in 0..BATCH.saturating_sub(in_flight).min(n - requested) {
            let target = SocketAddrV4::new(
                SERVER_IP,
                7 + (requested % usize::from(SERVER_PORTS)) as u16,
            );
            client
                .tcp_connect(core::slice::from_mut(&mut client_port), now, target)
                .expect("connect");
            requested += 1;
        }
        now = now + Duration::from_millis(1);
        client.poll(&mut client_port, now, &mut connected);
        client_port.deliver_to(&mut server_port);
        server.poll(&mut server_port, now, &mut accepted);
        server_port.deliver_to(&mut client_port);
    }
    assert_eq!(connected.0 as usize, n, "every connect completed");
    assert_eq!(accepted.0 as usize, n, "every connection was accepted");
    let after = resident();
    let grown = after.saturating_sub(before);
    let endpoints = 2 * n;
    let buffers = server.tcp_buffer_memory().used + client.tcp_buffer_memory().used;
    println!(
        "tcp-mem ours endpoints={endpoints} bytes_per_endpoint={} resident_growth={grown} \
         buffer_bytes={buffers} setup_seconds={:.1}",
        grown / endpoints,
        started.elapsed().as_secs_f64()
    );
}
