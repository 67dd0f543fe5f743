//! Replays every committed fuzz input of the media library's targets (RTP,
//! RTCP, the relay's session files) through the harness the libFuzzer
//! targets run (fuzz/media_harness, included here by path), on stable, as
//! stack/tests/fuzz_corpus.rs does for the stack's targets.

#[path = "../../fuzz/media_harness/mod.rs"]
mod harness;
#[macro_use]
#[path = "../../fuzz/replay.rs"]
mod replay;

replay_tests!(harness::TARGETS; rtp, rtcp, relay_spec);
