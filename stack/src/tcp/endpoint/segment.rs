//! Segments in and out: TCP input (a connection, a listener, or a reset),
//! and framing what a connection owes into packet buffers through its
//! remembered next hop or the full route.
//!
//! Input checks the checksum as the IP layer's policy says
//! ([`SegmentOut::checksum_ok`]) and counts every segment it does not take
//! by reason, including those the connection refuses ([`Verdict`]). Three
//! decisions are the lcore's, not the connection's: a new SYN that ends a
//! TIME-WAIT (RFC 6191) goes to the listener, the ACK that would complete a
//! handshake waits while the accept queue is full, and a challenge ACK goes
//! only while the stack's budget for the second lasts (RFC 5961 7).

use super::*;

/// The pipeline that gets segments no other pipeline takes.
const HOME_PIPELINE: u8 = 0;

/// A received segment as the IP layer hands it over: its IP source and
/// destination, its range in the packet buffer, the arrival link for a
/// link-local IPv6 peer, and the device's checksum verdict.
#[derive(Debug, Clone)]
pub(crate) struct TcpIn {
    /// (source, destination).
    pub(crate) ends: (IpAddr, IpAddr),
    /// The TCP header and payload's range in the buffer.
    pub(crate) segment: core::ops::Range<usize>,
    /// The link-local scope (link) of an IPv6 link-local peer.
    pub(crate) scope: u32,
    /// What the device said of the checksum.
    pub(crate) offload: ChecksumStatus,
    /// The ECN field of its IP header.
    pub(crate) ecn: Ecn,
    /// Another pipeline received it and handed it over (it was counted
    /// there as received).
    pub(crate) steered: bool,
}

/// A segment for a connection another pipeline owns (or, on any pipeline
/// but the first, for no connection and no listener here), to be handed to
/// `owner` as it arrived.
#[derive(Debug)]
pub(crate) struct Steer<B> {
    pub(crate) owner: u8,
    pub(crate) buf: B,
    pub(crate) segment: TcpIn,
}

impl<B: Buf, H: Copy> Endpoint<B, H> {
    /// A TCP segment for us in `buf`, from the IPv4 or IPv6 layer; handed
    /// back for another pipeline if that one owns its connection (see
    /// [`Steer`]).
    #[inline]
    pub(crate) fn input<O: SegmentOut<Buf = B, Hop = H>>(
        &mut self,
        ip: &mut O,
        now: Instant,
        buf: B,
        arrived: TcpIn,
    ) -> Option<Steer<B>> {
        let mut steer = None;
        self.receive(ip, now, buf, arrived, &mut steer);
        steer
    }

    /// [`Endpoint::input`], with a segment for another pipeline put in
    /// `steer`.
    fn receive<O: SegmentOut<Buf = B, Hop = H>>(
        &mut self,
        ip: &mut O,
        now: Instant,
        buf: B,
        arrived: TcpIn,
        steer: &mut Option<Steer<B>>,
    ) {
        let TcpIn {
            ends: (src, dst),
            segment,
            scope,
            offload,
            ecn,
            steered,
        } = arrived;
        if !steered {
            ip.counters().count(Stat::TcpInSegs);
        }
        let bytes = &buf.data()[segment.clone()];
        let pseudo = pseudo(src, dst, bytes.len());
        let Ok(packet) = TcpPacket::new_checked(bytes) else {
            return ip.counters().count_drop(DropReason::TcpMalformed);
        };
        if !ip.checksum_ok(offload, || packet.verify_checksum(pseudo)) {
            return ip.counters().count_drop(DropReason::TcpBadChecksum);
        }
        let Ok(repr) = TcpRepr::parse(&packet) else {
            return ip.counters().count_drop(DropReason::TcpMalformed);
        };
        let payload = packet.payload();
        let tuple = FourTuple {
            local: SocketAddr::new(dst, repr.dst_port),
            remote: SocketAddr::new(src, repr.src_port),
        };
        let found = self.table.lookup(&tuple);
        let handed = |owner, buf| Steer {
            owner,
            buf,
            segment: TcpIn {
                ends: (src, dst),
                segment: segment.clone(),
                scope,
                offload,
                ecn,
                steered: true,
            },
        };
        if let Some(theirs) = found.filter(|f| f.owner() != self.owner) {
            *steer = Some(handed(theirs.owner(), buf));
            return;
        }
        // The lowest ISS a SYN that ends a TIME-WAIT may give its connection.
        let mut iss_floor = None;
        if let Some(id) = found.map(ConnRef::id) {
            let reopen = self.peek(id).map(|c| c.time_wait_reopen(&repr));
            if let Some(Some(floor)) = reopen {
                if self.listener_with_room(&tuple).is_some() {
                    // RFC 6191 passive reopen: the SYN is new, not an old
                    // duplicate. The TIME-WAIT connection ends (abort sends
                    // nothing from TIME-WAIT) and a listener takes the SYN on
                    // the same 4-tuple below.
                    if let Some(old) = self.conn(id) {
                        old.abort();
                    }
                    self.after_activity(ip, now, id);
                    iss_floor = Some(floor);
                }
            }
            let half_open = self.slot(id).and_then(|s| {
                let completes = s.conn.completes_handshake(&repr);
                s.listener.filter(|_| completes)
            });
            if half_open.is_some_and(|l| self.accept_queue_full(l)) {
                // The handshake's last ACK while the application has not taken
                // the connections already queued: dropped (as Linux, without
                // tcp_abort_on_overflow), the half-open connection kept for the
                // peer's next ACK.
                ip.counters().count(Stat::TcpListenOverflows);
                return ip.counters().count_drop(DropReason::TcpListenOverflow);
            }
            if let (Some((slot, pool)), None) = (self.slot_and_pool(id), iss_floor) {
                let was_open = slot.conn.state() == State::Established;
                let verdict = slot.conn.on_segment_ecn(&repr, payload, ecn, now, pool);
                slot.quiet = false;
                // Out of order, each segment is answered at once: the
                // duplicate ACKs are what the peer counts to retransmit (RFC
                // 5681 4.2), as Linux's GRO lets such segments through alone.
                let in_order = !slot.conn.recv_buf.has_gaps();
                let stays_open = was_open && in_order && slot.conn.state() == State::Established;
                if let Verdict::Refused(refusal) = verdict {
                    count_refusal(ip.counters(), refusal);
                    if refusal.challenge_ack() {
                        self.limit_challenge(&*ip, id, now);
                    }
                } else if stays_open {
                    // The rest waits for the end of the burst (run_deferred).
                    drop(buf);
                    return self.defer(id);
                }
                drop(buf);
                return self.after_activity(ip, now, id);
            }
        }
        // No connection: a listener takes a SYN; anything else is refused.
        let listening = self.listener_for(&tuple);
        if found.is_none() && listening.is_none() && self.owner != HOME_PIPELINE {
            // The first pipeline's listeners (queue mode's) may take it.
            *steer = Some(handed(HOME_PIPELINE, buf));
            return;
        }
        // A listener drops, unanswered, what carries neither ACK nor RST but is
        // no plain SYN (RFC 9293 3.10.7.2: in LISTEN only an ACK earns a
        // reset): no flags, FIN+PSH+URG, and SYN+FIN, which no real open
        // carries (a scanner's probe; Linux drops it too) and which would
        // otherwise take a place in the backlog.
        let neither = repr.flags & (flags::ACK | flags::RST) == 0;
        if listening.is_some() && neither && repr.flags & (flags::SYN | flags::FIN) != flags::SYN {
            return ip.counters().count_drop(DropReason::TcpBadFlags);
        }
        let syn_only = repr.flags & (flags::SYN | flags::ACK | flags::RST) == flags::SYN;
        if let (true, Some(l)) = (syn_only, listening) {
            if self.accept_queue_full(l) {
                // A handshake now could only overflow the queue (Linux drops
                // these SYNs too); the peer tries again after its SYN timeout.
                ip.counters().count(Stat::TcpListenOverflows);
                return ip.counters().count_drop(DropReason::TcpListenOverflow);
            }
            if self.at_connection_limit() {
                ip.counters().count(Stat::TcpConnLimitReached);
                return ip.counters().count_drop(DropReason::TcpConnLimit);
            }
            let listener = &mut self.listeners[l];
            if listener.pending >= listener.backlog {
                if self.config.syn_cookies {
                    return self.send_cookie(ip, now, l, (&tuple, scope), (&repr, ecn));
                }
                return ip.counters().count_drop(DropReason::TcpListenOverflow);
            }
            listener.pending += 1;
            let iss = match (self.isn(&tuple, now), iss_floor) {
                (iss, Some(floor)) if iss <= floor => floor,
                (iss, _) => iss,
            };
            let mss = mss_for(ip, &tuple, scope);
            let ts_offset = self.ts_offset(&tuple);
            let start = (iss, mss, ts_offset);
            let mut conn = Connection::accept(&self.config, &repr, start, now);
            conn.syn_arrived_with(ecn);
            let id = self.add(Slot::passive(conn, tuple, l, scope, true));
            if self
                .table
                .insert(tuple, ConnRef::new(self.owner, id, false))
                .is_err()
            {
                self.listeners[l].pending -= 1;
                self.remove(id);
                return ip.counters().count_drop(DropReason::TcpMalformed);
            }
            ip.counters().count(Stat::TcpPassiveOpens);
            drop(buf);
            return self.after_activity(ip, now, id);
        }
        let ack_only = repr.flags & (flags::SYN | flags::ACK | flags::RST) == flags::ACK;
        if let (true, Some(l)) = (ack_only, listening) {
            if self.listeners[l].cookies_recent(now) {
                match self.open_from_cookie(ip, now, l, (&tuple, scope), (&repr, ecn), payload) {
                    CookieAck::Opened(id) => {
                        drop(buf);
                        return self.after_activity(ip, now, id);
                    }
                    CookieAck::QueueFull => {
                        ip.counters().count(Stat::TcpListenOverflows);
                        return ip.counters().count_drop(DropReason::TcpListenOverflow);
                    }
                    CookieAck::AtLimit => {
                        ip.counters().count(Stat::TcpConnLimitReached);
                        return ip.counters().count_drop(DropReason::TcpConnLimit);
                    }
                    CookieAck::Invalid => ip.counters().count(Stat::TcpSyncookiesFailed),
                }
            }
        }
        ip.counters().count_drop(DropReason::TcpNoSocket);
        if repr.flags & flags::RST == 0 {
            send_reset(ip, now, (&tuple, scope), &repr, payload.len());
        }
    }

    /// Puts connection `id` on the list [`Endpoint::run_deferred`] serves after the burst.
    fn defer(&mut self, id: ConnId) {
        if let Some(slot) = self.slot(id) {
            if !slot.deferred {
                slot.deferred = true;
                self.deferred.push(id);
            }
        }
    }

    /// Answers `syn` (its IP header's ECN field `field`) for listener `l`,
    /// whose backlog is full, with a SYN-ACK whose ISS is a SYN cookie:
    /// nothing is kept (RFC 4987 3.6). Window scale, SACK and ECN go only
    /// with timestamps, which carry them back.
    fn send_cookie<O: SegmentOut<Buf = B, Hop = H>>(
        &mut self,
        ip: &mut O,
        now: Instant,
        l: usize,
        (tuple, scope): (&FourTuple, u32),
        (syn, field): (&TcpRepr, Ecn),
    ) {
        self.listeners[l].cookie_sent = Some(now);
        let peer_mss = syn.options.mss.unwrap_or(DEFAULT_MSS);
        let cookie = self.cookies.make(tuple, syn.seq, peer_mss, now);
        let config = &self.config;
        let stamped = syn.options.timestamps.filter(|_| config.rfc7323);
        let peer_scale = syn.options.window_scale.filter(|_| stamped.is_some());
        let sack = stamped.is_some() && config.sack && syn.options.sack_permitted;
        let ecn = stamped.is_some() && ecn::agrees(config.ecn, syn.flags, field);
        let timestamps = stamped.map(|(value, _)| {
            let ts_now = ts_clock(now, self.ts_offset(tuple));
            (cookie::ts_with_ecn(ts_now, peer_scale, sack, ecn), value)
        });
        let recv_buffer = self.config.recv_buffer.max(1);
        let repr = TcpRepr {
            src_port: tuple.local.port(),
            dst_port: tuple.remote.port(),
            seq: cookie,
            ack: syn.seq.wrapping_add(1),
            flags: flags::SYN | flags::ACK | if ecn { flags::ECE } else { 0 },
            window: recv_buffer.min(usize::from(u16::MAX)) as u16,
            options: TcpOptions {
                mss: Some(mss_for(ip, tuple, scope)),
                window_scale: peer_scale.map(|_| window_shift_for(recv_buffer)),
                sack_permitted: sack,
                timestamps,
                ..TcpOptions::default()
            },
        };
        ip.counters().count(Stat::TcpSyncookiesSent);
        emit(ip, now, (tuple, scope), &repr, &[]);
    }
}

/// What an ACK to a listener that sent cookies lately turned out to be.
enum CookieAck {
    /// It returned a valid cookie: the connection, ESTABLISHED.
    Opened(ConnId),
    /// Valid, but the accept queue has no room: dropped, as the last ACK
    /// of a handshake is then (the peer sends it again).
    QueueFull,
    /// Valid, but the stack holds `max_connections`: dropped.
    AtLimit,
    /// No cookie of ours.
    Invalid,
}

impl<B: Buf, H: Copy> Endpoint<B, H> {
    /// Checks the cookie `ack` returns (`ack - 1`, for the peer ISN
    /// `seq - 1`) and makes its connection from what the cookie and the
    /// echoed timestamp carry; the ACK itself (and any data on it) is then
    /// the connection's first segment, its IP header marked `field`.
    fn open_from_cookie<O: SegmentOut<Buf = B, Hop = H>>(
        &mut self,
        ip: &mut O,
        now: Instant,
        l: usize,
        (tuple, scope): (&FourTuple, u32),
        (ack, field): (&TcpRepr, Ecn),
        payload: &[u8],
    ) -> CookieAck {
        let peer_isn = ack.seq.wrapping_sub(1);
        let iss = ack.ack.wrapping_sub(1);
        let Some(peer_mss) = self.cookies.check(tuple, peer_isn, iss, now) else {
            return CookieAck::Invalid;
        };
        if self.accept_queue_full(l) {
            return CookieAck::QueueFull;
        }
        if self.at_connection_limit() {
            return CookieAck::AtLimit;
        }
        let (window_scale, sack_permitted) = ack
            .options
            .timestamps
            .map_or((None, false), |(_, echo)| cookie::options_from_ts(echo));
        // The SYN asked for ECN, and we agreed, if the cookie says so.
        let ecn = ack
            .options
            .timestamps
            .is_some_and(|(_, echo)| cookie::ecn_from_ts(echo));
        let syn = TcpRepr {
            src_port: ack.src_port,
            dst_port: ack.dst_port,
            seq: peer_isn,
            ack: 0,
            flags: flags::SYN | if ecn { flags::ECE | flags::CWR } else { 0 },
            window: ack.window,
            options: TcpOptions {
                mss: Some(peer_mss),
                window_scale,
                sack_permitted,
                timestamps: ack.options.timestamps.map(|(value, _)| (value, 0)),
                ..TcpOptions::default()
            },
        };
        let start = (Seq(iss), mss_for(ip, tuple, scope), self.ts_offset(tuple));
        let mut conn = Connection::accept(&self.config, &syn, start, now);
        conn.syn_ack_sent_as_cookie();
        // A valid cookie on a segment the new connection still refuses (its
        // timestamp older than the one it echoes, say) counts once, as a failed
        // cookie answered with a reset.
        let verdict = conn.on_segment_ecn(ack, payload, field, now, &mut self.pool);
        if let Verdict::Refused(_) = verdict {
            return CookieAck::Invalid;
        }
        let id = self.add(Slot::passive(conn, *tuple, l, scope, false));
        if self
            .table
            .insert(*tuple, ConnRef::new(self.owner, id, false))
            .is_err()
        {
            self.remove(id);
            return CookieAck::Invalid;
        }
        // Counted as a handshake until after_activity sees it open and hands
        // it to the listener, which takes the count back.
        self.listeners[l].pending += 1;
        ip.counters().count(Stat::TcpSyncookiesRecv);
        ip.counters().count(Stat::TcpPassiveOpens);
        CookieAck::Opened(id)
    }

    /// RFC 5961 7: the challenge ACK connection `id` owes goes if the
    /// stack's budget for this second allows, else it is withheld; counted
    /// either way.
    fn limit_challenge<O: SegmentOut<Buf = B, Hop = H>>(
        &mut self,
        ip: &O,
        id: ConnId,
        now: Instant,
    ) {
        if self.challenge_limit.allow(now) {
            return ip.counters().count(Stat::TcpChallengeACK);
        }
        ip.counters().count(Stat::TcpACKSkippedChallenge);
        if let Some(conn) = self.conn(id) {
            conn.withhold_challenge_ack();
        }
    }
}

/// Counts a segment its connection refused: one drop reason.
fn count_refusal(counters: &Counters, refusal: Refusal) {
    counters.count_drop(match refusal {
        Refusal::Paws => DropReason::TcpPawsEstab,
        Refusal::PawsActive => DropReason::TcpPawsActive,
        Refusal::OutOfWindow => DropReason::TcpOutOfWindow,
        Refusal::BadAck { .. } => DropReason::TcpBadAck,
        Refusal::BadReset { .. } => DropReason::TcpBadRst,
        Refusal::BadSyn => DropReason::TcpBadSyn,
        Refusal::BadFlags => DropReason::TcpBadFlags,
        Refusal::TimeWaitReset => DropReason::TcpTimeWaitRst,
        // Closed connections leave the table after the segment that closed
        // them; to the peer, one still found has no socket.
        Refusal::Closed => DropReason::TcpNoSocket,
    });
}

/// The pseudo-header sum of a segment of `len` bytes.
pub(super) fn pseudo(src: IpAddr, dst: IpAddr, len: usize) -> u64 {
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            checksum::pseudo_header_v4(s, d, protocol::TCP, len as u16)
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => pseudo_header(s, d, next_header::TCP, len as u32),
        _ => 0,
    }
}

/// The MSS a connection on `tuple` announces and starts from: the MTU of
/// the link the route to the peer leaves through (not the first link's),
/// or the path MTU learned to the peer if smaller, less the IP and TCP
/// headers. Once per open, not per packet.
pub(super) fn mss_for<O: SegmentOut>(ip: &mut O, tuple: &FourTuple, scope: u32) -> u16 {
    let (local, remote) = (tuple.local.ip(), tuple.remote.ip());
    let route = ip.route(local, remote, scope);
    let mtu = route.and_then(|r| ip.path_mtu(r.link, remote));
    let (floor, ip_len) = match remote {
        IpAddr::V4(_) => (icmp::MIN_PATH_MTU4, 20),
        IpAddr::V6(_) => (icmp::MIN_PATH_MTU6, 40),
    };
    // No route: nothing can be sent anyway; the smallest MTU is the safe
    // guess.
    let mtu = mtu.unwrap_or(floor);
    (mtu.saturating_sub(ip_len + TCP_LEN)).clamp(536, 65535) as u16
}

/// RFC 9293 3.10.7.1: a reset for a segment to no connection.
pub(super) fn send_reset<O: SegmentOut>(
    ip: &mut O,
    now: Instant,
    to: (&FourTuple, u32),
    seg: &TcpRepr,
    payload_len: usize,
) {
    let tuple = to.0;
    let (seq, ack, bits) = if seg.flags & flags::ACK != 0 {
        (seg.ack, 0, flags::RST)
    } else {
        let len = payload_len as u32
            + u32::from(seg.flags & flags::SYN != 0)
            + u32::from(seg.flags & flags::FIN != 0);
        (0, seg.seq.wrapping_add(len), flags::RST | flags::ACK)
    };
    let repr = TcpRepr {
        src_port: tuple.local.port(),
        dst_port: tuple.remote.port(),
        seq,
        ack,
        flags: bits,
        window: 0,
        options: TcpOptions::default(),
    };
    ip.counters().count(Stat::TcpOutRsts);
    emit(ip, now, to, &repr, &[]);
}

/// Frames and sends one segment (header from `repr`, then `payload`) on
/// `tuple` (`scope`: a link-local peer's link).
pub(super) fn emit<O: SegmentOut>(
    ip: &mut O,
    now: Instant,
    (tuple, scope): (&FourTuple, u32),
    repr: &TcpRepr,
    payload: &[u8],
) {
    let link = ip.route(tuple.local.ip(), tuple.remote.ip(), scope);
    let Some(mut buf) = ip.alloc(link.map(|r| r.link)) else {
        return ip.counters().count_drop(DropReason::TxNoBuffer);
    };
    let header_len = repr.header_len();
    let Some(room) = buf.append(header_len + payload.len()) else {
        return ip.counters().count_drop(DropReason::TxNoBuffer);
    };
    repr.emit(&mut room[..header_len]);
    room[header_len..].copy_from_slice(payload);
    finish(ip, now, (tuple, scope), Ecn::NotEct, buf);
}

/// Fills the checksum of the segment that is all of `buf` and sends it by
/// route, `ecn` in its IP header; returns the next hop to remember, if one
/// was found.
pub(super) fn finish<O: SegmentOut>(
    ip: &mut O,
    now: Instant,
    (tuple, scope): (&FourTuple, u32),
    ecn: Ecn,
    mut buf: O::Buf,
) -> Option<O::Hop> {
    let (src, dst) = (tuple.local.ip(), tuple.remote.ip());
    let len = buf.len();
    TcpPacket::new_unchecked(buf.data_mut()).fill_checksum(pseudo(src, dst, len));
    ip.counters().count(Stat::TcpOutSegs);
    ip.send(now, (src, dst, scope), ecn, buf)
}

impl<B: Buf, H: Copy> Endpoint<B, H> {
    /// [`finish`] for a connection's segment: through its remembered next
    /// hop while that holds (no route or neighbour lookup), else the full
    /// way, remembering the hop found.
    fn finish_for<O: SegmentOut<Buf = B, Hop = H>>(
        &mut self,
        ip: &mut O,
        now: Instant,
        id: ConnId,
        (tuple, scope): (&FourTuple, u32),
        (ecn, mut buf): (Ecn, B),
    ) {
        let hop = self.slot(id).and_then(|s| s.hop);
        if let Some(hop) = hop {
            let (src, dst) = (tuple.local.ip(), tuple.remote.ip());
            let len = buf.len();
            TcpPacket::new_unchecked(buf.data_mut()).fill_checksum(pseudo(src, dst, len));
            match ip.send_cached(hop, (src, dst), ecn, buf) {
                Ok(()) => {
                    ip.counters().count(Stat::TcpOutSegs);
                    return;
                }
                // Stale: the full way (which fills the checksum afresh).
                Err(back) => buf = back,
            }
        }
        let found = finish(ip, now, (tuple, scope), ecn, buf);
        if let Some(slot) = self.slot(id) {
            slot.hop = found;
        }
    }

    /// The link connection `id`'s segments leave through: its remembered
    /// hop's, else the route's; `None` without a route.
    pub(super) fn link_of<O: SegmentOut<Buf = B, Hop = H>>(
        &mut self,
        ip: &mut O,
        id: ConnId,
    ) -> Option<usize> {
        let slot = self.slot(id)?;
        if let Some(hop) = &slot.hop {
            return Some(O::hop_link(hop));
        }
        let (tuple, scope) = (slot.tuple, slot.scope);
        ip.route(tuple.local.ip(), tuple.remote.ip(), scope)
            .map(|r| r.link)
    }

    /// Sends what connection `id` owes, straight from its buffers into
    /// packet buffers.
    pub(crate) fn flush<O: SegmentOut<Buf = B, Hop = H>>(
        &mut self,
        ip: &mut O,
        now: Instant,
        id: ConnId,
    ) {
        let Some(slot) = self.slot(id) else {
            return;
        };
        let (tuple, scope, hop) = (slot.tuple, slot.scope, slot.hop);
        // The pool of the link the segments leave through: the remembered
        // hop's, else the route's (with no route, any pool: the segment is
        // still made, so the connection's timers run, and its send fails).
        let link = match &hop {
            Some(hop) => Some(O::hop_link(hop)),
            None => ip
                .route(tuple.local.ip(), tuple.remote.ip(), scope)
                .map(|r| r.link),
        };
        loop {
            let held = match self.held_tx.take() {
                Some((from, buf)) if from == link => Some(buf),
                _ => None, // another link's buffer goes back to its pool
            };
            let Some(mut buf) = held.or_else(|| ip.alloc(link)) else {
                return ip.counters().count_drop(DropReason::TxNoBuffer);
            };
            let Some(slot) = self.slot(id) else {
                self.held_tx = Some((link, buf));
                return;
            };
            let room = usize::from(slot.conn.segment_room());
            let Some(area) = buf.append(HEADROOM + room) else {
                return ip.counters().count_drop(DropReason::TxNoBuffer);
            };
            let polled = slot.conn.poll_transmit_ecn(now, &mut area[HEADROOM..]);
            let Some((repr, len, ecn)) = polled else {
                buf.trim(buf.len());
                self.held_tx = Some((link, buf));
                return;
            };
            let header_len = repr.header_len();
            let start = HEADROOM - header_len;
            repr.emit(&mut area[start..HEADROOM]);
            let excess = buf.len() - (HEADROOM + len);
            buf.trim(excess);
            buf.adjust(start);
            if repr.flags & flags::RST != 0 {
                ip.counters().count(Stat::TcpOutRsts);
            }
            self.finish_for(ip, now, id, (&tuple, scope), (ecn, buf));
        }
    }
}
