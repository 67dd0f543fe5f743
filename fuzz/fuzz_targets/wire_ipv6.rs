//! Fuzz target `wire_ipv6`: the harness in fuzz/harness (`harness::wire::ipv6`).
#![no_main]

#[path = "../harness/mod.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::wire::ipv6(data));
