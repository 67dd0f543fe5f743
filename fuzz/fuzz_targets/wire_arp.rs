//! Fuzz target `wire_arp`: the harness in fuzz/harness (`harness::wire::arp`).
#![no_main]

#[path = "../harness/mod.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::wire::arp(data));
