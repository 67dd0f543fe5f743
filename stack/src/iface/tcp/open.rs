//! Opening connections: listeners (with SO_REUSEPORT groups) and active
//! opens, which take a port from the connection table's search.

use super::*;

/// Starts listening on `local` (port and address; an unspecified address
/// takes every address, `[::]` both families unless `v6_only`, an
/// IPv4-mapped one that IPv4 address). With `reuse_port`, several
/// listeners may share `local` (SO_REUSEPORT): each connection goes to one
/// of them by a keyed hash of its 4-tuple. As in Linux, a listener is
/// refused if it would hear some of what another on its port hears
/// (`0.0.0.0` against an address of ours or against a dual-stack `[::]`),
/// unless both set `reuse_port`. Returns the listener's index.
pub(crate) fn listen<B: Buf>(
    core: &mut Core<B>,
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
    if !canonical.is_unspecified()
        && !crate::iface::is_ours(&core.shared.local, &core.shared.links, canonical)
    {
        return Err(ListenError::AddrNotAvailable);
    }
    let hears = listener_views(local, options.v6_only);
    let collides = |l: &Listener<B>| {
        l.backlog > 0
            && l.local.port() == local.port()
            && overlap(listener_views(l.local, l.v6_only), hears)
            && !(options.reuse_port && l.reuse_port)
    };
    if core.tcp.listeners.iter().any(collides) {
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
    let free = core
        .tcp
        .listeners
        .iter()
        .position(|l| l.backlog == 0 && l.pending == 0);
    match free {
        Some(at) => {
            let generation = core.tcp.listeners[at].generation.wrapping_add(1);
            core.tcp.listeners[at] = Listener {
                generation,
                ..listener
            };
            Ok(at)
        }
        None => {
            core.tcp.listeners.push(listener);
            Ok(core.tcp.listeners.len() - 1)
        }
    }
}

/// What a listener on `local` hears (see [`crate::bind_views`]).
pub(super) fn listener_views(local: SocketAddr, v6_only: bool) -> Views {
    views(key_of(local.ip()), local.is_ipv6(), v6_only)
}

/// The id of the listener at `at`.
pub(crate) fn listener_id<B: Buf>(core: &Core<B>, at: usize) -> ListenerId {
    core.tcp.listeners[at].id(at)
}

/// Closes inline listener `id` (connections it made, and handshakes in
/// progress, carry on). False if it was already closed.
pub(crate) fn unlisten_inline<B: Buf>(core: &mut Core<B>, id: ListenerId) -> bool {
    let at = id.index as usize;
    match core.tcp.listeners.get_mut(at) {
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
pub(crate) fn connect<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    remote: SocketAddr,
) -> Result<ConnId, TcpError> {
    connect_with(core, out, now, remote, None)
}

/// [`connect`], for an application thread's `stream` in queue mode.
pub(super) fn connect_with<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    remote: SocketAddr,
    stream: Option<Arc<StreamQueue<P::Buf>>>,
) -> Result<ConnId, TcpError> {
    if core.tcp.at_connection_limit() {
        core.lcore.counters.count(Stat::TcpConnLimitReached);
        return Err(TcpError::ConnectionLimit);
    }
    let scope = match remote {
        SocketAddr::V6(v6) => v6.scope_id(),
        SocketAddr::V4(_) => 0,
    };
    let local_ip = match remote.ip() {
        IpAddr::V4(dst) => IpAddr::V4(
            core.shared
                .ip
                .v4
                .routes
                .next_hop(dst)
                .ok_or(TcpError::NotConnected)?
                .source,
        ),
        IpAddr::V6(dst) => {
            let path = crate::iface::tx6::path6(
                core,
                core::net::Ipv6Addr::UNSPECIFIED,
                &core::net::SocketAddrV6::new(dst, 0, 0, scope),
            )
            .ok_or(TcpError::NotConnected)?;
            IpAddr::V6(path.source)
        }
    };
    let placeholder = ConnRef::new(
        ConnId {
            index: u32::MAX,
            generation: 0,
        },
        false,
    );
    let range = core.tcp.ephemeral;
    let table = Arc::clone(&core.tcp.table);
    let tcp = &core.tcp;
    let (port, replaced) = table
        .connect(
            local_ip,
            remote,
            range,
            placeholder,
            ConnectMode::RcuFirst,
            |v| v.in_time_wait() && tcp.may_reuse(v.id(), now),
            |port| tcp.listens_on(port),
        )
        .map_err(|_| TcpError::AddressNotAvailable)?;
    if let Some(old) = replaced {
        // A TIME-WAIT connection's 4-tuple was reused: it ends now.
        core.tcp.free_slot(old.id());
    }
    let tuple = FourTuple {
        local: SocketAddr::new(local_ip, port),
        remote,
    };
    let iss = core.tcp.isn(&tuple, now);
    let mss = mss_for(core, &tuple, scope);
    let ts_offset = core.tcp.ts_offset(&tuple);
    let (local_port, remote_port) = (port, remote.port());
    let config = &core.tcp.config;
    let conn = Connection::connect(config, local_port, remote_port, iss, mss, ts_offset);
    if let Some(stream) = &stream {
        // Its id is set below, before anything can need it.
        let _ = stream;
    }
    let id = core.tcp.add(Slot {
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
    core.tcp.table.update(&tuple, ConnRef::new(id, false));
    if let Some(stream) = &stream {
        *stream.id.lock().unwrap_or_else(|e| e.into_inner()) = Some(id);
    }
    core.lcore.counters.count(Stat::TcpActiveOpens);
    after_activity(core, out, now, id);
    Ok(id)
}
