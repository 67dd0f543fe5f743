//! Fuzz target `reassembly_ipv4`: the harness in fuzz/harness (`harness::reassembly::ipv4`).
#![no_main]

#[path = "../harness/mod.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::reassembly::ipv4(data));
