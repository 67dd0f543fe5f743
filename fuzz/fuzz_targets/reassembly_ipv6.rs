//! Fuzz target `reassembly_ipv6`: the harness in fuzz/harness (`harness::reassembly::ipv6`).
#![no_main]

#[path = "../harness/mod.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::reassembly::ipv6(data));
