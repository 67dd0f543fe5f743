//! The ports' multicast filters kept in step with the groups the stack
//! listens to ([`MulticastSync`]): its own (IPv6 all-nodes and
//! solicited-node, IPv4 all-systems) and those its sockets join
//! (`Interface::udp_join`). A device passes a multicast frame only if its
//! filter lets it (or it is promiscuous, the apps' default): the list is
//! programmed with `rte_eth_dev_set_mc_addr_list`, or, where the device
//! has no list or too small a one (net_tap, net_pcap, memif may have
//! none), all-multicast mode is turned on instead.
//!
//! Runs on the main thread (the apps' wait loop, every 20 ms), never on a
//! polling lcore: it reads the stack's published state through a
//! `StackControl` and calls DPDK's control functions only when a link's
//! set changed, so the poll loop pays nothing for it.

use crate::ethdev::{set_multicast_macs, EthPort, MulticastFilter};
use crate::mbuf::Mbuf;
use crate::stack::iface::StackControl;
use crate::stack::port::MacAddr;

/// Keeps each port's multicast filter in step with its link's groups. See
/// the module documentation.
pub struct MulticastSync {
    control: StackControl<Mbuf>,
    /// Per link (port, in link order): its port id, what was programmed
    /// last, and how.
    ports: Vec<PortFilter>,
    program: String,
    /// The stack's generation at the last look (`None` before the first).
    seen: Option<u64>,
}

struct PortFilter {
    id: u16,
    programmed: Option<Vec<MacAddr>>,
    /// All-multicast is on: it passes every group, nothing more to do.
    all: bool,
    /// Neither the list nor all-multicast took (said once).
    failed: bool,
}

impl MulticastSync {
    /// Programs each of `ports` (the stack's, in link order: `Stack::ports`)
    /// with its link's groups (as `control`, `Interface::control`, reads
    /// them) now, saying on stderr, once, for a port where neither the list
    /// nor all-multicast works (a promiscuous port still receives them).
    pub fn new(control: StackControl<Mbuf>, ports: &[EthPort], program: &str) -> MulticastSync {
        let mut sync = MulticastSync {
            control,
            ports: (ports.iter())
                .map(|p| PortFilter {
                    id: p.id(),
                    programmed: None,
                    all: false,
                    failed: false,
                })
                .collect(),
            program: program.to_string(),
            seen: None,
        };
        sync.sync();
        sync
    }

    /// Programs the ports whose link's groups changed since the last call.
    /// While the stack's shared state did not change, one atomic load: it
    /// runs every 20 ms in the process a benchmark counts.
    pub fn sync(&mut self) {
        let generation = self.control.generation();
        if self.seen == Some(generation) {
            return;
        }
        // Read before the links: a change published meanwhile is read at
        // the next call.
        self.seen = Some(generation);
        for (link, port) in self.ports.iter_mut().enumerate() {
            if port.all || port.failed {
                continue;
            }
            let macs = self.control.multicast_macs(link);
            if port.programmed.as_ref() == Some(&macs) {
                continue;
            }
            match set_multicast_macs(port.id, &macs) {
                Ok(MulticastFilter::List) => port.programmed = Some(macs),
                Ok(MulticastFilter::AllMulticast) => port.all = true,
                Err(e) => {
                    port.failed = true;
                    eprintln!(
                        "{}: port {}: no multicast filter ({e}); multicast is received \
                         only if the port is promiscuous",
                        self.program, port.id
                    );
                }
            }
        }
    }
}
