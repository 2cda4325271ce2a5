//! One process-wide record or replay session, as front ends use it: start from options,
//! record or replay calls, check the program's output, shut down.
//!
//! # The verdict protocol
//!
//! The core decides what every replayed call gets, and never ends the process itself: each
//! replay entry point returns a [`Verdict`] (serve this recorded event, run the call live, or
//! stop the program with this exit status), and each front end applies verdicts in exactly
//! one place, in the way its runtime can stop safely (C: flush stdio and `_exit`; Node:
//! `process.exit` from JS; JVM: `exit` from the agent). The divergence policy is applied here
//! and only here ([`Core::diverged`]), so its words and the exit status exist once.
//!
//! Once a divergence is reported under `abort`, every later replay call of every thread gets
//! [`Verdict::Stop`] (after the report is fully written): no intercepted call runs live
//! between the report and the end of the process.
//!
//! # Output verification
//!
//! Front ends that see the program's writes to stdout and stderr hand them to
//! [`Core::output`]: recording stores them as events of the kinds in [`OUTPUT_KINDS`], replay
//! compares each write with the recorded bytes as one byte stream per fd (so a write split
//! differently still matches) and reports the first difference with its byte offset and line.
//! The exit status goes into the log's trailer ([`Core::exit_status`]) and is compared at
//! [`Core::shutdown`].

use crate::event::{Event, Payload};
use crate::format::{HeaderInfo, PayloadRef};
use crate::logfile;
use crate::options::{expand_path, Mode, Options, Policy};
use crate::reader::End;
use crate::recorder::{RecordConfig, Recorder};
use crate::replayer::{ReplayConfig, Replayer};
use crate::report::{Divergence, DivergenceKind};
use rustc_hash::FxHashMap;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

pub enum Session {
    Record(Recorder),
    Replay(Replayer),
}

/// What the front end does with a replayed call (see the module comment).
#[derive(Debug)]
pub enum Verdict {
    /// Give the program this recorded event instead of running the call.
    Serve(Event),
    /// Run the real call (not replaying, replay went live under `warn-live`, nothing
    /// recorded to give under `warn-continue`); for a checked write: write it.
    Live,
    /// Stop the program now with this exit status; the report is on stderr.
    Stop(i32),
}

/// Exit status of a replay refused at start: the log was recorded by another runtime or
/// program (the same status the CLI gives a log it cannot read).
pub const EXIT_WRONG_LOG: i32 = 3;

/// How a front end's refusal of a log that is not its program's begins (after "replay: "):
/// the launcher knows it by this, and takes the status ([`EXIT_WRONG_LOG`]) as the answer
/// rather than comparing the output of a program that did not run.
pub const REFUSED: &str = "cannot replay: ";

/// The program's output streams that replay verifies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stream {
    Stdout = 0,
    Stderr = 1,
}

impl Stream {
    /// The stream written through file descriptor `fd`, if it is 1 or 2.
    pub fn from_fd(fd: i64) -> Option<Stream> {
        match fd {
            1 => Some(Stream::Stdout),
            2 => Some(Stream::Stderr),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        ["stdout", "stderr"][self as usize]
    }
}

/// Event kinds of the program's writes to stdout and stderr, indexed by [`Stream`].
pub const OUTPUT_KINDS: [&str; 2] = ["output.stdout", "output.stderr"];

/// Kinds of the values threads take from a generator they share (the JVM's `Random` seed
/// uniquifier, `ThreadLocalRandom`'s and `SplittableRandom`'s seeders): the order in which
/// threads reach it races, and where a thread first reaches it can depend on contention (a
/// `ConcurrentHashMap` counter initializes `ThreadLocalRandom` on a failed CAS). Replay serves
/// each thread its own values in its own order of calls of the kind, out of the threads'
/// turns ([`Core::replay_seed`]).
pub const SEED_KINDS: [&str; 5] = [
    "seed.java.util.Random",
    "seed.java.util.concurrent.ThreadLocalRandom",
    "seed.java.util.SplittableRandom",
    // Each value of `Math.random()`, whose one generator every thread shares.
    "seed.java.lang.Math.random",
    // Whether a ThreadPoolExecutor's queue accepted a task (a SynchronousQueue does only
    // while a worker polls). Out of turn: the event is recorded once the offer returned,
    // after the worker that took the task may have recorded its take; served in turn, the
    // submitting thread would wait for the worker that waits for its task.
    "seed.java.util.concurrent.ThreadPoolExecutor.offer",
];

/// Kinds of a front end's side records: what no program thread takes in its turn, recorded
/// through [`Core::side_appender`] and read back whole in replay by [`Core::side_events`]
/// (a child process's output as the program read it, its exit status: replay needs them when
/// the child starts, before the program reads them).
pub const SIDE_KINDS: [&str; 5] = [
    "side.java.lang.Process.output",
    "side.java.lang.Process.exit",
    // A signal the JVM got (its handler thread started): replay raises it again once every
    // event before it was replayed.
    "side.java.lang.Signal",
    // A chunk of an HttpClient response's body, or its end, as the program's subscriber got
    // it (jvm-agent/src/http.rs): a streamed body arrives after the exchange's own event.
    "side.java.net.http.body",
    // A source file of the program the Node addon saw compiled, and its digest: replay warns
    // when the program it runs has other code (node-addon/src/modules.rs).
    "side.node.module",
];

/// What a front end tells [`Core::start`] about itself and the program.
pub struct Frontend<'a> {
    /// `"jvm"`, `"node"`, `"c"`: replay refuses a log of another runtime.
    pub runtime: &'a str,
    pub runtime_version: &'a str,
    /// What the runtime runs, as the front end names it (the script of a Node process, the
    /// main class or jar of a JVM, the executable's file name): replay refuses a log of
    /// another program. Compared by file name, so `./app` and `/opt/app` are one program.
    pub program: &'a str,
    /// The log when none was given (record only; the path is announced on stderr).
    pub default_log: &'a str,
    /// Whether the front end hands the program's stdout/stderr writes to [`Core::output`]
    /// and its exit status to [`Core::exit_status`].
    pub output: bool,
    /// Each kind is a stream of its own, in recorded order, without turns between kinds
    /// (`Replayer::next_of`): single-threaded event loops (Node).
    pub per_kind: bool,
    /// The program's arguments for the header and the replay check, when they are not this
    /// process's own (a launcher recording its child).
    pub argv: Option<&'a [String]>,
}

/// Why a session did not start: one line, and the exit status the program must stop with
/// when it must not run on (a log of another runtime or program).
#[derive(Debug)]
pub struct StartError {
    pub message: String,
    pub exit: Option<i32>,
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<String> for StartError {
    fn from(message: String) -> Self {
        StartError {
            message,
            exit: None,
        }
    }
}

/// Replay's position in one output stream.
#[derive(Default)]
struct OutState {
    /// Bytes verified so far, and the line they end on (from 1).
    offset: u64,
    line: u64,
    /// The bytes since the last line feed before `offset` (at most [`TAIL`]): the start of
    /// the line a difference is reported in.
    tail: Vec<u8>,
    /// Recorded writes of this thread taken from the core and not yet matched, and how far
    /// the first one is matched.
    queue: VecDeque<Event>,
    pos: usize,
    /// A difference was reported: the rest of this stream is not compared.
    failed: bool,
}

static NEXT_GEN: AtomicU64 = AtomicU64::new(1);

/// Each logical thread's position in each output stream (see [`ThreadOut`]).
type Positions = Arc<Mutex<FxHashMap<(u32, Stream), OutState>>>;

/// A thread's output streams while it writes, kept thread-local so that comparing a write
/// takes no lock: the thread's recorded writes are taken from the core in bulk, and matched
/// here. When the thread ends (or the session checks its end) the state goes to the shared
/// table, where the end-of-replay check finds what was left unwritten.
struct ThreadOut {
    gen: u64,
    thread: u32,
    streams: [OutState; 2],
    home: Positions,
}

impl ThreadOut {
    fn park(&mut self) {
        let mut home = self.home.lock().unwrap_or_else(|p| p.into_inner());
        for (i, st) in self.streams.iter_mut().enumerate() {
            home.insert((self.thread, STREAMS[i]), std::mem::take(st));
        }
    }
}

impl Drop for ThreadOut {
    fn drop(&mut self) {
        self.park();
    }
}

thread_local! {
    static OUT: RefCell<Option<ThreadOut>> = const { RefCell::new(None) };
}

const STREAMS: [Stream; 2] = [Stream::Stdout, Stream::Stderr];

/// How much of a line a report quotes on either side of a difference.
const TAIL: usize = 160;

impl OutState {
    fn advance(&mut self, bytes: &[u8]) {
        self.offset += bytes.len() as u64;
        match bytes.iter().rposition(|&b| b == b'\n') {
            Some(i) => {
                self.line += bytes.iter().filter(|&&b| b == b'\n').count() as u64;
                self.tail.clear();
                self.tail.extend_from_slice(&bytes[i + 1..]);
            }
            None => self.tail.extend_from_slice(bytes),
        }
        if self.tail.len() > TAIL {
            self.tail.drain(..self.tail.len() - TAIL);
        }
    }

    /// The current line as one side wrote it: the common start, then `rest` up to its line
    /// feed.
    fn line_with(&self, rest: &[u8]) -> String {
        let end = rest
            .iter()
            .position(|&b| b == b'\n')
            .unwrap_or(rest.len())
            .min(TAIL);
        let mut line = self.tail.clone();
        line.extend_from_slice(&rest[..end]);
        format!("{:?}", String::from_utf8_lossy(&line))
    }
}

pub struct Core {
    pub options: Options,
    pub session: Session,
    pub log: PathBuf,
    divergences: AtomicU64,
    /// The exit status of a [`Verdict::Stop`] once one was given (0: none).
    stop: AtomicI32,
    /// Replay: the recording ended with a signal the front end is still to raise, or has
    /// raised ([`Core::expect_end_signal`]).
    end_signal: std::sync::atomic::AtomicBool,
    end_signal_raised: std::sync::atomic::AtomicBool,
    /// Replay: the program's end is being checked ([`Self::check_end`]). A thread past its
    /// recorded events then waits for the process to end instead of diverging: the recorded
    /// process ended there, and the replayed one waits at its end for the other threads'
    /// last turns ([`Replayer::settle`]), where a thread polling on past them (a server's
    /// dispatcher loop) would otherwise make a call the recording never saw.
    ending: std::sync::atomic::AtomicBool,
    /// The sequence number of the raised signal's record ([`Self::end_signal_raised_at`]);
    /// 0: not known.
    end_signal_seq: std::sync::atomic::AtomicU64,
    /// Held while a report is written: a thread that finds `stop` set waits on it, so the
    /// process does not end in the middle of the report.
    report: Mutex<()>,
    per_kind: bool,
    /// String ids of [`OUTPUT_KINDS`].
    out_kinds: [u32; 2],
    /// Replay, when the output is compared: each logical thread's position in each output
    /// stream. Threads are compared apart: how their writes interleave is up to the
    /// scheduler, what each writes is up to the program.
    output: Option<Positions>,
    /// Tells this session's thread-local output state from an earlier session's.
    gen: u64,
    /// Replay: the exit status the front end saw.
    exit: Mutex<Option<i32>>,
    /// What the program wrote into files, per path: bytes in all and their CRC-32C
    /// ([`Core::file_written`]).
    files: Mutex<std::collections::BTreeMap<String, (u64, u32)>>,
    /// What ran live by rule, per kind ([`Core::ran_live`]), and whether what it does is out
    /// of replay's sight ([`Core::ran_unchecked`]).
    live: Mutex<Vec<(&'static str, u64, bool)>>,
    /// Replay: what was answered from the recording without running (a child process
    /// replayed from the parent's side), per kind: what it did beyond its pipes (files it
    /// wrote) does not happen, which the end of the replay says.
    not_run: Mutex<Vec<(&'static str, u64)>>,
    /// The text of the last report written.
    last: Mutex<Option<String>>,
    /// Replay: the locks that mark the log as replayed by this process (see `logfile`).
    _claim: Option<logfile::ReplayClaim>,
    /// Record with `chaos=SEED`: the schedule perturbation ([`crate::chaos`]).
    chaos: Option<crate::chaos::Chaos>,
}

/// The arguments that identify a run, without the agent options that differ between record
/// and replay.
fn comparable_argv(argv: &[String]) -> Vec<&str> {
    argv.iter()
        .map(String::as_str)
        .filter(|a| !a.starts_with("-agentpath:") && !a.starts_with("-agentlib:"))
        .collect()
}

fn file_name(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

impl Core {
    /// Starts a session, or returns `Ok(None)` in mode `off` and when another process
    /// records or replays the log (said on stderr: the program runs without a session). Errors are one line; an error
    /// with an exit status (a log of another runtime or program) must stop the program.
    pub fn start(mut options: Options, fe: &Frontend<'_>) -> Result<Option<Core>, StartError> {
        // Output is only recorded or compared where the front end sees it.
        options.verify_output &= fe.output;
        let log = match (&options.log, options.mode) {
            (_, Mode::Off) => return Ok(None),
            (Some(l), _) => expand_path(l),
            // One process of a recorded tree: its log is named by its place in the tree.
            (None, mode) if std::env::var_os(crate::tree::ENV_TREE).is_some_and(|d| !d.is_empty()) => {
                let argv: Vec<String> = match fe.argv {
                    Some(a) => a.to_vec(),
                    None => std::env::args_os()
                        .map(|a| a.to_string_lossy().into_owned())
                        .collect(),
                };
                let me = crate::tree::Me {
                    runtime: fe.runtime,
                    program: fe.program,
                    argv: &argv,
                };
                match crate::tree::resolve(mode, &me)? {
                    // Already a file name: % is not expanded.
                    Some(p) => p.to_string_lossy().into_owned(),
                    None => return Ok(None),
                }
            }
            (None, Mode::Record) => {
                let l = expand_path(fe.default_log);
                eprintln!("replay: recording to {l} (set the log option to choose the file)");
                l
            }
            (None, Mode::Replay) => return Err("replay mode needs a log to replay: set the log option (REPLAY_LOG=FILE or log=FILE)".to_string().into()),
        };
        let path = PathBuf::from(&log);
        let mut checking = false;
        let mut claim = None;
        let session = match options.mode {
            Mode::Record => {
                let mut header = HeaderInfo::for_this_process(
                    fe.runtime,
                    fe.runtime_version,
                    options.describe(),
                );
                header.program = fe.program.to_string();
                if let Some(argv) = fe.argv {
                    header.argv = argv.to_vec();
                }
                let cfg = RecordConfig {
                    path: path.clone(),
                    header,
                    sync: options.sync,
                    flush: options.flush,
                    main_thread: "main".into(),
                    compress: options.compress,
                };
                match Recorder::open(cfg) {
                    Ok(r) => Session::Record(r),
                    Err(e) => match logfile::taken(&e) {
                        Some(t) => return Ok(Self::taken(&log, t, "unrecorded")),
                        None => return Err(format!("cannot create log {log}: {e}").into()),
                    },
                }
            }
            Mode::Replay => {
                let cfg = ReplayConfig {
                    path: path.clone(),
                    order: options.order,
                    timeout: options.timeout,
                    // Writes are compared per thread, out of the threads' turns; so are seeds
                    // taken from shared generators (`SEED_KINDS`). Side records are read by
                    // a scan of their own (`SIDE_KINDS`): the cursor passes over them.
                    unordered: OUTPUT_KINDS
                        .iter()
                        .chain(SEED_KINDS.iter())
                        .chain(SIDE_KINDS.iter())
                        .map(|k| k.to_string())
                        .collect(),
                };
                claim = match logfile::claim_replay(&path) {
                    Ok(c) => Some(c),
                    Err(e) => match logfile::taken(&e) {
                        Some(t) => return Ok(Self::taken(&log, t, "live, unchecked")),
                        None => return Err(format!("cannot replay {log}: {e}").into()),
                    },
                };
                let r = Replayer::open(cfg).map_err(|e| format!("cannot replay {log}: {e}"))?;
                Self::check_header(r.header(), &log, fe)?;
                let recorded_output = r
                    .header()
                    .options
                    .iter()
                    .any(|(k, v)| k == "verify-output" && v == "on");
                checking = options.verify_output && recorded_output;
                if !checking {
                    // Writes are not matched to events: the cursor must not wait for them.
                    r.ungate();
                }
                if options.verify_output && !recorded_output {
                    eprintln!("replay: note: {log} holds no output of the program (recorded with verify-output=off, or by an older version): output is not compared");
                }
                Session::Replay(r)
            }
            Mode::Off => unreachable!(),
        };
        let intern = |s: &Session, t: &str| match s {
            Session::Record(r) => r.intern(t),
            Session::Replay(r) => r.intern(t),
        };
        let out_kinds = OUTPUT_KINDS.map(|k| intern(&session, k));
        let chaos = match (&session, options.chaos) {
            (Session::Record(_), Some(seed)) => Some(crate::chaos::Chaos::new(seed)),
            _ => None,
        };
        Ok(Some(Core {
            options,
            session,
            log: path,
            divergences: AtomicU64::new(0),
            stop: AtomicI32::new(0),
            end_signal: std::sync::atomic::AtomicBool::new(false),
            end_signal_raised: std::sync::atomic::AtomicBool::new(false),
            ending: std::sync::atomic::AtomicBool::new(false),
            end_signal_seq: std::sync::atomic::AtomicU64::new(0),
            report: Mutex::new(()),
            per_kind: fe.per_kind,
            out_kinds,
            output: checking.then(|| Arc::new(Mutex::new(FxHashMap::default()))),
            gen: NEXT_GEN.fetch_add(1, Ordering::Relaxed),
            exit: Mutex::new(None),
            files: Mutex::new(std::collections::BTreeMap::new()),
            live: Mutex::new(Vec::new()),
            not_run: Mutex::new(Vec::new()),
            last: Mutex::new(None),
            _claim: claim,
            chaos,
        }))
    }

    /// The log is another process's (this one inherited its settings, most likely): the
    /// program runs without a session, said in one line.
    fn taken(log: &str, t: &logfile::Taken, runs: &str) -> Option<Core> {
        eprintln!(
            "replay: {log} {t}; this process (pid {}) runs {runs}",
            std::process::id()
        );
        None
    }

    /// Refuses a log of another runtime or program (one line, exit status
    /// [`EXIT_WRONG_LOG`]); warns when only the arguments differ.
    fn check_header(h: &HeaderInfo, log: &str, fe: &Frontend<'_>) -> Result<(), StartError> {
        let describe = |runtime: &str, program: &str| {
            if program.is_empty() {
                runtime.to_string()
            } else {
                format!("{runtime} running {program}")
            }
        };
        let other_runtime = !h.runtime.is_empty() && h.runtime != fe.runtime;
        let other_program = !h.program.is_empty()
            && !fe.program.is_empty()
            && file_name(&h.program) != file_name(fe.program);
        if other_runtime || other_program {
            return Err(StartError {
                message: format!(
                    "{REFUSED}{log} was recorded by {}, but this is {}: replay it with the program that recorded it",
                    describe(&h.runtime, &h.program),
                    describe(fe.runtime, fe.program)
                ),
                exit: Some(EXIT_WRONG_LOG),
            });
        }
        let now: Vec<String> = match fe.argv {
            Some(a) => a.to_vec(),
            None => std::env::args_os()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
        };
        let (then, now) = (comparable_argv(&h.argv), comparable_argv(&now));
        if !h.argv.is_empty() && then != now {
            eprintln!(
                "replay: warning: the program's arguments differ from the recording's: recorded {then:?}, now {now:?}"
            );
        }
        Ok(())
    }

    pub fn mode(&self) -> Mode {
        match self.session {
            Session::Record(_) => Mode::Record,
            Session::Replay(_) => Mode::Replay,
        }
    }

    pub fn intern(&self, text: &str) -> u32 {
        match &self.session {
            Session::Record(r) => r.intern(text),
            Session::Replay(r) => r.intern(text),
        }
    }

    pub fn name_thread(&self, name: &str) {
        match &self.session {
            Session::Record(r) => r.name_thread(name),
            Session::Replay(r) => r.name_thread(name),
        }
    }

    /// Records one event (a scheduling point under `chaos`: see [`Self::chaos_point`]).
    #[inline]
    pub fn record(&self, kind: u32, site: u32, digest: Option<u64>, payload: PayloadRef<'_>) {
        if let Session::Record(r) = &self.session {
            self.chaos_point();
            r.record(kind, site, digest, payload);
        }
    }

    /// A scheduling point of the calling thread: under `chaos=SEED` (record only) it may
    /// yield or sleep briefly; otherwise one branch. [`Self::record`] is one; front ends call
    /// it where they see more (the C header: before a macro's call runs, before a mutex
    /// lock, after an unlock).
    #[inline]
    pub fn chaos_point(&self) {
        if let Some(c) = &self.chaos {
            c.point();
        }
    }

    /// The seed of chaos mode, when this session records with it.
    pub fn chaos_seed(&self) -> Option<u64> {
        self.chaos.as_ref().map(crate::chaos::Chaos::seed)
    }

    /// The exit status of the stop verdict given, once one was: every replay call gets it
    /// from then on. Waits until the report that stopped replay is written.
    #[inline]
    pub fn stopped(&self) -> Option<i32> {
        match self.stop.load(Ordering::Acquire) {
            0 => None,
            code => {
                drop(self.report.lock().unwrap_or_else(|p| p.into_inner()));
                Some(code)
            }
        }
    }

    /// Replays one call: the calling thread's next recorded event (the kind's next, for
    /// per-kind front ends), checked against the call. `context` gives front-end detail (a
    /// stack) for the report; it is only called when there is a divergence.
    pub fn replay(
        &self,
        kind: u32,
        site: u32,
        digest: Option<u64>,
        context: &dyn Fn() -> Option<String>,
    ) -> Verdict {
        let Session::Replay(r) = &self.session else {
            return Verdict::Live;
        };
        if let Some(code) = self.stopped() {
            return Verdict::Stop(code);
        }
        if r.is_live() {
            return Verdict::Live;
        }
        let got = if self.per_kind {
            r.next_of(kind, site, digest)
        } else {
            r.next(kind, site, digest)
        };
        match got {
            Ok(e) => Verdict::Serve(e),
            Err(d) => self.diverged(with_context(d, context)),
        }
    }

    /// Replay: whether the calling thread's recording holds another event of `kind` (in the
    /// thread's order: any event), without taking it. False when recording, live or stopped.
    pub fn replay_has_more(&self, kind: u32) -> bool {
        let Session::Replay(r) = &self.session else {
            return false;
        };
        if self.stopped().is_some() || r.is_live() {
            return false;
        }
        if self.per_kind {
            r.has_more_of(kind)
        } else {
            r.has_more()
        }
    }

    /// Replay: whether the calling thread has no recorded event left (in the thread's
    /// order) in a complete log while replay goes on: the recorded thread made no call
    /// after this point before the process ended. False when recording, live or stopped,
    /// and in a cut log (the recording, not the thread, ends there: said at once).
    pub fn replay_past_end(&self) -> bool {
        match &self.session {
            Session::Replay(r) => {
                self.stopped().is_none()
                    && !r.is_live()
                    && !r.has_more()
                    && !matches!(r.end(), Some(End::Cut { .. }))
            }
            Session::Record(_) => false,
        }
    }

    /// Replay: whether the calling thread's next recorded event is of `kind`
    /// ([`Replayer::next_is`]). False when recording, live or stopped.
    pub fn replay_next_is(&self, kind: u32) -> bool {
        match &self.session {
            Session::Replay(r) => self.stopped().is_none() && !r.is_live() && r.next_is(kind),
            Session::Record(_) => false,
        }
    }

    /// Replay: a blocking call (a selector's wait) by a thread whose recording has ended, in
    /// a complete log, had not returned when the recorded program exited. It waits here for
    /// the program's end (up to the timeout) instead of meeting the "ran out" report at once;
    /// when the program goes on past the timeout, the caller replays the call and gets it.
    pub fn replay_wait_if_ended(&self) {
        let Session::Replay(r) = &self.session else {
            return;
        };
        if self.stopped().is_some() || r.is_live() || r.has_more() {
            return;
        }
        if !matches!(r.end(), Some(End::Complete(_))) {
            return;
        }
        let until = std::time::Instant::now() + self.options.timeout;
        while std::time::Instant::now() < until && self.stopped().is_none() && !r.is_live() {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    /// [`Replayer::next_turn`] while replaying and not stopped or live; else `None`.
    pub fn replay_next_turn(&self, kind: u32) -> Option<bool> {
        match &self.session {
            Session::Replay(r) if self.stopped().is_none() && !r.is_live() => r.next_turn(kind),
            _ => None,
        }
    }

    /// Replays a run of calls of `kind` in one step, for front ends that serve calls from a
    /// buffer of their own (a `long[]` in Java, a typed array in JS): `None` when `run` holds
    /// the run (this call's event first, then up to `max` in all that carry no input digest:
    /// the thread's next consecutive ones, or for per-kind front ends the kind's next ones;
    /// see `Replayer::next_run` and `Replayer::next_of_run`), else the verdict for this call
    /// (not replaying, gone live, or a divergence already reported under the policy). A
    /// per-kind front end gives what it did not use back with [`Self::unread`]; a buffering
    /// thread's unused events met by another kind of call are a divergence it reports with
    /// [`Self::diverged`].
    pub fn replay_run(
        &self,
        kind: u32,
        max: usize,
        run: &mut Vec<Event>,
        context: &dyn Fn() -> Option<String>,
    ) -> Option<Verdict> {
        run.clear();
        let Session::Replay(r) = &self.session else {
            return Some(Verdict::Live);
        };
        if let Some(code) = self.stopped() {
            return Some(Verdict::Stop(code));
        }
        if r.is_live() {
            return Some(Verdict::Live);
        }
        let got = if self.per_kind {
            r.next_of_run(kind, max, run)
        } else {
            r.next_run(kind, max, run)
        };
        match got {
            Ok(()) => None,
            Err(d) => Some(self.diverged(with_context(d, context))),
        }
    }

    /// Gives back events of `kind` a per-kind front end took with [`Self::replay_run`] and
    /// did not use (the run's unused tail, in order): the kind's next calls get them, and at
    /// the end they count as left over.
    pub fn unread(&self, kind: u32, events: Vec<Event>) {
        if let Session::Replay(r) = &self.session {
            r.unread_of(kind, events);
        }
    }

    /// Replays a value the calling thread took from a shared generator (a kind of
    /// [`SEED_KINDS`]): the thread's next recorded one of the kind, without waiting for a turn.
    pub fn replay_seed(&self, kind: u32, context: &dyn Fn() -> Option<String>) -> Verdict {
        let Session::Replay(r) = &self.session else {
            return Verdict::Live;
        };
        if let Some(code) = self.stopped() {
            return Verdict::Stop(code);
        }
        if r.is_live() {
            return Verdict::Live;
        }
        match r.next_unordered(kind, 0) {
            Ok(e) => Verdict::Serve(e),
            Err(d) => self.diverged(with_context(d, context)),
        }
    }

    /// Record: an appender for side records ([`SIDE_KINDS`]), a logical thread of its own
    /// named `name` that no program thread binds to in replay. `None` in replay.
    pub fn side_appender(&self, name: &str) -> Option<crate::Appender> {
        match &self.session {
            Session::Record(r) => Some(r.named_appender(name)),
            Session::Replay(_) => None,
        }
    }

    /// Replay in strict order: the sequence number of the first event not replayed yet
    /// (every event before it was). `None` when recording or not in strict order.
    pub fn replay_cursor(&self) -> Option<u64> {
        match &self.session {
            Session::Replay(r) => r.cursor(),
            Session::Record(_) => None,
        }
    }

    /// Replay: every event of the side kinds `kinds` ([`SIDE_KINDS`]) in the whole log, in
    /// sequence order, read by one pass of its own over the log (the replay's reader is only
    /// as far as the program got). A cut log gives what it holds. Empty when recording.
    pub fn side_events(&self, kinds: &[&str]) -> Result<Vec<Event>, String> {
        let Session::Replay(r) = &self.session else {
            return Ok(Vec::new());
        };
        let path = r.path();
        let mut reader = crate::LogReader::open(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let mut out = Vec::new();
        let mut ids: Vec<u32> = Vec::new();
        // A cut log ends the scan without an error: replay reports the cut where it meets it.
        while let Ok(Some(batch)) = reader.next_batch() {
            if ids.len() < kinds.len() {
                ids = kinds
                    .iter()
                    .filter_map(|k| reader.strings().id(k))
                    .collect();
            }
            for run in batch.runs {
                out.extend(run.events.into_iter().filter(|e| ids.contains(&e.kind)));
            }
        }
        out.sort_by_key(|e| e.seq);
        Ok(out)
    }

    /// Replay: the events of side kind `kind` the replay's own reader has read so far (each
    /// handed out once), in sequence order: no pass over the log of its own, for a front end
    /// that acts on them as the replay reaches them. Taking recorded signals
    /// (`SIDE_KINDS[2]`) also makes the core expect the recording's end signal
    /// ([`Self::expect_end_signal`]).
    pub fn side_events_read(&self, kind: &str) -> Vec<Event> {
        let Session::Replay(r) = &self.session else {
            return Vec::new();
        };
        let id = r.intern(kind);
        // Noted before they leave the queues: a thread that runs out of events meanwhile
        // sees one or the other (`diverged`).
        if kind == SIDE_KINDS[2] && r.has_unordered_of_all(id) {
            self.expect_end_signal();
        }
        r.take_unordered_of_all(id)
    }

    /// Replay: the recording ends with a signal that the front end raises again at its place
    /// (the JVM's `side.java.lang.Signal`). A thread that asks for more than it recorded
    /// then waits (at most the session timeout) instead of being reported: its call was in
    /// progress when the signal ended the recorded process, and the raised signal ends this
    /// one the same way.
    pub fn expect_end_signal(&self) {
        self.end_signal.store(true, Ordering::Release);
    }

    /// Replay: whether the recording ends with a signal still to come or raised: noted by
    /// [`Self::side_events_read`], or read by the replay's reader and not taken yet (a thread
    /// asks for more than it recorded only once the reader read all it has).
    fn end_signal_pending(&self) -> bool {
        if self.end_signal.load(Ordering::Acquire) {
            return true;
        }
        match &self.session {
            Session::Replay(r) => r.has_unordered_of_all(r.intern(SIDE_KINDS[2])),
            Session::Record(_) => false,
        }
    }

    /// Replay: the front end raised a recorded signal (every event before it was replayed).
    /// What other threads recorded after it (they ran on while the recorded process shut
    /// down) is not reported as left over: how far they got is the shutdown's timing.
    pub fn end_signal_raised(&self) {
        self.end_signal_raised.store(true, Ordering::Release);
    }

    /// [`Self::end_signal_raised`] for the signal recorded at `seq`: the writes other threads
    /// recorded after it are not reported as missing either (a JVM's worker printed while the
    /// recorded JVM shut down; replayed, the shutdown ran before that thread's turn).
    pub fn end_signal_raised_at(&self, seq: u64) {
        self.end_signal_seq.store(seq, Ordering::Release);
        self.end_signal_raised();
    }

    /// Reports a divergence and applies the policy: the one place where that happens, for
    /// the core's own checks and the front ends' (a payload that does not fit the call, a
    /// shortfall a front end counts itself). `abort`: [`Verdict::Stop`] with
    /// [`crate::EXIT_DIVERGENCE`], and every later call gets it too; `warn-live`: replay goes
    /// live; `warn-continue`: the recorded event when there is one (a stall or a cut log go
    /// live).
    pub fn diverged(&self, mut d: Box<Divergence>) -> Verdict {
        if matches!(d.kind, DivergenceKind::Leftover { .. })
            && self.end_signal_raised.load(Ordering::Acquire)
        {
            return Verdict::Live;
        }
        if matches!(d.kind, DivergenceKind::Exhausted { .. })
            && (self.end_signal_pending() || self.ending.load(Ordering::Acquire))
        {
            let until = std::time::Instant::now() + self.options.timeout;
            while std::time::Instant::now() < until && self.stopped().is_none() {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        }
        if let Some(code) = self.stopped() {
            // Found while another thread's report stopped replay: that report says it all.
            return Verdict::Stop(code);
        }
        let guard = self.report.lock().unwrap_or_else(|p| p.into_inner());
        // Two threads can find a divergence at once (both met the end of a cut log): the
        // one that took the report's lock second finds replay stopped and says nothing more.
        match self.stop.load(Ordering::Acquire) {
            0 => {}
            code => return Verdict::Stop(code),
        }
        self.divergences.fetch_add(1, Ordering::Relaxed);
        d.live = self.live_counts();
        let expected = d.expected.clone();
        let go_live = matches!(
            d.kind,
            DivergenceKind::Stalled { .. } | DivergenceKind::Cut { .. }
        );
        let (verdict, note) = match self.options.policy {
            Policy::Abort => {
                // Set before the report is written, so that no other thread's call runs
                // live meanwhile: it waits for the report (`stopped`), then stops too.
                self.stop
                    .store(crate::EXIT_DIVERGENCE, Ordering::Release);
                (
                    Verdict::Stop(crate::EXIT_DIVERGENCE),
                    format!(
                        "(policy abort: exiting with status {})",
                        crate::EXIT_DIVERGENCE
                    ),
                )
            }
            Policy::WarnLive => (
                Verdict::Live,
                "(policy warn-live: the program now runs live)".to_string(),
            ),
            Policy::WarnContinue => (
                match expected {
                    Some(e) if !go_live => Verdict::Serve(e),
                    _ => Verdict::Live,
                },
                if go_live {
                    "(policy warn-continue: nothing recorded is left to give; the program now runs live)"
                } else {
                    "(policy warn-continue: replay goes on)"
                }
                .to_string(),
            ),
        };
        if matches!(verdict, Verdict::Live) {
            if let Session::Replay(r) = &self.session {
                if self.options.policy == Policy::WarnLive || go_live {
                    r.go_live();
                }
            }
        }
        let text = match d.cut_line() {
            Some(line) => format!("{line} {note}\n"),
            None => format!("{}  {note}\n", d.render()),
        };
        eprint!("{text}");
        crate::tree::note_divergence(text.lines().next().unwrap_or_default());
        *self.last.lock().unwrap_or_else(|p| p.into_inner()) = Some(text);
        drop(guard);
        verdict
    }

    /// The last divergence report written to stderr, as written.
    pub fn last_report(&self) -> Option<String> {
        self.last.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn divergences(&self) -> u64 {
        self.divergences.load(Ordering::Relaxed)
    }

    /// Counts one thing the front end let run live by rule during a replay (a read while
    /// loading a class, a child process, a worker): the reports list them per kind.
    pub fn ran_live(&self, what: &'static str) {
        self.count_live(what, false);
    }

    /// [`Self::ran_live`] for something whose effects replay cannot check at all (a child
    /// process writing to the inherited stdout, a worker): a replay that found no divergence
    /// says at its end that these ran unchecked, so it is never silently taken for faithful.
    pub fn ran_unchecked(&self, what: &'static str) {
        self.count_live(what, true);
    }

    /// Replay: one `what` (a child process) was answered from the recording and did not run.
    pub fn not_run(&self, what: &'static str) {
        if !matches!(self.session, Session::Replay(_)) {
            return;
        }
        let mut v = self.not_run.lock().unwrap_or_else(|p| p.into_inner());
        match v.iter_mut().find(|(k, _)| *k == what) {
            Some((_, n)) => *n += 1,
            None => v.push((what, 1)),
        }
    }

    fn count_live(&self, what: &'static str, unchecked: bool) {
        if !matches!(self.session, Session::Replay(_)) {
            return;
        }
        let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        match live.iter_mut().find(|(k, _, _)| *k == what) {
            Some((_, n, _)) => *n += 1,
            None => live.push((what, 1, unchecked)),
        }
    }

    fn live_counts(&self) -> Vec<(String, u64)> {
        let live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        live.iter().map(|(k, n, _)| (k.to_string(), *n)).collect()
    }

    /// Whether the program's writes to stdout/stderr go to [`Self::output`]: recording with
    /// output verification on, or replaying a log that holds the output with it on.
    pub fn wants_output(&self) -> bool {
        match &self.session {
            Session::Record(_) => self.options.verify_output,
            Session::Replay(_) => self.output.is_some(),
        }
    }

    /// A write of the program to `stream`. Recording: stored as an event. Replay: compared
    /// with what the recording wrote at this point of the stream; the first difference is a
    /// divergence ([`Verdict::Stop`] under `abort`). Any other verdict means: write it.
    /// `context` (the stack of the write) is only called for a report.
    pub fn output(
        &self,
        stream: Stream,
        bytes: &[u8],
        context: &dyn Fn() -> Option<String>,
    ) -> Verdict {
        let r = match &self.session {
            Session::Record(r) => {
                if self.options.verify_output && !bytes.is_empty() {
                    r.record(
                        self.out_kinds[stream as usize],
                        0,
                        None,
                        PayloadRef::Bytes(bytes),
                    );
                }
                return Verdict::Live;
            }
            Session::Replay(r) => r,
        };
        if let Some(code) = self.stopped() {
            return Verdict::Stop(code);
        }
        if self.output.is_none() || r.is_live() || bytes.is_empty() {
            return Verdict::Live;
        }
        // Compared on the thread-local state; a report is made after its borrow ends (the
        // context may run the runtime's code, which may write again).
        let found = self.with_thread_out(r, |t| {
            self.compare(r, &mut t.streams[stream as usize], stream, bytes)
        });
        match found {
            Ok(None) => Verdict::Live,
            Ok(Some(d)) => self.diverged(with_context(d, context)),
            // A write while the thread's locals are destroyed (at its very end): nothing to
            // compare it with that this thread could still reach.
            Err(_) => Verdict::Live,
        }
    }

    /// Replay, for front ends that compare writes on their own side to save a crossing per
    /// write (Node's JS): up to `max` bytes of what the calling thread recorded on `stream`,
    /// starting `from` bytes past the position verified so far, without taking them. The
    /// front end compares writes with them, says how many matched with
    /// [`Self::output_verified`], and hands a write that differs (or finds nothing to compare
    /// with) to [`Self::output`], which reports it. Empty when nothing more is recorded, or
    /// output is not compared.
    pub fn output_ahead(&self, stream: Stream, from: usize, max: usize) -> Vec<u8> {
        let mut out = Vec::new();
        let Session::Replay(r) = &self.session else {
            return out;
        };
        if self.output.is_none() || r.is_live() || self.stopped().is_some() {
            return out;
        }
        let _ = self.with_thread_out(r, |t| {
            let st = &mut t.streams[stream as usize];
            if st.failed {
                return;
            }
            let mut skip = from + st.pos;
            let mut i = 0;
            while out.len() < max {
                if i == st.queue.len() {
                    let mut more = VecDeque::new();
                    if r.take_unordered(self.out_kinds[stream as usize], &mut more)
                        .is_err()
                    {
                        break;
                    }
                    st.queue.append(&mut more);
                }
                let data: &[u8] = match &st.queue[i].payload {
                    Payload::Bytes { data } => data,
                    _ => &[],
                };
                i += 1;
                if skip >= data.len() {
                    skip -= data.len();
                    continue;
                }
                let take = (data.len() - skip).min(max - out.len());
                out.extend_from_slice(&data[skip..skip + take]);
                skip = 0;
            }
        });
        out
    }

    /// Replay: the next `n` bytes the calling thread wrote to `stream` were found equal to the
    /// recording by the front end ([`Self::output_ahead`]): they count as compared.
    pub fn output_verified(&self, stream: Stream, n: usize) {
        let Session::Replay(r) = &self.session else {
            return;
        };
        if self.output.is_none() || n == 0 {
            return;
        }
        let _ = self.with_thread_out(r, |t| {
            let st = &mut t.streams[stream as usize];
            let mut n = n;
            while n > 0 {
                let Some(event) = st.queue.pop_front() else {
                    return;
                };
                if st.pos == 0 {
                    // One thread's writes (the front ends that compare on their side are
                    // single-threaded): nothing to find, but the event is started.
                    let _ = r.unordered_start(self.out_kinds[stream as usize], event.seq);
                    r.unordered_started(event.seq);
                }
                let data: &[u8] = match &event.payload {
                    Payload::Bytes { data } => &data[st.pos.min(data.len())..],
                    _ => &[],
                };
                let k = data.len().min(n);
                st.advance(&data[..k]);
                n -= k;
                if k < data.len() {
                    st.pos += k;
                    st.queue.push_front(event);
                } else {
                    st.pos = 0;
                }
            }
        });
    }

    /// Runs `f` on the calling thread's output state for this session (made on first use).
    fn with_thread_out<T>(
        &self,
        r: &Replayer,
        f: impl FnOnce(&mut ThreadOut) -> T,
    ) -> Result<T, std::thread::AccessError> {
        let output = self.output.as_ref().expect("output is compared");
        OUT.try_with(|o| {
            let mut o = o.borrow_mut();
            if o.as_ref().is_none_or(|t| t.gen != self.gen) {
                // A previous session's state (its threads' writes are done) is dropped, and
                // parked in that session's table.
                *o = Some(ThreadOut {
                    gen: self.gen,
                    thread: r.caller_id(),
                    streams: Default::default(),
                    home: output.clone(),
                });
            }
            f(o.as_mut().expect("set above"))
        })
    }

    /// Compares `bytes`, written by the calling thread to `stream`, with what it recorded
    /// there next; the divergence if they differ.
    fn compare(
        &self,
        r: &Replayer,
        st: &mut OutState,
        stream: Stream,
        bytes: &[u8],
    ) -> Option<Box<Divergence>> {
        if st.failed {
            return None;
        }
        let mut rest = bytes;
        while !rest.is_empty() {
            if st.queue.is_empty() {
                if let Err(d) = r.take_unordered(self.out_kinds[stream as usize], &mut st.queue) {
                    st.failed = true;
                    r.ungate();
                    return Some(self.output_gone(d, stream, st, rest));
                }
                st.pos = 0;
            }
            // Out of the queue while compared (`advance` changes the state), back if only
            // part of it was matched.
            let event = st.queue.pop_front().expect("taken above");
            if st.pos == 0 {
                r.unordered_started(event.seq);
                if let Some(d) = self.order_differs(r, stream, st, &event, rest) {
                    st.failed = true;
                    r.ungate();
                    return Some(d);
                }
            }
            let recorded: &[u8] = match &event.payload {
                Payload::Bytes { data } => &data[st.pos.min(data.len())..],
                _ => &[],
            };
            let n = recorded.len().min(rest.len());
            if recorded[..n] != rest[..n] {
                let i = (0..n).find(|&i| recorded[i] != rest[i]).unwrap_or(n);
                st.advance(&rest[..i]);
                let (was, now) = (st.line_with(&recorded[i..]), st.line_with(&rest[i..]));
                st.failed = true;
                r.ungate();
                return Some(self.output_differs(&event, stream, st, was, now));
            }
            st.advance(&rest[..n]);
            rest = &rest[n..];
            if n < recorded.len() {
                st.pos += n;
                st.queue.push_front(event);
            } else {
                st.pos = 0;
            }
        }
        None
    }

    /// Starting on recorded write `event`: another thread's write to the stream came first in
    /// the recording and has not been made yet (the threads interleave differently, so the
    /// stream's bytes differ even where each thread's own do not).
    fn order_differs(
        &self,
        r: &Replayer,
        stream: Stream,
        st: &OutState,
        event: &Event,
        rest: &[u8],
    ) -> Option<Box<Divergence>> {
        let kind = self.out_kinds[stream as usize];
        let (seq, thread) = r.unordered_start(kind, event.seq)?;
        let recorded = match crate::report::event_at(&self.log, seq) {
            Some((
                _,
                Event {
                    payload: Payload::Bytes { data },
                    ..
                },
            )) => {
                let end = data
                    .iter()
                    .position(|&b| b == b'\n')
                    .unwrap_or(data.len())
                    .min(TAIL);
                format!("{:?}", String::from_utf8_lossy(&data[..end]))
            }
            _ => format!("(event #{seq})"),
        };
        let (me, my_name) = r.caller();
        let mut d = Divergence::at(
            DivergenceKind::OutputOrder {
                stream: stream.name().into(),
                first: format!("thread {thread} \"{}\"", r.recorded_thread_name(thread)),
                recorded,
                replayed: st.line_with(rest),
            },
            seq,
            me,
            my_name,
            self.log.clone(),
        );
        d.actual.kind = kind;
        Some(Box::new(d))
    }

    /// A divergence at the current position of an output stream.
    fn output_differs(
        &self,
        at: &Event,
        stream: Stream,
        st: &OutState,
        recorded: String,
        replayed: String,
    ) -> Box<Divergence> {
        let (thread, thread_name) = match &self.session {
            Session::Replay(r) => r.caller(),
            Session::Record(_) => (at.thread, String::new()),
        };
        let mut d = Divergence::at(
            DivergenceKind::Output {
                stream: stream.name().into(),
                offset: st.offset,
                line: st.line + 1,
                recorded,
                replayed,
            },
            at.seq,
            thread,
            thread_name,
            self.log.clone(),
        );
        d.actual.kind = self.out_kinds[stream as usize];
        Box::new(d)
    }

    /// The recording has no more writes where the program writes `rest`: past the recorded
    /// stream's end, an output report; another recorded call there, the core's report of it.
    fn output_gone(
        &self,
        d: Box<Divergence>,
        stream: Stream,
        st: &OutState,
        rest: &[u8],
    ) -> Box<Divergence> {
        match d.kind {
            DivergenceKind::Exhausted { .. } => {
                let at = Event {
                    seq: d.seq,
                    thread: d.thread,
                    kind: 0,
                    site: 0,
                    digest: None,
                    payload: Payload::None,
                };
                self.output_differs(
                    &at,
                    stream,
                    st,
                    format!("(nothing: the recorded {} ends here)", stream.name()),
                    st.line_with(rest),
                )
            }
            _ => {
                let mut d = d;
                d.actual.context = Some(format!(
                    "the program wrote to {} (byte {}, line {}): {}",
                    stream.name(),
                    st.offset,
                    st.line + 1,
                    st.line_with(rest)
                ));
                d
            }
        }
    }

    /// The program's exit status. Recording: goes into the log's trailer. Replay: compared
    /// with the recorded one at [`Self::shutdown`].
    pub fn exit_status(&self, status: i32) {
        if !self.options.verify_output {
            return;
        }
        match &self.session {
            Session::Record(r) => r.set_exit_status(status),
            Session::Replay(_) => {
                *self.exit.lock().unwrap_or_else(|p| p.into_inner()) = Some(status)
            }
        }
    }

    /// The program wrote `bytes` into the file `path` (as the program named it). Record: the
    /// sums per path go into the log's trailer. Replay: compared with those at
    /// [`Self::shutdown`], so a replay that wrote other bytes into a file than recorded (a
    /// thread race, an input no hook covers) is a divergence, not a silent exit 0. Off with
    /// output verification.
    pub fn file_written(&self, path: &str, bytes: &[u8]) {
        if !self.options.verify_output || bytes.is_empty() {
            return;
        }
        let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        let e = match files.get_mut(path) {
            Some(e) => e,
            None => files.entry(path.to_string()).or_insert((0, 0)),
        };
        e.0 += bytes.len() as u64;
        e.1 = crc32c::crc32c_append(e.1, bytes);
    }

    fn files_written(&self) -> Vec<crate::format::FileWritten> {
        let files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        files
            .iter()
            .map(|(path, &(bytes, crc32c))| crate::format::FileWritten {
                path: path.clone(),
                bytes,
                crc32c,
            })
            .collect()
    }

    /// Record: flush and close the log. Replay: check that every recorded event was used,
    /// all recorded output written and the exit status the same; a difference is a
    /// divergence under the policy, whose verdict is returned ([`Verdict::Stop`]: end the
    /// process with that status). `Err` is one line to print (the log could not be written,
    /// or replay diverged under a policy that let it go on).
    pub fn shutdown(&self) -> Result<Verdict, String> {
        let r = match &self.session {
            Session::Record(r) => {
                let dropped = r.dropped();
                r.set_files(self.files_written());
                r.finish()
                    .map(|_| ())
                    .map_err(|e| format!("log {}: {e}", self.log.display()))?;
                if dropped > 0 {
                    eprintln!(
                        "replay: {dropped} events came after the log was closed and are not in it"
                    );
                }
                return Ok(Verdict::Live);
            }
            Session::Replay(r) => r,
        };
        if let Some(code) = self.stopped() {
            return Ok(Verdict::Stop(code));
        }
        let verdict = self.check_end(r);
        if let Verdict::Stop(_) = verdict {
            return Ok(verdict);
        }
        if self.divergences() > 0 {
            return Err(format!("replay diverged {} time(s)", self.divergences()));
        }
        let unchecked: Vec<String> = {
            let live = self.live.lock().unwrap_or_else(|p| p.into_inner());
            live.iter()
                .filter(|(_, _, u)| *u)
                .map(|(k, n, _)| format!("{n} {k}"))
                .collect()
        };
        if !unchecked.is_empty() && !r.is_live() {
            eprintln!(
                "replay: note: no divergence, but replay could not check everything: ran live ({}); what those did is not compared with the recording",
                unchecked.join(", ")
            );
        }
        let not_run: Vec<String> = {
            let v = self.not_run.lock().unwrap_or_else(|p| p.into_inner());
            // "1 child process", "2 child processes".
            v.iter()
                .map(|(k, n)| match (n, k.ends_with('s')) {
                    (1, _) => format!("1 {k}"),
                    (_, true) => format!("{n} {k}es"),
                    (_, false) => format!("{n} {k}s"),
                })
                .collect()
        };
        if !not_run.is_empty() && !r.is_live() {
            eprintln!(
                "replay: note: not run, answered from the recording: {}; what they did besides their pipes and exit status (files they wrote) did not happen in this replay",
                not_run.join(", ")
            );
        }
        Ok(Verdict::Live)
    }

    fn check_end(&self, r: &Replayer) -> Verdict {
        if r.is_live() {
            return Verdict::Live;
        }
        self.ending.store(true, Ordering::Release);
        r.settle();
        // Recorded output the program did not write (the rest of a write first) is reported
        // after the events of the threads' turns.
        if let Some(output) = &self.output {
            let _ = OUT.try_with(|o| {
                if let Some(t) = o.borrow_mut().as_mut().filter(|t| t.gen == self.gen) {
                    t.park();
                }
            });
            let streams = output.lock().unwrap_or_else(|p| p.into_inner());
            let partial = streams
                .iter()
                .filter(|(_, st)| st.pos > 0 && !st.failed)
                .filter_map(|(k, st)| st.queue.front().map(|e| (e.seq, *k)))
                .min();
            if let Some((_, key)) = partial {
                drop(streams);
                if let Some(d) = self.unwritten(r, key) {
                    return self.diverged(d);
                }
            }
        }
        if let Err(d) = r.finish() {
            return self.diverged(d);
        }
        if let Some(d) = self.leftover_output(r) {
            return self.diverged(d);
        }
        let (recorded, recorded_files) = match r.end() {
            Some(End::Complete(t)) => (t.exit_status, Some(t.files.clone())),
            _ => (None, None),
        };
        let replayed = *self.exit.lock().unwrap_or_else(|p| p.into_inner());
        if let (Some(recorded), Some(replayed)) = (recorded, replayed) {
            if recorded != replayed {
                let (thread, thread_name) = r.caller();
                return self.diverged(Box::new(Divergence::at(
                    DivergenceKind::Exit { recorded, replayed },
                    r.end_seq(),
                    thread,
                    thread_name,
                    self.log.clone(),
                )));
            }
        }
        // A recording with no file writes in its trailer is not compared: an older writer's
        // log, or one recorded without output verification, says nothing of its files.
        if let Some(recorded) = recorded_files.filter(|f| !f.is_empty()) {
            if let Some(kind) = self.file_difference(&recorded) {
                let (thread, thread_name) = r.caller();
                return self.diverged(Box::new(Divergence::at(
                    kind,
                    r.end_seq(),
                    thread,
                    thread_name,
                    self.log.clone(),
                )));
            }
        }
        Verdict::Live
    }

    /// The first file, by path, whose replayed writes differ from the recorded ones.
    fn file_difference(&self, recorded: &[crate::format::FileWritten]) -> Option<DivergenceKind> {
        if !self.options.verify_output {
            return None;
        }
        let replayed = self.files.lock().unwrap_or_else(|p| p.into_inner());
        let mut first: Option<DivergenceKind> = None;
        let mut note = |path: &str, rec: Option<u64>, rep: Option<u64>| {
            if first.as_ref().is_none_or(
                |f| matches!(f, DivergenceKind::File { path: p, .. } if path < p.as_str()),
            ) {
                first = Some(DivergenceKind::File {
                    path: path.to_string(),
                    recorded: rec,
                    replayed: rep,
                });
            }
        };
        for f in recorded {
            match replayed.get(&f.path) {
                Some(&(bytes, crc)) if bytes == f.bytes && crc == f.crc32c => {}
                Some(&(bytes, _)) => note(&f.path, Some(f.bytes), Some(bytes)),
                None => note(&f.path, Some(f.bytes), None),
            }
        }
        for (path, &(bytes, _)) in replayed.iter() {
            if !recorded.iter().any(|f| &f.path == path) {
                note(path, None, Some(bytes));
            }
        }
        first
    }

    /// Recorded writes the program never made (when output is compared): the earliest,
    /// said at its place in its thread's stream.
    fn leftover_output(&self, r: &Replayer) -> Option<Box<Divergence>> {
        let output = self.output.as_ref()?;
        let held = {
            let streams = output.lock().unwrap_or_else(|p| p.into_inner());
            streams
                .iter()
                .filter(|(_, st)| !st.failed)
                .filter_map(|(k, st)| st.queue.front().map(|e| (e.seq, *k)))
                .min()
        };
        let untaken = r
            .unordered_left(&self.out_kinds)
            .and_then(|(seq, thread, kind)| {
                let i = self.out_kinds.iter().position(|k| *k == kind)?;
                Some((seq, (thread, STREAMS[i])))
            });
        let (seq, key) = match (held, untaken) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b)?,
        };
        // Written after the signal that ended the replay: how far the other threads got is
        // the shutdown's timing (as for the events left over).
        let signal = self.end_signal_seq.load(Ordering::Acquire);
        if signal != 0 && seq > signal && self.end_signal_raised.load(Ordering::Acquire) {
            return None;
        }
        self.unwritten(r, key)
    }

    /// The report of thread `key.0`'s next recorded write to `key.1` that it never made.
    fn unwritten(&self, r: &Replayer, key: (u32, Stream)) -> Option<Box<Divergence>> {
        let output = self.output.as_ref()?;
        let mut streams = output.lock().unwrap_or_else(|p| p.into_inner());
        let st = streams.entry(key).or_default();
        if st.queue.is_empty() {
            let e = r.next_unordered_of(key.0, self.out_kinds[key.1 as usize])?;
            st.queue.push_back(e);
            st.pos = 0;
        }
        let event = st.queue.front()?.clone();
        let data = match &event.payload {
            Payload::Bytes { data } => &data[st.pos.min(data.len())..],
            _ => &[][..],
        };
        let mut d = self.output_differs(
            &event,
            key.1,
            st,
            st.line_with(data),
            "(nothing: the program ended)".into(),
        );
        d.thread = key.0;
        d.thread_name = r.recorded_thread_name(key.0);
        Some(d)
    }
}

fn with_context(d: Box<Divergence>, context: &dyn Fn() -> Option<String>) -> Box<Divergence> {
    match context() {
        Some(c) => d.with_context(c),
        None => d,
    }
}
