//! `dpstack-smoltcp-echo`: the UDP echo server of `dpstack-echo`, built on
//! smoltcp's `Interface` instead of dpstack's stack, over the same DPDK port
//! and driver layer. It exists as the reference of `scripts/bench
//! udp-vs-smoltcp`; it is not part of the stack.
//!
//! `dpstack-smoltcp-echo [EAL options] -- --ip ADDR/PREFIX --udp PORT
//! [--peer IP,MAC] [--stats-period N]`. smoltcp answers a datagram only once
//! it knows the sender's MAC; `--peer` feeds it an ARP reply at start-up (a
//! replayed pcap never sends one).

use arrayvec::ArrayVec;
use clap::Parser;
use dpstack::app::{self, AppSpec};
use dpstack::clock::TscClock;
use dpstack::eal::Eal;
use dpstack::ethdev::{available_ports, EthPort, EthQueue, PortConfig};
use dpstack::mbuf::Mbuf;
use dpstack::mempool::PoolConfig;
use dpstack::stack::port::{send_burst, Buf, Port};
use dpstack::stack::route::Ipv4Cidr;
use smoltcp::iface::{Config, Interface, SocketSet};
use smoltcp::phy::{self, DeviceCapabilities, Medium};
use smoltcp::socket::udp;
use smoltcp::time::Instant as SmolInstant;
use smoltcp::wire::{
    ArpOperation, ArpPacket, ArpRepr, EthernetAddress, EthernetFrame, EthernetProtocol,
    HardwareAddress, IpAddress, IpCidr,
};
use std::net::Ipv4Addr;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const PROGRAM: &str = "dpstack-smoltcp-echo";
const SPEC: AppSpec = AppSpec::new(PROGRAM, &["net_tap0,iface=dpstack0"]);

/// A UDP echo server on smoltcp over dpstack's DPDK port (benchmark reference).
#[derive(Debug, Parser)]
#[command(name = PROGRAM, version)]
struct Cli {
    /// Our address and prefix length.
    #[arg(long, default_value = "192.0.2.1/24")]
    ip: Ipv4Cidr,
    /// UDP port to echo on.
    #[arg(long, default_value_t = 7)]
    udp: u16,
    /// A neighbour to teach smoltcp at start-up: IP,MAC.
    #[arg(long, value_name = "IP,MAC")]
    peer: Option<String>,
    /// Buffers in the packet pool.
    #[arg(long, default_value_t = 8191)]
    total_num_mbufs: u32,
    /// Print the receive rate every N seconds.
    #[arg(long, value_name = "N")]
    stats_period: Option<u64>,
}

/// smoltcp's view of an rx/tx queue pair: bursts underneath, one packet at a
/// time above (smoltcp's device model).
struct BurstDevice {
    queue: EthQueue,
    /// Received, not yet handed to smoltcp; popped from the end.
    rx: ArrayVec<Mbuf, 32>,
    tx: ArrayVec<Mbuf, 64>,
    /// A frame to hand to smoltcp before anything received (the ARP reply).
    injected: Option<Vec<u8>>,
    /// Frames `receive` may still hand out in this poll: smoltcp's poll
    /// loops while the device has frames, which under endless traffic would
    /// be forever.
    budget: usize,
}

enum Frame {
    Mbuf(Mbuf),
    Bytes(Vec<u8>),
}

struct RxToken(Frame);

struct TxToken<'a> {
    queue: &'a mut EthQueue,
    tx: &'a mut ArrayVec<Mbuf, 64>,
}

impl phy::RxToken for RxToken {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        match &self.0 {
            Frame::Mbuf(m) => f(m.data()),
            Frame::Bytes(b) => f(b),
        }
    }
}

impl phy::TxToken for TxToken<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let mut scratch = [0u8; 2048];
        let Some(mut m) = self.queue.alloc() else {
            return f(&mut scratch[..len.min(2048)]);
        };
        let Some(room) = m.append(len) else {
            return f(&mut scratch[..len.min(2048)]);
        };
        let result = f(room);
        if self.tx.is_full() {
            send_burst(self.queue, self.tx, 0);
        }
        self.tx.push(m);
        result
    }
}

impl phy::Device for BurstDevice {
    type RxToken<'a> = RxToken;
    type TxToken<'a> = TxToken<'a>;

    fn receive(&mut self, _: SmolInstant) -> Option<(RxToken, TxToken<'_>)> {
        if self.budget == 0 {
            return None;
        }
        self.budget -= 1;
        let frame = if let Some(bytes) = self.injected.take() {
            Frame::Bytes(bytes)
        } else {
            if self.rx.is_empty() {
                self.queue.rx_burst(&mut self.rx, 32);
                self.rx.reverse();
            }
            Frame::Mbuf(self.rx.pop()?)
        };
        let tx = TxToken {
            queue: &mut self.queue,
            tx: &mut self.tx,
        };
        Some((RxToken(frame), tx))
    }

    fn transmit(&mut self, _: SmolInstant) -> Option<TxToken<'_>> {
        Some(TxToken {
            queue: &mut self.queue,
            tx: &mut self.tx,
        })
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        caps.max_transmission_unit = 1514;
        caps.max_burst_size = Some(32);
        caps
    }
}

fn main() -> ExitCode {
    app::run_app::<Cli>(&SPEC, run)
}

fn parse_peer(peer: &str) -> Result<(Ipv4Addr, EthernetAddress), String> {
    let (ip, mac) = peer.split_once(',').ok_or("--peer takes IP,MAC")?;
    let ip: Ipv4Addr = ip.parse().map_err(|_| format!("bad peer IP '{ip}'"))?;
    let mac = EthernetAddress::from_bytes(
        &mac.split(':')
            .map(|b| u8::from_str_radix(b, 16))
            .collect::<Result<Vec<u8>, _>>()
            .map_err(|_| format!("bad peer MAC '{mac}'"))?,
    );
    Ok((ip, mac))
}

/// An ARP reply from the peer to us, so smoltcp learns the peer's MAC.
fn arp_reply(peer: (Ipv4Addr, EthernetAddress), ours: (Ipv4Addr, EthernetAddress)) -> Vec<u8> {
    let mut frame = vec![0u8; 14 + 28];
    let mut eth = EthernetFrame::new_unchecked(&mut frame[..]);
    eth.set_dst_addr(ours.1);
    eth.set_src_addr(peer.1);
    eth.set_ethertype(EthernetProtocol::Arp);
    ArpRepr::EthernetIpv4 {
        operation: ArpOperation::Reply,
        source_hardware_addr: peer.1,
        source_protocol_addr: peer.0,
        target_hardware_addr: ours.1,
        target_protocol_addr: ours.0,
    }
    .emit(&mut ArpPacket::new_unchecked(eth.payload_mut()));
    frame
}

fn run(eal_args: &[String], cli: &Cli) -> Result<(), String> {
    let signal = app::stop_signal()?;
    let _eal = Eal::init(eal_args).map_err(|e| e.to_string())?;
    let port_id = *available_ports()
        .first()
        .ok_or("no port: add one with --vdev")?;
    let pool_config = PoolConfig {
        count: cli.total_num_mbufs,
        ..PoolConfig::default()
    };
    let pool = app::packet_pool("smoltcp_pool", &pool_config, &PortConfig::default(), 1)?;
    let port = EthPort::open(port_id, &PortConfig::default(), pool).map_err(|e| e.to_string())?;
    let queue = port.queue(0, 0).map_err(|e| e.to_string())?;
    let mac = EthernetAddress(port.mac().octets());
    let injected = match &cli.peer {
        Some(peer) => Some(arp_reply(parse_peer(peer)?, (cli.ip.addr, mac))),
        None => None,
    };
    let (ip, udp_port) = (cli.ip, cli.udp);
    let echoed = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let poller = {
        let (echoed, stop) = (Arc::clone(&echoed), Arc::clone(&stop));
        move || {
            let device = BurstDevice {
                queue,
                rx: ArrayVec::new(),
                tx: ArrayVec::new(),
                injected,
                budget: 0,
            };
            echo_until_stopped(device, mac, ip, udp_port, &echoed, &stop);
            0
        }
    };
    let handle = app::launch_worker(poller)?;
    println!(
        "{PROGRAM}: port {port_id} ({}) is {ip}; echoing UDP port {udp_port}",
        port.mac()
    );
    let period = Duration::from_secs(cli.stats_period.unwrap_or(0).max(1));
    let (mut last_time, mut last_count) = (Instant::now(), 0);
    while signal.load(Ordering::SeqCst) == 0 {
        std::thread::sleep(Duration::from_millis(20));
        if cli.stats_period.is_some() && last_time.elapsed() >= period {
            let count = echoed.load(Ordering::Relaxed);
            let rate = (count - last_count) as f64 / last_time.elapsed().as_secs_f64();
            println!("rx-pps: {rate:.0}");
            (last_time, last_count) = (Instant::now(), count);
        }
    }
    stop.store(true, Ordering::SeqCst);
    let _ = handle.wait();
    println!("echoed {} datagrams", echoed.load(Ordering::Relaxed));
    Ok(())
}

fn echo_until_stopped(
    mut device: BurstDevice,
    mac: EthernetAddress,
    ip: Ipv4Cidr,
    udp_port: u16,
    echoed: &AtomicU64,
    stop: &AtomicBool,
) {
    let clock = TscClock::new();
    let now = || SmolInstant::from_micros((clock.now().as_nanos() / 1000) as i64);
    let mut iface = Interface::new(
        Config::new(HardwareAddress::Ethernet(mac)),
        &mut device,
        now(),
    );
    iface.update_ip_addrs(|addrs| {
        let _ = addrs.push(IpCidr::new(IpAddress::Ipv4(ip.addr), ip.len));
    });
    let rx = udp::PacketBuffer::new(vec![udp::PacketMetadata::EMPTY; 1024], vec![0; 1024 * 1500]);
    let tx = udp::PacketBuffer::new(vec![udp::PacketMetadata::EMPTY; 1024], vec![0; 1024 * 1500]);
    let mut socket = udp::Socket::new(rx, tx);
    if socket.bind(udp_port).is_err() {
        return;
    }
    let mut sockets = SocketSet::new(Vec::new());
    let handle = sockets.add(socket);
    let mut payload = [0u8; 2048];
    let mut count = 0u64;
    while !stop.load(Ordering::Relaxed) {
        device.budget = 32;
        iface.poll(now(), &mut device, &mut sockets);
        let socket = sockets.get_mut::<udp::Socket>(handle);
        while let Ok((len, meta)) = socket.recv_slice(&mut payload) {
            if socket.send_slice(&payload[..len], meta.endpoint).is_ok() {
                count += 1;
            }
        }
        if !device.tx.is_empty() {
            send_burst(&mut device.queue, &mut device.tx, 0);
        }
        echoed.store(count, Ordering::Relaxed);
    }
}
