//! The fuzzing harness of `dpstack-media` (RTP, RTCP, the relay's session
//! files), shared like fuzz/harness by the libFuzzer targets and by the
//! stable replay test of the media crate (media/tests/fuzz_corpus.rs), which
//! both include this directory with `#[path]`. It reads its input with the
//! stack harness's reader (fuzz/harness/input.rs), so both decode bytes the
//! same way.
// Each fuzz target uses one entry point; the rest is dead code there.
#![allow(dead_code)]

#[path = "../harness/input.rs"]
mod input;
pub mod rtp;

/// A target: its name (the directory under fuzz/corpus and
/// fuzz/regressions) and its entry point.
pub type Target = (&'static str, fn(&[u8]));

/// Every target.
pub const TARGETS: &[Target] = &[
    ("rtp", rtp::rtp),
    ("rtcp", rtp::rtcp),
    ("relay_spec", rtp::relay_spec),
];
