//! Queue mode on the lcore: listeners whose connections go to application
//! threads, their connects, the attention queue, and the pump that moves
//! bytes between a connection's buffers and its stream's queues.

use super::*;

/// Queue mode: listens on `local`; accepted connections go to `queue`.
pub(crate) fn listen_queued<B: Buf>(
    core: &mut Core<B>,
    local: SocketAddr,
    backlog: usize,
    options: ListenOptions,
    queue: Arc<AcceptQueue<B>>,
) -> Result<(), ListenError> {
    let at = listen(core, local, backlog, options)?;
    core.tcp.listeners[at].accept = Some(queue);
    Ok(())
}

/// Stops listening on `local` (connections in progress carry on).
pub(crate) fn unlisten<B: Buf>(core: &mut Core<B>, local: SocketAddr, queue: &Arc<AcceptQueue<B>>) {
    let ours = |l: &Listener<B>| l.accept.as_ref().is_some_and(|q| Arc::ptr_eq(q, queue));
    if let Some(at) = core
        .tcp
        .listeners
        .iter()
        .position(|l| l.local == local && ours(l))
    {
        // Keep indexes stable for connections still in their handshake.
        let listener = &mut core.tcp.listeners[at];
        listener.accept = None;
        listener.local = SocketAddr::new(local.ip(), 0);
        listener.backlog = 0;
    }
}

/// Queue mode: opens a connection to `remote` for an application thread.
pub(crate) fn connect_queued<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    remote: SocketAddr,
    stream: Arc<StreamQueue<P::Buf>>,
) -> Result<(), TcpError> {
    *stream.peer.lock().unwrap_or_else(|e| e.into_inner()) = Some(remote);
    let id = connect_with(core, out, now, remote, Some(stream))?;
    let _ = id;
    Ok(())
}

/// Looks at the streams application threads touched since the last poll.
pub(crate) fn attend<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    shared: &crate::socket::Shared<P::Buf>,
) {
    if shared
        .attend_all
        .swap(false, core::sync::atomic::Ordering::AcqRel)
    {
        let all: Vec<ConnId> = (0..core.tcp.slots.len())
            .filter(|&i| {
                core.tcp.slots[i]
                    .as_ref()
                    .is_some_and(|s| s.stream.is_some())
            })
            .map(|i| ConnId {
                index: i as u32,
                generation: core.tcp.generations[i],
            })
            .collect();
        for id in all {
            after_activity(core, out, now, id);
        }
    }
    for _ in 0..1024 {
        let Some(id) = shared.attention.pop() else {
            return;
        };
        after_activity(core, out, now, id);
    }
}

/// Queue mode: moves received bytes into buffers for the application (while
/// its queue has room), takes what it wrote into the send buffer (while
/// that has room), and passes its shutdown on.
pub(super) fn pump<P: Port>(core: &mut Core<P::Buf>, out: &mut Out<'_, P>, id: ConnId) {
    let Some(stream) = core.tcp.slot(id).and_then(|s| s.stream.clone()) else {
        return;
    };
    let mut woke = false;
    while core.tcp.slot(id).is_some_and(|s| s.conn.recv_ready() > 0) && !stream.rx.is_full() {
        let Some(mut buf) = out.alloc(0) else {
            break;
        };
        let room = buf.tailroom().min(4096);
        let Some(area) = buf.append(room) else {
            break;
        };
        let Some((slot, pool)) = core.tcp.slot_and_pool(id) else {
            return;
        };
        let n = slot.conn.recv(area, pool).unwrap_or(0);
        buf.trim(room - n);
        if n == 0 || stream.rx.push(buf).is_err() {
            break;
        }
        woke = true;
    }
    let Some((slot, pool)) = core.tcp.slot_and_pool(id) else {
        return;
    };
    if slot.conn.at_eof() && !stream.has(EOF) {
        stream.set(EOF);
        woke = true;
    }
    loop {
        let (buf, taken) = match slot.tx_partial.take() {
            Some(partial) => partial,
            None => match stream.tx.pop() {
                Some(buf) => {
                    woke = true; // room in the queue for the writer
                    (buf, 0)
                }
                None => break,
            },
        };
        let n = slot.conn.send(&buf.data()[taken..], pool).unwrap_or(0);
        if taken + n < buf.len() {
            slot.tx_partial = Some((buf, taken + n));
            break;
        }
    }
    let drained = slot.tx_partial.is_none() && stream.tx.is_empty();
    if stream.has(SHUTDOWN) && drained && slot.conn.may_send() {
        slot.conn.close();
    }
    if woke {
        stream.waker.wake();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iface::{Interface, InterfaceConfig, LinkConfig};
    use crate::port::memory::MemBuf;
    use crate::port::MacAddr;
    use crate::route::Ipv4Cidr;
    use core::net::Ipv4Addr;

    fn interface() -> Interface<MemBuf> {
        let link = LinkConfig::new(
            MacAddr([2, 0, 0, 0, 0, 1]),
            Ipv4Cidr::new(Ipv4Addr::new(10, 0, 0, 1), 24).unwrap(),
        );
        let mut config = InterfaceConfig::with_links(vec![link]);
        config.dad_transmits = 0;
        Interface::new(config).unwrap()
    }

    #[test]
    fn a_closed_listener_makes_room_for_the_next() {
        let mut iface = interface();
        let core = &mut iface.core;
        let local: SocketAddr = "0.0.0.0:7".parse().unwrap();
        for _ in 0..100 {
            let queue = Arc::new(AcceptQueue::new(4));
            listen_queued(core, local, 4, ListenOptions::default(), queue.clone()).unwrap();
            unlisten(core, local, &queue);
        }
        assert_eq!(
            core.tcp.listeners.len(),
            1,
            "listen/close cycles reuse one slot"
        );
        // A closed listener still owning a handshake keeps its index.
        let queue = Arc::new(AcceptQueue::new(4));
        listen_queued(core, local, 4, ListenOptions::default(), queue.clone()).unwrap();
        core.tcp.listeners[0].pending = 1;
        unlisten(core, local, &queue);
        listen_queued(
            core,
            local,
            4,
            ListenOptions::default(),
            Arc::new(AcceptQueue::new(4)),
        )
        .unwrap();
        assert_eq!(core.tcp.listeners.len(), 2);
        assert!(core.tcp.listeners[1].accept.is_some());
    }
}
