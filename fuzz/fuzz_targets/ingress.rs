//! Fuzz target `ingress`: the harness in fuzz/harness (`harness::ingress::ingress`).
#![no_main]

#[path = "../harness/mod.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::ingress::ingress(data));
