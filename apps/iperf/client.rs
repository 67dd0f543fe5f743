//! The iperf3 client (`-c`), as a handler on the polling lcore: connects
//! the control connection, sends the cookie and the parameters, creates the
//! streams one after another (as iperf3 does, so both ends number them
//! alike), runs the test, ends it on time, bytes or blocks, exchanges
//! results and prints the summary (or the `-J` document). Every way a test
//! can fail ends in [`Client::outcome`] with iperf3's message.
//!
//! On several lanes the client drives the test from lane 0 (the control
//! connection and the reports stay there) and stream i is opened by lane
//! i % N, which moves its bytes ([`crate::lanes`]).

use crate::json;
use crate::lanes::{Command, Hub, LaneStream, Note, Order};
use crate::proto::{self, state, Params, Results, COOKIE_LEN};
use crate::report::{Reporter, Side};
use crate::stream::{Stream, Transport};
use crate::test::{cpu_percent, cpu_ticks, Test};
use dpstack::stack::iface::{Batch, ConnId, InlineHandler, LcoreContext, TcpEvent};
use dpstack::stack::port::{Buf, Port};
use dpstack::stack::time::Instant;
use dpstack::stack::udp::SocketId;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// How long the server may take to answer each step of the set-up.
pub const SETUP_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Start,
    Connecting,
    Setup,
    Running,
    Ending,
    Results,
    Done,
}

/// The client.
#[derive(Debug)]
pub struct Client {
    server: SocketAddr,
    json: bool,
    cookie: [u8; COOKIE_LEN],
    phase: Phase,
    control: Option<ConnId>,
    buf: Vec<u8>,
    /// The test (its parameters are what we ask for).
    pub test: Test,
    udp_sockets: Vec<SocketId>,
    /// The stream being created: its connection, or its socket and when
    /// its connect datagram went.
    creating: Option<(Transport, Instant, u32)>,
    heard: Option<Instant>,
    cpu_start: (u64, u64, std::time::Instant),
    /// How the test ended (`None` while it runs).
    pub outcome: Option<Result<(), String>>,
    /// The server's results, once exchanged.
    pub server_results: Option<Results>,
    local_results: Option<Results>,
    connected: Vec<serde_json::Value>,
    /// The control connection's MSS, once connected.
    control_mss: u16,
    /// Each connection's send and receive buffer sizes (for `-J`).
    buffers: (usize, usize),
    /// The lanes' meeting point.
    hub: Arc<Hub>,
}

impl Client {
    /// A client for `server` with `params`; UDP streams use `udp_sockets`
    /// (one per stream, bound to ephemeral ports).
    pub fn new(
        server: SocketAddr,
        params: Params,
        udp_sockets: Vec<SocketId>,
        json: bool,
        seed: u64,
    ) -> Client {
        Client {
            server,
            json,
            cookie: proto::make_cookie(seed),
            phase: Phase::Start,
            control: None,
            buf: Vec::new(),
            test: Test::new(
                params,
                Reporter::new(Side::Client, json),
                seed.rotate_left(17),
            ),
            udp_sockets,
            creating: None,
            heard: None,
            cpu_start: (cpu_ticks().0, cpu_ticks().1, std::time::Instant::now()),
            outcome: None,
            server_results: None,
            local_results: None,
            connected: Vec::new(),
            control_mss: 0,
            buffers: (0, 0),
            hub: Hub::new(1),
        }
    }

    /// Spreads the streams over the lanes of `hub` (stream i on lane i % N).
    pub fn on_lanes(mut self, hub: Arc<Hub>) -> Client {
        self.hub = hub;
        self
    }

    /// The test is over, one way or the other: every lane may stop.
    fn over(&mut self, outcome: Result<(), String>) {
        self.phase = Phase::Done;
        self.outcome = Some(outcome);
        self.hub.over.store(true, Ordering::Release);
    }

    fn fail<P: Port>(&mut self, ctx: &mut LcoreContext<'_, P>, message: String) {
        if self.outcome.is_some() {
            return;
        }
        self.test.abort_streams(ctx);
        self.hub.announce(Command::Abort);
        if let Some(control) = self.control.take() {
            ctx.tcp_abort(control);
        }
        self.over(Err(message));
    }

    fn send<P: Port>(&mut self, ctx: &mut LcoreContext<'_, P>, bytes: &[u8]) {
        if let Some(control) = self.control {
            let _ = ctx.tcp_send(control, bytes);
        }
    }

    /// Whether stream `index` is one we send on.
    fn sends(&self, index: usize) -> bool {
        let p = &self.test.params;
        if p.bidirectional {
            index < p.parallel as usize
        } else {
            !p.reverse
        }
    }

    fn create_next<P: Port>(&mut self, ctx: &mut LcoreContext<'_, P>) {
        let index = self.test.streams.len();
        if index >= self.test.params.streams() {
            return;
        }
        let now = ctx.now();
        let lane = index % self.hub.lanes();
        if lane != 0 && self.test.params.tcp {
            let p = &self.test.params;
            self.hub.order(
                lane,
                Order::Connect {
                    index,
                    server: self.server,
                    cookie: self.cookie,
                    sender: self.sends(index),
                    len: p.block_len(),
                    bandwidth: p.bandwidth,
                    link: Arc::new(LaneStream::default()),
                },
            );
            self.creating = Some((Transport::Elsewhere, now, 1));
        } else if self.test.params.udp {
            let Some(&socket) = self.udp_sockets.get(index) else {
                return self.fail(ctx, "no UDP socket for a stream".into());
            };
            let _ = ctx.send_to(socket, self.server, &proto::UDP_CONNECT_MSG);
            self.creating = Some((
                Transport::Udp {
                    socket,
                    peer: self.server,
                },
                now,
                1,
            ));
        } else {
            match ctx.tcp_connect(self.server) {
                Ok(conn) => self.creating = Some((Transport::Tcp(conn), now, 1)),
                Err(e) => self.fail(ctx, format!("unable to connect stream: {e}")),
            }
        }
    }

    fn stream_ready<P: Port>(
        &mut self,
        ctx: &mut LcoreContext<'_, P>,
        transport: Transport,
        elsewhere: Option<(SocketAddr, Arc<LaneStream>)>,
    ) {
        self.creating = None;
        let index = self.test.streams.len();
        let sender = self.sends(index);
        let (stream, local) = match (transport, elsewhere) {
            (_, Some((local, link))) => (Stream::elsewhere(index, sender, link), Some(local)),
            (Transport::Tcp(conn), None) => (
                Stream::new(index, sender, transport),
                ctx.tcp_addresses(conn).map(|(l, _)| l),
            ),
            (_, None) => (Stream::new(index, sender, transport), None),
        };
        let local = local.unwrap_or_else(|| SocketAddr::new(self.server.ip(), 0));
        self.connected.push(serde_json::json!({
            "socket": stream.id, "local_host": local.ip().to_string(), "local_port": local.port(),
            "remote_host": self.server.ip().to_string(), "remote_port": self.server.port(),
        }));
        self.test.reporter.say(format!(
            "[{:3}] local {} port {} connected to {} port {}",
            stream.id,
            local.ip(),
            local.port(),
            self.server.ip(),
            self.server.port()
        ));
        self.test.streams.push(stream);
        self.create_next(ctx);
    }

    fn control_bytes<P: Port>(&mut self, ctx: &mut LcoreContext<'_, P>) {
        while !self.buf.is_empty() && self.outcome.is_none() {
            if self.phase == Phase::Results {
                match proto::take_json(&mut self.buf, proto::MAX_RESULTS_JSON) {
                    Ok(None) => return,
                    Err(e) => return self.fail(ctx, format!("server results refused: {e}")),
                    Ok(Some(json)) => match Results::parse(&json) {
                        Ok(results) => {
                            self.server_results = Some(results);
                            self.phase = Phase::Ending;
                            continue;
                        }
                        Err(e) => return self.fail(ctx, format!("server results refused: {e}")),
                    },
                }
            }
            let byte = self.buf[0];
            match byte {
                state::PARAM_EXCHANGE => {
                    let json = serde_json::to_vec(&self.test.params).unwrap_or_default();
                    let mut frame = Vec::new();
                    proto::frame_json(&json, &mut frame);
                    self.send(ctx, &frame);
                }
                state::CREATE_STREAMS => self.create_next(ctx),
                state::TEST_START => {
                    self.test.start(ctx.now());
                    self.hub.announce(Command::Run);
                    self.phase = Phase::Running;
                }
                state::TEST_RUNNING => {}
                // Not before the other lanes stopped sending: comes back
                // from on_poll.
                state::EXCHANGE_RESULTS if !self.hub.all_followed(0) => return,
                state::EXCHANGE_RESULTS => {
                    self.test.sync();
                    let ours = self.test.results(ctx.now(), cpu_percent(&self.cpu_start));
                    let json = serde_json::to_vec(&ours).unwrap_or_default();
                    let mut frame = Vec::new();
                    proto::frame_json(&json, &mut frame);
                    self.send(ctx, &frame);
                    self.local_results = Some(ours);
                    self.phase = Phase::Results;
                }
                state::DISPLAY_RESULTS => {
                    self.buf.remove(0);
                    return self.finish(ctx);
                }
                state::ACCESS_DENIED => {
                    return self.fail(
                        ctx,
                        "the server is busy running a test. try again later".into(),
                    )
                }
                state::SERVER_ERROR => {
                    let Some(codes) = self.buf.get(1..9) else {
                        return;
                    };
                    let i_errno = i32::from_be_bytes([codes[0], codes[1], codes[2], codes[3]]);
                    let errno = i32::from_be_bytes([codes[4], codes[5], codes[6], codes[7]]);
                    return self.fail(
                        ctx,
                        format!("the server reported an error (i_errno {i_errno}, errno {errno})"),
                    );
                }
                state::SERVER_TERMINATE => {
                    return self.fail(ctx, "the server has terminated".into());
                }
                other => {
                    return self.fail(
                        ctx,
                        format!("unexpected state byte {other} from the server"),
                    )
                }
            }
            self.buf.remove(0);
        }
    }

    fn finish<P: Port>(&mut self, ctx: &mut LcoreContext<'_, P>) {
        self.send(ctx, &[state::IPERF_DONE]);
        if let Some(control) = self.control.take() {
            ctx.tcp_close(control);
        }
        self.hub.announce(Command::Close);
        self.test.sync();
        let ours = self.local_results.clone().unwrap_or_default();
        let theirs = self.server_results.clone().unwrap_or_default();
        let params = self.test.params.clone();
        let streams = self.test.streams.clone();
        self.test
            .reporter
            .summary(&params, &streams, &ours.streams, &theirs.streams);
        if self.json {
            let doc = json::document(self, &ours, &theirs);
            println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
        } else {
            println!("\niperf Done.");
        }
        self.over(Ok(()));
    }

    /// Records each connection's send and receive buffer sizes (for `-J`).
    pub fn with_buffers(mut self, send: usize, recv: usize) -> Client {
        self.buffers = (send, recv);
        self
    }

    /// The control connection's MSS (0 before it connected).
    pub fn control_mss(&self) -> u16 {
        self.control_mss
    }

    /// Each connection's send and receive buffer sizes.
    pub fn buffers(&self) -> (usize, usize) {
        self.buffers
    }

    /// The `start.connected` entries, for `-J`.
    pub fn connected(&self) -> &[serde_json::Value] {
        &self.connected
    }

    /// The server's address.
    pub fn server(&self) -> SocketAddr {
        self.server
    }

    /// The cookie, as text.
    pub fn cookie(&self) -> String {
        String::from_utf8_lossy(&self.cookie[..COOKIE_LEN - 1]).into_owned()
    }

    fn receive_done(&self) -> bool {
        let p = &self.test.params;
        let received: u64 = self
            .test
            .streams
            .iter()
            .filter(|s| !s.sender)
            .map(|s| s.now.bytes)
            .sum();
        p.reverse && !p.bidirectional && p.num > 0 && received >= p.num
    }
}

impl<B: Buf> InlineHandler<B> for Client {
    fn on_datagrams<P: Port<Buf = B>>(
        &mut self,
        socket: SocketId,
        batch: &mut Batch<B>,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        let now = ctx.now();
        for datagram in batch.iter() {
            let (src, payload) = (datagram.src(), datagram.payload());
            if let Some((Transport::Udp { socket: s, peer }, _, _)) = self.creating {
                if s == socket && payload.len() == 4 {
                    let transport = Transport::Udp { socket, peer };
                    self.heard = Some(now);
                    self.stream_ready(ctx, transport, None);
                    continue;
                }
            }
            let _ = self.test.on_datagram(socket, src, payload, now);
        }
    }

    fn on_tcp<P: Port<Buf = B>>(
        &mut self,
        conn: ConnId,
        event: TcpEvent,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        let now = ctx.now();
        match event {
            TcpEvent::Connected if Some(conn) == self.control => {
                self.heard = Some(now);
                self.control_mss = ctx.tcp_info(conn).map_or(0, |i| i.mss);
                let cookie = self.cookie;
                self.send(ctx, &cookie);
                self.phase = Phase::Setup;
            }
            TcpEvent::Connected => {
                if let Some((Transport::Tcp(c), _, _)) = self.creating {
                    if c == conn {
                        let _ = ctx.tcp_send(conn, &self.cookie);
                        self.stream_ready(ctx, Transport::Tcp(conn), None);
                    }
                }
            }
            TcpEvent::Readable if Some(conn) == self.control => {
                self.heard = Some(now);
                let mut chunk = [0u8; 4096];
                loop {
                    match ctx.tcp_recv(conn, &mut chunk) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                    }
                }
                self.control_bytes(ctx);
                if self.outcome.is_none() && ctx.tcp_at_eof(conn) {
                    self.fail(
                        ctx,
                        "the server has unexpectedly closed the connection".into(),
                    );
                }
            }
            TcpEvent::Readable => {
                self.test.on_readable(conn, ctx);
            }
            TcpEvent::Closed(error) if Some(conn) == self.control => {
                self.control = None;
                let why = match error {
                    Some(e) => format!("control connection: {e}"),
                    None => "the server has unexpectedly closed the connection".into(),
                };
                self.fail(ctx, why);
            }
            TcpEvent::Closed(error) => {
                if let Some((Transport::Tcp(c), _, _)) = self.creating {
                    if c == conn {
                        let why = error.map_or("closed".to_owned(), |e| e.to_string());
                        return self.fail(ctx, format!("unable to connect stream: {why}"));
                    }
                }
                if let Some(stream) = self.test.stream_of_conn(conn) {
                    stream.finished = true;
                }
            }
            TcpEvent::Accepted(_) => ctx.tcp_abort(conn),
        }
    }

    fn on_poll<P: Port<Buf = B>>(&mut self, ctx: &mut LcoreContext<'_, P>) {
        let now = ctx.now();
        match self.phase {
            Phase::Start => {
                self.phase = Phase::Connecting;
                self.heard = Some(now);
                match ctx.tcp_connect(self.server) {
                    Ok(conn) => self.control = Some(conn),
                    Err(e) => self.fail(ctx, format!("unable to connect to server: {e}")),
                }
                return;
            }
            Phase::Running => {
                self.test.sync();
                self.test.pump(ctx);
                self.test.tick(ctx);
                if self.test.time_is_up(now) || self.test.limit_reached() || self.receive_done() {
                    self.test.sending = false;
                    self.hub.announce(Command::Stop);
                    self.send(ctx, &[state::TEST_END]);
                    self.phase = Phase::Ending;
                    self.heard = Some(now);
                }
                return;
            }
            Phase::Done => return,
            Phase::Ending if !self.buf.is_empty() => self.control_bytes(ctx),
            _ => {}
        }
        // Streams other lanes opened.
        while let Some(note) = self.hub.next_note() {
            match note {
                Note::Stream { local, link, .. } => {
                    if matches!(self.creating, Some((Transport::Elsewhere, _, _))) {
                        self.heard = Some(now);
                        self.stream_ready(ctx, Transport::Elsewhere, Some((local, link)));
                    }
                }
                Note::Failed(why) => return self.fail(ctx, why),
            }
        }
        // Set-up steps: resend a UDP connect datagram each second (it may be
        // lost), give up on a silent server.
        if let Some((Transport::Udp { socket, peer }, sent, tries)) = self.creating {
            if now.saturating_duration_since(sent) >= Duration::from_secs(1) && tries < 5 {
                let _ = ctx.send_to(socket, peer, &proto::UDP_CONNECT_MSG);
                self.creating = Some((Transport::Udp { socket, peer }, now, tries + 1));
            }
        }
        if self
            .heard
            .is_some_and(|h| now.saturating_duration_since(h) > SETUP_TIMEOUT)
        {
            let what = match self.phase {
                Phase::Connecting => "unable to connect to server: no answer",
                Phase::Ending | Phase::Results => "the server did not send its results",
                _ => "the server did not start the test",
            };
            self.fail(ctx, format!("{what} within {} s", SETUP_TIMEOUT.as_secs()));
        }
    }
}
