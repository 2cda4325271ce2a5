//! The C front end: a C ABI over the replay core, plus the macros of `include/replay.h`.
//!
//! A C program wraps its non-deterministic calls in macros (`REPLAY_VALUE`, `REPLAY_CALL`,
//! `REPLAY_CALL_OUT`, `REPLAY_READ`). Each macro use owns a `static` [`replay_site`] that
//! caches the string-table ids of its kind and call site and its input digest, so the hot
//! path does no string work. With replay off a macro costs one predictable branch on
//! [`replay_active`]; with it on, the macro makes two calls into this library: one to enter
//! (which takes the core's nested-call guard in record) and one to record or replay.
//!
//! This library only translates: the core sequences, writes and reads the log and decides
//! what is a divergence. What this side adds is the C view of a payload: whether a recorded
//! value fits the C type at the call site (see [`fit`]).
//!
//! The header is generated from this file by cbindgen (see `build.rs`); the doc comments on
//! the exported items are the header's documentation.

#![allow(non_camel_case_types, non_upper_case_globals)]

mod fit;
mod sched;

pub use sched::*;

use replay_core::guard::HookGuard;
use replay_core::report::{Actual, Divergence, DivergenceKind};
use replay_core::session::{Core, Frontend, Session, Verdict};
use replay_core::{Event, Mode, Options, PayloadRef};
use std::borrow::Cow;
use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

/// `replay_enter`: run the call live and do not record it (replay off, gone live, or a
/// nested macro use inside a call that is already being recorded).
pub const REPLAY_ENTER_LIVE: c_int = 0;
/// `replay_enter`: record the call. The nested-call guard is now held; the matching
/// `replay_record_*` call releases it.
pub const REPLAY_ENTER_RECORD: c_int = 1;
/// `replay_enter`: replay the call: ask `replay_replay_*` for its recorded result.
pub const REPLAY_ENTER_REPLAY: c_int = 2;

/// Value type for `replay_record_value`/`replay_replay_value`: a signed integer (sign-extended
/// to 64 bits).
pub const REPLAY_VALUE_SIGNED: c_int = 0;
/// Value type: an unsigned integer or `_Bool` (zero-extended to 64 bits).
pub const REPLAY_VALUE_UNSIGNED: c_int = 1;
/// Value type: `float` or `double` (the bits of the value as a `double`).
pub const REPLAY_VALUE_FLOAT: c_int = 2;

/// Call type for `replay_record_ret`/`replay_replay_ret`: return value and errno only.
pub const REPLAY_HOW_CALL: c_int = 0;
/// Call type: also `cap` bytes at an out-pointer (`REPLAY_CALL_OUT`).
pub const REPLAY_HOW_OUT: c_int = 1;
/// Call type: also the first `ret` bytes of a buffer when `ret > 0` (`REPLAY_READ`).
pub const REPLAY_HOW_READ: c_int = 2;

/// `replay_mode()`: no session (replay off, never started, or shut down).
pub const REPLAY_MODE_OFF: c_int = 0;
/// `replay_mode()`: recording.
pub const REPLAY_MODE_RECORD: c_int = 1;
/// `replay_mode()`: replaying.
pub const REPLAY_MODE_REPLAY: c_int = 2;
/// `replay_mode()`: replay diverged under the `warn-live` policy; calls now run live.
pub const REPLAY_MODE_LIVE: c_int = 3;

/// One call site of a macro. Each macro use declares one `static` instance; the library
/// fills the cached fields on first use (thread-safe: concurrent first uses compute the same
/// values), so later calls do no string work.
///
/// To write your own macro, declare `static replay_site s = REPLAY_SITE_INIT("c.mykind",
/// "what identifies the call");` and follow the pattern of `REPLAY_CALL` below.
#[repr(C)]
pub struct replay_site {
    /// Session generation the cached fields belong to; 0 = not filled yet. Library-owned.
    pub ready: u32,
    /// Cached string-table id of `kind_name`. Library-owned.
    pub kind: u32,
    /// Cached string-table id of `site_name`. Library-owned.
    pub site: u32,
    /// Zero.
    pub reserved: u32,
    /// Cached input digest of (`site_name`, `func`). Library-owned.
    pub digest: u64,
    /// The event kind, such as `"c.clock_gettime"` or `"c.value"`.
    pub kind_name: *const c_char,
    /// The call site, `"file.c:42"`.
    pub site_name: *const c_char,
    /// What identifies the call for verification: the function name, or the expression
    /// text for `REPLAY_VALUE`. Hashed with `site_name` into `digest`.
    pub func: *const c_char,
    /// The enclosing C function (`__func__`), shown in divergence reports; may be NULL.
    pub caller: *const c_char,
}

/// Non-zero while a record or replay session is active. The macros read it first, so that
/// with replay off each macro use costs one well-predicted branch. Set only by
/// `replay_init_from_env` and `replay_shutdown`: never write it.
///
/// It starts at [`UNINIT`]: the first macro use before any init then reaches
/// `replay_enter`, which says once when `REPLAY_MODE` asks for a session nobody started
/// (a forgotten `replay_init_from_env` otherwise gave no log and no word), and sets it to 0.
// Declared by hand in macros.h (`extern int replay_active;`): an AtomicI32 has the layout of
// an int, and the C side only reads it.
#[no_mangle]
pub static replay_active: AtomicI32 = AtomicI32::new(UNINIT);

/// `replay_active` before the first init or macro use.
const UNINIT: i32 = 2;

/// The live session. Leaked on purpose: a thread that loaded the pointer just before
/// shutdown may still use it, so it must never be freed.
struct Active {
    core: Core,
    gen: u32,
}

static ACTIVE: AtomicPtr<Active> = AtomicPtr::new(std::ptr::null_mut());
static GEN: AtomicU32 = AtomicU32::new(0);
static INIT: Mutex<()> = Mutex::new(());
static ATEXIT: AtomicBool = AtomicBool::new(false);
/// Set by the first shutdown: the session is shut down once.
static SHUT: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// The name given to `replay_thread_name`, for reports made on this side.
    static NAME: RefCell<Option<String>> = const { RefCell::new(None) };
}

#[inline]
fn active() -> Option<&'static Active> {
    // SAFETY: the pointer is null or points at a leaked, never freed Active.
    unsafe { ACTIVE.load(Ordering::Acquire).as_ref() }
}

/// Runs `f`, turning a panic (an internal error) into one line on stderr and switching the
/// front end off: the host program keeps running.
#[inline]
fn guarded<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(_) => {
            internal_error();
            fallback
        }
    }
}

#[cold]
fn internal_error() {
    replay_active.store(0, Ordering::Relaxed);
    if !ACTIVE
        .swap(std::ptr::null_mut(), Ordering::AcqRel)
        .is_null()
    {
        eprintln!("replay: internal error in the C front end; replay is now off for this process");
    }
}

/// # Safety
/// `p` is NULL or a NUL-terminated string.
unsafe fn text<'a>(p: *const c_char, default: &'a str) -> Cow<'a, str> {
    if p.is_null() {
        Cow::Borrowed(default)
    } else {
        CStr::from_ptr(p).to_string_lossy()
    }
}

/// Cached (kind, site, digest) of a call site, filling the cache on first use.
///
/// # Safety
/// `s` points at a valid `replay_site`.
#[inline]
unsafe fn site_ids(s: *mut replay_site, a: &Active) -> (u32, u32, u64) {
    // The cached fields are only ever accessed atomically, so concurrent first uses are not
    // a data race; `ready` is stored last (release) and loaded first (acquire).
    let ready = AtomicU32::from_ptr(&raw mut (*s).ready);
    if ready.load(Ordering::Acquire) == a.gen {
        return (
            AtomicU32::from_ptr(&raw mut (*s).kind).load(Ordering::Relaxed),
            AtomicU32::from_ptr(&raw mut (*s).site).load(Ordering::Relaxed),
            AtomicU64::from_ptr(&raw mut (*s).digest).load(Ordering::Relaxed),
        );
    }
    fill_site(s, a)
}

#[cold]
unsafe fn fill_site(s: *mut replay_site, a: &Active) -> (u32, u32, u64) {
    let kind_name = text((*s).kind_name, "c.unnamed");
    let site_name = text((*s).site_name, "");
    let func = text((*s).func, "");
    let kind = a.core.intern(&kind_name);
    let site = if site_name.is_empty() {
        0
    } else {
        a.core.intern(&site_name)
    };
    let digest = replay_core::digest(&[site_name.as_bytes(), func.as_bytes()]);
    AtomicU32::from_ptr(&raw mut (*s).kind).store(kind, Ordering::Relaxed);
    AtomicU32::from_ptr(&raw mut (*s).site).store(site, Ordering::Relaxed);
    AtomicU64::from_ptr(&raw mut (*s).digest).store(digest, Ordering::Relaxed);
    AtomicU32::from_ptr(&raw mut (*s).ready).store(a.gen, Ordering::Release);
    (kind, site, digest)
}

/// Applies the core's verdict on a replayed call: the one place this front end does. Returns
/// the event to serve, or `None` to run the call live; a stop ends the process here.
fn apply(v: Verdict) -> Option<Event> {
    match v {
        Verdict::Serve(e) => Some(e),
        Verdict::Live => None,
        Verdict::Stop(code) => stop(code),
    }
}

/// Ends the process with `code` after a divergence report: stdio is flushed (what the
/// program printed is not lost), and no exit handler runs, so nothing of the program runs
/// after the report (an `exit` would run its handlers while other threads go on).
fn stop(code: i32) -> ! {
    // SAFETY: flushing all stdio streams, then leaving the process.
    unsafe {
        libc::fflush(std::ptr::null_mut());
        libc::_exit(code)
    }
}

/// Front-end detail for a divergence report: the C function the macro is in.
unsafe fn caller_context(s: *mut replay_site) -> Option<String> {
    let caller = text((*s).caller, "");
    (!caller.is_empty()).then(|| format!("in function {caller}()"))
}

/// A recorded payload that does not fit the C call: a divergence (the core could not see it,
/// since kind and inputs matched), handled by the policy. The call then runs live.
unsafe fn misfit(a: &Active, s: *mut replay_site, ids: (u32, u32, u64), e: &Event, why: String) {
    let Session::Replay(r) = &a.core.session else {
        return;
    };
    let (kind, site, digest) = ids;
    if e.kind != kind || (e.digest.is_some() && e.digest != Some(digest)) {
        // A mismatch the core already reported (warn-continue handed the event on anyway).
        return;
    }
    let mut context = why;
    if let Some(c) = caller_context(s) {
        context = format!("{c}: {context}");
    }
    let thread_name = NAME.with(|n| n.borrow().clone()).unwrap_or_else(|| {
        if e.thread == 0 {
            "main".into()
        } else {
            format!("thread-{}", e.thread)
        }
    });
    let d = Divergence {
        kind: DivergenceKind::Mismatch,
        seq: e.seq,
        thread: e.thread,
        thread_name,
        expected_kind: Some(r.text(e.kind)),
        expected_site: Some(r.text(e.site)),
        expected: Some(e.clone()),
        actual: Actual {
            kind,
            site,
            digest: Some(digest),
            context: Some(context),
        },
        actual_kind: r.text(kind),
        actual_site: r.text(site),
        threads: Vec::new(),
        log: a.core.log.clone(),
        live: Vec::new(),
    };
    // The event does not fit the call, so warn-continue cannot serve it either: live.
    let _ = apply(a.core.diverged(Box::new(d)));
}

/// Starts a session from the environment: `REPLAY_MODE` (`record`, `replay` or `off`; unset
/// means off), `REPLAY_LOG` (the log file; `%p` and `%t` expand to the pid and a timestamp;
/// record defaults to `replay-%p.replay`) and the other options as `REPLAY_<KEY>`
/// (`REPLAY_POLICY=abort|warn-live|warn-continue`, `REPLAY_ORDER=strict|relaxed`,
/// `REPLAY_SYNC`, `REPLAY_FLUSH`, `REPLAY_TIMEOUT`, `REPLAY_COMPRESS`). Unknown `REPLAY_*` variables get one
/// warning line each.
///
/// Returns 0 on success (including mode off). On a bad option value, a log that cannot be
/// created, or a log that cannot be replayed, prints one line `replay: <reason>` to stderr,
/// leaves replay off (the program runs live) and returns non-zero. Calling it again while a
/// session runs does nothing and returns 0. Registers an `atexit` handler that shuts the
/// session down if the program does not call `replay_shutdown`. A child made by `fork()`
/// runs live and is not recorded (the session's threads do not exist in it).
///
/// The macro of the same name below passes the compiler's version for the log header;
/// `(replay_init_from_env)()` calls this function directly.
#[no_mangle]
pub extern "C" fn replay_init_from_env() -> c_int {
    init("")
}

/// `replay_init_from_env`, with a description of the compiler (such as `"gcc 12.2.0"`) to
/// store in the log header. `compiler` may be NULL.
///
/// # Safety
/// `compiler` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn replay_init_with_info(compiler: *const c_char) -> c_int {
    let compiler = text(compiler, "").into_owned();
    init(&compiler)
}

fn libc_version() -> String {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: returns a static NUL-terminated string.
        let v = unsafe { CStr::from_ptr(libc::gnu_get_libc_version()) };
        format!("glibc {}", v.to_string_lossy())
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        String::new()
    }
}

fn init(compiler: &str) -> c_int {
    guarded(1, || {
        let _lock = INIT.lock().unwrap_or_else(|p| p.into_inner());
        if active().is_some() {
            return 0;
        }
        // Init was called: a failure below is said by init, not as a forgotten init.
        let _ = replay_active.compare_exchange(UNINIT, 0, Ordering::AcqRel, Ordering::Relaxed);
        let (options, unknown) = match Options::from_env() {
            Ok(x) => x,
            Err(e) => {
                eprintln!("replay: {e}; replay is off");
                return 1;
            }
        };
        for (k, _) in unknown {
            eprintln!(
                "replay: ignoring unknown variable {k} (known: REPLAY_MODE, REPLAY_LOG, REPLAY_POLICY, REPLAY_ORDER, \
                 REPLAY_SYNC, REPLAY_FLUSH, REPLAY_TIMEOUT, REPLAY_COMPRESS, REPLAY_CHAOS)"
            );
        }
        let mode = options.mode;
        let info = [compiler.to_string(), libc_version()]
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("; ");
        let argv0 = std::env::args_os().next().unwrap_or_default();
        let program = std::path::Path::new(&argv0)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let fe = Frontend {
            runtime: "c",
            runtime_version: &info,
            program: &program,
            default_log: "replay-%p.replay",
            // The launcher (`replay record -- CMD`) compares a C program's output.
            output: false,
            per_kind: false,
            argv: None,
        };
        let core = match Core::start(options, &fe) {
            Ok(Some(c)) => c,
            Ok(None) => return 0,
            Err(e) if e.exit.is_some() => {
                eprintln!("replay: {e}");
                stop(e.exit.unwrap_or(1));
            }
            Err(msg) => {
                let then = if mode == Mode::Record {
                    "the program runs without recording"
                } else {
                    "replay is off"
                };
                eprintln!("replay: {msg}; {then}");
                return 1;
            }
        };
        let gen = GEN.fetch_add(1, Ordering::Relaxed) + 1;
        let a = Box::into_raw(Box::new(Active { core, gen }));
        SHUT.store(false, Ordering::Release);
        ACTIVE.store(a, Ordering::Release);
        replay_active.store(1, Ordering::Release);
        sched::init_thread();
        if !ATEXIT.swap(true, Ordering::Relaxed) {
            // SAFETY: registering a plain extern "C" function.
            if unsafe { libc::atexit(at_exit) } != 0 {
                eprintln!("replay: cannot register the exit handler; call replay_shutdown() before exiting");
            }
            // SAFETY: registering a plain extern "C" function as the fork child handler.
            if unsafe {
                libc::pthread_atfork(None, Some(after_fork_in_parent), Some(after_fork_in_child))
            } != 0
            {
                eprintln!("replay: cannot register the fork handler; a forked child must not use the macros");
            }
        }
        0
    })
}

/// Replay: a forked child runs live (see below), out of replay's sight: the end of replay
/// says so rather than pass for faithful.
extern "C" fn after_fork_in_parent() {
    guarded((), || {
        if let Some(a) = active() {
            a.core.ran_unchecked("forked child process");
        }
    });
}

/// A forked child has none of the session's threads (the log writer, the replay reader), so
/// it must not touch the session: it runs live, unrecorded, and its exit does not shut the
/// parent's session down. Only async-signal-safe work here: two atomic stores.
extern "C" fn after_fork_in_child() {
    ACTIVE.store(std::ptr::null_mut(), Ordering::Release);
    replay_active.store(0, Ordering::Release);
}

extern "C" fn at_exit() {
    guarded((), || {
        shutdown(true);
    });
}

/// Ends the session. Record: writes everything recorded and closes the log. Replay: checks
/// that every recorded event was replayed; events left over are a divergence, handled by
/// the policy (`abort` exits with status 86). Returns 0, or non-zero after one line on
/// stderr. Later macro uses run live. Harmless when no session runs.
///
/// Keep the library loaded for the life of the process, even after shutdown: do not
/// `dlclose` it. Some of the session's threads (the log compressor's idle helper) are not
/// joined and its `atexit` handler stays registered, so unmapping the code under them
/// would crash the program.
#[no_mangle]
pub extern "C" fn replay_shutdown() -> c_int {
    guarded(1, || shutdown(false))
}

fn shutdown(_at_exit: bool) -> c_int {
    let Some(a) = active() else {
        return 0;
    };
    if SHUT.swap(true, Ordering::AcqRel) {
        return 0;
    }
    // The session stays reachable while replay checks its end: a thread still running
    // meanwhile keeps getting recorded values (or the stop), never live ones.
    let r = a.core.shutdown();
    replay_active.store(0, Ordering::Release);
    ACTIVE.store(std::ptr::null_mut(), Ordering::Release);
    match r {
        Ok(v) => {
            apply(v);
            0
        }
        Err(msg) => {
            eprintln!("replay: {msg}");
            1
        }
    }
}

/// Writes everything recorded so far to the log and returns once it is written (record
/// only; otherwise does nothing). Returns non-zero if writing the log failed.
#[no_mangle]
pub extern "C" fn replay_flush() -> c_int {
    guarded(1, || match active().map(|a| &a.core.session) {
        Some(Session::Record(r)) => {
            r.flush();
            c_int::from(r.failure().is_some())
        }
        _ => 0,
    })
}

/// Names the calling thread. Logical threads are matched between record and replay by
/// name, so give every thread that uses the macros a unique name before its first macro
/// use; unnamed threads are matched in order of their first event. NULL is ignored.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn replay_thread_name(name: *const c_char) {
    if name.is_null() {
        return;
    }
    let name = text(name, "").into_owned();
    guarded((), || {
        if let Some(a) = active() {
            a.core.name_thread(&name);
        }
        sched::named(&name);
        NAME.with(|n| *n.borrow_mut() = Some(name));
    });
}

/// The current mode: `REPLAY_MODE_OFF` (0), `REPLAY_MODE_RECORD` (1), `REPLAY_MODE_REPLAY`
/// (2) or `REPLAY_MODE_LIVE` (3, replay diverged and now runs live).
#[no_mangle]
pub extern "C" fn replay_mode() -> c_int {
    match active().map(|a| &a.core.session) {
        None => REPLAY_MODE_OFF,
        Some(Session::Record(_)) => REPLAY_MODE_RECORD,
        Some(Session::Replay(r)) if r.is_live() => REPLAY_MODE_LIVE,
        Some(Session::Replay(_)) => REPLAY_MODE_REPLAY,
    }
}

/// The first macro use found no session and init was never called: if the environment asks
/// for one, say once why nothing is recorded or replayed.
#[cold]
fn init_forgotten() {
    match std::env::var("REPLAY_MODE").as_deref() {
        Ok("record") | Ok("replay") => eprintln!(
            "replay: REPLAY_MODE is set but the program never called replay_init_from_env(); \
             it runs live, nothing is recorded or replayed (call it at the start of main)"
        ),
        _ => {}
    }
}

/// First step of a macro: decides how this call runs. Returns `REPLAY_ENTER_LIVE`,
/// `REPLAY_ENTER_RECORD` (the nested-call guard is taken; call the function, then exactly
/// one `replay_record_*`) or `REPLAY_ENTER_REPLAY` (call `replay_replay_*`, and run the call
/// live only if that returns 0).
///
/// # Safety
/// `site` points at a `replay_site` (it is not read yet).
#[no_mangle]
pub unsafe extern "C" fn replay_enter(site: *mut replay_site) -> c_int {
    let Some(a) = active() else {
        if replay_active
            .compare_exchange(UNINIT, 0, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            init_forgotten();
        }
        return REPLAY_ENTER_LIVE;
    };
    if site.is_null() {
        return REPLAY_ENTER_LIVE;
    }
    sched::take_pending_name(a);
    match &a.core.session {
        Session::Record(_) => {
            if HookGuard::try_enter_raw() {
                // Under chaos: a scheduling point before the call runs.
                a.core.chaos_point();
                REPLAY_ENTER_RECORD
            } else {
                REPLAY_ENTER_LIVE
            }
        }
        Session::Replay(r) if r.is_live() => REPLAY_ENTER_LIVE,
        Session::Replay(_) => REPLAY_ENTER_REPLAY,
    }
}

/// Records a `REPLAY_VALUE` (after `replay_enter` returned `REPLAY_ENTER_RECORD`) and
/// releases the guard. `type` is a `REPLAY_VALUE_*` constant; `bits` the value as 64 bits
/// (sign-extended, zero-extended, or a `double`'s bits).
///
/// # Safety
/// `site` points at a valid `replay_site`.
#[no_mangle]
pub unsafe extern "C" fn replay_record_value(site: *mut replay_site, r#type: c_int, bits: u64) {
    if let Some(a) = active() {
        if let (Session::Record(rec), false) = (&a.core.session, site.is_null()) {
            guarded((), || {
                let (kind, s, digest) = site_ids(site, a);
                let payload = match r#type {
                    REPLAY_VALUE_SIGNED => PayloadRef::Int(bits as i64),
                    REPLAY_VALUE_FLOAT => PayloadRef::Float(f64::from_bits(bits)),
                    _ => PayloadRef::Uint(bits),
                };
                rec.record(kind, s, Some(digest), payload);
            });
        }
    }
    HookGuard::leave();
}

/// Replays a `REPLAY_VALUE`: on 1, `*bits` holds the recorded value (as for
/// `replay_record_value`) and the expression must not be evaluated. On 0 the expression
/// runs live (replay went live, or the recorded value does not fit a `type` of `size`
/// bytes, which is reported as a divergence).
///
/// # Safety
/// `site` points at a valid `replay_site`, `bits` at a writable `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn replay_replay_value(
    site: *mut replay_site,
    r#type: c_int,
    size: usize,
    bits: *mut u64,
) -> c_int {
    let Some(a) = active() else { return 0 };
    if site.is_null() || bits.is_null() {
        return 0;
    }
    guarded(0, || {
        let ids = site_ids(site, a);
        match apply(
            a.core
                .replay(ids.0, ids.1, Some(ids.2), &|| caller_context(site)),
        ) {
            Some(e) => match fit::value_bits(&e.payload, r#type, size) {
                Ok(b) => {
                    *bits = b;
                    1
                }
                Err(why) => {
                    misfit(a, site, ids, &e, why);
                    0
                }
            },
            None => 0,
        }
    })
}

/// Records a call's result (after `replay_enter` returned `REPLAY_ENTER_RECORD`) and
/// releases the guard. `how` is a `REPLAY_HOW_*` constant: with `REPLAY_HOW_OUT` the `cap`
/// bytes at `buf` are recorded too, with `REPLAY_HOW_READ` the first `ret` bytes (at most
/// `cap`) when `ret > 0`. `err` is the errno right after the call.
///
/// # Safety
/// `site` points at a valid `replay_site`; `buf` is NULL or readable for the bytes above.
#[no_mangle]
pub unsafe extern "C" fn replay_record_ret(
    site: *mut replay_site,
    how: c_int,
    ret: i64,
    err: c_int,
    buf: *const c_void,
    cap: usize,
) {
    if let Some(a) = active() {
        if let (Session::Record(rec), false) = (&a.core.session, site.is_null()) {
            guarded((), || {
                let (kind, s, digest) = site_ids(site, a);
                let len = match how {
                    REPLAY_HOW_OUT => Some(cap),
                    REPLAY_HOW_READ if ret > 0 => Some((ret as u64).min(cap as u64) as usize),
                    _ => None,
                };
                let data = match len {
                    Some(n) if !buf.is_null() => {
                        Some(std::slice::from_raw_parts(buf as *const u8, n))
                    }
                    Some(_) => Some(&[][..]),
                    None => None,
                };
                rec.record(
                    kind,
                    s,
                    Some(digest),
                    PayloadRef::Ret {
                        ret,
                        errno: err,
                        data,
                    },
                );
            });
        }
    }
    HookGuard::leave();
}

/// Replays a call: on 1, `*ret` and `*err` hold the recorded return value and errno, and the
/// recorded bytes (see `replay_record_ret`) were copied to `buf`; the function must not be
/// called. On 0 the call runs live. `cap` is the room at `buf` (`SIZE_MAX` if unknown).
///
/// # Safety
/// `site` points at a valid `replay_site`; `buf` is NULL or writable for `cap` bytes (for
/// `SIZE_MAX`, for the bytes the recording holds); `ret` and `err` are writable.
#[no_mangle]
pub unsafe extern "C" fn replay_replay_ret(
    site: *mut replay_site,
    how: c_int,
    buf: *mut c_void,
    cap: usize,
    ret: *mut i64,
    err: *mut c_int,
) -> c_int {
    let Some(a) = active() else { return 0 };
    if site.is_null() || ret.is_null() || err.is_null() {
        return 0;
    }
    guarded(0, || {
        let ids = site_ids(site, a);
        match apply(
            a.core
                .replay(ids.0, ids.1, Some(ids.2), &|| caller_context(site)),
        ) {
            Some(e) => {
                let cap = if buf.is_null() { 0 } else { cap };
                match fit::ret_fit(&e.payload, how, cap) {
                    Ok(f) => {
                        if let Some(d) = f.data {
                            std::ptr::copy_nonoverlapping(d.as_ptr(), buf as *mut u8, d.len());
                        }
                        *ret = f.ret;
                        *err = f.errno;
                        1
                    }
                    Err(why) => {
                        misfit(a, site, ids, &e, why);
                        0
                    }
                }
            }
            None => 0,
        }
    })
}
