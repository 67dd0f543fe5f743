//! Queue-mode TCP from application threads: two interfaces wired together
//! through in-memory ports and driven by a background "lcore" thread; the
//! test thread accepts and echoes through a `TcpListener`/`TcpStream` on
//! one side, or connects through a `TcpStream` to an inline echo on the
//! other.

use super::*;
use crate::iface::{DropDatagrams, Interface, InterfaceConfig, TcpEvent};
use crate::iface::{InlineHandler, LcoreContext};
use crate::port::memory::{MemBuf, MemPort, MemPortConfig};
use crate::port::{MacAddr, Port};
use crate::route::Ipv4Cidr;
use core::net::Ipv4Addr;
use std::sync::atomic::AtomicBool;

const A_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 1]);
const B_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 2]);
const A_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const B_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

fn host(mac: MacAddr, ip: Ipv4Addr) -> (Interface<MemBuf>, MemPort) {
    let mut config = InterfaceConfig::new(mac, Ipv4Cidr::new(ip, 24).unwrap());
    config.dad_transmits = 0;
    config.tcp.send_buffer = 64 * 1024;
    config.tcp.recv_buffer = 64 * 1024;
    let port = MemPort::new(MemPortConfig {
        mac,
        ..MemPortConfig::default()
    });
    (Interface::new(config).unwrap(), port)
}

/// Echoes inline (the other side of the connect test).
struct InlineEcho;

impl InlineHandler<MemBuf> for InlineEcho {
    fn on_tcp<P: Port<Buf = MemBuf>>(
        &mut self,
        conn: crate::iface::ConnId,
        event: TcpEvent,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        if !matches!(event, TcpEvent::Accepted(_) | TcpEvent::Readable) {
            return;
        }
        let mut buf = [0u8; 4096];
        loop {
            let (room, ready) = ctx.tcp_room(conn);
            let n = room.min(ready).min(buf.len());
            if n == 0 {
                break;
            }
            let got = ctx.tcp_recv(conn, &mut buf[..n]).unwrap();
            ctx.tcp_send(conn, &buf[..got]).unwrap();
        }
        if ctx.tcp_at_eof(conn) {
            ctx.tcp_close(conn);
        }
    }
}

/// The background "lcore": stopped and joined when dropped.
struct Running {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Polls both interfaces and carries frames between them until stopped,
/// with a clock that follows real time (the application threads wait in
/// real time).
fn drive<HA, HB>(
    a: (Interface<MemBuf>, MemPort, HA),
    b: (Interface<MemBuf>, MemPort, HB),
) -> Running
where
    HA: InlineHandler<MemBuf> + Send + 'static,
    HB: InlineHandler<MemBuf> + Send + 'static,
{
    let stop = Arc::new(AtomicBool::new(false));
    let (mut a, mut b) = (a, b);
    let flag = Arc::clone(&stop);
    let thread = std::thread::spawn(move || {
        let stop = flag;
        let start = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            let now = crate::time::Instant::from_nanos(start.elapsed().as_nanos() as u64);
            a.0.poll(&mut a.1, now, &mut a.2);
            for frame in a.1.take_tx() {
                b.1.push_rx(&frame);
            }
            b.0.poll(&mut b.1, now, &mut b.2);
            for frame in b.1.take_tx() {
                a.1.push_rx(&frame);
            }
            std::thread::yield_now();
        }
    });
    Running {
        stop,
        thread: Some(thread),
    }
}

/// An inline echo on A's port 7 and a handle for application threads on
/// B, both driven in the background.
fn echo_server_and_client() -> (
    crate::socket::StackHandle<crate::port::memory::MemPool>,
    Running,
) {
    let (mut server, server_port) = host(A_MAC, A_IP);
    server
        .tcp_listen(SocketAddr::new(A_IP.into(), 7), 16)
        .unwrap();
    let (mut client, client_port) = host(B_MAC, B_IP);
    let handle = client.handle(client_port.pool(), 64);
    let running = drive(
        (server, server_port, InlineEcho),
        (client, client_port, DropDatagrams),
    );
    (handle, running)
}

fn data(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 13 % 251) as u8).collect()
}

#[test]
fn an_application_thread_connects_writes_and_reads_back_the_echo() {
    let (handle, _running) = echo_server_and_client();
    let sent = data(300_000);
    let mut stream = TcpStream::connect(
        &handle,
        SocketAddr::new(A_IP.into(), 7),
        Some(Duration::from_secs(5)),
    )
    .unwrap();
    assert_eq!(stream.peer_addr(), Some(SocketAddr::new(A_IP.into(), 7)));
    // Everything is written before anything is read: the echo waits in
    // the stream's receive queue and the connection's buffer (backpressure
    // holds the rest on the server's side until the reads below).
    assert_eq!(stream_write_all(&mut stream, &sent), sent.len());
    stream.shutdown();
    let mut got = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match stream.read(&mut buf, Some(Duration::from_secs(5))) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => panic!("read: {e} after {} bytes", got.len()),
        }
    }
    assert!(
        got == sent,
        "{} of {} bytes back intact",
        got.len(),
        sent.len()
    );
}

fn stream_write_all(stream: &mut TcpStream<crate::port::memory::MemPool>, data: &[u8]) -> usize {
    let mut written = 0;
    while written < data.len() {
        match stream.write(&data[written..], Some(Duration::from_secs(5))) {
            Ok(n) => written += n,
            Err(e) => panic!("write: {e} after {written} bytes"),
        }
    }
    written
}

#[test]
fn application_threads_on_both_sides_accept_connect_and_echo() {
    let (server, server_port) = host(A_MAC, A_IP);
    let (client, client_port) = host(B_MAC, B_IP);
    let (mut server, mut client) = (server, client);
    let server_handle = server.handle(server_port.pool(), 64);
    let client_handle = client.handle(client_port.pool(), 64);
    let _running = drive(
        (server, server_port, DropDatagrams),
        (client, client_port, DropDatagrams),
    );
    let any = SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), 7);
    let listener = TcpListener::bind(&server_handle, any, 8).unwrap();
    assert!(matches!(
        server_handle.tcp_listen(any, 8),
        Err(SocketError::Listen(crate::iface::ListenError::AddrInUse))
    ));
    assert_eq!(
        listener.accept(Some(Duration::from_millis(50))).err(),
        Some(SocketError::TimedOut)
    );
    // The server thread: accept, read to the end, send it all back.
    let server_thread = std::thread::spawn(move || {
        let (mut stream, peer) = listener.accept(Some(Duration::from_secs(5))).unwrap();
        assert_eq!(peer.ip(), core::net::IpAddr::V4(B_IP));
        let mut all = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            match stream.read(&mut buf, Some(Duration::from_secs(5))) {
                Ok(0) => break,
                Ok(n) => all.extend_from_slice(&buf[..n]),
                Err(e) => panic!("server read: {e}"),
            }
        }
        stream_write_all(&mut stream, &all);
        all.len()
    });
    let sent = data(100_000);
    let mut stream = client_handle
        .tcp_connect(
            SocketAddr::new(A_IP.into(), 7),
            Some(Duration::from_secs(5)),
        )
        .unwrap();
    stream_write_all(&mut stream, &sent);
    stream.shutdown();
    let mut got = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match stream.read(&mut buf, Some(Duration::from_secs(5))) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => panic!("client read: {e} after {} bytes", got.len()),
        }
    }
    assert_eq!(server_thread.join().unwrap(), sent.len());
    assert!(
        got == sent,
        "{} of {} bytes back intact",
        got.len(),
        sent.len()
    );
    // A port nobody listens on refuses.
    assert_eq!(
        client_handle
            .tcp_connect(
                SocketAddr::new(A_IP.into(), 9),
                Some(Duration::from_secs(5))
            )
            .err(),
        Some(SocketError::Tcp(TcpError::Refused))
    );
}

#[test]
fn a_reuseport_group_shares_connections_by_flow() {
    let (mut server, server_port) = host(A_MAC, A_IP);
    let (mut client, client_port) = host(B_MAC, B_IP);
    let server_handle = server.handle(server_port.pool(), 64);
    let client_handle = client.handle(client_port.pool(), 64);
    let _running = drive(
        (server, server_port, DropDatagrams),
        (client, client_port, DropDatagrams),
    );
    let any = SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), 8);
    let reuse_port = crate::iface::ListenOptions {
        reuse_port: true,
        ..Default::default()
    };
    let first = server_handle.tcp_listen_with(any, 64, reuse_port).unwrap();
    let second = server_handle.tcp_listen_with(any, 64, reuse_port).unwrap();
    assert!(
        matches!(
            server_handle.tcp_listen(any, 8),
            Err(SocketError::Listen(crate::iface::ListenError::AddrInUse))
        ),
        "a listener outside the group is refused"
    );
    let mut streams = Vec::new();
    for _ in 0..24 {
        let stream = client_handle
            .tcp_connect(
                SocketAddr::new(A_IP.into(), 8),
                Some(Duration::from_secs(5)),
            )
            .unwrap();
        streams.push(stream);
    }
    let count = |listener: &TcpListener<_>| {
        let mut n = 0;
        while listener.accept(Some(Duration::from_millis(100))).is_ok() {
            n += 1;
        }
        n
    };
    let (a, b) = (count(&first), count(&second));
    assert_eq!(a + b, 24, "each connection accepted exactly once");
    assert!(a > 0 && b > 0, "both members get flows: {a} and {b}");
}

#[test]
fn threads_connecting_at_once_into_a_narrow_range_share_nothing_and_run_out_cleanly() {
    let (mut server, server_port) = host(A_MAC, A_IP);
    let (mut client, client_port) = {
        let mut config = InterfaceConfig::new(B_MAC, Ipv4Cidr::new(B_IP, 24).unwrap());
        config.dad_transmits = 0;
        config.tcp.ephemeral_ports = (50000, 50003);
        let port = MemPort::new(MemPortConfig {
            mac: B_MAC,
            ..MemPortConfig::default()
        });
        (Interface::new(config).unwrap(), port)
    };
    let server_handle = server.handle(server_port.pool(), 64);
    let client_handle = client.handle(client_port.pool(), 64);
    let _running = drive(
        (server, server_port, DropDatagrams),
        (client, client_port, DropDatagrams),
    );
    let listener = server_handle
        .tcp_listen(SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), 9), 16)
        .unwrap();
    // Eight threads at once, four ports: every connection stays open.
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let handle = client_handle.clone();
            std::thread::spawn(move || {
                handle.tcp_connect(
                    SocketAddr::new(A_IP.into(), 9),
                    Some(Duration::from_secs(5)),
                )
            })
        })
        .collect();
    let results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let open = results.iter().filter(|r| r.is_ok()).count();
    let refused = results
        .iter()
        .filter(|r| matches!(r, Err(SocketError::Tcp(TcpError::AddressNotAvailable))))
        .count();
    assert_eq!((open, refused), (4, 4), "{results:?}");
    let mut accepted = 0;
    while listener.accept(Some(Duration::from_millis(200))).is_ok() {
        accepted += 1;
    }
    assert_eq!(accepted, 4, "four distinct connections reached the server");
    drop(results);
}

#[test]
fn a_split_stream_reads_and_writes_from_two_threads_beyond_the_buffers() {
    // A megabyte is far more than both sides' queues and buffers hold: the
    // echo only completes if reading runs while writing does.
    let (handle, _running) = echo_server_and_client();
    let sent = data(1 << 20);
    let stream = handle
        .tcp_connect(
            SocketAddr::new(A_IP.into(), 7),
            Some(Duration::from_secs(5)),
        )
        .unwrap();
    let (mut reader, mut writer) = stream.split();
    let writing = {
        let sent = sent.clone();
        std::thread::spawn(move || {
            let mut written = 0;
            while written < sent.len() {
                written += writer
                    .write(&sent[written..], Some(Duration::from_secs(5)))
                    .expect("write");
            }
            // Dropping the write half closes our side.
        })
    };
    let mut got = Vec::new();
    let mut buf = [0u8; 16384];
    loop {
        match reader.read(&mut buf, Some(Duration::from_secs(10))) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => panic!("read: {e} after {} bytes", got.len()),
        }
    }
    writing.join().unwrap();
    assert!(
        got == sent,
        "{} of {} bytes back intact",
        got.len(),
        sent.len()
    );
}

/// Queue mode on a host whose second link reaches the peer: the bytes a
/// stream reads travel in buffers from that link's pool. The first link's
/// pool is empty here, so a pump that took its buffers from link 0 would
/// hand the application nothing.
#[test]
fn a_stream_on_the_second_link_reads_through_that_links_pool() {
    use crate::iface::LinkConfig;
    let (mut server, mut server_port) = host(A_MAC, A_IP);
    server
        .tcp_listen(SocketAddr::new(A_IP.into(), 7), 16)
        .unwrap();
    let unused_mac = MacAddr([2, 0, 0, 0, 9, 1]);
    let unused = Ipv4Cidr::new(Ipv4Addr::new(10, 9, 0, 1), 24).unwrap();
    let mut config = InterfaceConfig::with_links(vec![
        LinkConfig::new(unused_mac, unused),
        LinkConfig::new(B_MAC, Ipv4Cidr::new(B_IP, 24).unwrap()),
    ]);
    config.dad_transmits = 0;
    let mut client = Interface::<MemBuf>::new(config).unwrap();
    let empty = MemPort::new(MemPortConfig {
        mac: unused_mac,
        pool_size: 0,
        ..MemPortConfig::default()
    });
    let reaching = MemPort::new(MemPortConfig {
        mac: B_MAC,
        ..MemPortConfig::default()
    });
    let handle = client.handle(reaching.pool(), 64);
    let mut ports = [empty, reaching];
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let thread = std::thread::spawn(move || {
        let start = Instant::now();
        while !flag.load(Ordering::Relaxed) {
            let now = crate::time::Instant::from_nanos(start.elapsed().as_nanos() as u64);
            server.poll(&mut server_port, now, &mut InlineEcho);
            for frame in server_port.take_tx() {
                ports[1].push_rx(&frame);
            }
            client.poll_ports(&mut ports, now, &mut DropDatagrams);
            for frame in ports[1].take_tx() {
                server_port.push_rx(&frame);
            }
            ports[0].take_tx();
            std::thread::yield_now();
        }
    });
    let _running = Running {
        stop,
        thread: Some(thread),
    };
    let peer = SocketAddr::new(A_IP.into(), 7);
    let mut stream = TcpStream::connect(&handle, peer, Some(Duration::from_secs(5))).unwrap();
    let sent = data(20_000);
    assert_eq!(stream_write_all(&mut stream, &sent), sent.len());
    stream.shutdown();
    let mut got = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match stream.read(&mut buf, Some(Duration::from_secs(5))) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => panic!("read: {e} after {} bytes", got.len()),
        }
    }
    assert!(got == sent, "{} of {} bytes back", got.len(), sent.len());
}

/// An inline echo that records how its connections ended.
struct RecordingEcho(Arc<std::sync::Mutex<Vec<Option<crate::tcp::TcpError>>>>);

impl InlineHandler<MemBuf> for RecordingEcho {
    fn on_tcp<P: Port<Buf = MemBuf>>(
        &mut self,
        conn: crate::iface::ConnId,
        event: TcpEvent,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        if let TcpEvent::Closed(why) = event {
            self.0.lock().unwrap().push(why);
            return;
        }
        InlineEcho.on_tcp(conn, event, ctx);
    }
}

#[test]
fn dropping_a_stream_with_unread_data_resets_the_connection() {
    // As Linux's close: the peer learns its data was never read, and the
    // connection does not linger over a queue nobody empties.
    let (mut server, server_port) = host(A_MAC, A_IP);
    server
        .tcp_listen(SocketAddr::new(A_IP.into(), 7), 16)
        .unwrap();
    let (mut client, client_port) = host(B_MAC, B_IP);
    let handle = client.handle(client_port.pool(), 64);
    let closed = Arc::new(std::sync::Mutex::new(Vec::new()));
    let _running = drive(
        (server, server_port, RecordingEcho(Arc::clone(&closed))),
        (client, client_port, DropDatagrams),
    );
    let timeout = Some(Duration::from_secs(5));
    let mut stream = TcpStream::connect(&handle, SocketAddr::new(A_IP.into(), 7), timeout).unwrap();
    assert_eq!(stream_write_all(&mut stream, &data(100)), 100);
    let mut first = [0u8; 1];
    assert_eq!(
        stream.read(&mut first, timeout).unwrap(),
        1,
        "the echo came back"
    );
    drop(stream); // 99 echoed bytes unread
    for _ in 0..500 {
        if !closed.lock().unwrap().is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        *closed.lock().unwrap(),
        vec![Some(crate::tcp::TcpError::Reset)]
    );
}
