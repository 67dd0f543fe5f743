//! A device whose transmit queue is full: what it refuses stays in the
//! lcore's batch, in order, for the next poll's flush; only what finds the
//! batch itself full is dropped, counted (`TxDeviceFull`).

use super::*;
use crate::iface::transmit::TX_BATCH;
use core::ops::Range;

fn port_with_tx_ring(tx_ring_size: usize) -> MemPort {
    MemPort::new(MemPortConfig {
        mac: OUR_MAC,
        tx_ring_size,
        ..MemPortConfig::default()
    })
}

/// An echo stack that knows the peer, a port whose transmit ring holds
/// `tx_ring_size` frames with one request from each of `sources` waiting,
/// and the frames the stack had sent before.
fn echo_with_requests(
    tx_ring_size: usize,
    sources: Range<u16>,
) -> (Interface<MemBuf>, MemPort, u64) {
    let (mut iface, _) = stack_knowing_peer();
    let _ = iface.udp_bind(SocketAddrV4::new(OUR_IP, 7), BindOptions::default());
    let mut port = port_with_tx_ring(tx_ring_size);
    for source in sources {
        port.push_rx(&udp_frame(source, 7, &source.to_be_bytes()));
    }
    let before = iface_sent(&iface);
    (iface, port, before)
}

fn iface_sent(iface: &Interface<MemBuf>) -> u64 {
    iface.counters().get(Stat::EthOutFrames)
}

fn reply_ports(frames: &[Vec<u8>]) -> Vec<u16> {
    frames.iter().map(|f| parse_reply(f).3).collect()
}

#[test]
fn replies_a_full_device_refuses_go_out_in_order_at_the_next_polls() {
    let (mut iface, mut port, before) = echo_with_requests(8, 5000..5020);
    let mut sent = Vec::new();
    for _ in 0..3 {
        poll(&mut iface, &mut port, &mut Echo);
        let out = port.take_tx();
        assert!(out.len() <= 8, "the device took at most its ring");
        sent.extend(out);
    }
    assert_eq!(reply_ports(&sent), (5000..5020).collect::<Vec<_>>());
    let counters = iface.counters();
    assert_eq!(counters.dropped(DropReason::TxDeviceFull), 0);
    assert_eq!(iface_sent(&iface) - before, 20);
    assert_eq!(port.buffers_in_use(), 0);
}

#[test]
fn a_device_that_takes_nothing_keeps_one_batch_and_drops_the_rest_counted() {
    let (mut iface, mut stuck, before) = echo_with_requests(0, 5000..5100);
    for _ in 0..4 {
        poll(&mut iface, &mut stuck, &mut Echo);
    }
    let counters = iface.counters();
    assert_eq!(counters.get(Stat::UdpOutDatagrams), 100);
    assert_eq!(
        counters.dropped(DropReason::TxDeviceFull),
        (100 - TX_BATCH) as u64,
        "a batch's worth is held, the newest beyond it dropped"
    );
    assert_eq!(iface_sent(&iface), before);
    // The link's queue has room again: the held batch goes out first.
    let mut recovered = port_with_tx_ring(1024);
    poll(&mut iface, &mut recovered, &mut Echo);
    assert_eq!(
        reply_ports(&recovered.take_tx()),
        (5000..5000 + TX_BATCH as u16).collect::<Vec<_>>()
    );
    assert_eq!(iface_sent(&iface) - before, TX_BATCH as u64);
}
