//! Buffers made ready for headers, IPv4 and IPv6 alike: a fresh one from a
//! link's pool (empty frame bytes, or a copy of a payload with room in
//! front), or a received one cut down to its payload for new headers.

use super::transmit::{Out, SendError};
use crate::counters::{Counters, DropReason};
use crate::port::{Buf, Port};

/// A fresh buffer from `link`'s pool holding `len` bytes of frame for the
/// caller to fill; `None` (counted) when the pool or the buffer runs short.
pub(super) fn new_frame<P: Port>(
    counters: &Counters,
    out: &mut Out<'_, P>,
    link: usize,
    len: usize,
) -> Option<P::Buf> {
    let Some(mut buf) = out.alloc(link) else {
        counters.count_drop(DropReason::TxNoBuffer);
        return None;
    };
    if buf.append(len).is_none() {
        counters.count_drop(DropReason::TxNoBuffer);
        return None;
    }
    Some(buf)
}

/// A fresh buffer from `link`'s pool holding a copy of `payload`, with
/// room for `headers` bytes of headers in front of it.
pub(super) fn new_with_payload<P: Port>(
    counters: &Counters,
    out: &mut Out<'_, P>,
    link: usize,
    headers: usize,
    payload: &[u8],
) -> Result<P::Buf, SendError> {
    let Some(mut buf) = out.alloc(link) else {
        counters.count_drop(DropReason::TxNoBuffer);
        return Err(SendError::NoBuffer);
    };
    if buf.headroom() < headers {
        return Err(SendError::TooLarge);
    }
    buf.append(payload.len())
        .ok_or(SendError::TooLarge)?
        .copy_from_slice(payload);
    Ok(buf)
}

/// Cuts a received frame down for new headers at `header_start` in front
/// of the payload that ends at `payload_end` (both offsets in the frame as
/// received): what follows the payload (Ethernet padding) and what stands
/// before the new headers (old ones longer than the new) go.
pub(super) fn cut_to_payload<B: Buf>(buf: &mut B, header_start: usize, payload_end: usize) {
    let padding = buf.len().saturating_sub(payload_end);
    if padding > 0 {
        buf.trim(padding);
    }
    if header_start > 0 {
        buf.adjust(header_start);
    }
}
