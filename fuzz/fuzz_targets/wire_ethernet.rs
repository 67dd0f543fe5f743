//! Fuzz target `wire_ethernet`: the harness in fuzz/harness (`harness::wire::ethernet`).
#![no_main]

#[path = "../harness/mod.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::wire::ethernet(data));
