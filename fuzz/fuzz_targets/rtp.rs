//! Fuzz target `rtp`: the harness in fuzz/harness (`harness::rtp::rtp`).
#![no_main]

#[path = "../harness/mod.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::rtp::rtp(data));
