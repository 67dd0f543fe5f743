//! Fuzz target `wire_tcp`: the harness in fuzz/harness (`harness::wire::tcp`).
#![no_main]

#[path = "../harness/mod.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::wire::tcp(data));
