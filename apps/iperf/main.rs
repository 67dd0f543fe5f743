//! `dpstack-iperf`: an iperf3-compatible server and client on dpstack.
//! (Being written.)

fn main() {}
