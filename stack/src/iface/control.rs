//! The interface's control path: routes (IPv4 and IPv6), TCP listeners
//! and connects, UDP binds, connects and closes, and what the neighbour
//! caches and IPv6 address states hold. Called between polls from the
//! owning thread; none of it runs per packet.

use super::*;

impl<B: Buf> Interface<B> {
    /// Adds (or replaces) a static route to `prefix` through `gateway`,
    /// which must be on a link's connected network (that link carries it).
    pub fn add_route(&mut self, prefix: Ipv4Cidr, gateway: Ipv4Addr) -> Result<(), ConfigError> {
        (self.core.shared).edit(|shared| routes::add_route(shared, prefix, gateway))
    }

    /// Adds (or replaces) a route that sends `prefix` straight out of
    /// `link` (its hosts answer ARP there).
    pub fn add_link_route(&mut self, prefix: Ipv4Cidr, link: usize) -> Result<(), ConfigError> {
        (self.core.shared).edit(|shared| routes::add_link_route(shared, prefix, link))
    }

    /// Removes the route to `prefix`; true if there was one.
    pub fn remove_route(&mut self, prefix: Ipv4Cidr) -> bool {
        self.core
            .shared
            .edit(|shared| shared.ip.v4.routes.remove(prefix))
    }

    /// Adds (or replaces) a static IPv6 route to `prefix` through
    /// `gateway`: a global gateway must be on a link's prefix (that link
    /// carries it); a link-local one needs its `link` unless only one link
    /// runs IPv6.
    pub fn add_route6(
        &mut self,
        prefix: Ipv6Cidr,
        gateway: Ipv6Addr,
        link: Option<usize>,
    ) -> Result<(), ConfigError> {
        (self.core.shared).edit(|shared| routes::add_route6(shared, prefix, gateway, link))
    }

    /// Removes the IPv6 route to `prefix`; true if there was one.
    pub fn remove_route6(&mut self, prefix: Ipv6Cidr) -> bool {
        (self.core.shared).edit(|shared| routes::remove_route6(shared, prefix))
    }

    /// A handle that changes this stack's routes from any thread (see
    /// [`StackControl`]).
    pub fn control(&self) -> StackControl<B> {
        StackControl::new(Arc::clone(self.core.shared.tables()))
    }

    /// The IPv6 route `dst` takes: (link, next hop, source address).
    pub fn route_to6(&self, dst: Ipv6Addr) -> Option<(usize, Ipv6Addr, Ipv6Addr)> {
        self.core
            .shared
            .latest()
            .ip
            .v6
            .routes
            .next_hop(dst)
            .map(|hop| (usize::from(hop.port), hop.via, hop.source))
    }

    /// The route `dst` takes: (link, next hop, source address).
    pub fn route_to(&self, dst: Ipv4Addr) -> Option<(usize, Ipv4Addr, Ipv4Addr)> {
        self.core
            .shared
            .latest()
            .ip
            .v4
            .routes
            .next_hop(dst)
            .map(|hop| (usize::from(hop.port), hop.via, hop.source))
    }

    /// Listens for TCP connections on `local` (an unspecified address takes
    /// every address; `[::]` both families), with at most `backlog`
    /// handshakes in progress. Accepted connections reach the handler's
    /// [`InlineHandler::on_tcp`] as [`TcpEvent::Accepted`] with this id. As in
    /// Linux, it fails with `AddrInUse` if another listener on the port
    /// hears some of the same traffic (`0.0.0.0` and `[::]` included).
    pub fn tcp_listen(
        &mut self,
        local: impl Into<SocketAddr>,
        backlog: usize,
    ) -> Result<ListenerId, ListenError> {
        self.tcp_listen_with(local, backlog, ListenOptions::default())
    }

    /// [`Interface::tcp_listen`] with socket options: SO_REUSEPORT,
    /// IPV6_V6ONLY ([`ListenOptions`]).
    pub fn tcp_listen_with(
        &mut self,
        local: impl Into<SocketAddr>,
        backlog: usize,
        options: ListenOptions,
    ) -> Result<ListenerId, ListenError> {
        self.core.shared.refresh();
        let at = tcp::listen(&mut self.core, local.into(), backlog, options)?;
        Ok(tcp::listener_id(&self.core, at))
    }

    /// Joins (or starts) the SO_REUSEPORT group on `local`: every member
    /// must join this way, and each new connection goes to one member, by a
    /// keyed hash of its addresses and ports (a flow always meets the same
    /// member). [`TcpEvent::Accepted`] names the member.
    pub fn tcp_listen_reuseport(
        &mut self,
        local: impl Into<SocketAddr>,
        backlog: usize,
    ) -> Result<ListenerId, ListenError> {
        let options = ListenOptions {
            reuse_port: true,
            ..ListenOptions::default()
        };
        self.tcp_listen_with(local, backlog, options)
    }

    /// Stops inline listener `id`: new connections to its address are
    /// refused (or go to the rest of its group); connections it made, and
    /// handshakes in progress, carry on. False if it was already closed.
    pub fn tcp_unlisten(&mut self, id: ListenerId) -> bool {
        tcp::unlisten_inline(&mut self.core, id)
    }

    /// Opens a TCP connection to `remote` outside a poll (its SYN leaves
    /// on this call).
    pub fn tcp_connect<P: Port<Buf = B>>(
        &mut self,
        ports: &mut [P],
        now: Instant,
        remote: impl Into<SocketAddr>,
    ) -> Result<ConnId, TcpError> {
        self.core.shared.refresh();
        let links = ports.len().min(self.batches.len());
        let mut out = Out::new(&mut ports[..links], &mut self.batches[..links]);
        let result = tcp::connect(&mut self.core, &mut out, now, remote.into());
        out.flush(&self.core.lcore.counters);
        result
    }

    /// The state of a TCP connection, if it still exists.
    pub fn tcp_state(&self, conn: ConnId) -> Option<crate::tcp::State> {
        self.core.tcp.peek(conn).map(|c| c.state())
    }

    /// Binds a UDP socket (port 0: an ephemeral port). An IPv6 address
    /// makes an IPv6 socket; bound to `::` it also receives IPv4 (as
    /// IPv4-mapped addresses) unless `options.v6_only`.
    pub fn udp_bind(
        &mut self,
        local: impl Into<SocketAddr>,
        options: BindOptions,
    ) -> Result<SocketId, BindError> {
        self.core.shared.edit_later(|shared| {
            let shared = &mut **shared;
            let (local4, links) = (&shared.local, &shared.links);
            shared
                .udp
                .bind(local, options, |ip| bindable(local4, links, ip))
        })
    }

    /// Socket `socket` joins multicast `group` on `on` (Linux's
    /// `IP_ADD_MEMBERSHIP`, `IPV6_JOIN_GROUP`): it then receives the
    /// datagrams to the group that arrive on that link for its port, and
    /// the link reports the group (IGMP, MLD) from the next timer run if
    /// it is the group's first socket there. Returns the link.
    pub fn udp_join(
        &mut self,
        socket: SocketId,
        group: IpAddr,
        on: GroupLink,
    ) -> Result<usize, JoinError> {
        self.core
            .shared
            .edit(|shared| membership::join(shared, socket, group, on))
    }

    /// Socket `socket` leaves `group` on `on` (`IP_DROP_MEMBERSHIP`,
    /// `IPV6_LEAVE_GROUP`); the group's last socket there makes the link
    /// leave it. Returns the link.
    pub fn udp_leave(
        &mut self,
        socket: SocketId,
        group: IpAddr,
        on: GroupLink,
    ) -> Result<usize, JoinError> {
        self.core
            .shared
            .edit(|shared| membership::leave(shared, socket, group, on))
    }

    /// The groups socket `socket` joined, with their links.
    pub fn udp_groups(&self, socket: SocketId) -> Vec<(usize, IpAddr)> {
        membership::groups_of(&self.core.shared.latest().links, socket)
    }

    /// The Ethernet multicast addresses link `link` listens to (every
    /// group it joined, its own and its sockets'), for the device's
    /// filter (a driver compares it with what it programmed).
    pub fn multicast_macs(&self, link: usize) -> Vec<MacAddr> {
        let shared = self.core.shared.latest();
        shared
            .links
            .get(link)
            .map_or_else(Vec::new, |l| l.multicast_macs())
    }

    /// Connects a UDP socket to `remote`: it then only receives from there
    /// and, if it was bound to ANY, only at the address the route to
    /// `remote` speaks from (as Linux's connect binds it).
    pub fn udp_connect(&mut self, socket: SocketId, remote: impl Into<SocketAddr>) -> bool {
        udp_connect(&mut self.core, socket, remote.into())
    }

    /// Closes a UDP socket.
    pub fn udp_close(&mut self, socket: SocketId) -> bool {
        self.core.shared.edit_later(|shared| {
            membership::forget(shared, socket);
            shared.udp.close(socket)
        })
    }

    /// The local address of a UDP socket.
    pub fn udp_local_addr(&self, socket: SocketId) -> Option<SocketAddrV4> {
        self.core.shared.latest().udp.local_addr(socket)
    }

    /// The MAC of a neighbour on any link, if resolved.
    pub fn neighbor(&self, ip: Ipv4Addr) -> Option<MacAddr> {
        self.core
            .shared
            .latest()
            .links
            .iter()
            .find_map(|l| l.neighbors.lookup(ip))
    }

    /// The IPv6 neighbour caches' entries, with their links (control path).
    pub fn neighbors6(&self) -> Vec<(usize, Ipv6Addr, Option<MacAddr>, NeighborState)> {
        self.core
            .shared
            .latest()
            .links
            .iter()
            .enumerate()
            .flat_map(|(index, l)| {
                l.neighbors6
                    .entries()
                    .into_iter()
                    .map(move |(ip, mac, state)| (index, ip, mac, state))
            })
            .collect()
    }

    /// True while duplicate address detection runs for some IPv6 address
    /// (those addresses are not used yet).
    pub fn dad_pending(&self) -> bool {
        self.core
            .shared
            .latest()
            .links
            .iter()
            .any(|l| !l.tentative6.is_empty())
    }

    /// IPv6 addresses that duplicate address detection found in use by
    /// another node, with their links (they are not used).
    pub fn duplicates6(&self) -> Vec<(usize, Ipv6Cidr)> {
        self.core
            .shared
            .latest()
            .links
            .iter()
            .enumerate()
            .flat_map(|(index, l)| l.duplicates6.iter().map(move |&a| (index, a)))
            .collect()
    }

    /// The IPv6 addresses of `link` in use (after duplicate address
    /// detection).
    pub fn addresses6(&self, link: usize) -> Vec<Ipv6Cidr> {
        self.core
            .shared
            .latest()
            .links
            .get(link)
            .map_or_else(Vec::new, |l| l.addresses6.clone())
    }

    /// The neighbour caches' entries, with their links (control path).
    pub fn neighbors(&self) -> Vec<(usize, Ipv4Addr, Option<MacAddr>, NeighborState)> {
        self.core
            .shared
            .latest()
            .links
            .iter()
            .enumerate()
            .flat_map(|(index, l)| {
                l.neighbors
                    .entries()
                    .into_iter()
                    .map(move |(ip, mac, state)| (index, ip, mac, state))
            })
            .collect()
    }
}
