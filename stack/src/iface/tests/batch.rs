//! Batch receive across sockets (`InlineHandler::WHOLE_BURSTS`), receive one
//! datagram at a time (`InlineHandler::EACH_DATAGRAM`), batch send
//! (`LcoreContext::send_batch`) and the per-datagram receive time.

use super::*;
use crate::udp::Datagram;

/// One datagram as a whole-burst handler saw it: socket, source, payload,
/// receive time.
type Seen = (SocketId, SocketAddr, Vec<u8>, Instant);

fn seen(d: &Datagram<MemBuf>) -> Seen {
    (d.socket(), d.src(), d.payload().to_vec(), d.received_at())
}

/// Takes whole bursts and records, per call, each datagram's socket,
/// source, payload and receive time.
#[derive(Default)]
struct BurstRecorder {
    calls: Vec<Vec<Seen>>,
    per_socket_calls: usize,
}

impl InlineHandler<MemBuf> for BurstRecorder {
    const WHOLE_BURSTS: bool = true;

    fn on_burst<P: Port<Buf = MemBuf>>(
        &mut self,
        batch: &mut Batch<MemBuf>,
        _: &mut LcoreContext<'_, P>,
    ) {
        self.calls.push(batch.iter().map(seen).collect());
    }

    fn on_datagrams<P: Port<Buf = MemBuf>>(
        &mut self,
        _: SocketId,
        _: &mut Batch<MemBuf>,
        _: &mut LcoreContext<'_, P>,
    ) {
        self.per_socket_calls += 1;
    }
}

fn bind(iface: &mut Interface<MemBuf>, port: u16) -> SocketId {
    iface
        .udp_bind(SocketAddrV4::new(OUR_IP, port), BindOptions::default())
        .unwrap()
}

#[test]
fn a_whole_burst_across_sockets_comes_in_one_call_with_socket_source_and_time() {
    let (mut iface, mut port) = stack();
    let a = bind(&mut iface, 1000);
    let b = bind(&mut iface, 2000);
    for (src, dst, text) in [(5001, 2000, "b1"), (5002, 1000, "a1"), (5003, 2000, "b2")] {
        port.push_rx(&udp_frame(src, dst, text.as_bytes()));
    }
    let mut recorder = BurstRecorder::default();
    iface.poll(&mut port, Instant::from_nanos(7_000), &mut recorder);
    assert_eq!(recorder.per_socket_calls, 0);
    assert_eq!(recorder.calls.len(), 1, "one call for the whole burst");
    let peer = |p| SocketAddr::V4(SocketAddrV4::new(PEER_IP, p));
    let at = Instant::from_nanos(7_000);
    assert_eq!(
        recorder.calls[0],
        vec![
            (b, peer(5001), b"b1".to_vec(), at),
            (a, peer(5002), b"a1".to_vec(), at),
            (b, peer(5003), b"b2".to_vec(), at),
        ]
    );
    assert_eq!(port.buffers_in_use(), 0, "what the handler left is freed");

    // The next poll's datagrams carry the next poll's time.
    port.push_rx(&udp_frame(5004, 1000, b"a2"));
    iface.poll(&mut port, Instant::from_nanos(9_000), &mut recorder);
    assert_eq!(recorder.calls[1][0].3, Instant::from_nanos(9_000));
}

/// Without `WHOLE_BURSTS`, the default path stamps datagrams too.
#[derive(Default)]
struct TimeRecorder(Vec<(SocketId, Instant)>);

impl InlineHandler<MemBuf> for TimeRecorder {
    fn on_datagrams<P: Port<Buf = MemBuf>>(
        &mut self,
        _: SocketId,
        batch: &mut Batch<MemBuf>,
        _: &mut LcoreContext<'_, P>,
    ) {
        self.0
            .extend(batch.iter().map(|d| (d.socket(), d.received_at())));
    }
}

#[test]
fn per_socket_delivery_stamps_each_datagram_with_its_socket_and_time() {
    let (mut iface, mut port) = stack();
    let a = bind(&mut iface, 1000);
    port.push_rx(&udp_frame(5000, 1000, b"x"));
    let mut recorder = TimeRecorder::default();
    iface.poll(&mut port, Instant::from_nanos(123_456), &mut recorder);
    assert_eq!(recorder.0, vec![(a, Instant::from_nanos(123_456))]);
}

/// Records the batches `on_datagrams` gets (socket, length), through the
/// default `on_burst` (which splits a burst into per-socket runs) or, with
/// `EACH` (`EACH_DATAGRAM`), the default `on_datagram` (a batch of one).
#[derive(Default)]
struct RunRecorder<const EACH: bool>(Vec<(SocketId, usize)>);

/// [`RunRecorder`] through the default `on_burst`.
type SplitRecorder = RunRecorder<false>;

impl<const EACH: bool> InlineHandler<MemBuf> for RunRecorder<EACH> {
    const EACH_DATAGRAM: bool = EACH;

    fn on_datagrams<P: Port<Buf = MemBuf>>(
        &mut self,
        socket: SocketId,
        batch: &mut Batch<MemBuf>,
        _: &mut LcoreContext<'_, P>,
    ) {
        self.0.push((socket, batch.len()));
    }
}

#[test]
fn the_default_on_burst_hands_each_run_of_one_socket_to_on_datagrams() {
    let (mut iface, mut port) = stack();
    let a = bind(&mut iface, 1000);
    let b = bind(&mut iface, 2000);
    for dst in [1000, 1000, 2000, 1000] {
        port.push_rx(&udp_frame(5000, dst, b"x"));
    }
    let mut burst: Batch<MemBuf> = Batch::new();
    let mut recorder = SplitRecorder::default();
    // Collect a burst through a whole-burst handler, then replay it through
    // the default `on_burst` of a per-socket handler.
    struct Collect<'a>(&'a mut Batch<MemBuf>, &'a mut SplitRecorder);
    impl InlineHandler<MemBuf> for Collect<'_> {
        const WHOLE_BURSTS: bool = true;
        fn on_burst<P: Port<Buf = MemBuf>>(
            &mut self,
            batch: &mut Batch<MemBuf>,
            ctx: &mut LcoreContext<'_, P>,
        ) {
            self.0.extend(batch.drain(..));
            self.1.on_burst(self.0, ctx);
        }
        fn on_datagrams<P: Port<Buf = MemBuf>>(
            &mut self,
            _: SocketId,
            _: &mut Batch<MemBuf>,
            _: &mut LcoreContext<'_, P>,
        ) {
            unreachable!("whole bursts only");
        }
    }
    poll(
        &mut iface,
        &mut port,
        &mut Collect(&mut burst, &mut recorder),
    );
    assert_eq!(recorder.0, vec![(a, 2), (b, 1), (a, 1)]);
    assert!(burst.is_empty(), "the default on_burst consumed the burst");
    assert_eq!(port.buffers_in_use(), 0);
}

/// Takes each datagram on its own and records its socket, source, payload
/// and receive time; answers the ones that ask.
#[derive(Default)]
struct EachRecorder {
    seen: Vec<Seen>,
    batches: usize,
}

impl InlineHandler<MemBuf> for EachRecorder {
    const EACH_DATAGRAM: bool = true;
    // Ignored: each datagram comes on its own.
    const WHOLE_BURSTS: bool = true;

    fn on_datagram<P: Port<Buf = MemBuf>>(
        &mut self,
        datagram: Datagram<MemBuf>,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        self.seen.push(seen(&datagram));
        if datagram.payload().starts_with(b"echo") {
            ctx.reply(datagram);
        }
    }

    fn on_datagrams<P: Port<Buf = MemBuf>>(
        &mut self,
        _: SocketId,
        _: &mut Batch<MemBuf>,
        _: &mut LcoreContext<'_, P>,
    ) {
        self.batches += 1;
    }

    fn on_burst<P: Port<Buf = MemBuf>>(
        &mut self,
        _: &mut Batch<MemBuf>,
        _: &mut LcoreContext<'_, P>,
    ) {
        self.batches += 1;
    }
}

#[test]
fn each_datagram_comes_on_its_own_in_arrival_order_with_socket_source_and_time() {
    let (mut iface, mut port) = stack();
    let a = bind(&mut iface, 1000);
    let b = bind(&mut iface, 2000);
    for (src, dst, text) in [
        (5001, 2000, "b1"),
        (5002, 1000, "echo a"),
        (5003, 2000, "b2"),
    ] {
        port.push_rx(&udp_frame(src, dst, text.as_bytes()));
    }
    let mut recorder = EachRecorder::default();
    iface.poll(&mut port, Instant::from_nanos(7_000), &mut recorder);
    let peer = |p| SocketAddr::V4(SocketAddrV4::new(PEER_IP, p));
    let at = Instant::from_nanos(7_000);
    assert_eq!(
        recorder.seen,
        vec![
            (b, peer(5001), b"b1".to_vec(), at),
            (a, peer(5002), b"echo a".to_vec(), at),
            (b, peer(5003), b"b2".to_vec(), at),
        ]
    );
    assert_eq!(recorder.batches, 0, "no batch, per socket or per burst");
    let out = port.take_tx();
    assert_eq!(out.len(), 1);
    assert_eq!(
        parse_reply(&out[0]),
        (OUR_IP, PEER_IP, 1000, 5002, b"echo a".to_vec())
    );
    assert_eq!(port.buffers_in_use(), 0, "what the handler left is freed");
}

/// With `EACH_DATAGRAM` and no `on_datagram` of its own, a handler gets
/// each datagram as a batch of one.
type EachAsBatches = RunRecorder<true>;

#[test]
fn the_default_on_datagram_hands_a_batch_of_one_to_on_datagrams() {
    let (mut iface, mut port) = stack();
    let a = bind(&mut iface, 1000);
    for _ in 0..3 {
        port.push_rx(&udp_frame(5000, 1000, b"x"));
    }
    let mut recorder = EachAsBatches::default();
    poll(&mut iface, &mut port, &mut recorder);
    assert_eq!(recorder.0, vec![(a, 1); 3]);
    assert_eq!(port.buffers_in_use(), 0);
}

/// Sends a batch of three datagrams, one of them to an unroutable address,
/// from the socket that received each burst.
struct BatchSender {
    sent: Vec<usize>,
}

impl InlineHandler<MemBuf> for BatchSender {
    fn on_datagrams<P: Port<Buf = MemBuf>>(
        &mut self,
        socket: SocketId,
        _: &mut Batch<MemBuf>,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        let peer = |p| SocketAddr::V4(SocketAddrV4::new(PEER_IP, p));
        let nowhere = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(192, 0, 2, 1), 9));
        let items: [(SocketAddr, &[u8]); 3] = [
            (peer(7001), b"one"),
            (nowhere, b"lost"),
            (peer(7002), b"two"),
        ];
        self.sent.push(ctx.send_batch(socket, items));
    }
}

#[test]
fn send_batch_sends_what_it_can_and_counts_the_rest() {
    let (mut iface, mut port) = stack_knowing_peer();
    bind(&mut iface, 1000);
    port.push_rx(&udp_frame(5000, 1000, b"go"));
    let mut sender = BatchSender { sent: Vec::new() };
    poll(&mut iface, &mut port, &mut sender);
    assert_eq!(sender.sent, vec![2]);
    let out: Vec<_> = port.take_tx().iter().map(|f| parse_reply(f)).collect();
    assert_eq!(
        out,
        vec![
            (OUR_IP, PEER_IP, 1000, 7001, b"one".to_vec()),
            (OUR_IP, PEER_IP, 1000, 7002, b"two".to_vec()),
        ]
    );
    assert_eq!(iface.counters().dropped(DropReason::TxNoRoute), 1);
}
