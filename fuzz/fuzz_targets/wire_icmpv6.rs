//! Fuzz target `wire_icmpv6`: the harness in fuzz/harness (`harness::wire::icmpv6`).
#![no_main]

#[path = "../harness/mod.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::wire::icmpv6(data));
