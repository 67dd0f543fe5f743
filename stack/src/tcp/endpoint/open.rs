//! Opening connections: listeners (with SO_REUSEPORT groups) and active
//! opens, which take a port from the connection table's search (preferring,
//! when the port's RSS is known, one whose replies reach this lcore).

use super::*;

impl<B: Buf, H: Copy> Endpoint<B, H> {
    /// Starts listening on `local` (port and address; an unspecified address
    /// takes every address, `[::]` both families unless `v6_only`, an
    /// IPv4-mapped one that IPv4 address). With `reuse_port`, several
    /// listeners may share `local` (SO_REUSEPORT): each connection goes to one
    /// of them by a keyed hash of its 4-tuple. As in Linux, a listener is
    /// refused if it would hear some of what another on its port hears
    /// (`0.0.0.0` against an address of ours or against a dual-stack `[::]`),
    /// unless both set `reuse_port`; `is_ours` says which addresses are
    /// ours. Returns the listener's index.
    pub(crate) fn listen(
        &mut self,
        is_ours: impl Fn(IpAddr) -> bool,
        local: SocketAddr,
        backlog: usize,
        options: ListenOptions,
    ) -> Result<usize, ListenError> {
        let canonical = local.ip().to_canonical();
        let mapped = local.is_ipv6() && canonical.is_ipv4();
        if mapped && options.v6_only {
            // Linux: EINVAL; a v6-only listener hears no IPv4.
            return Err(ListenError::AddrNotAvailable);
        }
        if !canonical.is_unspecified() && !is_ours(canonical) {
            return Err(ListenError::AddrNotAvailable);
        }
        let hears = listener_views(local, options.v6_only);
        let collides = |l: &Listener<B>| {
            l.backlog > 0
                && l.local.port() == local.port()
                && overlap(listener_views(l.local, l.v6_only), hears)
                && !(options.reuse_port && l.reuse_port)
        };
        if self.listeners.iter().any(collides) {
            return Err(ListenError::AddrInUse);
        }
        let listener = Listener {
            local,
            accept: None,
            backlog: backlog.max(1),
            pending: 0,
            cookie_sent: None,
            reuse_port: options.reuse_port,
            v6_only: options.v6_only,
            generation: 0,
        };
        // A closed listener's place is taken once no handshake it started is
        // still pending (indexes stay stable for those).
        let free = self
            .listeners
            .iter()
            .position(|l| l.backlog == 0 && l.pending == 0);
        match free {
            Some(at) => {
                let generation = self.listeners[at].generation.wrapping_add(1);
                self.listeners[at] = Listener {
                    generation,
                    ..listener
                };
                Ok(at)
            }
            None => {
                self.listeners.push(listener);
                Ok(self.listeners.len() - 1)
            }
        }
    }

    /// The id of the listener at `at`.
    pub(crate) fn listener_id(&self, at: usize) -> ListenerId {
        self.listeners[at].id(at)
    }

    /// Closes inline listener `id` (connections it made, and handshakes in
    /// progress, carry on). False if it was already closed.
    pub(crate) fn unlisten_inline(&mut self, id: ListenerId) -> bool {
        let at = id.index as usize;
        match self.listeners.get_mut(at) {
            Some(l) if l.id(at) == id && l.backlog > 0 && l.accept.is_none() => {
                l.local = SocketAddr::new(l.local.ip(), 0);
                l.backlog = 0;
                true
            }
            _ => false,
        }
    }

    /// Opens a connection to `remote` (inline): the route gives the source
    /// address, the table a free port.
    pub(crate) fn connect<O: SegmentOut<Buf = B, Hop = H>>(
        &mut self,
        ip: &mut O,
        now: Instant,
        remote: SocketAddr,
    ) -> Result<ConnId, TcpError> {
        self.connect_with(ip, now, remote, None)
    }

    /// [`Endpoint::connect`], for an application thread's `stream` in queue mode.
    pub(super) fn connect_with<O: SegmentOut<Buf = B, Hop = H>>(
        &mut self,
        ip: &mut O,
        now: Instant,
        remote: SocketAddr,
        stream: Option<Arc<StreamQueue<B>>>,
    ) -> Result<ConnId, TcpError> {
        if self.at_connection_limit() {
            ip.counters().count(Stat::TcpConnLimitReached);
            return Err(TcpError::ConnectionLimit);
        }
        let scope = match remote {
            SocketAddr::V6(v6) => v6.scope_id(),
            SocketAddr::V4(_) => 0,
        };
        // The source comes from the route's link (the route's own source).
        let unspecified = match remote {
            SocketAddr::V4(_) => IpAddr::V4(core::net::Ipv4Addr::UNSPECIFIED),
            SocketAddr::V6(_) => IpAddr::V6(core::net::Ipv6Addr::UNSPECIFIED),
        };
        let route = ip.route(unspecified, remote.ip(), scope);
        let local_ip = route.ok_or(TcpError::NotConnected)?.source;
        let placeholder = ConnRef::new(
            self.owner,
            ConnId {
                index: u32::MAX,
                generation: 0,
            },
            false,
        );
        let search = PortSearch {
            local_ip,
            remote,
            range: self.ephemeral,
            mode: ConnectMode::RcuFirst,
        };
        let table = Arc::clone(&self.table);
        let tcp = &*self;
        // With a known RSS, ports whose replies reach this lcore first.
        let returns = tcp.config.rss.as_ref().map(|r| r.towards(local_ip, remote));
        let Placed {
            port,
            replaced,
            fits,
        } = table
            .connect_placed(
                search,
                placeholder,
                // Another pipeline's TIME-WAIT entry holds its port: only the
                // owner knows whether it may be reused.
                |v| v.in_time_wait() && v.owner() == tcp.owner && tcp.may_reuse(v.id(), now),
                |port| tcp.listens_on(port),
                |port| returns.as_ref().is_none_or(|r| r.fits(port)),
            )
            .map_err(|_| TcpError::AddressNotAvailable)?;
        if returns.is_some() {
            ip.counters().count(if fits {
                Stat::TcpConnectRssPlaced
            } else {
                Stat::TcpConnectRssMissed
            });
        }
        if let Some(old) = replaced {
            // A TIME-WAIT connection's 4-tuple was reused: it ends now.
            self.free_slot(old.id());
        }
        let tuple = FourTuple {
            local: SocketAddr::new(local_ip, port),
            remote,
        };
        let iss = self.isn(&tuple, now);
        let mss = mss_for(ip, &tuple, scope);
        let ts_offset = self.ts_offset(&tuple);
        let (local_port, remote_port) = (port, remote.port());
        let config = &self.config;
        let conn = Connection::connect(config, local_port, remote_port, iss, mss, ts_offset);
        let id = self.add(Slot {
            conn,
            stream: stream.clone(),
            tx_partial: None,
            hop: None,
            tuple,
            listener: None,
            armed: None,
            quiet: true,
            scope,
            active: true,
            announced: false,
            marked_time_wait: false,
            write_blocked: false,
            deferred: false,
            paced: false,
        });
        self.table
            .update(&tuple, ConnRef::new(self.owner, id, false));
        if let Some(stream) = &stream {
            *stream.id.lock().unwrap_or_else(|e| e.into_inner()) = Some(id);
        }
        ip.counters().count(Stat::TcpActiveOpens);
        self.after_activity(ip, now, id);
        Ok(id)
    }
}

/// What a listener on `local` hears (see [`crate::bind_views`]).
pub(super) fn listener_views(local: SocketAddr, v6_only: bool) -> Views {
    views(key_of(local.ip()), local.is_ipv6(), v6_only)
}
