//! iperf3's wire protocol (as of iperf 3.12, which stock Debian ships):
//! control-connection state bytes, the 37-byte cookie, length-prefixed JSON
//! (parameters from the client, results both ways), the UDP connect
//! handshake and the UDP datagram header.
//!
//! Parsing is lenient where iperf3 is: unknown parameter keys are ignored,
//! and `-1` may arrive as 2^64-1 (iperf's cJSON prints it so). Nothing here
//! panics on input: a bad frame is a typed [`ProtoError`].

use serde::{Deserialize, Deserializer, Serialize};

/// Control-connection state bytes (iperf_api.h).
pub mod state {
    /// S->C: all streams are there; start the test.
    pub const TEST_START: u8 = 1;
    /// S->C: sent right after TEST_START.
    pub const TEST_RUNNING: u8 = 2;
    /// C->S: time, bytes or blocks reached.
    pub const TEST_END: u8 = 4;
    /// S->C: cookie accepted, send the parameters.
    pub const PARAM_EXCHANGE: u8 = 9;
    /// S->C: open the data streams.
    pub const CREATE_STREAMS: u8 = 10;
    /// S->C: the server is stopping.
    pub const SERVER_TERMINATE: u8 = 11;
    /// C->S: the client is stopping.
    pub const CLIENT_TERMINATE: u8 = 12;
    /// S->C: send your results, then read ours.
    pub const EXCHANGE_RESULTS: u8 = 13;
    /// S->C: our results were sent.
    pub const DISPLAY_RESULTS: u8 = 14;
    /// C->S: the last byte before the client closes.
    pub const IPERF_DONE: u8 = 16;
    /// S->C: busy with another test, or a data stream had a bad cookie.
    pub const ACCESS_DENIED: u8 = 0xff;
    /// S->C: an error, followed by two big-endian i32s (i_errno, errno).
    pub const SERVER_ERROR: u8 = 0xfe;
}

/// The cookie: 36 characters of this alphabet and a NUL.
pub const COOKIE_LEN: usize = 37;
const COOKIE_ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// A cookie made from `seed` (any 64-bit value; the TSC will do).
pub fn make_cookie(seed: u64) -> [u8; COOKIE_LEN] {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut cookie = [0u8; COOKIE_LEN];
    for c in cookie.iter_mut().take(COOKIE_LEN - 1) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *c = COOKIE_ALPHABET[(x % 32) as usize];
    }
    cookie
}

/// The UDP connect datagram a client sends per stream (3.12: "9876").
pub const UDP_CONNECT_MSG: [u8; 4] = *b"9876";
/// The server's reply ("6789"). Servers up to 3.11 replied 987654321
/// (`b1 68 de 3a`): our client takes any 4-byte reply, as iperf3's does.
pub const UDP_CONNECT_REPLY: [u8; 4] = *b"6789";

/// Largest parameter or results JSON we take (iperf 3.18 refuses parameters
/// over 8 KiB; results of 128 streams fit in 64 KiB).
pub const MAX_PARAMS_JSON: usize = 8 * 1024;
/// Largest results JSON we take.
pub const MAX_RESULTS_JSON: usize = 64 * 1024;

/// Why a control frame was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProtoError {
    /// A JSON frame announced more bytes than we take.
    TooLong {
        /// The announced length.
        len: usize,
        /// Our limit.
        limit: usize,
    },
    /// The JSON did not parse (or lacked required keys).
    BadJson(String),
    /// The parameters ask for something we cannot do.
    Unsupported(String),
}

impl core::fmt::Display for ProtoError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ProtoError::TooLong { len, limit } => {
                write!(f, "a {len}-byte JSON message (at most {limit} taken)")
            }
            ProtoError::BadJson(e) => write!(f, "malformed JSON: {e}"),
            ProtoError::Unsupported(what) => write!(f, "unsupported parameters: {what}"),
        }
    }
}

/// A test's parameters, as the client sends them (unknown keys ignored).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Params {
    /// TCP streams.
    #[serde(skip_serializing_if = "is_false")]
    pub tcp: bool,
    /// UDP streams.
    #[serde(skip_serializing_if = "is_false")]
    pub udp: bool,
    /// Seconds omitted from the start of the totals.
    pub omit: u32,
    /// Test length in seconds (when neither `num` nor `blockcount`).
    pub time: u32,
    /// Bytes to send (`-n`), 0 for none.
    pub num: u64,
    /// Blocks to send (`-k`), 0 for none.
    pub blockcount: u64,
    /// Streams (each way, with `bidirectional`).
    pub parallel: u32,
    /// Block (TCP write or UDP datagram) size.
    #[serde(skip_serializing_if = "is_zero")]
    pub len: u32,
    /// Bits per second per stream, 0 for unlimited.
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub bandwidth: u64,
    /// The sender's pacing check, in microseconds.
    #[serde(skip_serializing_if = "is_zero")]
    pub pacing_timer: u32,
    /// The server sends.
    #[serde(skip_serializing_if = "is_false")]
    pub reverse: bool,
    /// Both send.
    #[serde(skip_serializing_if = "is_false")]
    pub bidirectional: bool,
    /// 64-bit UDP packet counters.
    #[serde(skip_serializing_if = "is_zero")]
    pub udp_counters_64bit: u32,
    /// The client's version string.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub client_version: String,
}

fn is_false(b: &bool) -> bool {
    !*b
}
fn is_zero(n: &u32) -> bool {
    *n == 0
}
fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

impl Params {
    /// Parses a parameter JSON and checks it describes a test we can run.
    pub fn parse(json: &[u8]) -> Result<Params, ProtoError> {
        let params: Params =
            serde_json::from_slice(json).map_err(|e| ProtoError::BadJson(e.to_string()))?;
        if params.tcp == params.udp {
            return Err(ProtoError::Unsupported(
                "exactly one of tcp and udp must be true (SCTP is not supported)".into(),
            ));
        }
        if params.parallel == 0 || params.parallel > 128 {
            return Err(ProtoError::Unsupported(format!(
                "{} parallel streams (1..=128)",
                params.parallel
            )));
        }
        if params.udp && params.len as usize > 65507 {
            return Err(ProtoError::Unsupported(format!(
                "{}-byte datagrams (at most 65507)",
                params.len
            )));
        }
        Ok(params)
    }

    /// Streams in all (both ways with `bidirectional`).
    pub fn streams(&self) -> usize {
        self.parallel as usize * if self.bidirectional { 2 } else { 1 }
    }

    /// The block size, with iperf3's defaults (128 KiB TCP, 1460 UDP).
    pub fn block_len(&self) -> usize {
        match (self.len, self.udp) {
            (0, true) => 1460,
            (0, false) => 128 * 1024,
            (len, _) => len as usize,
        }
    }
}

/// A side's results, exchanged at the end of a test.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Results {
    /// CPU use of the whole test, percent.
    pub cpu_util_total: f64,
    /// User-mode share.
    pub cpu_util_user: f64,
    /// Kernel-mode share.
    pub cpu_util_system: f64,
    /// 1 for a TCP sender that counts retransmissions, -1 if only receiving.
    #[serde(deserialize_with = "lenient_i64")]
    pub sender_has_retransmits: i64,
    /// Per-stream figures.
    pub streams: Vec<StreamResults>,
}

/// One stream's figures in [`Results`].
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StreamResults {
    /// Stream id (1, 3, 4, ... in creation order).
    pub id: u32,
    /// Bytes sent (a sender) or received (a receiver), omitted ones excluded.
    pub bytes: u64,
    /// TCP retransmissions, -1 when not known.
    #[serde(deserialize_with = "lenient_i64")]
    pub retransmits: i64,
    /// UDP jitter, seconds.
    pub jitter: f64,
    /// UDP datagrams lost.
    #[serde(deserialize_with = "lenient_i64")]
    pub errors: i64,
    /// UDP datagrams sent, or the highest sequence number received.
    #[serde(deserialize_with = "lenient_i64")]
    pub packets: i64,
    /// Seconds from the test's start.
    #[serde(default)]
    pub start_time: f64,
    /// Seconds from the test's start.
    #[serde(default)]
    pub end_time: f64,
}

/// An integer that may be written as 2^64-1 for -1 (iperf's cJSON).
fn lenient_i64<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    let value = serde_json::Number::deserialize(d)?;
    if let Some(v) = value.as_i64() {
        Ok(v)
    } else if let Some(v) = value.as_u64() {
        Ok(v as i64) // 2^64-1 wraps to -1, as in C
    } else {
        Ok(value.as_f64().unwrap_or(0.0) as i64)
    }
}

impl Results {
    /// Parses a results JSON (every key iperf3 requires must be present).
    pub fn parse(json: &[u8]) -> Result<Results, ProtoError> {
        serde_json::from_slice(json).map_err(|e| ProtoError::BadJson(e.to_string()))
    }
}

/// Appends `json` as a frame: a 4-byte big-endian length, then the text.
pub fn frame_json(json: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&(json.len() as u32).to_be_bytes());
    out.extend_from_slice(json);
}

/// Takes a length-prefixed JSON frame from the front of `buf`: `Ok(None)`
/// until all of it arrived.
pub fn take_json(buf: &mut Vec<u8>, limit: usize) -> Result<Option<Vec<u8>>, ProtoError> {
    let Some(len) = buf
        .first_chunk::<4>()
        .map(|b| u32::from_be_bytes(*b) as usize)
    else {
        return Ok(None);
    };
    if len > limit {
        return Err(ProtoError::TooLong { len, limit });
    }
    if buf.len() < 4 + len {
        return Ok(None);
    }
    let json = buf[4..4 + len].to_vec();
    buf.drain(..4 + len);
    Ok(Some(json))
}

/// The UDP datagram header: the sender's clock and the packet count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpHeader {
    /// Seconds of the sender's monotonic clock.
    pub sec: u32,
    /// Microseconds within the second.
    pub usec: u32,
    /// Packet number, from 1.
    pub count: u64,
}

impl UdpHeader {
    /// Header length: 12 bytes, or 16 with 64-bit counters.
    pub fn len(wide: bool) -> usize {
        if wide {
            16
        } else {
            12
        }
    }

    /// Writes the header into the front of `out` (which must hold it).
    pub fn write(&self, wide: bool, out: &mut [u8]) {
        out[0..4].copy_from_slice(&self.sec.to_be_bytes());
        out[4..8].copy_from_slice(&self.usec.to_be_bytes());
        if wide {
            out[8..16].copy_from_slice(&self.count.to_be_bytes());
        } else {
            out[8..12].copy_from_slice(&(self.count as u32).to_be_bytes());
        }
    }

    /// Reads a header, if the datagram is long enough.
    pub fn read(wide: bool, data: &[u8]) -> Option<UdpHeader> {
        let word = |at: usize| {
            data.get(at..at + 4)
                .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        };
        let count = if wide {
            u64::from_be_bytes(data.get(8..16)?.try_into().ok()?)
        } else {
            u64::from(word(8)?)
        };
        Some(UdpHeader {
            sec: word(0)?,
            usec: word(4)?,
            count,
        })
    }

    /// The header's time, in nanoseconds.
    pub fn nanos(&self) -> u64 {
        u64::from(self.sec) * 1_000_000_000 + u64::from(self.usec) * 1000
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_captured_parameters_parse_and_unknown_keys_are_ignored() {
        let json = br#"{"tcp":true,"omit":0,"time":2,"num":0,"blockcount":0,"parallel":1,"len":1000,
            "bandwidth":10000000,"pacing_timer":1000,"client_version":"3.12","gso":1,"future":{"x":1}}"#;
        let p = Params::parse(json).unwrap();
        assert!(p.tcp && !p.udp);
        assert_eq!(
            (p.time, p.parallel, p.len, p.bandwidth),
            (2, 1, 1000, 10_000_000)
        );
        assert_eq!(p.block_len(), 1000);
    }

    #[test]
    fn bad_parameters_are_typed_errors() {
        assert!(matches!(
            Params::parse(b"{\"tcp\":tru"),
            Err(ProtoError::BadJson(_))
        ));
        assert!(matches!(
            Params::parse(br#"{"tcp":true,"udp":true,"parallel":1}"#),
            Err(ProtoError::Unsupported(_))
        ));
        assert!(matches!(
            Params::parse(br#"{"tcp":true,"parallel":0}"#),
            Err(ProtoError::Unsupported(_))
        ));
        assert!(matches!(
            Params::parse(b"[1,2]"),
            Err(ProtoError::BadJson(_))
        ));
    }

    #[test]
    fn results_take_minus_one_written_as_two_to_the_64_minus_one() {
        let json = br#"{"cpu_util_total":0.99,"cpu_util_user":0.03,"cpu_util_system":0.96,
            "sender_has_retransmits":18446744073709551615,"congestion_used":"bbr",
            "streams":[{"id":1,"bytes":2496000,"retransmits":18446744073709551615,"jitter":0,
            "errors":0,"packets":0,"start_time":0,"end_time":2.00018}]}"#;
        let r = Results::parse(json).unwrap();
        assert_eq!(r.sender_has_retransmits, -1);
        assert_eq!(r.streams[0].retransmits, -1);
        assert_eq!(r.streams[0].bytes, 2_496_000);
        // A missing required key refuses the whole object, as iperf3 does.
        assert!(Results::parse(br#"{"cpu_util_total":1,"streams":[]}"#).is_err());
    }

    #[test]
    fn json_frames_wait_for_their_bytes_and_refuse_oversize() {
        let mut buf = Vec::new();
        frame_json(b"{\"a\":1}", &mut buf);
        let mut partial = buf[..6].to_vec();
        assert_eq!(take_json(&mut partial, 100), Ok(None));
        assert_eq!(take_json(&mut buf, 100), Ok(Some(b"{\"a\":1}".to_vec())));
        assert!(buf.is_empty());
        let mut big = 100_000u32.to_be_bytes().to_vec();
        assert_eq!(
            take_json(&mut big, MAX_PARAMS_JSON),
            Err(ProtoError::TooLong {
                len: 100_000,
                limit: MAX_PARAMS_JSON
            })
        );
    }

    #[test]
    fn udp_headers_match_the_captured_bytes() {
        let captured = [
            0x00, 0x00, 0x01, 0x4f, 0x00, 0x04, 0x58, 0xac, 0x00, 0x00, 0x00, 0x01,
        ];
        let h = UdpHeader::read(false, &captured).unwrap();
        assert_eq!((h.sec, h.usec, h.count), (335, 284_844, 1));
        let mut out = [0u8; 12];
        h.write(false, &mut out);
        assert_eq!(out, captured);
        let wide = [0, 0, 1, 0x74, 0, 0x0c, 0x34, 0x53, 0, 0, 0, 0, 0, 0, 0, 1];
        assert_eq!(UdpHeader::read(true, &wide).unwrap().count, 1);
        assert_eq!(UdpHeader::read(true, &wide[..12]), None);
    }

    #[test]
    fn cookies_are_36_characters_of_the_alphabet_and_a_nul() {
        let c = make_cookie(42);
        assert_eq!(c[36], 0);
        assert!(c[..36].iter().all(|b| COOKIE_ALPHABET.contains(b)));
        assert_ne!(make_cookie(42), make_cookie(43));
    }
}
