//! Queue mode on the lcore: listeners whose connections go to application
//! threads, their connects, the attention queue, and the pump that moves
//! bytes between a connection's buffers and its stream's queues.

use super::*;

/// Queue mode: listens on `local`; accepted connections go to `queue`.
pub(crate) fn listen_queued<B: Buf>(
    core: &mut Core<B>,
    local: SocketAddr,
    backlog: usize,
    reuse_port: bool,
    queue: Arc<AcceptQueue<B>>,
) -> Result<(), ListenError> {
    listen(core, local, backlog, reuse_port)?;
    if let Some(listener) = core.tcp.listeners.last_mut() {
        listener.accept = Some(queue);
    }
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
        let Some(slot) = core.tcp.slot(id) else {
            return;
        };
        let n = slot.conn.recv(area).unwrap_or(0);
        buf.trim(room - n);
        if n == 0 || stream.rx.push(buf).is_err() {
            break;
        }
        woke = true;
    }
    let Some(slot) = core.tcp.slot(id) else {
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
        let n = slot.conn.send(&buf.data()[taken..]).unwrap_or(0);
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
