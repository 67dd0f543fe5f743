//! The iperf3 server (`-s`), as a handler on the polling lcore: one test at
//! a time. The control connection's cookie, parameters, stream creation
//! (TCP connections carrying the cookie, or UDP "9876" datagrams answered
//! "6789"), TEST_START, the data phase, TEST_END, the results exchange.
//! A second client gets ACCESS_DENIED; a stream with a wrong cookie too. A
//! client that vanishes, sends a malformed or oversized parameter JSON, or
//! never starts ends its test with a message, and the server serves the next.
//!
//! On several lanes every lane runs a server and listens: the lane that
//! accepts the control connection claims the test and drives it; a data
//! connection is accepted wherever it lands, numbered when its cookie is
//! checked (on the hub's board), and moved by that lane: the driver's own
//! streams by its [`Test`], the others' by their [`Helper`]s
//! ([`crate::lanes`]). UDP tests need one lane: their datagrams would land
//! on lanes that do not drive the test.

use crate::lanes::{Board, Command, Helper, Note};
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

/// How long a client may take over each step of setting up a test, by
/// default (`--setup-timeout`).
pub const SETUP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a running test may go without hearing from the client
/// (iperf3's default).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a new client's connection waits for another lane's ending
/// test to let go before it is told the server is busy.
const ENDING_WAIT: Duration = Duration::from_secs(2);

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
    /// This lane's streams of tests other lanes drive.
    helper: Helper,
    /// Streams numbered ahead of the next one the test takes, with their
    /// addresses (they join in number order).
    arrived: Vec<(Stream, SocketAddr, SocketAddr)>,
    /// A client's control connection that arrived here while another
    /// lane's test was ending, and since when.
    waiting: Option<(ConnId, Instant)>,
    /// The board's number of the test this lane drives.
    board_test: u64,
}

impl Server {
    /// A server on TCP `port` whose UDP streams arrive on `udp_sockets`
    /// (bound to the same port), on the lane of `helper` (lane 0 says it
    /// listens).
    pub fn new(
        port: u16,
        udp_sockets: Vec<SocketId>,
        one_off: bool,
        seed: u64,
        helper: Helper,
    ) -> Server {
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
            helper,
            arrived: Vec::new(),
            waiting: None,
            board_test: 0,
        };
        if server.helper.lane() == 0 {
            server.banner();
        }
        server
    }

    /// Whether this server's process is done (`-1` and the test is over,
    /// on whatever lane it ran).
    pub fn over(&self) -> bool {
        self.finished || self.helper.hub().over.load(Ordering::Acquire)
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
            self.helper.hub().announce(Command::Abort);
            if let Some(control) = self.control {
                ctx.tcp_abort(control);
            }
        } else {
            self.helper.hub().announce(Command::Close);
            if let Some(control) = self.control {
                ctx.tcp_close(control);
            }
        }
        for (conn, _) in self.pending.drain(..) {
            ctx.tcp_abort(conn);
        }
        self.phase = Phase::Idle;
        self.control = None;
        self.test = None;
        self.arrived.clear();
        self.buf.clear();
        self.tests += 1;
        let hub = self.helper.hub();
        hub.forget_notes();
        hub.release();
        if self.one_off {
            self.finished = true;
            hub.over.store(true, Ordering::Release);
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
                        Ok(params) if params.udp && self.helper.hub().lanes() > 1 => {
                            return self.reset(
                                ctx,
                                Some("UDP tests need a server on one lane (--nb-cores 1)".into()),
                            );
                        }
                        Ok(params) => {
                            let mut board = self.helper.hub().board();
                            self.board_test = board.test + 1;
                            *board = Board {
                                test: self.board_test,
                                cookie: params.tcp.then(|| self.cookie.clone()),
                                expected: params.streams(),
                                receivers: receivers(&params),
                                joined: 0,
                                len: params.block_len(),
                                bandwidth: params.bandwidth,
                            };
                            drop(board);
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
                // Not before the other lanes stopped sending: comes back
                // from on_poll.
                Phase::Exchange if !self.helper.hub().all_followed(self.helper.lane()) => return,
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
        self.helper.hub().announce(Command::Close);
        self.send_state(ctx, state::EXCHANGE_RESULTS);
        self.phase = Phase::Exchange;
    }

    fn send_results<P: Port>(&mut self, ctx: &mut LcoreContext<'_, P>, theirs: &Results) {
        let Some(test) = &mut self.test else {
            return;
        };
        test.sync();
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
        self.helper.hub().ending.store(true, Ordering::Release);
    }

    /// Adds `stream` (numbered, between `local` and `remote`) once the
    /// streams numbered before it are in; starts the test once all are.
    fn add_stream<P: Port>(
        &mut self,
        ctx: &mut LcoreContext<'_, P>,
        stream: Stream,
        local: SocketAddr,
        remote: SocketAddr,
    ) {
        self.arrived.push((stream, local, remote));
        let Some(test) = &mut self.test else {
            return;
        };
        while let Some(at) = (self.arrived.iter())
            .position(|(s, _, _)| s.id == crate::stream::stream_id(test.streams.len()))
        {
            let (stream, local, remote) = self.arrived.swap_remove(at);
            test.reporter.say(format!(
                "[{:3}] local {} port {} connected to {} port {}",
                stream.id,
                local.ip(),
                local.port(),
                remote.ip(),
                remote.port()
            ));
            test.streams.push(stream);
        }
        if test.streams.len() == test.params.streams() {
            test.start(ctx.now());
            self.helper.hub().announce(Command::Run);
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
        let joined = self.helper.hub().board().join(&cookie);
        let Some(joined) = joined else {
            let _ = ctx.tcp_send(conn, &[state::ACCESS_DENIED]);
            ctx.tcp_close(conn);
            self.errors.push("a data stream had a wrong cookie".into());
            println!("iperf3: a data connection with a wrong cookie was refused");
            return;
        };
        if self.control.is_some() {
            // This lane drives the test: the stream is the test's.
            // Drain the other lanes' notes first, so earlier numbers are in.
            self.take_notes(ctx);
            if let Some((local, remote)) = ctx.tcp_addresses(conn) {
                let stream = Stream::new(joined.index, joined.sender, Transport::Tcp(conn));
                self.add_stream(ctx, stream, local, remote);
            }
        } else {
            self.helper.adopt(ctx, conn, joined);
        }
    }

    /// `conn` is the control connection of the test this lane now drives.
    fn take_control<P: Port>(&mut self, conn: ConnId, ctx: &mut LcoreContext<'_, P>) {
        self.helper.hub().forget_notes();
        self.control = Some(conn);
        self.phase = Phase::Cookie;
        self.heard = Some(ctx.now());
        if let Some((_, remote)) = ctx.tcp_addresses(conn) {
            println!(
                "Accepted connection from {}, port {}",
                remote.ip(),
                remote.port()
            );
        }
    }

    /// Reads what the client sent on the control connection `conn`.
    fn read_control<P: Port>(&mut self, conn: ConnId, ctx: &mut LcoreContext<'_, P>) {
        self.heard = Some(ctx.now());
        let mut chunk = [0u8; 4096];
        loop {
            match ctx.tcp_recv(conn, &mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if self.buf.len() + n > proto::MAX_RESULTS_JSON + 8 {
                        return self.reset(
                            ctx,
                            Some("the client sent too much on the control connection".into()),
                        );
                    }
                    self.buf.extend_from_slice(&chunk[..n]);
                }
            }
        }
        self.control_bytes(ctx);
        if ctx.tcp_at_eof(conn) && self.control == Some(conn) {
            let expected = matches!(self.phase, Phase::Done);
            let error =
                (!expected).then(|| "the client has unexpectedly closed the connection".to_owned());
            self.reset(ctx, error);
        }
    }

    /// A connection that waited for another lane's test to end becomes
    /// this lane's control connection once that lane let go, or is told
    /// the server is busy if another test started or the wait is too long.
    fn retry_waiting<P: Port>(&mut self, ctx: &mut LcoreContext<'_, P>) {
        let Some((conn, since)) = self.waiting else {
            return;
        };
        let hub = Arc::clone(self.helper.hub());
        if hub.claim(self.helper.lane()) {
            self.waiting = None;
            self.take_control(conn, ctx);
            return self.read_control(conn, ctx);
        }
        let waited = ctx.now().saturating_duration_since(since);
        if !hub.ending.load(Ordering::Acquire) || waited > ENDING_WAIT {
            self.waiting = None;
            let _ = ctx.tcp_send(conn, &[state::ACCESS_DENIED]);
            ctx.tcp_close(conn);
        }
    }

    /// The driver takes the streams other lanes numbered.
    fn take_notes<P: Port>(&mut self, ctx: &mut LcoreContext<'_, P>) {
        while let Some(note) = self.helper.hub().next_note() {
            let Note::Stream {
                test: board_test,
                index,
                local,
                remote,
                link,
            } = note
            else {
                continue;
            };
            // A stream of an earlier test, numbered as that one ended.
            if board_test != self.board_test {
                continue;
            }
            let Some(test) = &self.test else {
                continue;
            };
            if self.phase == Phase::Streams {
                let sender = index >= receivers(&test.params);
                let stream = Stream::elsewhere(index, sender, link);
                self.add_stream(ctx, stream, local, remote);
            }
        }
    }
}

/// How many of a test's first streams the server receives on.
fn receivers(params: &Params) -> usize {
    if params.bidirectional || !params.reverse {
        params.parallel as usize
    } else {
        0
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
                let index = test.streams.len();
                let sender = index >= receivers(&test.params);
                let stream = Stream::new(index, sender, Transport::Udp { socket, peer: src });
                self.add_stream(ctx, stream, dst, src);
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
        if self.helper.on_tcp(conn, event, ctx) {
            return;
        }
        match event {
            TcpEvent::Accepted(_)
                if self.phase == Phase::Idle && self.helper.hub().claim(self.helper.lane()) =>
            {
                self.take_control(conn, ctx);
            }
            TcpEvent::Accepted(_)
                if self.phase == Phase::Streams
                    && self.test.as_ref().is_some_and(|t| t.params.tcp) =>
            {
                self.pending.push((conn, Vec::new()));
            }
            // Another lane drives a test that expects its streams.
            TcpEvent::Accepted(_)
                if self.phase == Phase::Idle && self.helper.hub().board().cookie.is_some() =>
            {
                self.pending.push((conn, Vec::new()));
            }
            // The test being driven is ending (the results went): its
            // lane may not have seen the client's goodbye yet when the next
            // client's connection lands (on any lane). Wait for it.
            TcpEvent::Accepted(_)
                if matches!(self.phase, Phase::Idle | Phase::Done)
                    && self.waiting.is_none()
                    && self.helper.hub().ending.load(Ordering::Acquire) =>
            {
                self.waiting = Some((conn, now));
            }
            TcpEvent::Accepted(_) => {
                // Busy with a test: iperf3 answers ACCESS_DENIED and closes.
                let _ = ctx.tcp_send(conn, &[state::ACCESS_DENIED]);
                ctx.tcp_close(conn);
            }
            TcpEvent::Readable if Some(conn) == self.control => self.read_control(conn, ctx),
            // Read once it is ours.
            TcpEvent::Readable if self.waiting.is_some_and(|(c, _)| c == conn) => {}
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
                if self.waiting.is_some_and(|(c, _)| c == conn) {
                    self.waiting = None;
                }
                if let Some(stream) = self.test.as_mut().and_then(|t| t.stream_of_conn(conn)) {
                    stream.finished = true;
                }
            }
            TcpEvent::Connected => {}
        }
    }

    fn on_poll<P: Port<Buf = B>>(&mut self, ctx: &mut LcoreContext<'_, P>) {
        let now = ctx.now();
        self.helper.on_poll(ctx);
        if matches!(self.phase, Phase::Idle | Phase::Done) {
            self.retry_waiting(ctx);
        }
        if self.phase == Phase::Streams {
            self.take_notes(ctx);
        }
        if self.phase == Phase::Exchange && !self.buf.is_empty() {
            self.control_bytes(ctx);
        }
        if let Some(test) = &mut self.test {
            if self.phase == Phase::Running {
                // Streams on other lanes are heard from here.
                if test.sync() {
                    self.heard = Some(now);
                }
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
