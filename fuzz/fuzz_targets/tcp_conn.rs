//! Fuzz target `tcp_conn`: the harness in fuzz/harness (`harness::tcp::conn`).
#![no_main]

#[path = "../harness/mod.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::tcp::conn(data));
