//! Software steering of TCP segments between the pipelines of one stack:
//! each pipeline owns the connections it accepted or opened (their
//! timers, buffers and transmit), and a segment that arrives on another
//! pipeline's queue is handed to the owner through the owner's bounded
//! ring, as Seastar forwards packets when queues and cores disagree.
//!
//! Steering is the exception where the device spreads flows as the
//! connections were placed (RSS-aware connect, a peer that answers on the
//! queue it was sent from) and the rule where spreading is unknown. Every
//! hand-off is counted on both sides (`TcpSteeredOut`, `TcpSteeredIn`), and
//! a full ring drops the segment counted (`tcp_steer_ring_full`), never
//! silently; TCP's retransmission recovers it.
//!
//! Invariants: a ring has many producers (any pipeline) and one consumer
//! (its owner, at the start of its poll); pushing and popping never block
//! or allocate; rings exist for pipelines 0 to [`MAX_PIPELINES`] - 1, made
//! when the pipeline is.

use crate::port::Buf;
use crate::tcp::endpoint::TcpIn;
use crossbeam_queue::ArrayQueue;
use std::sync::OnceLock;

/// Most pipelines (lcores) of one stack.
pub(crate) const MAX_PIPELINES: usize = 64;

/// Segments one pipeline's ring holds.
const RING: usize = 1024;

/// Segments a pipeline takes from its ring per poll (the rest wait for the
/// next poll, so a flood from other lcores cannot starve its own queue).
pub(crate) const STEERED_PER_POLL: usize = 256;

/// A pipeline's ring: segments with where they sit in their buffers.
type Ring<B> = ArrayQueue<(B, TcpIn)>;

/// The rings of a stack's pipelines: see the module documentation.
#[derive(Debug)]
pub(crate) struct Steering<B> {
    rings: Box<[OnceLock<Ring<B>>]>,
}

impl<B: Buf> Steering<B> {
    pub(crate) fn new() -> Steering<B> {
        Steering {
            rings: (0..MAX_PIPELINES).map(|_| OnceLock::new()).collect(),
        }
    }

    /// Makes pipeline `index`'s ring (once).
    pub(crate) fn open(&self, index: usize) {
        if let Some(ring) = self.rings.get(index) {
            ring.get_or_init(|| ArrayQueue::new(RING));
        }
    }

    /// Hands a segment to pipeline `owner`; gives it back if the ring is
    /// full (or `owner` has none).
    #[inline]
    pub(crate) fn push(&self, owner: u8, segment: (B, TcpIn)) -> Result<(), (B, TcpIn)> {
        match self.rings.get(usize::from(owner)).and_then(OnceLock::get) {
            Some(ring) => ring.push(segment),
            None => Err(segment),
        }
    }

    /// The next segment handed to pipeline `index`.
    #[inline]
    pub(crate) fn pop(&self, index: usize) -> Option<(B, TcpIn)> {
        self.rings.get(index)?.get()?.pop()
    }
}
