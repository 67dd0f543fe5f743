//! Replays every committed fuzz input of the stack's targets
//! (fuzz/corpus/TARGET and fuzz/regressions/TARGET) through the same harness
//! the libFuzzer targets run (fuzz/harness, included here by path), on
//! stable: an invariant a corpus input once held, or a fixed crash, that
//! breaks again fails CI without nightly or cargo-fuzz. One test per target,
//! so a failure names it; each failing input is named with its panic
//! message. The media library's targets are replayed by
//! media/tests/fuzz_corpus.rs.

#[path = "../../fuzz/harness/mod.rs"]
mod harness;
#[macro_use]
#[path = "../../fuzz/replay.rs"]
mod replay;

replay_tests!(
    harness::TARGETS;
    wire_ethernet,
    wire_arp,
    wire_ipv4,
    wire_ipv6,
    wire_icmpv4,
    wire_icmpv6,
    wire_udp,
    wire_tcp,
    reassembly_ipv4,
    reassembly_ipv6,
    tcp_conn,
    ingress,
);
