//! Fuzz target `relay_spec`: the harness in fuzz/media_harness (`harness::rtp::relay_spec`).
#![no_main]

#[path = "../media_harness/mod.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::rtp::relay_spec(data));
