//! Fuzz target `wire_icmpv4`: the harness in fuzz/harness (`harness::wire::icmpv4`).
#![no_main]

#[path = "../harness/mod.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::wire::icmpv4(data));
