//! Fuzz target `wire_ipv4`: the harness in fuzz/harness (`harness::wire::ipv4`).
#![no_main]

#[path = "../harness/mod.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::wire::ipv4(data));
