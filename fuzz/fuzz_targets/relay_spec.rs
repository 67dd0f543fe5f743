//! Fuzz target `relay_spec`: the harness in fuzz/harness (`harness::rtp::relay_spec`).
#![no_main]

#[path = "../harness/mod.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::rtp::relay_spec(data));
