//! The fuzzing harness of `dpstack-stack`, shared by the libFuzzer targets
//! (fuzz/fuzz_targets) and the stable replay test (stack/tests/fuzz_corpus.rs),
//! which both include this directory with `#[path]`: one copy of the decoding
//! and of the invariants, so a corpus file means the same thing in both
//! places. The media library's targets (RTP, RTCP, the relay's session files)
//! are in fuzz/media_harness, replayed by media/tests/fuzz_corpus.rs: the
//! stack's tests do not build the crate above it.
//!
//! Every function here takes arbitrary bytes, never panics on its own
//! account, and panics (an `assert!`) exactly when an invariant of the
//! stack breaks: a parse that does not round-trip through its emitter, a
//! frame the pipeline counts twice or not at all, a leaked buffer, a TCP
//! byte stream that differs from what the peer sent.
// Each fuzz target uses one entry point; the rest is dead code there.
#![allow(dead_code)]

pub mod ingress;
mod input;
pub mod reassembly;
pub mod tcp;
pub mod wire;

/// A target: its name (the directory under fuzz/corpus and
/// fuzz/regressions) and its entry point.
pub type Target = (&'static str, fn(&[u8]));

/// Every target.
pub const TARGETS: &[Target] = &[
    ("wire_ethernet", wire::ethernet),
    ("wire_arp", wire::arp),
    ("wire_ipv4", wire::ipv4),
    ("wire_ipv6", wire::ipv6),
    ("wire_icmpv4", wire::icmpv4),
    ("wire_icmpv6", wire::icmpv6),
    ("wire_udp", wire::udp),
    ("wire_tcp", wire::tcp),
    ("reassembly_ipv4", reassembly::ipv4),
    ("reassembly_ipv6", reassembly::ipv6),
    ("tcp_conn", tcp::conn),
    ("ingress", ingress::ingress),
];
