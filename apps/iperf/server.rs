//! The iperf3 server (`-s`), as a handler on the polling lcore: one test at
//! a time. The control connection's cookie, parameters, stream creation
//! (TCP connections carrying the cookie, or UDP "9876" datagrams answered
//! "6789"), TEST_START, the data phase, TEST_END, the results exchange.
//! A second client gets ACCESS_DENIED; a stream with a wrong cookie too. A
//! client that vanishes, sends a malformed or oversized parameter JSON, or
//! never starts ends its test with a message, and the server serves the next.

use crate::proto::{self, state, Params, Results, COOKIE_LEN};
use crate::report::{Reporter, Side};
use crate::stream::{Stream, Transport};
use crate::test::{cpu_percent, cpu_ticks, Test};
use dpstack::stack::iface::{Batch, ConnId, InlineHandler, LcoreContext, TcpEvent};
use dpstack::stack::port::{Buf, Port};
use dpstack::stack::time::Instant;
use dpstack::stack::udp::SocketId;
use std::time::Duration;

/// How long a client may take over each step of setting up a test, by
/// default (`--setup-timeout`).
pub const SETUP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a running test may go without hearing from the client
/// (iperf3's default).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(120);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Idle,
    Cookie,
    Params,
    Streams,
    Running,
    Exchange,
    Done,
}

/// The server.
#[derive(Debug)]
pub struct Server {
    port: u16,
    one_off: bool,
    seed: u64,
    udp_sockets: Vec<SocketId>,
    phase: Phase,
    control: Option<ConnId>,
    buf: Vec<u8>,
    cookie: Vec<u8>,
    /// Data connections still sending their cookie.
    pending: Vec<(ConnId, Vec<u8>)>,
    test: Option<Test>,
    heard: Option<Instant>,
    cpu_start: (u64, u64, std::time::Instant),
    tests: u32,
    /// How long a client may take over each step of the set-up.
    pub setup_timeout: Duration,
    /// `-1`: set once the one test is over.
    pub finished: bool,
    /// Messages about tests that ended badly (kept for tests).
    pub errors: Vec<String>,
}

impl Server {
    /// A server on TCP `port` whose UDP streams arrive on `udp_sockets`
    /// (bound to the same port).
    pub fn new(port: u16, udp_sockets: Vec<SocketId>, one_off: bool, seed: u64) -> Server {
        let server = Server {
            port,
            one_off,
            seed,
            udp_sockets,
            phase: Phase::Idle,
            control: None,
            buf: Vec::new(),
            cookie: Vec::new(),
            pending: Vec::new(),
            test: None,
            heard: None,
            cpu_start: (0, 0, std::time::Instant::now()),
            tests: 0,
            setup_timeout: SETUP_TIMEOUT,
            finished: false,
            errors: Vec::new(),
        };
        server.banner();
        server
    }

    fn banner(&self) {
        let rule = "-----------------------------------------------------------";
        println!(
            "{rule}\nServer listening on {} (test #{})\n{rule}",
            self.port,
            self.tests + 1
        );
    }

    fn send_state<P: Port>(&mut self, ctx: &mut LcoreContext<'_, P>, byte: u8) {
        if let Some(control) = self.control {
            let _ = ctx.tcp_send(control, &[byte]);
        }
    }

    /// Ends the current test (well or not) and waits for the next client.
    fn reset<P: Port>(&mut self, ctx: &mut LcoreContext<'_, P>, error: Option<String>) {
        if let Some(message) = error {
            println!("iperf3: error - {message}");
            self.errors.push(message);
            if let Some(test) = &mut self.test {
                test.abort_streams(ctx);
            }
            if let Some(control) = self.control {
                ctx.tcp_abort(control);
            }
        } else if let Some(control) = self.control {
            ctx.tcp_close(control);
        }
        for (conn, _) in self.pending.drain(..) {
            ctx.tcp_abort(conn);
        }
        self.phase = Phase::Idle;
        self.control = None;
        self.test = None;
        self.buf.clear();
        self.tests += 1;
        if self.one_off {
            self.finished = true;
        } else {
            self.banner();
        }
    }

    fn control_bytes<P: Port>(&mut self, ctx: &mut LcoreContext<'_, P>) {
        loop {
            match self.phase {
                Phase::Cookie if self.buf.len() >= COOKIE_LEN => {
                    self.cookie = self.buf.drain(..COOKIE_LEN).collect();
                    self.send_state(ctx, state::PARAM_EXCHANGE);
                    self.phase = Phase::Params;
                }
                Phase::Params => match proto::take_json(&mut self.buf, proto::MAX_PARAMS_JSON) {
                    Ok(None) => return,
                    Err(e) => return self.reset(ctx, Some(format!("parameters refused: {e}"))),
                    Ok(Some(json)) => match Params::parse(&json) {
                        Err(e) => return self.reset(ctx, Some(format!("parameters refused: {e}"))),
                        Ok(params) => {
                            self.seed = self.seed.rotate_left(7) ^ 0x9e37_79b9;
                            self.test = Some(Test::new(
                                params,
                                Reporter::new(Side::Server, false),
                                self.seed,
                            ));
                            self.cpu_start =
                                (cpu_ticks().0, cpu_ticks().1, std::time::Instant::now());
                            self.send_state(ctx, state::CREATE_STREAMS);
                            self.phase = Phase::Streams;
                        }
                    },
                },
                Phase::Running | Phase::Streams if !self.buf.is_empty() => {
                    let byte = self.buf.remove(0);
                    match byte {
                        state::TEST_END => self.end_test(ctx),
                        state::CLIENT_TERMINATE => {
                            return self.reset(ctx, Some("the client has terminated".into()))
                        }
                        _ => {}
                    }
                }
                Phase::Exchange => match proto::take_json(&mut self.buf, proto::MAX_RESULTS_JSON) {
                    Ok(None) => return,
                    Err(e) => return self.reset(ctx, Some(format!("client results refused: {e}"))),
                    Ok(Some(json)) => match Results::parse(&json) {
                        Err(e) => {
                            return self.reset(ctx, Some(format!("client results refused: {e}")))
                        }
                        Ok(theirs) => self.send_results(ctx, &theirs),
                    },
                },
                Phase::Done if !self.buf.is_empty() => {
                    let byte = self.buf.remove(0);
                    if byte == state::IPERF_DONE {
                        return self.reset(ctx, None);
                    }
                }
                _ => return,
            }
        }
    }

    fn end_test<P: Port>(&mut self, ctx: &mut LcoreContext<'_, P>) {
        if let Some(test) = &mut self.test {
            test.close_streams(ctx);
        }
        self.send_state(ctx, state::EXCHANGE_RESULTS);
        self.phase = Phase::Exchange;
    }

    fn send_results<P: Port>(&mut self, ctx: &mut LcoreContext<'_, P>, theirs: &Results) {
        let Some(test) = &mut self.test else {
            return;
        };
        let ours = test.results(ctx.now(), cpu_percent(&self.cpu_start));
        let json = serde_json::to_vec(&ours).unwrap_or_default();
        let mut frame = Vec::new();
        proto::frame_json(&json, &mut frame);
        frame.push(state::DISPLAY_RESULTS);
        if let Some(control) = self.control {
            // Small: fits the send buffer of a fresh control connection.
            let _ = ctx.tcp_send(control, &frame);
        }
        let params = test.params.clone();
        let streams = test.streams.clone();
        test.reporter
            .summary(&params, &streams, &ours.streams, &theirs.streams);
        self.phase = Phase::Done;
    }

    /// Adds the next stream, in creation order; starts the test once all
    /// are there.
    fn add_stream<P: Port>(
        &mut self,
        ctx: &mut LcoreContext<'_, P>,
        transport: Transport,
        udp_local: Option<std::net::SocketAddr>,
    ) {
        let Some(test) = &mut self.test else {
            return;
        };
        let index = test.streams.len();
        // The first streams the client creates are ours to receive.
        let receivers = if test.params.bidirectional || !test.params.reverse {
            test.params.parallel as usize
        } else {
            0
        };
        let stream = Stream::new(index, index >= receivers, transport);
        let (local, remote) = match (transport, udp_local) {
            (Transport::Tcp(conn), _) => match ctx.tcp_addresses(conn) {
                Some(pair) => pair,
                None => return,
            },
            (Transport::Udp { peer, .. }, Some(local)) => (local, peer),
            (Transport::Udp { .. }, None) => return,
        };
        test.reporter.say(format!(
            "[{:3}] local {} port {} connected to {} port {}",
            stream.id,
            local.ip(),
            local.port(),
            remote.ip(),
            remote.port()
        ));
        test.streams.push(stream);
        if test.streams.len() == test.params.streams() {
            test.start(ctx.now());
            self.send_state(ctx, state::TEST_START);
            self.send_state(ctx, state::TEST_RUNNING);
            self.phase = Phase::Running;
        }
    }

    fn data_cookie<P: Port>(&mut self, conn: ConnId, ctx: &mut LcoreContext<'_, P>) {
        let Some(at) = self.pending.iter().position(|(c, _)| *c == conn) else {
            return;
        };
        let mut chunk = [0u8; COOKIE_LEN];
        let have = self.pending[at].1.len();
        let n = ctx
            .tcp_recv(conn, &mut chunk[..COOKIE_LEN - have])
            .unwrap_or(0);
        self.pending[at].1.extend_from_slice(&chunk[..n]);
        if self.pending[at].1.len() < COOKIE_LEN {
            return;
        }
        let (conn, cookie) = self.pending.remove(at);
        if cookie != self.cookie {
            let _ = ctx.tcp_send(conn, &[state::ACCESS_DENIED]);
            ctx.tcp_close(conn);
            self.errors.push("a data stream had a wrong cookie".into());
            println!("iperf3: a data connection with a wrong cookie was refused");
            return;
        }
        self.add_stream(ctx, Transport::Tcp(conn), None);
    }
}

impl<B: Buf> InlineHandler<B> for Server {
    fn on_datagrams<P: Port<Buf = B>>(
        &mut self,
        socket: SocketId,
        batch: &mut Batch<B>,
        ctx: &mut LcoreContext<'_, P>,
    ) {
        if !self.udp_sockets.contains(&socket) {
            return;
        }
        let now = ctx.now();
        for datagram in batch.iter() {
            let (src, dst) = (datagram.src(), datagram.dst());
            let payload = datagram.payload();
            let Some(test) = &mut self.test else {
                continue;
            };
            if test.on_datagram(socket, src, payload, now) {
                self.heard = Some(now);
                continue;
            }
            if self.phase == Phase::Streams && test.params.udp && payload.len() == 4 {
                let _ = ctx.send_to(socket, src, &proto::UDP_CONNECT_REPLY);
                self.heard = Some(now);
                self.add_stream(ctx, Transport::Udp { socket, peer: src }, Some(dst));
            }
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
            TcpEvent::Accepted(_) if self.phase == Phase::Idle => {
                self.control = Some(conn);
                self.phase = Phase::Cookie;
                self.heard = Some(now);
                if let Some((_, remote)) = ctx.tcp_addresses(conn) {
                    println!(
                        "Accepted connection from {}, port {}",
                        remote.ip(),
                        remote.port()
                    );
                }
            }
            TcpEvent::Accepted(_)
                if self.phase == Phase::Streams
                    && self.test.as_ref().is_some_and(|t| t.params.tcp) =>
            {
                self.pending.push((conn, Vec::new()));
            }
            TcpEvent::Accepted(_) => {
                // Busy with a test: iperf3 answers ACCESS_DENIED and closes.
                let _ = ctx.tcp_send(conn, &[state::ACCESS_DENIED]);
                ctx.tcp_close(conn);
            }
            TcpEvent::Readable if Some(conn) == self.control => {
                self.heard = Some(now);
                let mut chunk = [0u8; 4096];
                loop {
                    match ctx.tcp_recv(conn, &mut chunk) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            if self.buf.len() + n > proto::MAX_RESULTS_JSON + 8 {
                                return self.reset(
                                    ctx,
                                    Some(
                                        "the client sent too much on the control connection".into(),
                                    ),
                                );
                            }
                            self.buf.extend_from_slice(&chunk[..n]);
                        }
                    }
                }
                self.control_bytes(ctx);
                if ctx.tcp_at_eof(conn) && self.control == Some(conn) {
                    let expected = matches!(self.phase, Phase::Done);
                    let error = (!expected)
                        .then(|| "the client has unexpectedly closed the connection".to_owned());
                    self.reset(ctx, error);
                }
            }
            TcpEvent::Readable if self.pending.iter().any(|(c, _)| *c == conn) => {
                self.data_cookie(conn, ctx);
            }
            TcpEvent::Readable => {
                let known = self
                    .test
                    .as_mut()
                    .is_some_and(|t| t.stream_of_conn(conn).is_some());
                if known {
                    self.heard = Some(now);
                    if let Some(test) = &mut self.test {
                        test.on_readable(conn, ctx);
                    }
                } else {
                    // Refused or stale: drain and close.
                    let mut sink = [0u8; 2048];
                    while ctx.tcp_recv(conn, &mut sink).unwrap_or(0) > 0 {}
                    if ctx.tcp_at_eof(conn) {
                        ctx.tcp_close(conn);
                    }
                }
            }
            TcpEvent::Closed(_) if Some(conn) == self.control => {
                let expected = matches!(self.phase, Phase::Done);
                self.control = None;
                let error = (!expected)
                    .then(|| "the client has unexpectedly closed the connection".to_owned());
                self.reset(ctx, error);
            }
            TcpEvent::Closed(_) => {
                self.pending.retain(|(c, _)| *c != conn);
                if let Some(stream) = self.test.as_mut().and_then(|t| t.stream_of_conn(conn)) {
                    stream.finished = true;
                }
            }
            TcpEvent::Connected => {}
        }
    }

    fn on_poll<P: Port<Buf = B>>(&mut self, ctx: &mut LcoreContext<'_, P>) {
        let now = ctx.now();
        if let Some(test) = &mut self.test {
            if self.phase == Phase::Running {
                test.pump(ctx);
                test.tick(ctx);
            }
        }
        let Some(heard) = self.heard else {
            return;
        };
        let quiet = now.saturating_duration_since(heard);
        let stalled = match self.phase {
            Phase::Cookie | Phase::Params | Phase::Streams => quiet > self.setup_timeout,
            // A test where we only send hears nothing until TEST_END.
            Phase::Running => {
                quiet > IDLE_TIMEOUT
                    && self
                        .test
                        .as_ref()
                        .is_some_and(|t| t.streams.iter().any(|s| !s.sender))
            }
            Phase::Exchange | Phase::Done => quiet > self.setup_timeout,
            Phase::Idle => false,
        };
        if stalled {
            self.heard = None;
            let waiting = match self.phase {
                Phase::Cookie => "its cookie",
                Phase::Params => "its parameters",
                Phase::Streams => "its data streams",
                Phase::Exchange => "its results",
                _ => "the end of the test",
            };
            let what = if self.phase == Phase::Running {
                format!("no data from the client for {} s", IDLE_TIMEOUT.as_secs())
            } else {
                format!(
                    "the client did not go on within {} s (waiting for {waiting})",
                    self.setup_timeout.as_secs()
                )
            };
            self.reset(ctx, Some(what));
        }
    }
}
