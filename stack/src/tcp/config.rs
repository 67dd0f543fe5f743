//! TCP tunables, shared by every connection of an interface.

use super::congestion::Algorithm;
use super::ecn::EcnMode;
use crate::rss::RssPlacement;
use crate::time::Duration;

/// TCP tunables. The defaults follow Linux where an RFC leaves room.
#[derive(Debug, Clone)]
pub struct TcpConfig {
    /// Bytes a connection's send buffer may hold (writes beyond wait). The
    /// ring starts at 16 KiB on the first write and doubles as writes need.
    pub send_buffer: usize,
    /// Bytes a connection's receive buffer may hold: the most we advertise.
    /// The window starts at 64 KiB and grows by auto-tuning up to this.
    pub recv_buffer: usize,
    /// Disable Nagle's algorithm by default (`TCP_NODELAY`).
    pub nodelay: bool,
    /// Longest an ACK waits for a second segment or data to ride on.
    pub delayed_ack: Duration,
    /// Retransmission timeout before any RTT sample (RFC 6298: 1 s).
    pub initial_rto: Duration,
    /// Lower bound of the retransmission timeout (Linux: 200 ms).
    pub min_rto: Duration,
    /// Upper bound of the retransmission timeout (RFC 6298: at least 60 s).
    pub max_rto: Duration,
    /// Retransmissions of one segment before the connection is given up.
    pub max_retries: u8,
    /// Retransmissions of a SYN before connect fails.
    pub max_syn_retries: u8,
    /// How long TIME-WAIT lasts (2 * MSL; Linux: 60 s).
    pub time_wait: Duration,
    /// Offer window scaling and timestamps (RFC 7323).
    pub rfc7323: bool,
    /// Offer selective acknowledgments (RFC 2018; on by default, as
    /// Linux): with the peer's agreement, our ACKs carry SACK and D-SACK
    /// blocks, and loss recovery retransmits only the holes (RFC 6675).
    pub sack: bool,
    /// Congestion control for new connections (Linux's
    /// tcp_congestion_control; CUBIC by default, as Linux), changed per
    /// connection with `Connection::set_congestion`.
    pub congestion: Algorithm,
    /// HyStart++ (RFC 9406; Linux's CUBIC has HyStart on too): the first
    /// slow start turns conservative once the RTT shows a queue building,
    /// instead of growing until a loss.
    pub hystart: bool,
    /// Restart the congestion window after an idle spell (RFC 5681 4.1;
    /// Linux's `tcp_slow_start_after_idle`, on by default, as here): data
    /// sent after nothing was for longer than the retransmission timeout
    /// goes from a window halved per RTO of the idle spell, down to the
    /// initial window at most, not as a burst of whatever window the path
    /// last carried (see [`crate::tcp::congestion`]). Counted by
    /// `TcpCwndRestarts`. As in Linux, the same switch validates an
    /// application-limited window (RFC 2861): one left unfilled for an RTO
    /// goes halfway down to what was used. Off: the window is kept across
    /// idle and application-limited spells.
    pub slow_start_after_idle: bool,
    /// Pace data segments at a rate from the congestion window and the
    /// round trip (see [`crate::tcp::pacing`]); changed per connection
    /// with `Connection::set_pacing`. Off by default.
    pub pacing: bool,
    /// Explicit Congestion Notification (RFC 3168; Linux's `tcp_ecn`):
    /// by default agreed to when a peer asks for it, never asked for.
    pub ecn: EcnMode,
    /// Local ports connects pick from (inclusive; Linux's default range).
    pub ephemeral_ports: (u16, u16),
    /// How the port's RSS spreads TCP and which queue this endpoint's lcore
    /// polls, when known: connects then prefer local ports whose return
    /// traffic lands on that queue (counted `TcpConnectRssPlaced`, or
    /// `TcpConnectRssMissed` when none was free). `None` (the default):
    /// any free port.
    pub rss: Option<RssPlacement>,
    /// Keepalive (SO_KEEPALIVE): probe a connection after this long
    /// without hearing from the peer (`None`: off, the default, as Linux).
    pub keepalive: Option<Duration>,
    /// Time between unanswered keepalive probes (Linux: 75 s).
    pub keepalive_interval: Duration,
    /// Unanswered probes before the connection times out (Linux: 9).
    pub keepalive_probes: u8,
    /// Challenge ACKs (RFC 5961) the stack sends a second, on average,
    /// over all its connections; the rest are counted and not sent (RFC
    /// 5961 7; Linux's tcp_challenge_ack_limit, 1000). `u32::MAX`: no
    /// limit.
    pub challenge_ack_limit: u32,
    /// Answer SYNs with SYN cookies (RFC 4987) once a listener's backlog of
    /// handshakes is full, instead of dropping them (Linux's
    /// tcp_syncookies=1). Default on.
    pub syn_cookies: bool,
    /// Connections the stack holds at most, in every state (handshakes and
    /// TIME-WAIT included): beyond it a SYN or a cookie's ACK is dropped
    /// (`tcp_conn_limit`) and a connect fails with
    /// `TcpError::ConnectionLimit`; `TcpConnLimitReached` counts both.
    pub max_connections: usize,
    /// Bytes of buffer storage (send and receive rings) the stack's
    /// connections hold at most, together (Linux's `tcp_mem`). Rings take
    /// storage only when data needs it and grow with use, so this bounds
    /// busy connections, not idle ones. When it is spent, a write that
    /// finds its ring empty fails with `TcpError::NoBufferMemory`, data
    /// for a ring without storage is dropped (`tcp_mem_limit`,
    /// `TcpRcvQDrop`) and windows stop growing (`TcpMemoryLimited`).
    pub buffer_memory: usize,
    /// Buckets of the interface's connection table (a power of two). The
    /// default suits 100k connections; fuzzing and other short-lived
    /// interfaces set it small, since building 64k buckets costs ~5 ms.
    #[doc(hidden)]
    pub conn_buckets: usize,
}

impl Default for TcpConfig {
    fn default() -> TcpConfig {
        TcpConfig {
            send_buffer: 256 * 1024,
            recv_buffer: 256 * 1024,
            nodelay: false,
            delayed_ack: Duration::from_millis(40),
            initial_rto: Duration::from_secs(1),
            min_rto: Duration::from_millis(200),
            max_rto: Duration::from_secs(120),
            max_retries: 15,
            max_syn_retries: 6,
            time_wait: Duration::from_secs(60),
            rfc7323: true,
            sack: true,
            congestion: Algorithm::Cubic,
            hystart: true,
            slow_start_after_idle: true,
            pacing: false,
            ecn: EcnMode::Accept,
            ephemeral_ports: (32768, 60999),
            rss: None,
            keepalive: None,
            keepalive_interval: Duration::from_secs(75),
            keepalive_probes: 9,
            challenge_ack_limit: 1000,
            syn_cookies: true,
            max_connections: 1 << 20,
            buffer_memory: 1 << 30,
            conn_buckets: 65536,
        }
    }
}

impl TcpConfig {
    /// The window scale we offer for our receive buffer: the smallest
    /// shift that lets the whole buffer be advertised.
    pub fn window_shift(&self) -> u8 {
        let mut shift = 0;
        while shift < 14 && (self.recv_buffer >> shift) > usize::from(u16::MAX) {
            shift += 1;
        }
        shift
    }
}
