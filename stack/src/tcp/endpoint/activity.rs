//! The bookkeeping after any activity on a connection (a segment, a
//! timer, an application call): what it owes is sent, its timer re-armed,
//! what the application should hear reported, and a closed connection
//! freed. Also the three lists served every poll: connections whose
//! segments of the burst were deferred, those pacing holds, and the timer
//! wheel.

use super::*;

impl<B: Buf, H: Copy> Endpoint<B, H> {
    /// After a segment, a timer or an application call touched connection
    /// `id`: send what it owes, re-arm its timer, report what the handler
    /// should hear, and free it once closed (or keep it in TIME-WAIT).
    pub(crate) fn after_activity<O: SegmentOut<Buf = B, Hop = H>>(
        &mut self,
        ip: &mut O,
        now: Instant,
        id: ConnId,
    ) {
        self.pump(ip, now, id);
        self.flush(ip, now, id);
        let Some(slot) = self.slot(id) else {
            return;
        };
        count_loss_events(ip.counters(), slot.conn.take_loss_events());
        let state = slot.conn.state();
        let mut from_listener = None;
        if let Some(l) = slot.listener {
            if state != State::SynReceived {
                slot.listener = None;
                from_listener = Some(l);
                if let Some(listener) = self.listeners.get_mut(l) {
                    listener.pending = listener.pending.saturating_sub(1);
                }
            }
        }
        let Some(slot) = self.slot(id) else {
            return;
        };
        let opened = !matches!(state, State::SynSent | State::SynReceived | State::Closed);
        if opened && !slot.announced {
            slot.announced = true;
            let active = slot.active;
            let tuple = slot.tuple;
            let queued = from_listener
                .and_then(|l| self.listeners.get(l))
                .and_then(|l| l.accept.clone());
            match (&self.slot(id).and_then(|s| s.stream.clone()), queued) {
                (Some(stream), _) => {
                    // A connect from an application thread completed.
                    stream.set(OPEN);
                    stream.waker.wake();
                }
                (None, Some(queue)) if !active => {
                    // Queue mode: the application accepts it from its queue.
                    let stream = Arc::new(StreamQueue::new());
                    *stream.id.lock().unwrap_or_else(|e| e.into_inner()) = Some(id);
                    *stream.peer.lock().unwrap_or_else(|e| e.into_inner()) = Some(tuple.remote);
                    stream.set(OPEN);
                    if queue.streams.push(Arc::clone(&stream)).is_ok() {
                        if let Some(slot) = self.slot(id) {
                            slot.stream = Some(stream);
                        }
                        queue.waker.wake();
                    } else {
                        // Not reached: input drops the ACK that would complete
                        // a handshake while the queue is full, and only this
                        // lcore pushes. Were it reached, the connection could
                        // only be reset.
                        ip.counters().count_drop(DropReason::TcpListenOverflow);
                        ip.counters().count(Stat::TcpListenOverflows);
                        if let Some(slot) = self.slot(id) {
                            slot.conn.abort();
                        }
                        return self.after_activity(ip, now, id);
                    }
                }
                _ => {
                    let event = match from_listener {
                        _ if active => Some(TcpEvent::Connected),
                        Some(l) => self.listeners.get(l).map(|x| TcpEvent::Accepted(x.id(l))),
                        None => None,
                    };
                    if let Some(event) = event {
                        self.events.push((id, event));
                    }
                }
            }
        }
        let Some(slot) = self.slot(id) else {
            return;
        };
        if slot.stream.is_some() && opened {
            // Data may have arrived with the handshake: move it now.
            slot.quiet = true;
        }
        if matches!(state, State::TimeWait | State::Closed) {
            if let Some((slot, pool)) = self.slot_and_pool(id) {
                slot.conn.release_buffers(pool);
            }
        }
        let Some(slot) = self.slot(id) else {
            return;
        };
        if state == State::Closed {
            let error = slot.conn.error();
            let report = slot.announced || slot.active;
            if let Some(stream) = slot.stream.take() {
                stream
                    .error
                    .store(error_code(error), core::sync::atomic::Ordering::Release);
                stream.set(CLOSED);
                stream.waker.wake();
                self.remove(id);
                return;
            }
            self.remove(id);
            if report {
                self.events.push((id, TcpEvent::Closed(error)));
            }
            return;
        }
        let queue_mode = slot.stream.is_some();
        let writable = slot.write_blocked && slot.conn.send_room() >= slot.conn.send_limit() / 2;
        if writable {
            slot.write_blocked = false;
        }
        let readable = !queue_mode
            && slot.announced
            && (writable || !slot.quiet && (slot.conn.recv_ready() > 0 || slot.conn.at_eof()));
        if readable {
            slot.quiet = true;
        }
        let tuple = slot.tuple;
        if readable {
            self.events.push((id, TcpEvent::Readable));
        }
        if state == State::TimeWait && !self.slot(id).is_some_and(|s| s.marked_time_wait) {
            self.table
                .update(&tuple, ConnRef::new(self.owner, id, true));
            if let Some(slot) = self.slot(id) {
                slot.marked_time_wait = true;
            }
        }
        let Some(slot) = self.slot(id) else {
            return;
        };
        if let Some(release) = slot.conn.take_pacing_release().filter(|_| !slot.paced) {
            slot.paced = true;
            self.paced.push(Reverse((release, id.index, id.generation)));
            ip.counters().count(Stat::TcpPacingWaits);
        }
        let Some(slot) = self.slot(id) else {
            return;
        };
        if let Some(deadline) = slot.conn.next_deadline() {
            if slot.armed.is_none_or(|armed| deadline < armed) {
                slot.armed = Some(deadline);
                self.timers.insert(deadline, id);
            }
        }
    }

    /// Sends what pacing held back from the connections whose release time
    /// has come. A connection held again goes back with a later release, so
    /// each is served at most once per call.
    pub(crate) fn run_paced<O: SegmentOut<Buf = B, Hop = H>>(&mut self, ip: &mut O, now: Instant) {
        for _ in 0..self.paced.len() {
            match self.paced.peek() {
                Some(&Reverse((release, index, generation))) if release <= now => {
                    self.paced.pop();
                    let id = ConnId { index, generation };
                    if let Some(slot) = self.slot(id) {
                        slot.paced = false;
                        self.after_activity(ip, now, id);
                    }
                }
                _ => return,
            }
        }
    }

    /// The end of a receive burst: the bookkeeping of every connection whose
    /// segments [`Endpoint::input`] deferred.
    pub(crate) fn run_deferred<O: SegmentOut<Buf = B, Hop = H>>(
        &mut self,
        ip: &mut O,
        now: Instant,
    ) {
        if self.deferred.is_empty() {
            return;
        }
        let mut deferred = core::mem::take(&mut self.deferred);
        for id in deferred.drain(..) {
            if let Some(slot) = self.slot(id) {
                slot.deferred = false;
                self.after_activity(ip, now, id);
            }
        }
        self.deferred = deferred;
    }

    /// Runs the connections' timers that are due.
    pub(crate) fn run_timers<O: SegmentOut<Buf = B, Hop = H>>(&mut self, ip: &mut O, now: Instant) {
        if self.timers.is_empty() {
            return;
        }
        let mut due = core::mem::take(&mut self.due);
        self.timers.expire(now, &mut due);
        for (deadline, id) in due.drain(..) {
            let Some(slot) = self.slot(id) else {
                continue;
            };
            if slot.armed == Some(deadline) {
                slot.armed = None;
            }
            let retries = slot.conn.retries;
            let probes = (slot.conn.window_probes, slot.conn.keepalives);
            slot.conn.on_timer(now);
            if slot.conn.retries > retries {
                ip.counters().count(Stat::TcpRetransTimeouts);
            }
            if slot.conn.window_probes > probes.0 {
                ip.counters().count(Stat::TcpWinProbe);
            }
            if slot.conn.keepalives > probes.1 {
                ip.counters().count(Stat::TcpKeepAlive);
            }
            slot.quiet = false;
            self.after_activity(ip, now, id);
        }
        self.due = due;
    }

    /// The application's calls on a connection (inline, or through the
    /// interface), each followed by what the connection then owes.
    pub(crate) fn with_conn<O: SegmentOut<Buf = B, Hop = H>, T>(
        &mut self,
        ip: &mut O,
        now: Instant,
        id: ConnId,
        call: impl FnOnce(&mut Connection, &mut BufferPool) -> T,
    ) -> Option<T> {
        let (slot, pool) = self.slot_and_pool(id)?;
        let before = (slot.conn.recv_ready(), slot.conn.send_room());
        let result = call(&mut slot.conn, pool);
        // Readiness is reported again only if the call changed it (a read
        // that took bytes, a write that took room): a read that finds nothing,
        // at the end of the stream, must not schedule another event, or an
        // application that reads on every event would be woken every poll.
        if (slot.conn.recv_ready(), slot.conn.send_room()) != before {
            slot.quiet = false;
        }
        self.after_activity(ip, now, id);
        Some(result)
    }

    /// The application's write on connection `id` (inline): what fits is
    /// queued; if not all of it, the handler hears `Readable` once half the
    /// send buffer is free.
    pub(crate) fn send<O: SegmentOut<Buf = B, Hop = H>>(
        &mut self,
        ip: &mut O,
        now: Instant,
        id: ConnId,
        data: &[u8],
    ) -> Result<usize, TcpError> {
        let sent = self
            .with_conn(ip, now, id, |c, pool| c.send(data, pool))
            .unwrap_or(Err(TcpError::NotConnected));
        let blocked = match sent {
            Ok(n) => n < data.len(),
            Err(error) => error == TcpError::NoBufferMemory,
        };
        if let (true, Some(slot)) = (blocked, self.slot(id)) {
            slot.write_blocked = true;
        }
        sent
    }
}

/// Adds a connection's loss-recovery events to the lcore's counters.
fn count_loss_events(counters: &Counters, events: LossEvents) {
    if events == LossEvents::default() {
        return;
    }
    counters.add(Stat::TcpSackRecovery, u64::from(events.sack_recoveries));
    counters.add(Stat::TcpRenoRecovery, u64::from(events.reno_recoveries));
    counters.add(Stat::TcpFastRetrans, u64::from(events.fast_retransmits));
    counters.add(Stat::TcpLossProbes, u64::from(events.loss_probes));
    counters.add(Stat::TcpDSACKRecv, u64::from(events.dsacks_received));
    counters.add(Stat::TcpDSACKOldSent, u64::from(events.dsacks_old_sent));
    counters.add(Stat::TcpDSACKOfoSent, u64::from(events.dsacks_ofo_sent));
    counters.add(Stat::TcpOFODrop, u64::from(events.ofo_drops));
    counters.add(Stat::TcpLostRetransmit, u64::from(events.lost_retransmits));
    counters.add(Stat::TcpMtuBlackHole, u64::from(events.mtu_black_holes));
    counters.add(Stat::TcpMtupSuccess, u64::from(events.mtu_probe_successes));
    counters.add(Stat::TcpMtupFail, u64::from(events.mtu_probe_failures));
    counters.add(Stat::TcpZeroWindowDrop, u64::from(events.zero_window_drops));
    counters.add(Stat::TcpRcvQDrop, u64::from(events.rcv_memory_drops));
    counters.add_drops(DropReason::TcpMemLimit, u64::from(events.rcv_memory_drops));
    counters.add(Stat::TcpMemoryLimited, u64::from(events.memory_limited));
    counters.add(Stat::TcpInCE, u64::from(events.ce_received));
    counters.add(Stat::TcpEceReductions, u64::from(events.ece_reductions));
    counters.add(Stat::TcpCwndRestarts, u64::from(events.cwnd_restarts));
}
