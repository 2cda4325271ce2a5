//! The Node front end: an N-API addon over the replay core, driven by `index.js`.
//!
//! `index.js` replaces `Date.now`, `Date`, `Math.random` and `performance.now` with hooks.
//! Recording, a hook stores its value and a kind code into a `Float64Array`/`Uint8Array`
//! pair over native memory and hands the batch to [`record_batch`] every few thousand events
//! (crossing N-API per call would cost more than the call itself); the structured events of
//! `lib/events.js` (files, sockets, completions) ride in the same batch, marked
//! [`drain::K_QUEUED`] in their place among the clock reads. The core's flusher takes what
//! was published in between, so nothing waits for the JS thread to reach the log
//! (src/drain.rs); SIGTERM/SIGINT write everything before the process dies (src/signals.rs). Replay fetches a run of
//! a kind's next values per crossing ([`replay_run`]) that the JS side serves call by call;
//! a call with none left is reported at that call, values unused at exit go back to the core
//! ([`replay_unread`]) and count as left over. `Math.random` is a generator seeded from the
//! log (see "Math.random" below).
//!
//! Sequence numbers: the core's global counter orders events of all threads. Only the JS
//! main thread records here (the hooks are installed on it only and every entry point below
//! refuses other threads), so no other thread can take a number between a batch's events,
//! and taking the batch's numbers as one block when it is handed over gives every event the
//! number it would have had if taken when it happened.
//!
//! This library translates only: the core writes and reads the log, decides what is a
//! divergence and what the program gets then (its [`Verdict`]). Verdicts are applied in one
//! place on this side, [`apply`]: a stop is noted for the JS side ([`stop_code`]), which ends
//! the process (index.js `stop`), since only JS can leave Node safely. Errors are returned to
//! JS as exceptions; `index.js` turns them into one line on stderr and switches the hooks off.
//!
//! Divergence reports carry the JS stack of the call: the entry points that can find one take
//! the `Env` and call the stack function `index.js` handed [`start`] ([`js_stack`]), only when
//! there is something to report.
//!
//! Output (the program's writes to stdout/stderr, `src/output.rs`): recorded through the
//! JS-side batch like the other queued events, compared in replay on the JS side against
//! recorded bytes fetched in chunks, the core seeing every byte ([`Core::output`]).

use napi::bindgen_prelude::{BufferSlice, Float64Array, Function, FunctionRef, Uint8Array};
use napi::Env;
use napi_derive::napi;
use replay_core::report::DivergenceKind;
use replay_core::session::{Core, Frontend, Session, Verdict, OUTPUT_KINDS};
use replay_core::{Divergence, Event, Mode, Options, Payload, PayloadRef};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::thread::ThreadId;

mod drain;
pub mod events;
pub mod modules;
pub mod output;
mod signals;
mod stage;

/// How a hook's values are stored: clock reads in whole milliseconds or nanoseconds are
/// integers (the log stores integer deltas per kind compactly), the others doubles.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Num {
    Int,
    Float,
    /// A count: `node.Math.random`'s checkpoints (see [`record_random_seed`]).
    Uint,
}

/// The hooked calls, by the code `index.js` stores beside each value.
/// `process.hrtime` and `hrtime.bigint` are integer nanoseconds (exact below 2^53 ns, about
/// 104 days of uptime); `performance.timeOrigin` is read once at start. `Math.random` is not
/// one event per call: its batch entries are checkpoints (the number of calls so far).
const KINDS: [(&str, Num); 8] = [
    ("node.Date.now", Num::Int),
    ("node.Date", Num::Int),
    ("node.Math.random", Num::Uint),
    ("node.performance.now", Num::Float),
    ("node.process.hrtime", Num::Int),
    ("node.process.hrtime.bigint", Num::Int),
    ("node.performance.timeOrigin", Num::Float),
    // A worker thread's Math.random: each value (workers record per call, see `worker_start`).
    ("node.Math.random.value", Num::Float),
];

/// `Math.random`'s code in [`KINDS`].
pub(crate) const K_RANDOM: usize = 2;

pub(crate) struct Active {
    pub(crate) core: Core,
    /// String-table ids of [`KINDS`], in the same order.
    kinds: [u32; KINDS.len()],
    /// String-table ids of [`OUTPUT_KINDS`] (stdout, stderr).
    pub(crate) out_kinds: [u32; 2],
    /// The thread that started the session: logical thread 0, the only one that records.
    thread: ThreadId,
    /// Set once the session was shut down (or disabled); later calls do nothing.
    pub(crate) done: AtomicBool,
}

/// The session, started once per process. Never dropped: the core's threads and the
/// process exit path may still look at it.
static ACTIVE: OnceLock<Option<Active>> = OnceLock::new();

pub(crate) type Res<T> = napi::Result<T>;

pub(crate) fn err(msg: impl Into<String>) -> napi::Error {
    napi::Error::from_reason(msg.into())
}

/// Runs `f`, turning a panic (an internal error) into an exception `index.js` reports.
pub(crate) fn guarded<T>(f: impl FnOnce() -> Res<T>) -> Res<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => {
            if let Some(Some(a)) = ACTIVE.get() {
                a.done.store(true, Ordering::Relaxed);
            }
            Err(err("internal error (a panic in the native part)"))
        }
    }
}

/// The live session, checked to be called from the thread that started it.
pub(crate) fn active() -> Res<Option<&'static Active>> {
    let Some(Some(a)) = ACTIVE.get() else {
        return Ok(None);
    };
    if a.done.load(Ordering::Relaxed) {
        return Ok(None);
    }
    if std::thread::current().id() != a.thread && !WORKER.get() {
        return Err(err(
            "called from a thread other than the one that started the session (only the main JS thread and worker threads that started records)",
        ));
    }
    Ok(Some(a))
}

thread_local! {
    /// This thread is a worker thread that joined the session ([`worker_start`]).
    static WORKER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Its stack function (lib/events.js `stack`), for divergence reports. Never released:
    /// the worker's environment may be gone by the time the thread's locals are.
    static WORKER_STACK: std::cell::RefCell<Option<std::mem::ManuallyDrop<FunctionRef<(), String>>>> =
        const { std::cell::RefCell::new(None) };
}

/// Whether the calling thread is the session's main JS thread (its events go through the
/// drain's appender; a worker's through its own logical thread).
pub(crate) fn on_main(a: &Active) -> bool {
    std::thread::current().id() == a.thread
}

// ---- worker threads ----------------------------------------------------------------------
//
// A worker thread runs index.js too (workers inherit --require); it joins the session as a
// logical thread of its own named `worker N` (N: its threadId, given in creation order, so
// replay binds each worker to the recorded thread of the same name). Workers are rarer and
// less hot than the main thread: their hooks cross per call, and each Math.random value is
// an event (`node.Math.random.value`). Events of lib/events.js (fs reads, completions) go
// through the same `ev_*` functions, recorded on the worker's own thread.

/// Joins the calling worker thread to the session as logical thread `name`; returns the
/// mode (`"record"`, `"replay"`, or `"off"` when there is no session).
#[napi]
pub fn worker_start(name: String, stack: Function<(), String>) -> Res<String> {
    guarded(|| {
        let stack = stack.create_ref()?;
        WORKER_STACK.with(|w| *w.borrow_mut() = Some(std::mem::ManuallyDrop::new(stack)));
        let Some(Some(a)) = ACTIVE.get() else {
            return Ok("off".into());
        };
        if a.done.load(Ordering::Relaxed) || on_main(a) {
            return Ok("off".into());
        }
        a.core.name_thread(&name);
        WORKER.set(true);
        Ok(if a.core.mode() == Mode::Record {
            "record".into()
        } else {
            "replay".into()
        })
    })
}

/// Record, on a worker: hook `code` returned `value`.
#[napi]
pub fn worker_record(code: u32, value: f64) -> Res<()> {
    guarded(|| {
        let Some(a) = active()? else { return Ok(()) };
        let Some(&(_, num)) = KINDS.get(code as usize) else {
            return Err(err(format!("unknown hook code {code}")));
        };
        let payload = match num {
            Num::Int => PayloadRef::Int(value as i64),
            Num::Float => PayloadRef::Float(value),
            Num::Uint => PayloadRef::Uint(value as u64),
        };
        a.core.record(a.kinds[code as usize], 0, None, payload);
        Ok(())
    })
}

/// Replay, on a worker: the value of hook `code`'s next call, NaN when the call is not
/// replayed (gone live, or a divergence: then [`stop_code`] may say stop).
#[napi]
pub fn worker_replay(env: &Env, code: u32) -> Res<f64> {
    guarded(|| {
        let Some(a) = active()? else {
            return Ok(f64::NAN);
        };
        let Some(&kind) = a.kinds.get(code as usize) else {
            return Err(err(format!("unknown hook code {code}")));
        };
        Ok(
            match apply(a.core.replay(kind, 0, None, &|| js_stack(env))) {
                Some(e) => value_of(&e, code),
                None => f64::NAN,
            },
        )
    })
}

/// Ends the process after a stop verdict given on a worker (exiting a worker thread would
/// end only the worker); the report is written already.
#[napi]
pub fn worker_stop() {
    let code = STOP.load(Ordering::Relaxed);
    if code != 0 {
        // SAFETY: _exit ends the process at once; nothing of this replay needs writing.
        unsafe { libc::_exit(code) };
    }
}

/// Starts the session from the `REPLAY_*` environment variables and returns the mode:
/// `"record"`, `"replay"` or `"off"`. A bad option or a log that cannot be created or read
/// prints one line on stderr and returns `"off"` (the program runs live). A log that must not
/// be replayed by this program at all (recorded by another runtime or program) prints one
/// line and returns `"exit N"`: index.js ends the process with status N before the program
/// runs. Only the first call starts anything; later calls return the same mode.
/// `program` is the script (or `-e`, `repl`), `argv` the process's arguments without the
/// option that loaded this package (it differs between record and replay as the JVM's
/// `-agentpath` does), `stack` the function giving the program's JS frames for divergence
/// reports ([`js_stack`]).
#[napi]
pub fn start(
    node_version: String,
    program: String,
    argv: Vec<String>,
    stack: Function<(), String>,
) -> Res<String> {
    guarded(|| {
        if STACK.get().is_none() {
            let _ = STACK.set(stack.create_ref()?);
        }
        let a = ACTIVE.get_or_init(|| open(&node_version, &program, &argv));
        Ok(match a {
            Some(a) if a.core.mode() == Mode::Record => "record".to_string(),
            Some(_) => "replay".to_string(),
            None => match START_EXIT.load(Ordering::Relaxed) {
                0 => "off".to_string(),
                code => format!("exit {code}"),
            },
        })
    })
}

/// The exit status a refused log demands ([`start`]), 0 for none.
static START_EXIT: AtomicI32 = AtomicI32::new(0);

/// index.js's stack function (`lib/events.js` `stack`). Never dropped: a reference is
/// released on the JS thread only, and the process may end anywhere.
static STACK: OnceLock<FunctionRef<(), String>> = OnceLock::new();

/// The program's JS frames at the current call, for a divergence report (called only when
/// there is one: building a stack costs microseconds).
pub(crate) fn js_stack(env: &Env) -> Option<String> {
    if WORKER.get() {
        // A worker's own function: a reference is usable only in the environment that made it.
        return WORKER_STACK.with(|w| {
            let w = w.borrow();
            let f = w.as_ref()?.borrow_back(env).ok()?;
            f.call(()).ok().filter(|s| !s.is_empty())
        });
    }
    let f = STACK.get()?.borrow_back(env).ok()?;
    f.call(()).ok().filter(|s| !s.is_empty())
}

fn open(node_version: &str, program: &str, argv: &[String]) -> Option<Active> {
    let (options, unknown) = match Options::from_env() {
        Ok(x) => x,
        Err(e) => {
            eprintln!("replay: {e}; replay is off");
            return None;
        }
    };
    // REPLAY_REDACT and REPLAY_REDACT_KEY are Node-only (read by lib/net.js), not core options.
    for (k, _) in unknown
        .into_iter()
        .filter(|(k, _)| k != "REPLAY_REDACT" && k != "REPLAY_REDACT_KEY")
    {
        eprintln!(
            "replay: ignoring unknown variable {k} (known: REPLAY_MODE, REPLAY_LOG, REPLAY_POLICY, REPLAY_ORDER, \
             REPLAY_SYNC, REPLAY_FLUSH, REPLAY_TIMEOUT, REPLAY_COMPRESS, REPLAY_VERIFY_OUTPUT, REPLAY_REDACT, REPLAY_REDACT_KEY)"
        );
    }
    let mode = options.mode;
    let fe = Frontend {
        runtime: "node",
        runtime_version: node_version,
        program,
        default_log: "node-%p.replay",
        // index.js hands over every write to stdout/stderr and the exit status.
        output: true,
        // One event loop: each kind is a stream of its own (see `next_of`).
        per_kind: true,
        argv: Some(argv),
    };
    let core = match Core::start(options, &fe) {
        Ok(Some(c)) => c,
        Ok(None) => return None,
        Err(e) if e.exit.is_some() => {
            // Not this program's log: nothing it would do could be replayed.
            eprintln!("replay: {e}");
            START_EXIT.store(e.exit.unwrap_or(1), Ordering::Relaxed);
            return None;
        }
        Err(msg) => {
            let then = if mode == Mode::Record {
                "the program runs without recording"
            } else {
                "replay is off"
            };
            eprintln!("replay: {msg}; {then}");
            return None;
        }
    };
    let kinds = KINDS.map(|(name, _)| core.intern(name));
    let out_kinds = OUTPUT_KINDS.map(|name| core.intern(name));
    if let Session::Record(rec) = &core.session {
        // Everything this thread records goes through the appender, which the flusher also
        // drains the JS side's buffer with (src/drain.rs).
        let nums = KINDS
            .iter()
            .zip(kinds)
            .map(|((_, n), id)| (id, *n))
            .collect();
        drain::start(rec.appender(), nums, out_kinds);
        rec.on_round(drain::on_round);
        signals::install(rec.clone());
    }
    Some(Active {
        core,
        kinds,
        out_kinds,
        thread: std::thread::current().id(),
        done: AtomicBool::new(false),
    })
}

/// Record: the program removed its last listener of signal `sig` (lib/signals.js): our
/// handler that completes the log comes back in place of the default action.
#[napi]
pub fn signal_default(sig: i32) {
    signals::reinstall(sig);
}

/// Replay: the pid of the recorded process (0 when not replaying). Node prints it in its
/// warnings (`(node:PID) Warning: ...`): lib/output.js compares such a line with the
/// recorded pid in it, as the recorded run printed it.
#[napi]
pub fn recorded_pid() -> Res<u32> {
    guarded(|| {
        Ok(match active()?.map(|a| &a.core.session) {
            Some(Session::Replay(r)) => r.header().pid,
            _ => 0,
        })
    })
}

/// The exit status of the stop verdict applied, 0 while there was none. The JS side asks
/// after a call that was not replayed, and ends the process with it (index.js `stop`).
static STOP: AtomicI32 = AtomicI32::new(0);

/// Applies the core's verdict on a replayed call: the one place this side does. The event
/// to serve, or `None` to run the call live; a stop is noted for [`stop_code`] (the call is
/// not served, and the JS side ends the process before it runs).
pub(crate) fn apply(v: Verdict) -> Option<Event> {
    match v {
        Verdict::Serve(e) => Some(e),
        Verdict::Live => None,
        Verdict::Stop(code) => {
            STOP.store(code, Ordering::Relaxed);
            None
        }
    }
}

/// The exit status replay stopped with (a divergence under `abort`), else 0.
#[napi]
pub fn stop_code() -> i32 {
    STOP.load(Ordering::Relaxed)
}

/// Whether the program's writes to stdout/stderr are handed over (record with
/// verify-output on; replay of a log holding them with it on).
#[napi]
pub fn wants_output() -> Res<bool> {
    guarded(|| Ok(active()?.is_some_and(|a| a.core.wants_output())))
}

/// The program's exit status, from process 'exit' (before [`shutdown`]): recorded in the
/// trailer, compared in replay.
#[napi]
pub fn exit_status(code: i32) -> Res<()> {
    guarded(|| {
        if let Some(a) = active()? {
            a.core.exit_status(code);
        }
        Ok(())
    })
}

/// The program wrote `data` into the file `path` (lib/fs.js): summed per path, compared at
/// the end of replay with the recording's ([`replay_core::session::Core::file_written`]).
#[napi]
pub fn file_written(path: String, data: Uint8Array) -> Res<()> {
    guarded(|| {
        if let Some(a) = active()? {
            a.core.file_written(&path, &data);
        }
        Ok(())
    })
}

/// What the JS side counts as let run live by rule ([`ran_live`]); the core keeps static
/// names. Whether replay sees nothing of what it does (its own output goes to the inherited
/// stdout, its reads are not replayed): then a replay that did not diverge says so at its end.
const LIVE_KINDS: [(&str, bool); 10] = [
    ("worker thread", true),
    ("child process", true),
    // Replayed from its own log by the process tree, which checks it (and the launcher says
    // when it diverged).
    ("child process with its own log", false),
    ("vm context", false),
    // A timer of the program that fires on real time (lib/timers.js: after replay went live).
    ("timer", false),
    // A native addon of the program (index.js): what it reads in native code is not replayed.
    ("native addon", true),
    // A TLS server of the program (lib/net.js): it serves the clients of the replay's time.
    ("TLS server", true),
    // Not recorded (lib/net.js): UDP, and sockets on a file-system path. What comes over
    // them is the world of the replay's time: said at once, as a replay whose peer is gone
    // may wait for ever.
    ("UDP socket", true),
    ("unix socket", true),
    // A SharedArrayBuffer a worker thread got (index.js): the threads' reads and writes of
    // it, and their order, are not recorded.
    ("shared memory", true),
];

/// Kinds of [`LIVE_KINDS`] said on stderr at their first use, not only at the end.
const SAID_AT_ONCE: [(&str, &str); 2] = [
    (
        "UDP socket",
        "UDP sockets are not recorded: this replay's talk to whoever sends now, and waits for ever for a sender that is gone",
    ),
    (
        "unix socket",
        "sockets on a file-system path are not recorded: this replay's talk to whoever listens or connects there now",
    ),
];
static SAID: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());

/// Replay: one thing of kind `what` (one of [`LIVE_KINDS`]) ran live by rule; reports list
/// the counts.
#[napi]
pub fn ran_live(what: String) -> Res<()> {
    guarded(|| {
        if let Some(a) = active()? {
            match LIVE_KINDS.iter().find(|(k, _)| *k == what) {
                Some((k, true)) => a.core.ran_unchecked(k),
                Some((k, false)) => a.core.ran_live(k),
                None => {}
            }
            if let Some((k, line)) = SAID_AT_ONCE.iter().find(|(k, _)| *k == what) {
                let mut said = SAID.lock().unwrap_or_else(|p| p.into_inner());
                if !said.contains(k) {
                    said.push(k);
                    eprintln!("replay: warning: {line}");
                }
            }
        }
        Ok(())
    })
}

/// Replay: one `what` (a child process replayed from the parent's side) was answered from
/// the recording and not started; the end of the replay says so.
#[napi]
pub fn not_run(what: String) -> Res<()> {
    guarded(|| {
        if let Some(a) = active()? {
            if what == "child process" {
                a.core.not_run("child process");
            }
        }
        Ok(())
    })
}

/// The index of a free staging block ([`stage`]) for `index.js`'s queue, or -1 when all
/// are held (the queue then uses a Buffer of its own, copied at the crossing).
#[napi]
pub fn stage_next() -> Res<i32> {
    guarded(|| Ok(next_block()))
}

fn next_block() -> i32 {
    stage::next().map_or(-1, |i| i as i32)
}

/// Staging block `i` as a Buffer over its memory; null if it was asked for before (V8
/// refuses a second Buffer over memory one already covers: the JS side keeps the first).
#[napi]
pub fn stage_block(env: &Env, i: u32) -> Res<Option<BufferSlice<'_>>> {
    guarded(|| {
        let Some(ptr) = stage::expose(i as usize) else {
            return Ok(None);
        };
        // SAFETY: the block's memory is never freed (see `stage`), so the Buffer may live as
        // long as the process; nothing to finalize.
        let b = unsafe { BufferSlice::from_external(env, ptr, stage::BLOCK_BYTES, (), |_, _| {}) }?;
        // A runtime that copies external memory gives a Buffer the flusher cannot read: the
        // JS side then uses a Buffer of its own (whose events only it hands over).
        Ok(std::ptr::eq(b.as_ptr(), ptr).then_some(b))
    })
}

/// The shared region of `index.js`'s event buffer (src/drain.rs), as a Buffer over its
/// memory; null after the first call, or when this runtime copies external memory (the
/// buffer would not be shared then: JS reports it and records nothing).
#[napi]
pub fn shared_region(env: &Env) -> Res<Option<BufferSlice<'_>>> {
    guarded(|| {
        static GIVEN: AtomicBool = AtomicBool::new(false);
        if GIVEN.swap(true, Ordering::Relaxed) {
            return Ok(None);
        }
        let ptr = drain::region();
        // SAFETY: the region is never freed (drain::region), so the Buffer may live as long
        // as the process; nothing to finalize.
        let b =
            unsafe { BufferSlice::from_external(env, ptr, drain::REGION_BYTES, (), |_, _| {}) }?;
        Ok(std::ptr::eq(b.as_ptr(), ptr).then_some(b))
    })
}

/// Hands over the batch: records the events `index.js` published and the flusher has not
/// taken yet, the first `n` in all (src/drain.rs), and starts the buffer over. `data` is
/// the queue's own Buffer when it is not writing a staging block. Returns the staging block
/// the queue uses next ([`stage_next`]).
#[napi]
pub fn record_batch(n: u32, data: Option<BufferSlice>) -> Res<i32> {
    guarded(|| {
        let Some(a) = active()? else {
            return Ok(-1);
        };
        let Session::Record(_) = &a.core.session else {
            return Err(err("record_batch called while replaying"));
        };
        let mut g = drain::lock();
        if let Some(st) = g.as_mut() {
            // JS published all `n` before this call and publishes nothing during it.
            let read_at = st.clock_ns();
            let r = st.consume((n as usize).min(drain::SLOTS), data.as_deref());
            if r.is_ok() {
                st.drained(read_at);
            }
            st.reset();
            r.map_err(err)?;
        }
        Ok(next_block())
    })
}

/// Replay: the events of the run last fetched per hook code by [`replay_run`], which the JS
/// side serves from its buffer; what it did not use goes back at exit ([`replay_unread`]).
static RUNS: Mutex<[Vec<Event>; KINDS.len()]> = Mutex::new([const { Vec::new() }; KINDS.len()]);

/// Replays a run of hook `code`'s calls in one crossing: fills `buf` with the values of the
/// kind's next recorded events (at least one, at most `buf.len()`; `Replayer::next_of_run`)
/// and returns how many. The JS side serves them to the next calls of that hook; since each
/// kind is its own stream and clock events carry no input, nothing else needs checking per
/// call. A call with none left is a divergence, reported here with the JS stack through the
/// core, whose verdict decides: 1 with the recorded value (warn-continue), or 0: the call is
/// not replayed (it runs live, or replay stopped: [`stop_code`]). A value that is not a
/// number is NaN in `buf` (that call runs live).
#[napi]
pub fn replay_run(env: &Env, code: u32, mut buf: Float64Array) -> Res<u32> {
    guarded(|| {
        let Some(a) = active()? else { return Ok(0) };
        let Session::Replay(_) = &a.core.session else {
            return Err(err("replay_run called while recording"));
        };
        let Some(&kind) = a.kinds.get(code as usize) else {
            return Err(err(format!("unknown hook code {code}")));
        };
        if buf.is_empty() {
            return Ok(0);
        }
        let mut runs = RUNS.lock().unwrap_or_else(|p| p.into_inner());
        let run = &mut runs[code as usize];
        // SAFETY: the JS main thread, the only one that uses this buffer, is inside this
        // synchronous call (active() checked the thread), so nothing else touches it now.
        let slots = unsafe { buf.as_mut() };
        if let Some(v) = a.core.replay_run(kind, slots.len(), run, &|| js_stack(env)) {
            return Ok(match apply(v) {
                Some(e) => {
                    slots[0] = value_of(&e, code);
                    1
                }
                None => 0,
            });
        }
        for (slot, e) in slots.iter_mut().zip(run.iter()) {
            *slot = value_of(e, code);
        }
        Ok(run.len() as u32)
    })
}

/// At exit (or before fetching anew): the JS side used only the first `used` values of the
/// run last fetched for `code`; the rest go back to the kind's stream, so that the end of
/// replay reports them as recorded events left over.
#[napi]
pub fn replay_unread(code: u32, used: u32) -> Res<()> {
    guarded(|| {
        let Some(a) = active()? else { return Ok(()) };
        let Session::Replay(_) = &a.core.session else {
            return Err(err("replay_unread called while recording"));
        };
        let Some(&kind) = a.kinds.get(code as usize) else {
            return Err(err(format!("unknown hook code {code}")));
        };
        let mut runs = RUNS.lock().unwrap_or_else(|p| p.into_inner());
        let run = &mut runs[code as usize];
        let used = (used as usize).min(run.len());
        a.core.unread(kind, run.split_off(used));
        run.clear();
        Ok(())
    })
}

/// Whether replay went live (after a divergence under `warn-live`): the JS side then drops
/// the values it buffered.
#[napi]
pub fn is_live() -> Res<bool> {
    guarded(|| {
        Ok(match active()? {
            Some(a) => match &a.core.session {
                Session::Replay(r) => r.is_live(),
                Session::Record(_) => false,
            },
            None => true,
        })
    })
}

// ---- Math.random -------------------------------------------------------------------------
//
// Recording every random double would cost more than the call (they do not compress), so
// index.js runs a xorshift128+ generator of its own in both modes. The `node.Math.random`
// stream holds its seed (16 bytes of real entropy, one Bytes event at the first call) and
// then checkpoints: the number of calls made so far, one Uint event per batch flush that saw
// calls. Replay regenerates the values from the seed and lets the program make calls up to
// the last checkpoint it has fetched; the call after it fetches the next checkpoint, and
// finding none is a divergence at that very call. At exit, fewer calls than recorded is one.

/// Record: the generator's seed, one event (the JS side hands its buffered clock events over
/// first, so the sequence numbers stay in order).
#[napi]
pub fn record_random_seed(seed: Uint8Array) -> Res<()> {
    guarded(|| {
        let Some(a) = active()? else { return Ok(()) };
        let Session::Record(_) = &a.core.session else {
            return Err(err("record_random_seed called while replaying"));
        };
        if let Some(app) = drain::lock().as_ref().and_then(|st| st.appender.as_ref()) {
            app.record(a.kinds[K_RANDOM], 0, None, PayloadRef::Bytes(&seed));
        }
        Ok(())
    })
}

/// Replay: the last checkpoint taken (what a shortfall at exit is reported against).
static RANDOM_LAST: Mutex<Option<Event>> = Mutex::new(None);

fn random_last() -> std::sync::MutexGuard<'static, Option<Event>> {
    RANDOM_LAST.lock().unwrap_or_else(|p| p.into_inner())
}

/// The count a checkpoint holds.
fn checkpoint(e: &Event) -> Option<u64> {
    match e.payload {
        Payload::Uint { value } => Some(value),
        _ => None,
    }
}

/// Replay, first call: copies the recorded seed into `out` (16 bytes) and returns true;
/// false when the call is not replayed (went live, stopped, or no seed recorded: a
/// divergence at Math.random call number `call`, reported here).
#[napi]
pub fn random_seed(env: &Env, mut out: Uint8Array, call: f64) -> Res<bool> {
    guarded(|| {
        let Some(a) = active()? else { return Ok(false) };
        let Session::Replay(r) = &a.core.session else {
            return Err(err("random_seed called while recording"));
        };
        if let Some(c) = a.core.stopped() {
            apply(Verdict::Stop(c));
            return Ok(false);
        }
        if r.is_live() {
            return Ok(false);
        }
        match r.next_of(a.kinds[K_RANDOM], 0, None) {
            Ok(e) => match &e.payload {
                Payload::Bytes { data } if data.len() == out.len() => {
                    // SAFETY: as in replay_run, the only thread that uses the array waits
                    // in this call.
                    unsafe { out.as_mut() }.copy_from_slice(data);
                    Ok(true)
                }
                other => Err(err(format!(
                    "event #{} (node.Math.random) holds {} where this addon records a {}-byte seed \
                     (a log of an older version?)",
                    e.seq,
                    other.summary(),
                    out.len()
                ))),
            },
            Err(d) => {
                random_diverged(env, a, d, call);
                Ok(false)
            }
        }
    })
}

/// Replay: the next checkpoint, the number of calls the recording had made by then; NaN
/// when the call is not replayed (went live, stopped, or no checkpoint left: a divergence
/// at Math.random call number `call`, reported here).
#[napi]
pub fn random_checkpoint(env: &Env, call: f64) -> Res<f64> {
    guarded(|| {
        let Some(a) = active()? else {
            return Ok(f64::NAN);
        };
        let Session::Replay(r) = &a.core.session else {
            return Err(err("random_checkpoint called while recording"));
        };
        if let Some(c) = a.core.stopped() {
            apply(Verdict::Stop(c));
            return Ok(f64::NAN);
        }
        if r.is_live() {
            return Ok(f64::NAN);
        }
        match r.next_of(a.kinds[K_RANDOM], 0, None) {
            Ok(e) => {
                let Some(n) = checkpoint(&e) else {
                    return Err(err(format!(
                        "event #{} (node.Math.random) holds {} where this addon records a call count",
                        e.seq,
                        e.payload.summary()
                    )));
                };
                *random_last() = Some(e);
                Ok(n as f64)
            }
            Err(d) => {
                random_diverged(env, a, d, call);
                Ok(f64::NAN)
            }
        }
    })
}

/// Reports the divergence [`random_seed`] or [`random_checkpoint`] found at call number
/// `call`, with the JS stack, through the core. A call past the recorded ones is reported
/// with the recorded number of calls (not of checkpoints) as the stream's length. The call
/// runs live whatever the verdict (there is no recorded value to fall back on), unless
/// replay stopped.
fn random_diverged(env: &Env, a: &Active, mut d: Box<Divergence>, call: f64) {
    let made = random_last().as_ref().and_then(checkpoint).unwrap_or(0);
    if let DivergenceKind::Exhausted { recorded, .. } = &mut d.kind {
        *recorded = made;
    }
    let stack = js_stack(env).unwrap_or_default();
    let context =
        format!("Math.random call #{call}; the recording made {made} Math.random calls\n{stack}");
    apply(a.core.diverged(d.with_context(context)));
}

/// Replay, at exit: the program made `calls` calls of Math.random. Fewer than the recording
/// made (the last checkpoint taken says more, or another checkpoint or the seed is still in
/// the log) is a divergence, reported through the core ([`stop_code`] then says a stop).
#[napi]
pub fn random_end(calls: f64) -> Res<()> {
    guarded(|| {
        let Some(a) = active()? else { return Ok(()) };
        let Session::Replay(r) = &a.core.session else {
            return Err(err("random_end called while recording"));
        };
        if r.is_live() || a.core.stopped().is_some() {
            return Ok(());
        }
        let calls = calls as u64;
        let last = random_last().clone();
        let expected = match last {
            Some(e) if checkpoint(&e).is_some_and(|n| n > calls) => e,
            // Past the last checkpoint taken: one more in the log means the recording went on.
            _ => match r.next_of(a.kinds[K_RANDOM], 0, None) {
                Ok(e) => e,
                Err(_) => return Ok(()),
            },
        };
        let made = checkpoint(&expected).map_or_else(
            || "the recording made Math.random calls".to_string(),
            |n| format!("the recording made {n}"),
        );
        let d = r.mismatch(expected, a.core.intern("end of the program"), 0, None);
        let context = format!("the program ended after {calls} Math.random calls; {made}");
        apply(a.core.diverged(d.with_context(context)));
        Ok(())
    })
}

/// The number a recorded event holds, NaN (run live) when it holds something else.
fn value_of(event: &Event, code: u32) -> f64 {
    match &event.payload {
        Payload::Int { value } => *value as f64,
        Payload::Float { value } => *value,
        Payload::Uint { value } => *value as f64,
        other => {
            // Kind matched, so only a log written by something else gets here.
            eprintln!(
                "replay: event #{} ({}) holds {} where a number was recorded by this addon; the call runs live",
                event.seq,
                KINDS.get(code as usize).map_or("?", |k| k.0),
                other.summary()
            );
            f64::NAN
        }
    }
}

/// The session's flush interval (`REPLAY_FLUSH`) in milliseconds, which `index.js` also
/// hands its batch over by; an event is in the log within this either way (src/drain.rs).
#[napi]
pub fn flush_ms() -> Res<u32> {
    guarded(|| {
        Ok(active()?.map_or(100, |a| {
            a.core.options.flush.as_millis().min(u128::from(u32::MAX)) as u32
        }))
    })
}

/// Record: writes everything handed over so far to the log and waits until it is written.
#[napi]
pub fn flush() -> Res<()> {
    guarded(|| {
        if let Some(a) = active()? {
            if let Session::Record(r) = &a.core.session {
                r.flush();
                if let Some(f) = r.failure() {
                    return Err(err(format!("writing the log failed: {f}")));
                }
            }
        }
        Ok(())
    })
}

/// Ends the session (call once, at exit, after the last batch and [`exit_status`]). Record:
/// closes the log. Replay: the core checks the end (events and output left over, the exit
/// status) under the policy. Returns the exit status the process must end with: a stop's
/// (86 after a divergence under `abort`), else 0 (problems are printed as one line).
#[napi]
pub fn shutdown() -> Res<i32> {
    guarded(|| {
        let Some(a) = active()? else {
            return Ok(stop_code());
        };
        a.done.store(true, Ordering::Relaxed);
        match a.core.shutdown() {
            Ok(v) => {
                apply(v);
            }
            Err(msg) => eprintln!("replay: {msg}"),
        }
        Ok(stop_code())
    })
}

/// Switches the session off after an internal error on the JS side (later calls do
/// nothing). Record: what was recorded so far stays in the log, which is closed.
#[napi]
pub fn disable() {
    if let Some(Some(a)) = ACTIVE.get() {
        if !a.done.swap(true, Ordering::Relaxed) {
            if let Session::Record(r) = &a.core.session {
                let _ = r.finish();
            }
        }
    }
}
