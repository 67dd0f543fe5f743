//! Fuzz target `wire_udp`: the harness in fuzz/harness (`harness::wire::udp`).
#![no_main]

#[path = "../harness/mod.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::wire::udp(data));
