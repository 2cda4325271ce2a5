//! The Node front end: an N-API addon over the replay core, driven by `index.js`.
//!
//! `index.js` replaces `Date.now`, `Date`, `Math.random` and `performance.now` with hooks.
//! Recording, a hook stores its value and a kind code into a `Float64Array`/`Uint8Array`
//! pair on the JS side and hands the batch to [`record_batch`] every few thousand events
//! (crossing N-API per call would cost more than the call itself). Replay asks
//! [`replay_next`] for each value, so the core verifies each call when it happens.
//!
//! Sequence numbers: the core's global counter orders events of all threads. Only the JS
//! main thread records here (the hooks are installed on it only and every entry point below
//! refuses other threads), so no other thread can take a number between a batch's events,
//! and taking the batch's numbers as one block when it is handed over gives every event the
//! number it would have had if taken when it happened.
//!
//! This library translates only: the core writes and reads the log and decides what is a
//! divergence. Errors are returned to JS as exceptions; `index.js` turns them into one line
//! on stderr and switches the hooks off.

use napi::bindgen_prelude::{Float64Array, Uint8Array};
use napi_derive::napi;
use replay_core::report::DivergenceKind;
use replay_core::session::{Core, Session};
use replay_core::{Divergence, Event, Mode, Options, Payload, PayloadRef, Policy};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::thread::ThreadId;

pub mod events;

/// The hooked calls, by the code `index.js` stores beside each value. Clock reads in whole
/// milliseconds are integers (the log stores integer deltas per kind compactly); the others
/// are doubles.
/// `process.hrtime` and `hrtime.bigint` are integer nanoseconds (exact below 2^53 ns, about
/// 104 days of uptime); `performance.timeOrigin` is read once at start.
const KINDS: [(&str, bool); 7] = [
    ("node.Date.now", true),
    ("node.Date", true),
    ("node.Math.random", false),
    ("node.performance.now", false),
    ("node.process.hrtime", true),
    ("node.process.hrtime.bigint", true),
    ("node.performance.timeOrigin", false),
];

pub(crate) struct Active {
    pub(crate) core: Core,
    /// String-table ids of [`KINDS`], in the same order.
    kinds: [u32; KINDS.len()],
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
    if std::thread::current().id() != a.thread {
        return Err(err(
            "called from a thread other than the one that started the session (only the main JS thread records)",
        ));
    }
    Ok(Some(a))
}

/// Starts the session from the `REPLAY_*` environment variables and returns the mode:
/// `"record"`, `"replay"` or `"off"`. A bad option or a log that cannot be created or read
/// prints one line on stderr and returns `"off"` (the program runs live). Only the first
/// call starts anything; later calls return the same mode.
#[napi]
pub fn start(node_version: String) -> Res<String> {
    guarded(|| {
        let a = ACTIVE.get_or_init(|| open(&node_version));
        Ok(match a {
            Some(a) if a.core.mode() == Mode::Record => "record",
            Some(_) => "replay",
            None => "off",
        }
        .to_string())
    })
}

fn open(node_version: &str) -> Option<Active> {
    let (options, unknown) = match Options::from_env() {
        Ok(x) => x,
        Err(e) => {
            eprintln!("replay: {e}; replay is off");
            return None;
        }
    };
    for (k, _) in unknown {
        eprintln!(
            "replay: ignoring unknown variable {k} (known: REPLAY_MODE, REPLAY_LOG, REPLAY_POLICY, REPLAY_ORDER, \
             REPLAY_SYNC, REPLAY_FLUSH, REPLAY_TIMEOUT)"
        );
    }
    let mode = options.mode;
    let core = match Core::start(options, "node", node_version, "node-%p.replay") {
        Ok(Some(c)) => c,
        Ok(None) => return None,
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
    Some(Active {
        core,
        kinds,
        thread: std::thread::current().id(),
        done: AtomicBool::new(false),
    })
}

/// Records the first `n` events of a batch: `values[i]` is what hook `kinds[i]` returned.
#[napi]
pub fn record_batch(values: Float64Array, kinds: Uint8Array, n: u32) -> Res<()> {
    guarded(|| {
        let Some(a) = active()? else { return Ok(()) };
        let Session::Record(rec) = &a.core.session else {
            return Err(err("record_batch called while replaying"));
        };
        let n = n as usize;
        let (values, codes) = (&values[..], &kinds[..]);
        if n > values.len() || n > codes.len() {
            return Err(err(format!(
                "batch of {n} events exceeds its buffers ({} values, {} kinds)",
                values.len(),
                codes.len()
            )));
        }
        if let Some(bad) = codes[..n].iter().find(|&&c| c as usize >= KINDS.len()) {
            return Err(err(format!("unknown hook code {bad} in a batch")));
        }
        // One block of numbers for the batch: safe because only this thread records (see the
        // crate comment), and the events go in with the numbers in their order of happening.
        let first = rec.seq_counter().fetch_add(n as u64, Ordering::Relaxed);
        for (i, (&v, &c)) in values[..n].iter().zip(&codes[..n]).enumerate() {
            let payload = if KINDS[c as usize].1 {
                PayloadRef::Int(v as i64)
            } else {
                PayloadRef::Float(v)
            };
            rec.record_at(first + i as u64, a.kinds[c as usize], 0, None, payload);
        }
        Ok(())
    })
}

/// Replays the next call of hook `code`: its recorded value, or NaN when it has none (replay
/// went live, or the call diverged: then index.js calls [`diverged`]).
#[napi]
pub fn replay_next(code: u32) -> Res<f64> {
    guarded(|| {
        let Some(a) = active()? else {
            return Ok(f64::NAN);
        };
        let Session::Replay(r) = &a.core.session else {
            return Err(err("replay_next called while recording"));
        };
        let Some(&kind) = a.kinds.get(code as usize) else {
            return Err(err(format!("unknown hook code {code}")));
        };
        if r.is_live() {
            return Ok(f64::NAN);
        }
        // Per kind (see Replayer::next_of): the runtime's own clock reads between I/O
        // completions vary with timing, so the order between kinds is not enforced.
        match r.next_of(kind, 0, None) {
            Ok(e) => Ok(value_of(&e, code)),
            Err(d) => {
                // Reported by `diverged`, once index.js has added where the call was made.
                *PENDING.lock().unwrap_or_else(|p| p.into_inner()) = Some(d);
                Ok(f64::NAN)
            }
        }
    })
}

/// A divergence found by [`replay_next`] and not reported yet.
pub(crate) static PENDING: Mutex<Option<Box<Divergence>>> = Mutex::new(None);

/// After [`replay_next`] returned NaN: reports the divergence it found, if any, with
/// `stack` (the JS frames of the call) in the report, and applies the policy. Returns the
/// value the call returns (the recorded one under `warn-continue`), or NaN when it runs live;
/// under `abort` [`exit_code`] is then 86 and index.js exits.
#[napi]
pub fn diverged(code: u32, stack: String) -> Res<f64> {
    guarded(|| {
        let Some(d) = PENDING.lock().unwrap_or_else(|p| p.into_inner()).take() else {
            return Ok(f64::NAN);
        };
        let Some(a) = active()? else {
            return Ok(f64::NAN);
        };
        Ok(match report(a, d, stack) {
            Some(e) => value_of(&e, code),
            None => f64::NAN,
        })
    })
}

/// Reports divergence `d` (with the JS `stack` of the call) under the session's policy.
/// Returns the recorded event the call should get instead of running live (warn-continue),
/// else None. Under `abort` this prints the report, sets [`exit_code`] to 86 and switches the
/// session off; the JS side then exits.
pub(crate) fn report(a: &Active, d: Box<Divergence>, stack: String) -> Option<Event> {
    let d = if stack.is_empty() {
        d
    } else {
        d.with_context(stack)
    };
    if a.core.options.policy == Policy::Abort {
        // The core's own abort would call exit() from inside a JS call.
        abort(&d);
        a.done.store(true, Ordering::Relaxed);
        return None;
    }
    let expected = d.expected.clone();
    let stalled = matches!(d.kind, DivergenceKind::Stalled { .. });
    a.core.diverged(&d);
    match (a.core.options.policy, expected) {
        (Policy::WarnContinue, Some(e)) if !stalled => Some(e),
        _ => None,
    }
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

static ABORTED: AtomicBool = AtomicBool::new(false);

/// The `abort` policy's report. The process exit is left to `index.js` (`process.exit`), so
/// that Node shuts down its own threads instead of having exit() called under them.
fn abort(d: &Divergence) {
    eprintln!(
        "{}  (policy abort: exiting with status {})",
        d.render(),
        replay_core::EXIT_DIVERGENCE
    );
    ABORTED.store(true, Ordering::Relaxed);
}

/// 86 once replay stopped on a divergence under the `abort` policy, else 0.
#[napi]
pub fn exit_code() -> i32 {
    if ABORTED.load(Ordering::Relaxed) {
        replay_core::EXIT_DIVERGENCE
    } else {
        0
    }
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

/// Ends the session (call once, at exit, after the last batch). Record: closes the log.
/// Replay: events left over are a divergence. Returns the exit status the process should
/// end with: 86 after a divergence under `abort`, else 0 (problems are printed as one line).
#[napi]
pub fn shutdown() -> Res<i32> {
    guarded(|| {
        let Some(a) = active()? else {
            return Ok(exit_code());
        };
        a.done.store(true, Ordering::Relaxed);
        if let (Session::Replay(r), Policy::Abort) = (&a.core.session, a.core.options.policy) {
            // As in replay_next: report, and leave the exit to the caller.
            if let Err(d) = r.finish() {
                abort(&d);
                return Ok(replay_core::EXIT_DIVERGENCE);
            }
            return Ok(0);
        }
        if let Err(msg) = a.core.shutdown() {
            eprintln!("replay: {msg}");
        }
        Ok(0)
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
