//! The address family as the IP layer sees it: [`IpFamily`] extends the
//! routing [`Family`] (`V4`, `V6`) with the family's fragment key, its
//! fragment identification, the counters its send path keeps, and where
//! its state sits in the pipeline's two halves ([`IpShared`]: route table
//! and learned path MTUs, shared by all lcores; [`IpLcore`]: reassembly,
//! route cache and fragment identification, one lcore's own).
//!
//! Everything here is resolved at compile time: generic code over `F:
//! IpFamily` is monomorphised per family, so nothing per packet asks which
//! family it is. Depends on no other module of `iface`.

use crate::counters::Stat;
use crate::reassembly::{FragmentKey, Key4, Key6, Reassembler, ReassemblyConfig};
use crate::route::{Family, RouteCache, RouteTable, V4, V6};
use crate::time::Instant;
use std::collections::HashMap;

/// Most destinations a route cache remembers.
const ROUTE_CACHE: usize = 4096;

/// An address family's part in the IP layer. See the module documentation.
pub(crate) trait IpFamily: Family {
    /// What identifies a datagram's fragments.
    type FragmentKey: FragmentKey;
    /// A fragment identification (16 bits in IPv4, 32 in IPv6).
    type Ident: Copy + core::fmt::Debug;
    /// Counts each datagram put together from its fragments.
    const REASM_OKS: Stat;
    /// Counts each datagram handed to IP for sending.
    const OUT_REQUESTS: Stat;
    /// True if [`IpFamily::OUT_REQUESTS`] counts every frame sent, each
    /// fragment included (IPv6's `Ip6OutRequests`), false if it counts the
    /// datagram once, before it is fragmented (IPv4's `IpOutRequests`).
    const OUT_REQUESTS_PER_FRAME: bool;
    /// Counts each fragment made.
    const FRAG_CREATES: Stat;
    /// Counts each datagram sent in fragments.
    const FRAG_OKS: Stat;
    /// The identification after `ident`.
    fn next_ident(ident: Self::Ident) -> Self::Ident;
    /// The family's shared IP state.
    fn shared(ip: &IpShared) -> &FamilyShared<Self>;
    /// The family's shared IP state, to change it (control path).
    fn shared_mut(ip: &mut IpShared) -> &mut FamilyShared<Self>;
    /// The family's per-lcore IP state.
    fn lcore<B>(ip: &mut IpLcore<B>) -> &mut FamilyLcore<B, Self>;
}

impl IpFamily for V4 {
    type FragmentKey = Key4;
    type Ident = u16;
    const REASM_OKS: Stat = Stat::IpReasmOKs;
    const OUT_REQUESTS: Stat = Stat::IpOutRequests;
    const OUT_REQUESTS_PER_FRAME: bool = false;
    const FRAG_CREATES: Stat = Stat::IpFragCreates;
    const FRAG_OKS: Stat = Stat::IpFragOKs;

    #[inline]
    fn next_ident(ident: u16) -> u16 {
        ident.wrapping_add(1)
    }

    #[inline]
    fn shared(ip: &IpShared) -> &FamilyShared<V4> {
        &ip.v4
    }

    fn shared_mut(ip: &mut IpShared) -> &mut FamilyShared<V4> {
        &mut ip.v4
    }

    #[inline]
    fn lcore<B>(ip: &mut IpLcore<B>) -> &mut FamilyLcore<B, V4> {
        &mut ip.v4
    }
}

impl IpFamily for V6 {
    type FragmentKey = Key6;
    type Ident = u32;
    const REASM_OKS: Stat = Stat::Ip6ReasmOKs;
    const OUT_REQUESTS: Stat = Stat::Ip6OutRequests;
    const OUT_REQUESTS_PER_FRAME: bool = true;
    const FRAG_CREATES: Stat = Stat::Ip6FragCreates;
    const FRAG_OKS: Stat = Stat::Ip6FragOKs;

    #[inline]
    fn next_ident(ident: u32) -> u32 {
        ident.wrapping_add(1)
    }

    #[inline]
    fn shared(ip: &IpShared) -> &FamilyShared<V6> {
        &ip.v6
    }

    fn shared_mut(ip: &mut IpShared) -> &mut FamilyShared<V6> {
        &mut ip.v6
    }

    #[inline]
    fn lcore<B>(ip: &mut IpLcore<B>) -> &mut FamilyLcore<B, V6> {
        &mut ip.v6
    }
}

/// One family's IP state that all lcores will share: written from control
/// paths and ICMP errors, read per packet.
#[derive(Debug, Clone)]
pub(crate) struct FamilyShared<F: Family> {
    /// The routes: connected networks of the links' addresses, static
    /// routes (for IPv6, link-local destinations are not routed: they name
    /// a link), and IPv6's advertised default route.
    pub(crate) routes: RouteTable<F>,
    /// Path MTUs below the link's, learned from ICMP (RFC 1191, RFC 8201),
    /// with when to forget them. At most `state::PATH_MTUS`
    /// entries.
    pub(crate) path_mtus: HashMap<F::Addr, (usize, Instant)>,
}

impl<F: Family> FamilyShared<F> {
    fn new() -> FamilyShared<F> {
        FamilyShared {
            routes: RouteTable::new(),
            path_mtus: HashMap::new(),
        }
    }
}

/// One family's IP state that one polling lcore owns alone: written per
/// packet, never shared.
#[derive(Debug)]
pub(crate) struct FamilyLcore<B, F: IpFamily> {
    /// Datagrams being put together from their fragments.
    pub(crate) reassembler: Reassembler<B, F::FragmentKey>,
    /// Next hops of recent destinations, stamped with the generation they
    /// were computed in.
    pub(crate) route_cache: RouteCache<RouteTable<F>>,
    /// The last fragment identification used.
    pub(crate) next_ident: F::Ident,
}

impl<B: crate::port::Buf, F: IpFamily> FamilyLcore<B, F> {
    fn new(reassembly: &ReassemblyConfig, first_ident: F::Ident) -> FamilyLcore<B, F> {
        FamilyLcore {
            reassembler: Reassembler::new(reassembly.clone()),
            route_cache: RouteCache::new(ROUTE_CACHE),
            next_ident: first_ident,
        }
    }
}

/// The IP state all lcores will share, per family.
#[derive(Debug, Clone)]
pub(crate) struct IpShared {
    pub(crate) v4: FamilyShared<V4>,
    pub(crate) v6: FamilyShared<V6>,
}

impl IpShared {
    /// Empty route tables, nothing learned.
    pub(crate) fn new() -> IpShared {
        IpShared {
            v4: FamilyShared::new(),
            v6: FamilyShared::new(),
        }
    }
}

/// The IP state of one polling lcore, per family.
#[derive(Debug)]
pub(crate) struct IpLcore<B> {
    pub(crate) v4: FamilyLcore<B, V4>,
    pub(crate) v6: FamilyLcore<B, V6>,
}

impl<B: crate::port::Buf> IpLcore<B> {
    /// Empty reassemblers and route caches; IPv4 identifications count
    /// from 0, IPv6 ones from `ident6` (a keyed start, RFC 7739: not
    /// predictable from outside).
    pub(crate) fn new(reassembly: &ReassemblyConfig, ident6: u32) -> IpLcore<B> {
        IpLcore {
            v4: FamilyLcore::new(reassembly, 0),
            v6: FamilyLcore::new(reassembly, ident6),
        }
    }
}
