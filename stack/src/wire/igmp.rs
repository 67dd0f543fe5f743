//! IGMP (RFC 3376, with RFC 2236's and RFC 1112's older versions) on the
//! wire, as a host sees it: the query a router sends (parsed,
//! [`IgmpQuery`], its version told by its length and Max Resp Code as RFC
//! 3376 7.1 says), the IGMPv3 report ([`emit_report`]), IGMPv1/v2 reports
//! and leaves ([`emit_v2`]) and the IP Router Alert option every message
//! travels behind ([`ROUTER_ALERT`]).
//!
//! Unlike ICMPv6's, IGMP's checksum covers the message alone (no
//! pseudo-header): [`verify_checksum`] and [`fill_checksum`].

use super::checksum;
use super::{read_u16, write_u16, WireError, WireResult};
use core::net::Ipv4Addr;
use core::time::Duration;

/// 224.0.0.22, the all-IGMPv3-capable-routers group IGMPv3 reports go to
/// (RFC 3376 4.2.14).
pub const ALL_IGMPV3_ROUTERS: Ipv4Addr = Ipv4Addr::new(224, 0, 0, 22);
/// 224.0.0.2, the all-routers group IGMPv2 leaves go to (RFC 2236 3).
pub const ALL_ROUTERS: Ipv4Addr = Ipv4Addr::new(224, 0, 0, 2);

/// IGMP message types.
pub mod msg_type {
    /// Membership query (every version).
    pub const QUERY: u8 = 0x11;
    /// IGMPv1 membership report (RFC 1112).
    pub const REPORT_V1: u8 = 0x12;
    /// IGMPv2 membership report (RFC 2236).
    pub const REPORT_V2: u8 = 0x16;
    /// IGMPv2 leave group (RFC 2236).
    pub const LEAVE: u8 = 0x17;
    /// IGMPv3 membership report (RFC 3376 4.2).
    pub const REPORT_V3: u8 = 0x22;
}

/// Group record types (RFC 3376 4.2.12), the same numbers as MLDv2's.
pub use super::mld::record_type;

/// Length of an IGMPv1/v2 message (and of an IGMPv1/v2 query).
pub const V2_LEN: usize = 8;
/// Length of an IGMPv3 query without sources.
pub const QUERY_V3_LEN: usize = 12;
/// Length of a report's fixed part, before its records.
pub const REPORT_HEADER_LEN: usize = 8;
/// Length of one group record without sources or auxiliary data.
pub const RECORD_LEN: usize = 8;

/// The IP Router Alert option (RFC 2113), value 0 ("examine packet"),
/// four bytes: every IGMP message carries it (RFC 3376 4).
pub const ROUTER_ALERT: [u8; 4] = [0x94, 0x04, 0x00, 0x00];

/// What an IGMP query asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IgmpQuery {
    /// 1, 2 or 3 (RFC 3376 7.1: 8 bytes with a Max Resp Code of 0 is
    /// IGMPv1's, 8 bytes with one IGMPv2's, 12 or more IGMPv3's).
    pub version: u8,
    /// The longest a member may wait before answering (IGMPv1's, which
    /// has none, is 10 s: RFC 1112 appendix I).
    pub max_response: Duration,
    /// The group asked about, or 0.0.0.0 for a general query.
    pub group: Ipv4Addr,
    /// Sources listed (an IGMPv3 group-and-source-specific query).
    pub sources: u16,
}

impl IgmpQuery {
    /// Parses a membership query (the whole IGMP message, its checksum
    /// already checked). Lengths other than 8 or 12 and up (with room for
    /// the sources listed) are malformed, as RFC 3376 7.1 says to ignore
    /// them.
    pub fn parse(message: &[u8]) -> WireResult<IgmpQuery> {
        if message.len() < V2_LEN {
            return Err(WireError::Truncated);
        }
        if message[0] != msg_type::QUERY {
            return Err(WireError::Unsupported);
        }
        let code = message[1];
        let group = Ipv4Addr::new(message[4], message[5], message[6], message[7]);
        if message.len() == V2_LEN {
            let (version, max_response) = match code {
                0 => (1, Duration::from_secs(10)),
                tenths => (2, Duration::from_millis(100 * u64::from(tenths))),
            };
            return Ok(IgmpQuery {
                version,
                max_response,
                group,
                sources: 0,
            });
        }
        if message.len() < QUERY_V3_LEN {
            return Err(WireError::Malformed);
        }
        let sources = read_u16(message, 10);
        if message.len() < QUERY_V3_LEN + 4 * usize::from(sources) {
            return Err(WireError::Truncated);
        }
        Ok(IgmpQuery {
            version: 3,
            max_response: max_response_time(code),
            group,
            sources,
        })
    }
}

/// The Max Resp Time an IGMPv3 Max Resp Code stands for (RFC 3376 4.1.1):
/// tenths of a second below 128, a floating-point value from 128 on.
pub fn max_response_time(code: u8) -> Duration {
    let tenths = if code < 0x80 {
        u64::from(code)
    } else {
        let mantissa = u64::from(code & 0x0f);
        let exponent = u32::from((code >> 4) & 0x7);
        (mantissa | 0x10) << (exponent + 3)
    };
    Duration::from_millis(100 * tenths)
}

/// True if `message`'s checksum (the whole IGMP message's) is right.
pub fn verify_checksum(message: &[u8]) -> bool {
    checksum::checksum(message) == 0
}

/// Fills `message`'s checksum field (bytes 2-3).
pub fn fill_checksum(message: &mut [u8]) {
    write_u16(message, 2, 0);
    let sum = checksum::checksum(message);
    write_u16(message, 2, sum);
}

/// Writes an IGMPv3 membership report (RFC 3376 4.2) into `message`
/// ([`REPORT_HEADER_LEN`] plus [`RECORD_LEN`] per record): one record,
/// without sources, per `(record type, group)`; the checksum filled.
pub fn emit_report(message: &mut [u8], records: &[(u8, Ipv4Addr)]) {
    message[..REPORT_HEADER_LEN].copy_from_slice(&[msg_type::REPORT_V3, 0, 0, 0, 0, 0, 0, 0]);
    write_u16(message, 6, records.len() as u16);
    let body = &mut message[REPORT_HEADER_LEN..];
    for (record, &(kind, group)) in body.chunks_exact_mut(RECORD_LEN).zip(records) {
        record[..4].copy_from_slice(&[kind, 0, 0, 0]);
        record[4..].copy_from_slice(&group.octets());
    }
    let len = REPORT_HEADER_LEN + RECORD_LEN * records.len();
    fill_checksum(&mut message[..len]);
}

/// Writes an IGMPv1/v2 message (a report or a leave, `kind`) about
/// `group` into `message` ([`V2_LEN`] bytes), the checksum filled.
pub fn emit_v2(message: &mut [u8], kind: u8, group: Ipv4Addr) {
    message[..4].copy_from_slice(&[kind, 0, 0, 0]);
    message[4..V2_LEN].copy_from_slice(&group.octets());
    fill_checksum(&mut message[..V2_LEN]);
}

/// True if `options`, an IPv4 header's options (after its first 20
/// bytes), hold a Router Alert option. Stops at the end-of-list option or
/// the first malformed one.
pub fn has_router_alert(options: &[u8]) -> bool {
    let mut at = 0;
    while let Some(&kind) = options.get(at) {
        match kind {
            0 => return false,
            1 => at += 1,
            _ => {
                let len = usize::from(options.get(at + 1).copied().unwrap_or(0));
                if len < 2 {
                    return false;
                }
                if kind == ROUTER_ALERT[0] && len == 4 {
                    return true;
                }
                at += len;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_by_length_and_code() {
        let mut v2 = [msg_type::QUERY, 100, 0, 0, 239, 1, 2, 3];
        fill_checksum(&mut v2);
        assert!(verify_checksum(&v2));
        let q = IgmpQuery::parse(&v2).unwrap();
        assert_eq!(q.version, 2);
        assert_eq!(q.max_response, Duration::from_secs(10));
        assert_eq!(q.group, Ipv4Addr::new(239, 1, 2, 3));
        v2[1] = 0;
        assert_eq!(IgmpQuery::parse(&v2).unwrap().version, 1);
        let v3 = [msg_type::QUERY, 0x8f, 0, 0, 0, 0, 0, 0, 2, 125, 0, 0];
        let q = IgmpQuery::parse(&v3).unwrap();
        assert_eq!(q.version, 3);
        // 0x8f: exponent 0, mantissa 15: (15 | 16) << 3 = 248 tenths.
        assert_eq!(q.max_response, Duration::from_millis(24_800));
        assert_eq!(IgmpQuery::parse(&v3[..10]), Err(WireError::Malformed));
        let mut one_source = [0u8; 12];
        one_source.copy_from_slice(&v3);
        one_source[11] = 1;
        assert_eq!(IgmpQuery::parse(&one_source), Err(WireError::Truncated));
    }

    #[test]
    fn report_layout() {
        let mut message = [0u8; 24];
        let records = [
            (
                record_type::CHANGE_TO_EXCLUDE_MODE,
                Ipv4Addr::new(239, 1, 2, 3),
            ),
            (
                record_type::CHANGE_TO_INCLUDE_MODE,
                Ipv4Addr::new(239, 9, 9, 9),
            ),
        ];
        emit_report(&mut message, &records);
        assert_eq!(message[0], msg_type::REPORT_V3);
        assert_eq!(read_u16(&message, 6), 2);
        assert_eq!(&message[8..16], &[4, 0, 0, 0, 239, 1, 2, 3]);
        assert_eq!(&message[16..24], &[3, 0, 0, 0, 239, 9, 9, 9]);
        assert!(verify_checksum(&message));
    }

    #[test]
    fn router_alert_found_among_options() {
        assert!(has_router_alert(&ROUTER_ALERT));
        assert!(has_router_alert(&[1, 0x94, 4, 0, 0]));
        assert!(!has_router_alert(&[0, 0x94, 4, 0, 0]));
        assert!(!has_router_alert(&[7, 0, 0, 0]));
    }
}
