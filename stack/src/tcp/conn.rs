//! One TCP connection's state (the TCB of RFC 9293 3.3.1) and the
//! application's side of it: send, receive, close, abort. Segment arrival
//! is in [`super::input`], what to send in [`super::output`], the headers
//! and options it goes with in [`super::header`], the timers in
//! [`super::timers`].
//!
//! Invariants: `snd_una <= snd_nxt <= snd_max`; the send buffer holds the
//! bytes from `data_start` (the first unacknowledged data byte) on, so
//! byte `s` of the stream is at offset `s - data_start`; the receive
//! buffer's readable bytes end at `rcv_nxt`. Sans-IO: no clock is read,
//! `now` comes with every call. A connection holds no buffer storage until
//! data comes (none before its handshake completes); calls that may need
//! storage take the lcore's [`BufferPool`], and storage a ring no longer
//! needs goes back to it.

use super::autotune::RcvTuning;
use super::buffer::{RecvBuffer, SendBuffer};
use super::congestion::{Algorithm, Congestion, CongestionControl, CwndUse, HyStart};
use super::ecn::EcnState;
use super::pacing::Pacer;
use super::plpmtud::PathProbe;
use super::pool::BufferPool;
use super::rack::RetransmitWatch;
use super::rtt::RttEstimator;
use super::sack::{LossEvents, Recovery, SackReceiver, Scoreboard};
use super::send_times::SendTimes;
use super::seq::Seq;
use super::TcpConfig;
use crate::time::{Duration, Instant};
use crate::wire::tcp::TcpRepr;

/// The states of RFC 9293 3.3.2 (LISTEN belongs to listeners).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Our SYN is out, waiting for the peer's.
    SynSent,
    /// The peer's SYN arrived and ours is out.
    SynReceived,
    /// Open both ways.
    Established,
    /// We closed; our FIN is (to be) sent.
    FinWait1,
    /// Our FIN is acknowledged; the peer may still send.
    FinWait2,
    /// The peer closed; we may still send.
    CloseWait,
    /// Both closed at once; waiting for our FIN's acknowledgment.
    Closing,
    /// The peer closed first, then we did; waiting for our FIN's
    /// acknowledgment.
    LastAck,
    /// Both closed; lingering 2 MSL for stray segments.
    TimeWait,
    /// Gone (or never opened).
    Closed,
}

/// The least time between two duplicate ACKs answering pure ACKs refused
/// as out of the window or by PAWS (Linux's `tcp_invalid_ratelimit`): two
/// peers that disagree on the window would otherwise answer each other's
/// ACKs for ever, an ACK storm (RFC 5961 10 mentions it).
pub const OOW_ACK_INTERVAL: Duration = Duration::from_millis(500);

/// How long an orphaned connection waits in FIN-WAIT-2 for the peer's FIN
/// (Linux's `tcp_fin_timeout` default).
pub const FIN_WAIT2_ORPHANED: Duration = Duration::from_secs(60);

/// Why a connection failed, as its calls report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcpError {
    /// The peer answered our SYN with a reset (`ECONNREFUSED`).
    Refused,
    /// The peer reset the connection (`ECONNRESET`).
    Reset,
    /// Retransmissions went unanswered (`ETIMEDOUT`).
    TimedOut,
    /// The connection is not open for this call (`ENOTCONN`, `EPIPE`).
    NotConnected,
    /// No local port is free towards that peer, or no route to it
    /// (`EADDRNOTAVAIL`).
    AddressNotAvailable,
    /// An ICMP destination unreachable (other than port unreachable)
    /// answered our SYN (`EHOSTUNREACH`).
    Unreachable,
    /// The stack holds `TcpConfig::max_connections` already (`ENOBUFS`).
    ConnectionLimit,
    /// The stack's buffer memory (`TcpConfig::buffer_memory`) is spent:
    /// nothing could be queued now (`ENOBUFS`). Not fatal: the connection
    /// stays open, and a later write may succeed once other connections
    /// give memory back.
    NoBufferMemory,
}

impl core::fmt::Display for TcpError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            TcpError::Refused => "connection refused",
            TcpError::Reset => "connection reset by peer",
            TcpError::TimedOut => "connection timed out",
            TcpError::NotConnected => "not connected",
            TcpError::AddressNotAvailable => "address not available",
            TcpError::Unreachable => "no route to host",
            TcpError::ConnectionLimit => "the stack's connection limit is reached",
            TcpError::NoBufferMemory => "the stack's TCP buffer memory is spent",
        })
    }
}

impl std::error::Error for TcpError {}

/// Timestamp state (RFC 7323) once both sides agreed to use them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timestamps {
    /// The peer's latest TSval worth echoing (TS.Recent).
    pub(crate) recent: u32,
    /// When `recent` was stored, in [`ts_epoch`] units.
    pub(crate) recent_epoch: u32,
}

/// How long TS.Recent is held against older timestamps (RFC 7323 5.5,
/// Linux's TCP_PAWS_24DAYS), in [`ts_epoch`] units: past it, a peer's
/// millisecond clock may have moved half its 32-bit space on, and its
/// newer TSval would read as older.
const PAWS_IDLE: u32 = ((24 * 86_400 * 1_000_000_000u64) >> 30) as u32;

/// A coarse clock for TS.Recent's age: units of 2^30 ns (about 1.07 s),
/// a shift rather than a division, since it is read per segment.
pub(crate) fn ts_epoch(now: Instant) -> u32 {
    (now.as_nanos() >> 30) as u32
}

impl Timestamps {
    /// TS.Recent from `value`, stored at `now`.
    pub(crate) fn new(value: u32, now: Instant) -> Timestamps {
        Timestamps {
            recent: value,
            recent_epoch: ts_epoch(now),
        }
    }

    /// True if `value` is older than TS.Recent and TS.Recent is recent
    /// enough to say so (PAWS, RFC 7323 5.3 and 5.5).
    pub(crate) fn rejects(&self, value: u32, now: Instant) -> bool {
        (value.wrapping_sub(self.recent) as i32) < 0
            && ts_epoch(now).wrapping_sub(self.recent_epoch) < PAWS_IDLE
    }
}

/// The connection. See the module documentation.
#[derive(Debug)]
pub struct Connection {
    pub(crate) state: State,
    pub(crate) local_port: u16,
    pub(crate) remote_port: u16,
    pub(crate) delayed_ack: Duration,
    pub(crate) time_wait: Duration,
    pub(crate) max_retries: u8,
    pub(crate) max_syn_retries: u8,
    pub(crate) nodelay: bool,
    // Send side.
    pub(crate) iss: Seq,
    pub(crate) snd_una: Seq,
    pub(crate) snd_nxt: Seq,
    pub(crate) snd_max: Seq,
    /// The peer's window, scaled.
    pub(crate) snd_wnd: u32,
    pub(crate) max_snd_wnd: u32,
    pub(crate) snd_wl1: Seq,
    pub(crate) snd_wl2: Seq,
    /// The peer's window scale (applied to windows it sends).
    pub(crate) snd_shift: u8,
    pub(crate) send_buf: SendBuffer,
    /// Sequence number of `send_buf`'s first byte.
    pub(crate) data_start: Seq,
    /// The application closed its side: a FIN follows the data.
    pub(crate) fin_queued: bool,
    /// The end of the last small (under-MSS) segment sent: Nagle holds the
    /// next small one while this is unacknowledged (Minshall's variant,
    /// as Linux). Never behind `snd_una` (raised with it), so that it
    /// stays comparable however far the connection goes.
    pub(crate) snd_sml: Seq,
    // Receive side.
    pub(crate) irs: Seq,
    pub(crate) rcv_nxt: Seq,
    /// Our window scale (0 unless the peer agreed).
    pub(crate) rcv_shift: u8,
    /// The right edge of the window we last advertised.
    pub(crate) rcv_adv: Seq,
    /// The last ACK we sent (RFC 7323's Last.ACK.sent, Linux's rcv_wup):
    /// only a segment starting at or before it updates TS.Recent.
    pub(crate) last_ack_sent: Seq,
    pub(crate) recv_buf: RecvBuffer,
    /// Receive-window auto-tuning's measurements.
    pub(crate) tuning: RcvTuning,
    pub(crate) fin_received: bool,
    /// Where the peer's FIN came, ahead of a hole: taken once `rcv_nxt`
    /// reaches it, forgotten if `rcv_nxt` passes it (so it never stays
    /// behind to compare wrongly 2^31 bytes later).
    pub(crate) fin_ahead: Option<Seq>,
    // Options.
    /// Most payload bytes per segment we send (options excluded).
    pub(crate) mss: u16,
    /// The MSS we announce (from our MTU).
    pub(crate) our_mss: u16,
    /// We want window scaling and timestamps.
    pub(crate) offer_rfc7323: bool,
    pub(crate) offer_sack: bool,
    pub(crate) timestamps: Option<Timestamps>,
    /// Both sides agreed to window scaling.
    pub(crate) ws_ok: bool,
    pub(crate) ts_offset: u32,
    pub(crate) sack_ok: bool,
    /// What our ACKs' SACK blocks report (once SACK is agreed).
    pub(crate) sack_rx: SackReceiver,
    /// What the peer's SACK blocks reported: sacked data above `SND.UNA`.
    pub(crate) scoreboard: Scoreboard,
    /// SACK-based loss recovery (RFC 6675) in progress.
    pub(crate) recovery: Option<Recovery>,
    /// Retransmissions in flight in recovery, for RACK's lost-retransmission
    /// rule.
    pub(crate) rexmit_watch: RetransmitWatch,
    /// RACK's reordering timer: when a watched retransmission, or a first
    /// transmission, that later data overtook counts as lost.
    pub(crate) rack_at: Option<Instant>,
    /// When new data left, for RACK's detection of lost first
    /// transmissions.
    pub(crate) send_times: SendTimes,
    /// Every unsacked byte below it is lost by RACK's time rule. Never
    /// behind `snd_una` (raised with it), like `snd_sml`.
    pub(crate) rack_edge: Seq,
    /// The peer reported a spurious retransmission (a D-SACK): the path
    /// reorders, so RACK allows its reordering window even in recovery.
    pub(crate) reordering_seen: bool,
    /// Path MTU probing, once a black hole is suspected (RFC 4821).
    pub(crate) path_probe: PathProbe,
    /// Duplicate ACKs in a row (SACK connections; NewReno counts its own).
    pub(crate) dup_acks: u32,
    /// Recovery events for the lcore's counters.
    pub(crate) loss: LossEvents,
    /// ECN (RFC 3168, [`super::ecn`]): agreed, and what is owed.
    pub(crate) ecn: EcnState,
    /// The tail loss probe's deadline (RFC 8985 7), and a probe owed.
    pub(crate) tlp_at: Option<Instant>,
    pub(crate) tlp_due: bool,
    // Timing.
    pub(crate) rtt: RttEstimator,
    /// The segment being timed (Karn): its end and when it left.
    pub(crate) timing: Option<(Seq, Instant)>,
    pub(crate) cc: Congestion,
    /// Whether the congestion window limits the sender (only then may it grow).
    pub(crate) cwnd_use: CwndUse,
    /// When new data (before it, our first SYN) last left (RFC 5681 4.1).
    pub(crate) last_sent: Instant,
    /// Up to when an idle spell since `last_sent` was accounted for: a
    /// send with nothing in flight that could not go (the pacer, the
    /// peer's window) accounted for the spell before it, and a later one
    /// counts only from here (see `resume_after_idle`).
    pub(crate) idle_accounted: Instant,
    /// Restart the congestion window after an idle spell longer than the
    /// RTO, and validate an application-limited one
    /// (`TcpConfig::slow_start_after_idle`).
    pub(crate) slow_start_after_idle: bool,
    /// The application's last write did not all fit in the send buffer
    /// (Linux's SOCK_NOSPACE): it has more to send than the buffer holds.
    pub(crate) write_blocked: bool,
    /// HyStart++ over the first slow start.
    pub(crate) hystart: HyStart,
    /// Pacing of data segments (off unless configured).
    pub(crate) pacer: Pacer,
    pub(crate) rto_at: Option<Instant>,
    pub(crate) ack_at: Option<Instant>,
    pub(crate) persist_at: Option<Instant>,
    /// Zero-window probes since the window closed: each doubles the next
    /// gap (up to [`super::timers::PERSIST_MAX`]). Kept apart from the
    /// RTO's backoff, so a long zero window never inflates the timeout of
    /// the data sent once it opens.
    pub(crate) persist_backoff: u8,
    /// Zero-window probes since the peer was last heard from (it gives up
    /// after `max_retries`, as Linux after tcp_retries2).
    pub(crate) persist_unanswered: u8,
    /// Zero-window probes sent, ever (the lcore counts `TcpWinProbe`).
    pub(crate) window_probes: u64,
    /// When TIME-WAIT ends, or an orphaned connection's FIN-WAIT-2
    /// ([`FIN_WAIT2_ORPHANED`]).
    pub(crate) time_wait_at: Option<Instant>,
    /// The application let go of the connection (dropped its stream):
    /// nothing will read what arrives, so new data is answered with a
    /// reset, and FIN-WAIT-2 does not wait for ever on the peer's FIN.
    pub(crate) orphaned: bool,
    /// Keepalive: idle time, interval, probes allowed; when the next probe
    /// is due and how many went unanswered.
    pub(crate) keepalive: Option<Duration>,
    pub(crate) keepalive_interval: Duration,
    pub(crate) keepalive_probes: u8,
    pub(crate) keepalive_at: Option<Instant>,
    pub(crate) keepalive_sent: u8,
    /// Keepalive probes sent, ever (the lcore counts `TcpKeepAlive`).
    pub(crate) keepalives: u64,
    pub(crate) retries: u8,
    // What output owes.
    pub(crate) ack_now: bool,
    /// A challenge ACK (RFC 5961) is owed: sent like `ack_now`, but kept
    /// apart so the caller's rate limit can withhold it alone.
    pub(crate) challenge: bool,
    /// When a duplicate ACK last answered a pure ACK refused as out of the
    /// window or by PAWS ([`OOW_ACK_INTERVAL`]).
    pub(crate) last_oow_ack: Option<Instant>,
    /// Full-sized segments received since our last ACK.
    pub(crate) unacked_segments: u8,
    /// A reset to send: (seq, ack if the reset carries one).
    pub(crate) rst_pending: Option<(Seq, Option<Seq>)>,
    pub(crate) fast_retransmit: bool,
    pub(crate) probe: bool,
    pub(crate) error: Option<TcpError>,
    /// Segments sent again (timeouts, fast retransmits), for reports.
    pub(crate) retransmitted: u64,
}

/// A connection's figures for reports (iperf's Retr and Cwnd columns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnStats {
    /// Segments sent again so far.
    pub retransmits: u64,
    /// The congestion window, in bytes.
    pub cwnd: u32,
    /// The smoothed round-trip time, once measured.
    pub srtt: Option<Duration>,
    /// The MSS data segments use.
    pub mss: u16,
}

/// The window scale a receive buffer of `capacity` bytes announces: the
/// least shift that fits it in the 16-bit window field (at most 14).
pub(crate) fn window_shift_for(capacity: usize) -> u8 {
    let mut shift = 0;
    while shift < 14 && (capacity >> shift) > usize::from(u16::MAX) {
        shift += 1;
    }
    shift
}

/// The TCP timestamp clock (RFC 7323): milliseconds plus a connection's
/// offset. A SYN cookie's SYN-ACK uses it too, so the connection made from
/// the cookie goes on from the same clock.
pub(crate) fn ts_clock(now: Instant, offset: u32) -> u32 {
    ((now.as_nanos() / 1_000_000) as u32).wrapping_add(offset)
}

/// Default MSS when the peer sends none (RFC 9293 3.7.1: 536 over IPv4).
pub(crate) const DEFAULT_MSS: u16 = 536;

impl Connection {
    fn new(
        config: &TcpConfig,
        state: State,
        ports: (u16, u16),
        iss: Seq,
        our_mss: u16,
        ts_offset: u32,
    ) -> Connection {
        let our_mss = our_mss.max(64);
        Connection {
            state,
            local_port: ports.0,
            remote_port: ports.1,
            delayed_ack: config.delayed_ack,
            time_wait: config.time_wait,
            max_retries: config.max_retries,
            max_syn_retries: config.max_syn_retries,
            nodelay: config.nodelay,
            iss,
            snd_una: iss,
            snd_nxt: iss,
            snd_max: iss,
            snd_wnd: 0,
            max_snd_wnd: 0,
            snd_wl1: Seq(0),
            snd_wl2: iss,
            snd_shift: 0,
            send_buf: SendBuffer::new(config.send_buffer),
            data_start: iss + 1u32,
            fin_queued: false,
            snd_sml: iss,
            irs: Seq(0),
            rcv_nxt: Seq(0),
            rcv_shift: 0,
            rcv_adv: Seq(0),
            last_ack_sent: Seq(0),
            recv_buf: RecvBuffer::new(config.recv_buffer),
            tuning: RcvTuning::default(),
            fin_received: false,
            fin_ahead: None,
            mss: DEFAULT_MSS.min(our_mss),
            our_mss,
            offer_rfc7323: config.rfc7323,
            offer_sack: config.sack,
            timestamps: None,
            ws_ok: false,
            ts_offset,
            sack_ok: false,
            sack_rx: SackReceiver::default(),
            scoreboard: Scoreboard::default(),
            recovery: None,
            rexmit_watch: RetransmitWatch::default(),
            rack_at: None,
            send_times: SendTimes::default(),
            rack_edge: iss,
            reordering_seen: false,
            path_probe: PathProbe::default(),
            dup_acks: 0,
            loss: LossEvents::default(),
            ecn: EcnState::new(config.ecn),
            tlp_at: None,
            tlp_due: false,
            rtt: RttEstimator::new(config.initial_rto, config.min_rto, config.max_rto),
            timing: None,
            cc: Congestion::new(config.congestion, u32::from(DEFAULT_MSS.min(our_mss))),
            cwnd_use: CwndUse::new(iss),
            last_sent: Instant::ZERO,
            idle_accounted: Instant::ZERO,
            slow_start_after_idle: config.slow_start_after_idle,
            write_blocked: false,
            hystart: HyStart::new(config.hystart),
            pacer: Pacer::new(config.pacing),
            rto_at: None,
            ack_at: None,
            persist_at: None,
            persist_backoff: 0,
            persist_unanswered: 0,
            window_probes: 0,
            time_wait_at: None,
            orphaned: false,
            keepalive: config.keepalive,
            keepalive_interval: config.keepalive_interval,
            keepalive_probes: config.keepalive_probes,
            keepalive_at: None,
            keepalive_sent: 0,
            keepalives: 0,
            retries: 0,
            ack_now: false,
            challenge: false,
            last_oow_ack: None,
            unacked_segments: 0,
            rst_pending: None,
            fast_retransmit: false,
            retransmitted: 0,
            probe: false,
            error: None,
        }
    }

    /// An active open: SYN-SENT, the SYN goes out on the next
    /// [`Connection::poll_transmit`]. `iss` per RFC 6528, `our_mss` from
    /// the route's MTU, `ts_offset` a keyed hash of the 4-tuple under a key
    /// of its own (RFC 7323 5.4: never derived from the ISS).
    pub fn connect(
        config: &TcpConfig,
        local_port: u16,
        remote_port: u16,
        iss: Seq,
        our_mss: u16,
        ts_offset: u32,
    ) -> Connection {
        let ports = (local_port, remote_port);
        let state = State::SynSent;
        let mut conn = Connection::new(config, state, ports, iss, our_mss, ts_offset);
        conn.rcv_shift = if config.rfc7323 {
            config.window_shift()
        } else {
            0
        };
        conn
    }

    /// A passive open from the peer's `syn` (a listener's SYN queue entry):
    /// SYN-RECEIVED with the options negotiated; the SYN-ACK goes out on
    /// the next [`Connection::poll_transmit`]. `start` is (ISS, our MSS,
    /// timestamp offset).
    pub fn accept(
        config: &TcpConfig,
        syn: &TcpRepr,
        start: (Seq, u16, u32),
        now: Instant,
    ) -> Connection {
        let (iss, our_mss, ts_offset) = start;
        let ports = (syn.dst_port, syn.src_port);
        let state = State::SynReceived;
        let mut conn = Connection::new(config, state, ports, iss, our_mss, ts_offset);
        conn.take_syn(syn, now);
        conn.ecn.passive_open(syn.flags);
        conn
    }

    /// For a connection made from the ACK that returned a SYN cookie
    /// ([`Connection::accept_with`] on the SYN the cookie stood for): the
    /// SYN-ACK went without state, so it counts as sent, and the ACK then
    /// completes the handshake.
    pub fn syn_ack_sent_as_cookie(&mut self) {
        self.snd_nxt = self.iss + 1u32;
        self.snd_max = self.snd_nxt;
    }

    /// Gives the buffer storage back to `pool` once the connection needs
    /// no data any more (TIME-WAIT or CLOSED, and everything received was
    /// read, unless it failed); true if it did.
    pub fn release_buffers(&mut self, pool: &mut BufferPool) -> bool {
        if !matches!(self.state, State::TimeWait | State::Closed) {
            return false;
        }
        if !self.recv_buf.is_empty() && self.error.is_none() {
            return false;
        }
        self.send_buf.release(pool);
        self.recv_buf.release(pool);
        true
    }

    /// The receive window's size now (auto-tuning grows it).
    pub fn recv_window(&self) -> usize {
        self.recv_buf.capacity()
    }

    /// Bytes of buffer storage the connection holds now.
    pub fn buffer_bytes(&self) -> usize {
        self.send_buf.allocated() + self.recv_buf.allocated()
    }

    /// Records the peer's SYN: its ISN and the options both sides agree on
    /// (RFC 7323: scaling and timestamps only if both offered them).
    pub(crate) fn take_syn(&mut self, syn: &TcpRepr, now: Instant) {
        self.irs = Seq(syn.seq);
        self.rcv_nxt = self.irs + 1u32;
        self.rcv_adv = self.rcv_nxt;
        self.last_ack_sent = self.rcv_nxt;
        let options = &syn.options;
        self.mss = options.mss.unwrap_or(DEFAULT_MSS).min(self.our_mss).max(64);
        match (self.offer_rfc7323, options.window_scale) {
            (true, Some(shift)) => {
                self.ws_ok = true;
                self.snd_shift = shift;
                if self.state == State::SynReceived {
                    self.rcv_shift = self.window_shift_for_buffer();
                }
            }
            _ => {
                self.ws_ok = false;
                self.snd_shift = 0;
                self.rcv_shift = 0;
            }
        }
        self.timestamps = match (self.offer_rfc7323, options.timestamps) {
            (true, Some((value, _))) => Some(Timestamps::new(value, now)),
            _ => None,
        };
        self.sack_ok = self.offer_sack && options.sack_permitted;
        if self.timestamps.is_some() {
            // Every data segment carries 12 bytes of timestamps.
            self.mss = self.mss.saturating_sub(12).max(64);
        }
        // The window in a SYN is never scaled (RFC 7323 2.2).
        self.snd_wnd = u32::from(syn.window);
        self.max_snd_wnd = self.snd_wnd;
        self.snd_wl1 = self.irs;
        self.cc = Congestion::new(self.cc.algorithm(), u32::from(self.mss));
    }

    fn window_shift_for_buffer(&self) -> u8 {
        window_shift_for(self.recv_buf.limit())
    }

    /// The state.
    pub fn state(&self) -> State {
        self.state
    }

    /// True once the connection is gone (closed, reset, timed out, or out
    /// of TIME-WAIT).
    pub fn is_closed(&self) -> bool {
        self.state == State::Closed
    }

    /// Why it failed, if it did.
    pub fn error(&self) -> Option<TcpError> {
        self.error
    }

    /// Our port and the peer's.
    pub fn ports(&self) -> (u16, u16) {
        (self.local_port, self.remote_port)
    }

    /// Figures for reports: retransmissions, congestion window, RTT.
    pub fn stats(&self) -> ConnStats {
        ConnStats {
            retransmits: self.retransmitted,
            cwnd: self.cc.window(),
            srtt: self.rtt.srtt(),
            mss: self.mss,
        }
    }

    /// The MSS data segments use (after options).
    pub fn mss(&self) -> u16 {
        self.mss
    }

    /// The most payload the next segment may carry: the MSS, or a path MTU
    /// probe's size while a search is open.
    pub fn segment_room(&self) -> u16 {
        self.path_probe
            .largest()
            .map_or(self.mss, |high| high.max(self.mss))
    }

    /// Loss-recovery events since the last call, for the counters.
    pub fn take_loss_events(&mut self) -> LossEvents {
        core::mem::take(&mut self.loss)
    }

    /// Chooses the congestion control (`TCP_CONGESTION`). Meant for before
    /// data flows: the new algorithm starts from the initial window.
    pub fn set_congestion(&mut self, algorithm: Algorithm) {
        if algorithm != self.cc.algorithm() {
            self.cc = Congestion::new(algorithm, u32::from(self.mss));
        }
    }

    /// The congestion control in use.
    pub fn congestion(&self) -> Algorithm {
        self.cc.algorithm()
    }

    /// Turns pacing of data segments on or off (Linux paces every
    /// connection under the fq qdisc or its internal pacing).
    pub fn set_pacing(&mut self, on: bool) {
        self.pacer.set(on);
    }

    /// True if data segments are paced.
    pub fn pacing(&self) -> bool {
        self.pacer.is_on()
    }

    /// If pacing held a data segment back since the last call: when it may
    /// go. The caller polls [`Connection::poll_transmit`] again then (the
    /// timer wheel is too coarse for pacing's microseconds).
    pub fn take_pacing_release(&mut self) -> Option<Instant> {
        self.pacer.take_held()
    }

    /// True if both sides agreed to SACK.
    pub fn sack_enabled(&self) -> bool {
        self.sack_ok
    }

    /// True if the application may write.
    pub fn may_send(&self) -> bool {
        matches!(
            self.state,
            State::SynSent | State::SynReceived | State::Established | State::CloseWait
        ) && !self.fin_queued
    }

    /// The most the send buffer holds (`TcpConfig::send_buffer`).
    pub fn send_limit(&self) -> usize {
        self.send_buf.limit()
    }

    /// Room in the send buffer.
    pub fn send_room(&self) -> usize {
        self.send_buf.free()
    }

    /// Queues what fits of `data` for sending, growing the send ring from
    /// `pool` as needed; returns how much (0 when the buffer is full:
    /// backpressure). Fails once the connection cannot send any more, and
    /// with [`TcpError::NoBufferMemory`] (not fatal) when the ring is
    /// empty and the stack's buffer memory is spent.
    pub fn send(&mut self, data: &[u8], pool: &mut BufferPool) -> Result<usize, TcpError> {
        if let Some(error) = self.error {
            return Err(error);
        }
        if !self.may_send() {
            return Err(TcpError::NotConnected);
        }
        let taken = self.send_buf.push(data, pool).map_err(|_| {
            self.loss.memory_limited += 1;
            TcpError::NoBufferMemory
        });
        // The application has more than the buffer takes: until it writes
        // all it offers again, it is not what leaves the window unfilled.
        self.write_blocked = taken.map_or(true, |n| n < data.len());
        taken
    }

    /// Bytes ready to read.
    pub fn recv_ready(&self) -> usize {
        self.recv_buf.len()
    }

    /// True once the peer's FIN arrived and everything before it was read.
    pub fn at_eof(&self) -> bool {
        self.fin_received && self.recv_buf.is_empty()
    }

    /// Moves received bytes into `out`. `Ok(0)` with a non-empty `out`
    /// means end of stream if [`Connection::at_eof`], else nothing yet. A
    /// read that opens the window by an MSS (or half the buffer) schedules
    /// a window update, unless the peer's FIN came; one that empties a
    /// ring at its starting size gives the storage back to `pool`.
    pub fn recv(&mut self, out: &mut [u8], pool: &mut BufferPool) -> Result<usize, TcpError> {
        let n = self.recv_buf.read(out, pool);
        self.tuning.copied += n;
        if n == 0 {
            if let Some(error) = self.error {
                return Err(error);
            }
            return Ok(0);
        }
        // (Data may run a few bytes past the advertised edge: the window
        // field is scaled down, the buffer's room is exact.)
        let advertised = if self.rcv_adv > self.rcv_nxt {
            self.rcv_adv.since(self.rcv_nxt) as usize
        } else {
            0
        };
        let now_open = self.recv_buf.window();
        // Receiver-side silly window avoidance (RFC 9293 3.8.6.2.2): an
        // update once the window can grow by min(half the buffer, an MSS).
        // None after the peer's FIN: it sends nothing more.
        let step = usize::from(self.mss).min(self.recv_buf.capacity() / 2);
        if now_open >= advertised + step && !self.fin_received {
            self.ack_now = true;
        }
        Ok(n)
    }

    /// Closes our sending side (`shutdown(SHUT_WR)`, or `close` once the
    /// application is done reading): a FIN follows the queued data.
    pub fn close(&mut self) {
        match self.state {
            State::SynSent => self.state = State::Closed,
            State::SynReceived | State::Established => {
                self.fin_queued = true;
                self.state = State::FinWait1;
            }
            State::CloseWait => {
                self.fin_queued = true;
                self.state = State::LastAck;
            }
            _ => {}
        }
    }

    /// The application let go (it dropped its stream; its queued data and
    /// FIN still go out): from now on new data from the peer is answered
    /// with a reset (RFC 1122 4.2.2.13, as Linux's TCPAbortOnData), and
    /// FIN-WAIT-2 ends after [`FIN_WAIT2_ORPHANED`] even without the
    /// peer's FIN, so a peer that never closes cannot hold the connection
    /// (and its place under `max_connections`) for ever.
    pub fn orphan(&mut self, now: Instant) {
        self.orphaned = true;
        if self.state == State::FinWait2 && self.time_wait_at.is_none() {
            self.time_wait_at = Some(now + FIN_WAIT2_ORPHANED);
        }
    }

    /// Aborts: a reset goes out (in synchronized states) and the
    /// connection is closed at once.
    pub fn abort(&mut self) {
        if !matches!(self.state, State::SynSent | State::TimeWait | State::Closed) {
            self.rst_pending = Some((self.snd_nxt, None));
        }
        self.enter_closed(None);
    }

    /// Turns keepalive on (`Some(idle)`) or off for this connection.
    pub fn set_keepalive(&mut self, idle: Option<Duration>, now: Instant) {
        self.keepalive = idle;
        self.heard_from_peer(now);
    }

    /// The peer was heard from: the keepalive clock starts over.
    pub(crate) fn heard_from_peer(&mut self, now: Instant) {
        self.keepalive_sent = 0;
        self.persist_unanswered = 0;
        let synchronized = !matches!(
            self.state,
            State::SynSent | State::SynReceived | State::TimeWait | State::Closed
        );
        self.keepalive_at = match self.keepalive {
            Some(idle) if synchronized => Some(now + idle),
            _ => None,
        };
    }

    /// Moves to CLOSED, recording `error`; clears every timer.
    pub(crate) fn enter_closed(&mut self, error: Option<TcpError>) {
        self.state = State::Closed;
        if self.error.is_none() {
            self.error = error;
        }
        self.rto_at = None;
        self.tlp_at = None;
        self.rack_at = None;
        self.ack_at = None;
        self.persist_at = None;
        self.time_wait_at = None;
        self.keepalive_at = None;
        self.ack_now = false;
        self.challenge = false;
        self.fast_retransmit = false;
        self.probe = false;
    }

    /// RFC 5927 5.1: true if `seq`, the sequence number of a segment an
    /// ICMP error quotes, is one we sent and is not yet acknowledged
    /// (`SND.UNA <= seq < SND.MAX`; `SND.MAX` because a timeout may have
    /// moved `SND.NXT` back over segments still in the network).
    pub(crate) fn quoted_in_flight(&self, seq: Seq) -> bool {
        self.state != State::Closed && self.snd_una <= seq && seq < self.snd_max
    }

    /// A smaller path MTU was reported (RFC 1191 / RFC 8201): `path_mss`
    /// is that MTU less the IP and TCP headers. Data segments shrink to it
    /// (less the timestamp option's 12 bytes), and everything unacknowledged
    /// is sent again at once from `SND.UNA`, without waiting for the
    /// retransmission timeout: segments over the new size were dropped on
    /// the way. Not a congestion signal (as Linux's
    /// `tcp_simple_retransmit`): the congestion window and the RTO stay.
    /// True if the MSS went down.
    pub(crate) fn lower_mss(&mut self, path_mss: u16) -> bool {
        let options = if self.timestamps.is_some() { 12 } else { 0 };
        let mss = path_mss.saturating_sub(options).max(64);
        if self.state == State::SynSent {
            // The peer's SYN-ACK takes the smaller of its MSS and ours.
            self.our_mss = self.our_mss.min(path_mss);
        }
        self.path_probe.lowered(mss);
        if mss >= self.mss {
            return false;
        }
        self.mss = mss;
        let synchronized = !matches!(
            self.state,
            State::SynSent | State::SynReceived | State::Closed | State::TimeWait
        );
        if synchronized && self.snd_max > self.snd_una {
            self.snd_nxt = self.snd_una;
            self.timing = None; // Karn: no sample from a retransmission
        }
        true
    }

    /// An ICMP destination unreachable (not "fragmentation needed") about
    /// a segment in flight. In SYN-SENT the connection fails with `error`
    /// (RFC 5461 4: there is no connection to lose yet, as Linux does);
    /// otherwise it is a soft error (RFC 1122 4.2.3.9: not a reason to
    /// abort) and nothing changes. True if it aborted.
    pub(crate) fn unreachable(&mut self, error: TcpError) -> bool {
        if self.state != State::SynSent {
            return false;
        }
        self.enter_closed(Some(error));
        true
    }

    /// Withholds the challenge ACK the last segment left owed (RFC 5961 7:
    /// the caller's limit for this second is spent); any other ACK owed
    /// still goes.
    pub fn withhold_challenge_ack(&mut self) {
        self.challenge = false;
    }

    /// Moves to TIME-WAIT and starts its timer.
    pub(crate) fn enter_time_wait(&mut self, now: Instant) {
        self.state = State::TimeWait;
        self.rto_at = None;
        self.tlp_at = None;
        self.rack_at = None;
        self.persist_at = None;
        self.ack_at = None;
        self.keepalive_at = None;
        self.time_wait_at = Some(now + self.time_wait);
    }

    /// The sequence number our FIN takes (once queued).
    pub(crate) fn fin_seq(&self) -> Seq {
        self.data_start + self.send_buf.len()
    }

    /// True if our FIN was sent and acknowledged.
    pub(crate) fn fin_acked(&self) -> bool {
        self.fin_queued && self.snd_una == self.fin_seq() + 1u32
    }

    /// Bytes sent and not yet acknowledged.
    pub(crate) fn flight(&self) -> u32 {
        self.snd_nxt.since(self.snd_una)
    }
}
