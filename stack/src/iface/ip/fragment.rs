//! Fragmenting a frame that exceeds its MTU, once for both families: the
//! payload is cut into pieces of a multiple of 8 bytes that fit, each sent
//! in a new buffer behind a copy of the Ethernet header and the family's
//! headers ([`Fragmenting`]: IPv4's header with its offset and flags; IPv6's
//! fixed header and a fragment header, RFC 8200 4.5).
//!
//! Slow path (a datagram over the MTU). A piece that cannot get a buffer
//! ends the datagram there, counted; the pieces already sent stay sent.

use super::family::IpFamily;
use crate::counters::DropReason;
use crate::iface::state::Core;
use crate::iface::transmit::{Out, SendError};
use crate::port::{Buf, Port};
use crate::route::{V4, V6};
use crate::wire::ethernet::HEADER_LEN as ETH_LEN;
use crate::wire::ipv4::{Ipv4Header, Ipv4Packet, HEADER_LEN as IP_LEN};
use crate::wire::ipv6::{next_header, Ipv6Header, Ipv6Packet, HEADER_LEN as IP6_LEN};
use core::ops::Range;

/// An ICMPv6 error and the packet it quotes fit the minimum IPv6 MTU; no
/// path MTU is taken below it, and IPv6 fragments to no less.
pub(crate) const MIN_MTU: usize = 1280;

/// Length of IPv6's fragment header.
const FRAGMENT_HEADER_LEN: usize = 8;

/// A family's part in fragmenting.
pub(crate) trait Fragmenting: IpFamily {
    /// Bytes of IP headers in front of each piece.
    const PIECE_HEADERS: usize;
    /// What every piece's headers repeat of the whole datagram's.
    type Template: Copy;
    /// Reads the whole datagram's IP header (`ip` starts at it): the
    /// template and where the payload to cut lies in `ip`; `None` if the
    /// header cannot be read.
    fn template(ip: &[u8]) -> Option<(Self::Template, Range<usize>)>;
    /// Payload bytes per piece under `mtu`: a multiple of 8.
    fn piece_len(mtu: usize) -> usize;
    /// The identification the pieces carry: the datagram's own (IPv4) or
    /// the next of the lcore's unpredictable sequence (IPv6, RFC 7739).
    fn ident<B: Buf>(core: &mut Core<B>, template: &Self::Template) -> Self::Ident;
    /// Writes one piece's headers into `headers` ([`Self::PIECE_HEADERS`]
    /// bytes): its payload of `len` bytes starts at `offset` of the
    /// datagram's, and `more` pieces follow.
    fn write_piece_headers(
        headers: &mut [u8],
        template: &Self::Template,
        ident: Self::Ident,
        place: (usize, usize, bool),
    );
}

impl Fragmenting for V4 {
    const PIECE_HEADERS: usize = IP_LEN;
    type Template = Ipv4Header;

    fn template(ip: &[u8]) -> Option<(Ipv4Header, Range<usize>)> {
        let packet = Ipv4Packet::new_checked(ip).ok()?;
        let header = Ipv4Header {
            src: packet.src(),
            dst: packet.dst(),
            protocol: packet.protocol(),
            payload_len: 0,
            ttl: packet.ttl(),
            ident: packet.ident(),
            dont_fragment: false,
            tos: packet.tos(),
        };
        let end = usize::from(packet.total_len()).min(ip.len());
        Some((header, packet.header_len().min(end)..end))
    }

    fn piece_len(mtu: usize) -> usize {
        (mtu.saturating_sub(IP_LEN) & !7).max(8)
    }

    fn ident<B: Buf>(_core: &mut Core<B>, template: &Ipv4Header) -> u16 {
        template.ident
    }

    fn write_piece_headers(
        headers: &mut [u8],
        template: &Ipv4Header,
        _ident: u16,
        (offset, len, more): (usize, usize, bool),
    ) {
        let mut ip = Ipv4Packet::new_unchecked(headers);
        ip.emit_header(&Ipv4Header {
            payload_len: len as u16,
            ..*template
        });
        ip.set_fragment(offset, more);
        ip.fill_checksum();
    }
}

impl Fragmenting for V6 {
    const PIECE_HEADERS: usize = IP6_LEN + FRAGMENT_HEADER_LEN;
    /// The fixed header (next header: fragment) and the protocol it
    /// carried.
    type Template = (Ipv6Header, u8);

    fn template(ip: &[u8]) -> Option<((Ipv6Header, u8), Range<usize>)> {
        let packet = Ipv6Packet::new_checked(ip).ok()?;
        let header = Ipv6Header {
            src: packet.src(),
            dst: packet.dst(),
            next_header: next_header::FRAGMENT,
            payload_len: 0,
            hop_limit: packet.hop_limit(),
        };
        let payload = IP6_LEN..IP6_LEN + packet.payload().len();
        Some(((header, packet.next_header()), payload))
    }

    fn piece_len(mtu: usize) -> usize {
        (mtu.max(MIN_MTU) - IP6_LEN - FRAGMENT_HEADER_LEN) & !7
    }

    fn ident<B: Buf>(core: &mut Core<B>, _template: &(Ipv6Header, u8)) -> u32 {
        core.next_ident::<V6>()
    }

    fn write_piece_headers(
        headers: &mut [u8],
        &(header, protocol): &(Ipv6Header, u8),
        ident: u32,
        (offset, len, more): (usize, usize, bool),
    ) {
        Ipv6Packet::new_unchecked(&mut *headers).emit_header(&Ipv6Header {
            payload_len: (FRAGMENT_HEADER_LEN + len) as u16,
            ..header
        });
        let fragment = &mut headers[IP6_LEN..];
        fragment[..2].copy_from_slice(&[protocol, 0]);
        let offset = offset as u16 | u16::from(more);
        fragment[2..4].copy_from_slice(&offset.to_be_bytes());
        fragment[4..8].copy_from_slice(&ident.to_be_bytes());
    }
}

/// Sends the frame `whole` out of `link` in pieces that fit `mtu`.
pub(super) fn fragment<F: Fragmenting, P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    mtu: usize,
    whole: &P::Buf,
) -> Result<(), SendError> {
    let data = whole.data();
    let Some((template, payload)) = data.get(ETH_LEN..).and_then(F::template) else {
        core.lcore.counters.count_drop(DropReason::TxTooBig);
        return Err(SendError::TooLarge);
    };
    let payload = &data[ETH_LEN..][payload];
    let chunk = F::piece_len(mtu);
    let ident = F::ident(core, &template);
    let pieces = payload.len().div_ceil(chunk);
    for (i, piece) in payload.chunks(chunk).enumerate() {
        let Some(mut buf) = out.alloc(link) else {
            core.lcore.counters.count_drop(DropReason::TxNoBuffer);
            return Err(SendError::NoBuffer);
        };
        let Some(frame) = buf.append(ETH_LEN + F::PIECE_HEADERS + piece.len()) else {
            core.lcore.counters.count_drop(DropReason::TxTooBig);
            return Err(SendError::TooLarge);
        };
        frame[..ETH_LEN].copy_from_slice(&data[..ETH_LEN]);
        let (headers, body) = frame[ETH_LEN..].split_at_mut(F::PIECE_HEADERS);
        let place = (i * chunk, piece.len(), i + 1 < pieces);
        F::write_piece_headers(headers, &template, ident, place);
        body.copy_from_slice(piece);
        core.lcore.counters.count(F::FRAG_CREATES);
        if F::OUT_REQUESTS_PER_FRAME {
            core.lcore.counters.count(F::OUT_REQUESTS);
        }
        out.push(link, buf, &core.lcore.counters);
    }
    core.lcore.counters.count(F::FRAG_OKS);
    Ok(())
}
