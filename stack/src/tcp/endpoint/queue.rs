//! Queue mode on the lcore: listeners whose connections go to application
//! threads, their connects, the attention queue, and the pump that moves
//! bytes between a connection's buffers and its stream's queues.

use super::*;
use crossbeam_queue::ArrayQueue;
use std::sync::atomic::AtomicBool;

impl<B: Buf, H: Copy> Endpoint<B, H> {
    /// Queue mode: listens on `local`; accepted connections go to `queue`.
    pub(crate) fn listen_queued(
        &mut self,
        is_ours: impl Fn(IpAddr) -> bool,
        local: SocketAddr,
        (backlog, options): (usize, ListenOptions),
        queue: Arc<AcceptQueue<B>>,
    ) -> Result<(), ListenError> {
        let at = self.listen(is_ours, local, backlog, options)?;
        self.listeners[at].accept = Some(queue);
        Ok(())
    }

    /// Stops listening on `local` (connections in progress carry on).
    pub(crate) fn unlisten(&mut self, local: SocketAddr, queue: &Arc<AcceptQueue<B>>) {
        let ours = |l: &Listener<B>| l.accept.as_ref().is_some_and(|q| Arc::ptr_eq(q, queue));
        if let Some(at) = (self.listeners.iter()).position(|l| l.local == local && ours(l)) {
            // Keep indexes stable for connections still in their handshake.
            let listener = &mut self.listeners[at];
            listener.accept = None;
            listener.local = SocketAddr::new(local.ip(), 0);
            listener.backlog = 0;
        }
    }

    /// Queue mode: opens a connection to `remote` for an application thread.
    pub(crate) fn connect_queued<O: SegmentOut<Buf = B, Hop = H>>(
        &mut self,
        ip: &mut O,
        now: Instant,
        remote: SocketAddr,
        stream: Arc<StreamQueue<B>>,
    ) -> Result<(), TcpError> {
        *stream.peer.lock().unwrap_or_else(|e| e.into_inner()) = Some(remote);
        self.connect_with(ip, now, remote, Some(stream))?;
        Ok(())
    }

    /// Looks at the streams application threads touched since the last
    /// poll: those on the `attention` queue, or every stream if it
    /// overflowed (`attend_all`).
    pub(crate) fn attend<O: SegmentOut<Buf = B, Hop = H>>(
        &mut self,
        ip: &mut O,
        now: Instant,
        (attention, attend_all): (&ArrayQueue<ConnId>, &AtomicBool),
    ) {
        if attend_all.swap(false, core::sync::atomic::Ordering::AcqRel) {
            let all: Vec<ConnId> = (0..self.slots.len())
                .filter(|&i| self.slots[i].as_ref().is_some_and(|s| s.stream.is_some()))
                .map(|i| ConnId {
                    index: i as u32,
                    generation: self.generations[i],
                })
                .collect();
            for id in all {
                self.after_activity(ip, now, id);
            }
        }
        for _ in 0..1024 {
            let Some(id) = attention.pop() else {
                return;
            };
            self.after_activity(ip, now, id);
        }
    }

    /// Queue mode: moves received bytes into buffers for the application (while
    /// its queue has room), takes what it wrote into the send buffer (while
    /// that has room), and passes its shutdown on; a dropped stream orphans
    /// its connection, or resets it if data was left unread (as Linux's
    /// `close`).
    pub(super) fn pump<O: SegmentOut<Buf = B, Hop = H>>(
        &mut self,
        ip: &mut O,
        now: Instant,
        id: ConnId,
    ) {
        let Some(stream) = self.slot(id).and_then(|s| s.stream.clone()) else {
            return;
        };
        if stream.has(DROPPED) {
            let Some(slot) = self.slot(id) else {
                return;
            };
            if !slot.conn.orphaned {
                if stream.has(UNREAD) || !stream.rx.is_empty() || slot.conn.recv_ready() > 0 {
                    slot.conn.abort();
                    return;
                }
                slot.conn.orphan(now);
            }
        }
        let mut woke = false;
        // The buffers come from the pool of the connection's link.
        let mut pool_link = None;
        while self.slot(id).is_some_and(|s| s.conn.recv_ready() > 0)
            && !stream.rx.is_full()
            && !stream.has(DROPPED)
        {
            let link = *pool_link.get_or_insert_with(|| self.link_of(ip, id));
            let Some(mut buf) = ip.alloc(link) else {
                break;
            };
            let room = buf.tailroom().min(4096);
            let Some(area) = buf.append(room) else {
                break;
            };
            let Some((slot, pool)) = self.slot_and_pool(id) else {
                return;
            };
            let n = slot.conn.recv(area, pool).unwrap_or(0);
            buf.trim(room - n);
            if n == 0 || stream.rx.push(buf).is_err() {
                break;
            }
            woke = true;
        }
        let Some((slot, pool)) = self.slot_and_pool(id) else {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::port::memory::MemBuf;

    #[test]
    fn a_closed_listener_makes_room_for_the_next() {
        let keys = Keys::for_testing(1);
        let config = TcpConfig::default();
        let table = shared_table(&config, &keys);
        let mut tcp = Endpoint::<MemBuf, ()>::new(config, &keys, table, 0);
        let ours = |_: IpAddr| true;
        let local: SocketAddr = "0.0.0.0:7".parse().unwrap();
        let open = (4, ListenOptions::default());
        for _ in 0..100 {
            let queue = Arc::new(AcceptQueue::new(4));
            tcp.listen_queued(ours, local, open, queue.clone()).unwrap();
            tcp.unlisten(local, &queue);
        }
        assert_eq!(tcp.listeners.len(), 1, "listen/close cycles reuse one slot");
        // A closed listener still owning a handshake keeps its index.
        let queue = Arc::new(AcceptQueue::new(4));
        tcp.listen_queued(ours, local, open, queue.clone()).unwrap();
        tcp.listeners[0].pending = 1;
        tcp.unlisten(local, &queue);
        let next = Arc::new(AcceptQueue::new(4));
        tcp.listen_queued(ours, local, open, next).unwrap();
        assert_eq!(tcp.listeners.len(), 2);
        assert!(tcp.listeners[1].accept.is_some());
    }
}
