//! Multicast Listener Discovery version 2 (RFC 3810) on the wire: the
//! query a router sends (parsed, [`MldQuery`]), the listener report a host
//! sends ([`emit_report`]; MLDv1's report and done, [`emit_v1`]) and the hop-by-hop header with the Router Alert
//! option every MLD message travels behind ([`ROUTER_ALERT_HOP_BY_HOP`],
//! [`has_router_alert`]).
//!
//! Both messages are ICMPv6 messages; the checksum is left to the caller,
//! who knows the addresses.

use super::icmpv6::{msg_type, Icmpv6Packet};
use super::ipv6::next_header;
use super::{read_u16, write_u16, WireError, WireResult};
use core::net::Ipv6Addr;
use core::time::Duration;

/// ff02::16, the all-MLDv2-capable-routers group reports go to (RFC 3810
/// 5.2.14).
pub const ALL_MLDV2_ROUTERS: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 0x16);

/// Multicast address record types (RFC 3810 5.2.12).
pub mod record_type {
    /// Current state: listening in include mode (to the sources listed).
    pub const MODE_IS_INCLUDE: u8 = 1;
    /// Current state: listening in exclude mode (all sources but those
    /// listed).
    pub const MODE_IS_EXCLUDE: u8 = 2;
    /// State change: now in include mode (with no source: left).
    pub const CHANGE_TO_INCLUDE_MODE: u8 = 3;
    /// State change: now in exclude mode (with no source: joined).
    pub const CHANGE_TO_EXCLUDE_MODE: u8 = 4;
}

/// Length of an MLDv1 query (RFC 2710 3), which an MLDv2 query extends.
pub const QUERY_V1_LEN: usize = 24;
/// Length of an MLDv2 query without sources.
pub const QUERY_V2_LEN: usize = 28;
/// Length of a report's fixed part, before its records.
pub const REPORT_HEADER_LEN: usize = 8;
/// Length of one multicast address record without sources or auxiliary
/// data.
pub const RECORD_LEN: usize = 20;

/// The hop-by-hop options header of every MLD message (RFC 3810 5): next
/// header ICMPv6, the Router Alert option (RFC 2711) with value 0 (MLD),
/// two bytes of padding (PadN).
pub const ROUTER_ALERT_HOP_BY_HOP: [u8; 8] = [next_header::ICMPV6, 0, 5, 2, 0, 0, 1, 0];

/// What an MLD query asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MldQuery {
    /// 1 for an MLDv1 query (24 bytes), 2 for MLDv2.
    pub version: u8,
    /// The longest a listener may wait before answering.
    pub max_response_delay: Duration,
    /// The group asked about, or `::` for a general query.
    pub group: Ipv6Addr,
    /// Sources listed (a multicast-address-and-source-specific query).
    pub sources: u16,
}

impl MldQuery {
    /// Parses a multicast listener query (the whole ICMPv6 message): an
    /// MLDv1 query is exactly 24 bytes, an MLDv2 one at least 28 with
    /// room for the sources it lists (RFC 3810 8.1).
    pub fn parse(message: &[u8]) -> WireResult<MldQuery> {
        let icmp = Icmpv6Packet::new_checked(message)?;
        if icmp.msg_type() != msg_type::MLD_QUERY {
            return Err(WireError::Unsupported);
        }
        if message.len() < QUERY_V1_LEN {
            return Err(WireError::Truncated);
        }
        let code = read_u16(message, 4);
        let group = Ipv6Addr::from(<[u8; 16]>::try_from(&message[8..24]).expect("16 bytes"));
        if message.len() == QUERY_V1_LEN {
            return Ok(MldQuery {
                version: 1,
                max_response_delay: Duration::from_millis(u64::from(code)),
                group,
                sources: 0,
            });
        }
        if message.len() < QUERY_V2_LEN {
            return Err(WireError::Malformed);
        }
        let sources = read_u16(message, 26);
        if message.len() < QUERY_V2_LEN + 16 * usize::from(sources) {
            return Err(WireError::Truncated);
        }
        Ok(MldQuery {
            version: 2,
            max_response_delay: max_response_delay(code),
            group,
            sources,
        })
    }
}

/// The Maximum Response Delay a Maximum Response Code stands for (RFC 3810
/// 5.1.3): milliseconds below 32768, a floating-point value above.
pub fn max_response_delay(code: u16) -> Duration {
    let millis = if code < 0x8000 {
        u64::from(code)
    } else {
        let mantissa = u64::from(code & 0x0fff);
        let exponent = u32::from((code >> 12) & 0x7);
        (mantissa | 0x1000) << (exponent + 3)
    };
    Duration::from_millis(millis)
}

/// Writes an MLDv2 listener report (RFC 3810 5.2) into `message`
/// ([`REPORT_HEADER_LEN`] plus [`RECORD_LEN`] per record): one record,
/// without sources, per `(record type, group)`. The checksum is left to
/// the caller.
pub fn emit_report(message: &mut [u8], records: &[(u8, Ipv6Addr)]) {
    message[..REPORT_HEADER_LEN].copy_from_slice(&[msg_type::MLD_REPORT_V2, 0, 0, 0, 0, 0, 0, 0]);
    write_u16(message, 6, records.len() as u16);
    let body = &mut message[REPORT_HEADER_LEN..];
    for (record, &(kind, group)) in body.chunks_exact_mut(RECORD_LEN).zip(records) {
        record[..4].copy_from_slice(&[kind, 0, 0, 0]);
        record[4..].copy_from_slice(&group.octets());
    }
}

/// Writes an MLDv1 message (RFC 2710 3: a report or a done, `kind`) about
/// `group` into `message` ([`QUERY_V1_LEN`] bytes, the layout MLDv1's
/// messages share). The checksum is left to the caller.
pub fn emit_v1(message: &mut [u8], kind: u8, group: Ipv6Addr) {
    message[..8].copy_from_slice(&[kind, 0, 0, 0, 0, 0, 0, 0]);
    message[8..QUERY_V1_LEN].copy_from_slice(&group.octets());
}

/// True if `options`, the body of a hop-by-hop options header (from its
/// first byte, the next header), holds a Router Alert option for MLD
/// (RFC 2711, value 0). Stops at the first malformed option.
pub fn has_router_alert(options: &[u8]) -> bool {
    let mut at = 2;
    while let Some(&kind) = options.get(at) {
        if kind == 0 {
            at += 1; // Pad1
            continue;
        }
        let Some(&len) = options.get(at + 1) else {
            return false;
        };
        let body = options.get(at + 2..at + 2 + usize::from(len));
        if kind == 5 {
            return body == Some(&[0, 0][..]);
        }
        at += 2 + usize::from(len);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_parse_in_both_versions() {
        let group: Ipv6Addr = "ff02::1:ff00:1".parse().unwrap();
        let mut v1 = vec![130, 0, 0, 0, 0x27, 0x10, 0, 0];
        v1.extend_from_slice(&group.octets());
        assert_eq!(
            MldQuery::parse(&v1),
            Ok(MldQuery {
                version: 1,
                max_response_delay: Duration::from_secs(10),
                group,
                sources: 0,
            })
        );
        let mut v2 = v1.clone();
        v2.extend_from_slice(&[0x02, 125, 0, 1]);
        assert_eq!(
            MldQuery::parse(&v2),
            Err(WireError::Truncated),
            "one source"
        );
        v2.extend_from_slice(&[0; 16]);
        v2[4..6].copy_from_slice(&0x8001u16.to_be_bytes());
        let query = MldQuery::parse(&v2).unwrap();
        assert_eq!((query.version, query.sources), (2, 1));
        assert_eq!(query.max_response_delay, Duration::from_millis(0x1001 << 3));
        assert_eq!(MldQuery::parse(&v2[..26]), Err(WireError::Malformed));
        assert_eq!(MldQuery::parse(&v2[..20]), Err(WireError::Truncated));
    }

    #[test]
    fn report_golden_bytes() {
        let group: Ipv6Addr = "ff02::1:ff00:1".parse().unwrap();
        let mut m = [0xaa; REPORT_HEADER_LEN + RECORD_LEN];
        emit_report(&mut m, &[(record_type::CHANGE_TO_EXCLUDE_MODE, group)]);
        let mut expected = vec![143, 0, 0, 0, 0, 0, 0, 1, 4, 0, 0, 0];
        expected.extend_from_slice(&group.octets());
        assert_eq!(m[..], expected[..]);
    }

    #[test]
    fn mldv1_messages_golden_bytes() {
        let group: Ipv6Addr = "ff02::1:ff00:1".parse().unwrap();
        let mut m = [0xaa; QUERY_V1_LEN];
        emit_v1(&mut m, msg_type::MLD_DONE, group);
        let mut expected = vec![132, 0, 0, 0, 0, 0, 0, 0];
        expected.extend_from_slice(&group.octets());
        assert_eq!(m[..], expected[..]);
    }

    #[test]
    fn router_alert_is_found_among_options() {
        assert!(has_router_alert(&ROUTER_ALERT_HOP_BY_HOP));
        assert!(has_router_alert(&[58, 0, 0, 1, 0, 5, 2, 0, 0]));
        assert!(!has_router_alert(&[58, 0, 1, 4, 0, 0, 0, 0]), "PadN only");
        assert!(
            !has_router_alert(&[58, 0, 5, 2, 0, 1, 1, 0]),
            "RSVP's value"
        );
        assert!(!has_router_alert(&[58, 0, 5, 2, 0]), "cut off");
    }
}
