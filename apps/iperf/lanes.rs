//! A test spread over several lanes (`--nb-cores N`): one lane drives the
//! test (the client's lane 0; on the server, the lane that accepted the
//! control connection), and every lane runs the data streams it owns.
//!
//! A TCP connection can only be used on the lane that owns it, so the
//! driver keeps the test's [`crate::test::Test`] (the iperf3 state, the
//! reports, the results) and each other lane's [`Helper`] moves the bytes
//! of its own streams. They meet in the [`Hub`]:
//! - per stream, a [`LaneStream`] of counters the owning lane stores once
//!   per burst and the driver reads once per poll (one writer each: no
//!   lock, no shared read-modify-write);
//! - the test's phase, one atomic word ([`Command`] and a serial) the
//!   driver stores and every lane loads once per poll;
//! - orders to a lane (the client's "open stream i") and notes to the
//!   driver (connected, joined, failed) on channels, read once per poll;
//! - the server's registration board (which lane drives, the cookie, how
//!   many streams are expected and which are the receivers), behind a lock
//!   taken only when a data connection sends its cookie or a test is set
//!   up or ends.
//!
//! Invariants:
//! - results are taken only once every other lane followed the last
//!   command (its counters stored before it says so), so no stream of
//!   another lane moves bytes the results miss;
//! - a server stream is numbered when its cookie is checked, under the
//!   board's lock, so numbers follow the order cookies arrive in, on
//!   whatever lane; the driver adds streams to the test in number order,
//!   and ignores notes about an earlier test's streams;
//! - at most one lane drives a server test at a time ([`Hub::claim`]).
//!
//! With one lane the hub is there but idle: the helper owns nothing, and
//! the per-packet work is two checks of empty lists per TCP event.
//! `-n`/`-k` limits are checked by the driver once per poll, so another
//! lane's sender may overshoot them by what it sends before it sees the
//! Stop (at most its send buffer).

use crate::proto::COOKIE_LEN;
use crossbeam_channel::{Receiver, Sender};
use dpstack::stack::iface::{ConnId, LcoreContext, TcpEvent};
use dpstack::stack::port::Port;
use dpstack::stack::time::Instant;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// No lane drives a test.
const NO_DRIVER: usize = usize::MAX;

/// One stream's counters, stored by the lane that owns it.
#[derive(Debug, Default)]
pub struct LaneStream {
    /// Bytes sent or received.
    pub bytes: AtomicU64,
    /// Blocks written.
    pub blocks: AtomicU64,
    /// Retransmitted segments.
    pub retransmits: AtomicU64,
    /// The congestion window, bytes.
    pub cwnd: AtomicU32,
    /// The peer closed it, or it failed.
    pub finished: AtomicBool,
}

/// The test's phase as the driver announces it to the lanes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// Data may flow: senders send (receivers count whatever arrives).
    Run = 1,
    /// Senders stop (TEST_END).
    Stop = 2,
    /// The test is over: close the streams.
    Close = 3,
    /// The test failed: abort the streams.
    Abort = 4,
}

/// What the driver asks of another lane.
#[derive(Debug)]
pub enum Order {
    /// Client: open stream `index` to `server`, send `cookie` on it, then
    /// send (`sender`) or receive `len`-byte blocks at `bandwidth` bits/s
    /// (0: unlimited).
    Connect {
        /// The stream's position in the test.
        index: usize,
        /// The server.
        server: SocketAddr,
        /// The test's cookie.
        cookie: [u8; COOKIE_LEN],
        /// We send on it.
        sender: bool,
        /// Block size.
        len: usize,
        /// Bits per second, 0 unlimited.
        bandwidth: u64,
        /// Its counters.
        link: Arc<LaneStream>,
    },
}

/// What a lane tells the driver.
#[derive(Debug)]
pub enum Note {
    /// Stream `index` is connected (client) or joined the test (server),
    /// between `local` and `remote`.
    Stream {
        /// The board's test it joined (server; 0 for the client's).
        test: u64,
        /// The stream's position in the test.
        index: usize,
        /// Our address.
        local: SocketAddr,
        /// The peer's.
        remote: SocketAddr,
        /// Its counters.
        link: Arc<LaneStream>,
    },
    /// A stream could not be opened.
    Failed(String),
}

/// The server's registration of data streams for the current test.
#[derive(Debug, Default)]
pub struct Board {
    /// The test's number (each test the driver sets up takes the next),
    /// so a note about a stream of an earlier test is told apart.
    pub test: u64,
    /// The test's cookie while streams are expected.
    pub cookie: Option<Vec<u8>>,
    /// Streams the test has.
    pub expected: usize,
    /// The first `receivers` streams are the server's to receive.
    pub receivers: usize,
    /// Streams joined so far.
    pub joined: usize,
    /// Block size.
    pub len: usize,
    /// Bits per second per stream, 0 unlimited.
    pub bandwidth: u64,
}

impl Board {
    /// Numbers a stream whose cookie is `cookie`, or `None` if no test
    /// expects it.
    pub fn join(&mut self, cookie: &[u8]) -> Option<Joined> {
        if self.cookie.as_deref() != Some(cookie) || self.joined >= self.expected {
            return None;
        }
        let index = self.joined;
        self.joined += 1;
        if self.joined == self.expected {
            self.cookie = None;
        }
        Some(Joined {
            test: self.test,
            index,
            sender: index >= self.receivers,
            len: self.len,
            bandwidth: self.bandwidth,
        })
    }
}

/// A server stream numbered on the [`Board`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Joined {
    /// The board's test.
    pub test: u64,
    /// The stream's position in the test.
    pub index: usize,
    /// The server sends on it.
    pub sender: bool,
    /// Block size.
    pub len: usize,
    /// Bits per second, 0 unlimited.
    pub bandwidth: u64,
}

/// What the lanes of one process share.
#[derive(Debug)]
pub struct Hub {
    lanes: usize,
    command: AtomicU64,
    /// Per lane, the last command word its helper followed (its counters
    /// stored before).
    followed: Vec<AtomicU64>,
    orders: Vec<(Sender<Order>, Receiver<Order>)>,
    notes: (Sender<Note>, Receiver<Note>),
    driver: AtomicUsize,
    board: Mutex<Board>,
    /// The process's test is over (client, or a `-1` server).
    pub over: AtomicBool,
    /// Server: the driver's test sent its results and only waits for the
    /// client's goodbye.
    pub ending: AtomicBool,
}

impl Hub {
    /// A hub for `lanes` lanes.
    pub fn new(lanes: usize) -> Arc<Hub> {
        Arc::new(Hub {
            lanes: lanes.max(1),
            command: AtomicU64::new(0),
            followed: (0..lanes.max(1)).map(|_| AtomicU64::new(0)).collect(),
            orders: (0..lanes.max(1))
                .map(|_| crossbeam_channel::unbounded())
                .collect(),
            notes: crossbeam_channel::unbounded(),
            driver: AtomicUsize::new(NO_DRIVER),
            board: Mutex::new(Board::default()),
            over: AtomicBool::new(false),
            ending: AtomicBool::new(false),
        })
    }

    /// How many lanes there are.
    pub fn lanes(&self) -> usize {
        self.lanes
    }

    /// Announces `command` to every lane.
    pub fn announce(&self, command: Command) {
        let serial = self.command.load(Ordering::Relaxed) >> 8;
        self.command
            .store(((serial + 1) << 8) | command as u64, Ordering::Release);
    }

    /// Whether every lane's helper followed the last command, so the
    /// counters it stored are final for that phase (e.g. no sender sends
    /// after a Stop). The driver's own lane counts as followed.
    pub fn all_followed(&self, driver: usize) -> bool {
        let command = self.command.load(Ordering::Acquire);
        (self.followed.iter().enumerate())
            .all(|(lane, f)| lane == driver || f.load(Ordering::Acquire) == command)
    }

    /// Sends `order` to `lane`.
    pub fn order(&self, lane: usize, order: Order) {
        let _ = self.orders[lane].0.send(order);
    }

    /// Tells the driver `note`.
    pub fn note(&self, note: Note) {
        let _ = self.notes.0.send(note);
    }

    /// The next note for the driver, if any.
    pub fn next_note(&self) -> Option<Note> {
        self.notes.1.try_recv().ok()
    }

    /// Drops the notes of a test that is over.
    pub fn forget_notes(&self) {
        while self.notes.1.try_recv().is_ok() {}
    }

    /// Makes `lane` the driver if no lane drives a test.
    pub fn claim(&self, lane: usize) -> bool {
        self.driver
            .compare_exchange(NO_DRIVER, lane, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// The driver's test is over: another may start.
    pub fn release(&self) {
        self.board().cookie = None;
        self.ending.store(false, Ordering::Release);
        self.driver.store(NO_DRIVER, Ordering::Release);
    }

    /// The registration board (a lock: accepts and cookies only).
    pub fn board(&self) -> MutexGuard<'_, Board> {
        self.board.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A stream this lane owns for a test driven elsewhere.
#[derive(Debug)]
struct Owned {
    conn: ConnId,
    link: Arc<LaneStream>,
    sender: bool,
    len: usize,
    bandwidth: u64,
    bytes: u64,
    blocks: u64,
    block_offset: usize,
    /// We closed it (the test ended, or the peer closed first).
    closed: bool,
}

/// A stream this lane is opening for the driver.
#[derive(Debug)]
struct Opening {
    conn: ConnId,
    index: usize,
    cookie: [u8; COOKIE_LEN],
    stream: Owned,
}

/// A lane's side of tests driven by another lane: opens the streams it is
/// told to, sends and receives on the streams it owns, and follows the
/// driver's commands.
#[derive(Debug)]
pub struct Helper {
    hub: Arc<Hub>,
    lane: usize,
    seen: u64,
    /// Senders send since this instant (this lane's clock).
    sending_since: Option<Instant>,
    streams: Vec<Owned>,
    opening: Vec<Opening>,
    block: Vec<u8>,
    scratch: Vec<u8>,
}

impl Helper {
    /// Lane `lane`'s helper.
    pub fn new(hub: Arc<Hub>, lane: usize, seed: u64) -> Helper {
        let mut x = seed | 1;
        let block = (0..128 * 1024)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        Helper {
            seen: hub.command.load(Ordering::Acquire),
            hub,
            lane,
            sending_since: None,
            streams: Vec::new(),
            opening: Vec::new(),
            block,
            scratch: vec![0; 256 * 1024],
        }
    }

    /// The hub.
    pub fn hub(&self) -> &Arc<Hub> {
        &self.hub
    }

    /// This lane's number.
    pub fn lane(&self) -> usize {
        self.lane
    }

    /// Takes over the server stream `joined`, accepted here on `conn`.
    pub fn adopt<P: Port>(&mut self, ctx: &mut LcoreContext<'_, P>, conn: ConnId, joined: Joined) {
        let Some((local, remote)) = ctx.tcp_addresses(conn) else {
            return;
        };
        let link = Arc::new(LaneStream::default());
        let sizes = (joined.len, joined.bandwidth);
        if self.block.len() < joined.len {
            self.block.resize(joined.len, 0x5a);
        }
        let stream = Owned::new(conn, Arc::clone(&link), joined.sender, sizes);
        self.streams.push(stream);
        self.hub.note(Note::Stream {
            test: joined.test,
            index: joined.index,
            local,
            remote,
            link,
        });
    }

    /// Handles `event` if it is about a stream of this helper; says so.
    pub fn on_tcp<P: Port>(
        &mut self,
        conn: ConnId,
        event: TcpEvent,
        ctx: &mut LcoreContext<'_, P>,
    ) -> bool {
        if let Some(at) = self.opening.iter().position(|o| o.conn == conn) {
            match event {
                TcpEvent::Connected => {
                    let opening = self.opening.swap_remove(at);
                    let _ = ctx.tcp_send(conn, &opening.cookie);
                    let (local, remote) = ctx.tcp_addresses(conn).unwrap_or((
                        SocketAddr::new(std::net::Ipv4Addr::UNSPECIFIED.into(), 0),
                        SocketAddr::new(std::net::Ipv4Addr::UNSPECIFIED.into(), 0),
                    ));
                    self.hub.note(Note::Stream {
                        test: 0,
                        index: opening.index,
                        local,
                        remote,
                        link: Arc::clone(&opening.stream.link),
                    });
                    self.streams.push(opening.stream);
                }
                TcpEvent::Closed(error) => {
                    self.opening.swap_remove(at);
                    let why = error.map_or("closed".to_owned(), |e| e.to_string());
                    self.hub
                        .note(Note::Failed(format!("unable to connect stream: {why}")));
                }
                _ => {}
            }
            return true;
        }
        let Some(stream) = self.streams.iter_mut().find(|s| s.conn == conn) else {
            return false;
        };
        match event {
            TcpEvent::Readable => {
                loop {
                    match ctx.tcp_recv(conn, &mut self.scratch) {
                        Ok(0) | Err(_) => break,
                        // Data streams carry data only once the test runs.
                        Ok(n) if !stream.sender => stream.bytes += n as u64,
                        Ok(_) => {}
                    }
                }
                stream.link.bytes.store(stream.bytes, Ordering::Relaxed);
                if ctx.tcp_at_eof(conn) && !stream.link.finished.load(Ordering::Relaxed) {
                    stream.link.finished.store(true, Ordering::Relaxed);
                    if !stream.closed {
                        stream.closed = true;
                        ctx.tcp_close(conn);
                    }
                }
            }
            TcpEvent::Closed(_) => {
                stream.link.finished.store(true, Ordering::Relaxed);
                self.streams.retain(|s| s.conn != conn);
            }
            TcpEvent::Connected | TcpEvent::Accepted(_) => {}
        }
        true
    }

    /// Once per poll: takes orders, follows the driver's command, sends.
    pub fn on_poll<P: Port>(&mut self, ctx: &mut LcoreContext<'_, P>) {
        while let Ok(order) = self.hub.orders[self.lane].1.try_recv() {
            self.take(order, ctx);
        }
        let command = self.hub.command.load(Ordering::Acquire);
        if command != self.seen {
            self.seen = command;
            self.follow(command & 0xff, ctx);
        }
        if let Some(since) = self.sending_since {
            self.pump(since, ctx);
        }
        // After the counters of this poll are stored.
        let followed = &self.hub.followed[self.lane];
        if followed.load(Ordering::Relaxed) != self.seen {
            followed.store(self.seen, Ordering::Release);
        }
    }

    fn take<P: Port>(&mut self, order: Order, ctx: &mut LcoreContext<'_, P>) {
        let Order::Connect {
            index,
            server,
            cookie,
            sender,
            len,
            bandwidth,
            link,
        } = order;
        if self.block.len() < len {
            self.block.resize(len, 0x5a);
        }
        match ctx.tcp_connect(server) {
            Ok(conn) => self.opening.push(Opening {
                conn,
                index,
                cookie,
                stream: Owned::new(conn, link, sender, (len, bandwidth)),
            }),
            Err(e) => self
                .hub
                .note(Note::Failed(format!("unable to connect stream: {e}"))),
        }
    }

    fn follow<P: Port>(&mut self, code: u64, ctx: &mut LcoreContext<'_, P>) {
        match code {
            c if c == Command::Run as u64 => self.sending_since = Some(ctx.now()),
            c if c == Command::Stop as u64 => self.sending_since = None,
            // Closed streams still count what arrives until the peer
            // closes too (as the driver's own streams do).
            c if c == Command::Close as u64 => {
                self.sending_since = None;
                for s in &mut self.streams {
                    if !s.closed {
                        s.closed = true;
                        ctx.tcp_close(s.conn);
                    }
                }
                for o in self.opening.drain(..) {
                    ctx.tcp_abort(o.conn);
                }
            }
            c if c == Command::Abort as u64 => {
                self.sending_since = None;
                for s in self.streams.drain(..) {
                    ctx.tcp_abort(s.conn);
                }
                for o in self.opening.drain(..) {
                    ctx.tcp_abort(o.conn);
                }
            }
            _ => {}
        }
    }

    /// Keeps the senders' send buffers full, up to their pacing allowance.
    fn pump<P: Port>(&mut self, since: Instant, ctx: &mut LcoreContext<'_, P>) {
        let elapsed = ctx.now().saturating_duration_since(since).as_secs_f64();
        for stream in self.streams.iter_mut().filter(|s| s.sender && !s.closed) {
            let allowance = match stream.bandwidth {
                0 => u64::MAX,
                rate => ((rate as f64 / 8.0) * elapsed) as u64,
            };
            let before = stream.bytes;
            while stream.bytes < allowance {
                let from = stream.block_offset;
                let n = match ctx.tcp_send(stream.conn, &self.block[from..stream.len]) {
                    Ok(n) if n > 0 => n,
                    _ => break,
                };
                stream.bytes += n as u64;
                stream.block_offset += n;
                if stream.block_offset == stream.len {
                    stream.block_offset = 0;
                    stream.blocks += 1;
                }
            }
            if stream.bytes != before {
                stream.publish(ctx);
            }
        }
    }
}

impl Owned {
    fn new(conn: ConnId, link: Arc<LaneStream>, sender: bool, board: (usize, u64)) -> Owned {
        Owned {
            conn,
            link,
            sender,
            len: board.0.max(1),
            bandwidth: board.1,
            bytes: 0,
            blocks: 0,
            block_offset: 0,
            closed: false,
        }
    }

    /// Stores the sender's counters for the driver.
    fn publish<P: Port>(&self, ctx: &mut LcoreContext<'_, P>) {
        self.link.bytes.store(self.bytes, Ordering::Relaxed);
        self.link.blocks.store(self.blocks, Ordering::Relaxed);
        if let Some(info) = ctx.tcp_info(self.conn) {
            self.link
                .retransmits
                .store(info.retransmits, Ordering::Relaxed);
            self.link.cwnd.store(info.cwnd, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_numbered_in_cookie_order_and_only_for_the_test() {
        let mut board = Board {
            test: 7,
            cookie: Some(b"abc".to_vec()),
            expected: 3,
            receivers: 2,
            ..Board::default()
        };
        let joined = |b: &mut Board| b.join(b"abc").map(|j| (j.test, j.index, j.sender));
        assert_eq!(board.join(b"xyz"), None);
        assert_eq!(joined(&mut board), Some((7, 0, false)));
        assert_eq!(joined(&mut board), Some((7, 1, false)));
        assert_eq!(joined(&mut board), Some((7, 2, true)));
        // All joined: a fourth is refused, and the board expects no more.
        assert_eq!(board.join(b"abc"), None);
        assert_eq!(board.cookie, None);
    }

    #[test]
    fn every_announcement_is_a_new_word_lanes_can_tell_apart() {
        let hub = Hub::new(2);
        let before = hub.command.load(Ordering::Relaxed);
        hub.announce(Command::Run);
        let run = hub.command.load(Ordering::Relaxed);
        hub.announce(Command::Run);
        let again = hub.command.load(Ordering::Relaxed);
        assert_ne!(before, run);
        assert_ne!(run, again);
        assert_eq!(again & 0xff, Command::Run as u64);
        assert!(hub.claim(1));
        assert!(!hub.claim(0));
        hub.release();
        assert!(hub.claim(0));
    }
}
