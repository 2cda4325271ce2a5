//! The replay JVM agent: `java -agentpath:libreplay.so=record,log=app.replay ...` records the
//! program's clock reads, `=replay,log=app.replay` gives them back and verifies the order.
//!
//! How the clocks are hooked (measured recipe: /work/shared/FINDINGS.md, "JVM"):
//! - VMStart: the hook class `java.lang.ReplayHooks` (compiled by build.rs, carried in this
//!   library) is defined into the boot loader, so it is part of java.base and callable from
//!   every module. Its natives resolve to the `Java_java_lang_ReplayHooks_*` exports below.
//! - ClassFileLoadHook: every class's Methodrefs to `System.nanoTime`, `currentTimeMillis` and
//!   `VM.getNanoTimeAdjustment` are pointed at the hook class ([`classfile`]); JIT-compiled
//!   code then calls the hook, which a native rebind could not achieve (C1/C2 intrinsify).
//! - VMInit: classes loaded before the hook existed are retransformed, then the hooks are
//!   switched on. Calls before that run live in record and replay alike, so they are never
//!   events.
//! - NativeMethodBind: `FileInputStream`'s natives (and its channel's reads) are bound to
//!   wrappers that record and replay what they read ([`fileio`]).
//! - Record: clock reads go into per-thread buffers in native memory that the core's flusher
//!   drains ([`drain`]); ThreadEnd frees a thread's buffer, VMDeath drains all of them and
//!   closes the log. Replay: ThreadEnd checks that no value fetched for the thread was left
//!   unused, VMDeath checks that every recorded event was used.
//!
//! Failure policy: a bad option or an unreadable replay log stops the JVM at start with one
//! line (Agent_OnLoad returns non-zero); an unwritable record log or an internal error later
//! prints one line and the program runs on un-hooked in record mode; in replay an internal
//! error stops the program (it could only run on with wrong values).

mod cache;
mod children;
mod classfile;
mod context;
mod copy;
mod drain;
mod entropy;
mod environ;
mod fileio;
mod fsmeta;
mod http;
mod jimage;
mod jvmti;
mod links;
mod mgmt;
mod mmap;
mod net;
mod nio;
mod output;
mod pid;
mod pools;
mod reflected;
mod seeds;
mod selector;
mod signals;
mod stdin;

use jni::objects::{GlobalRef, JClass, JLongArray, JObject, JString};
use jni::sys::{jclass, jint, jlong, jlongArray, jobject, JNIEnv as RawJniEnv, JavaVM};
use jni::JNIEnv;
use jvmti::jthread;
use jvmti::{Callbacks, Capabilities, Jvmti, RawEnv};
use replay_core::guard::HookGuard;
use replay_core::options::{Mode, Options};
use replay_core::session::{Core, Frontend, Session, Verdict};
use replay_core::{Payload, PayloadRef};
use std::cell::{Cell, RefCell};
use std::ffi::{c_char, c_uchar, c_void, CStr};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

const HOOK_CLASS: &str = "java/lang/ReplayHooks";
static HOOK_BYTES: &[u8] = include_bytes!(env!("REPLAY_HOOKS_CLASS"));
/// Events per Java-side batch: one native crossing per this many clock reads.
const BATCH: jint = 1024;
/// Kind names, indexed by the hook's kind numbers (K_NANO, K_MILLIS, K_ADJUST, K_SLEEP,
/// K_POOL_TAKE, K_SELECTOR, K_ATOMIC, K_WAIT). Only the first four are ever buffered (two bits of kind).
const KINDS: [&str; 8] = [
    "java.lang.System.nanoTime",
    "java.lang.System.currentTimeMillis",
    "jdk.internal.misc.VM.getNanoTimeAdjustment",
    "java.lang.Thread.sleep",
    // src/pools.rs: input how the worker or caller took (take, poll, ...), value the
    // task's number.
    "java.util.concurrent.ThreadPoolExecutor.take",
    // src/selector.rs: input which list, value how many the selector took.
    "java.net.http.HttpClient.selector.take",
    // src/selector.rs: input the operation (get, compareAndSet, set), value its result.
    "java.util.concurrent.atomic.AtomicInteger.ordered",
    // A timed Object.wait's return: value 0 timed out, 2 woken early, 1 interrupted; input
    // the timeout.
    "java.lang.Object.wait",
];
/// The kind of a pool worker's take (src/pools.rs).
const K_POOL_TAKE: usize = 4;
/// The kind of a sleep.
const K_SLEEP: usize = 3;
/// The kind of a timed Object.wait.
const K_WAIT: usize = 7;
/// Kinds from here on are one event per call with the call's argument as input digest.
const K_ADJUST: usize = 2;
const JNI_ERR: jint = -1;
/// Local references reserved for the VMInit scan of loaded classes.
const LOADED_CLASSES_FRAME: i32 = 8192;

struct Agent {
    jvmti: Jvmti,
    core: Core,
    kinds: [u32; KINDS.len()],
    /// Kinds of the FileInputStream calls, indexed like `fileio::KINDS`.
    files: [u32; fileio::KINDS.len()],
    /// The hook class, once defined at VMStart. Until then no class is rewritten.
    hooks: OnceLock<GlobalRef>,
    /// Where the class cache lives (`cache=`), see [`cache`].
    cache: cache::Setting,
    disabled: AtomicBool,
    bad_payload: AtomicBool,
}

static AGENT: OnceLock<Agent> = OnceLock::new();

thread_local! {
    /// Whether this OS thread already gave the core its name (the main thread's OS thread
    /// later runs `DestroyJavaVM`: it stays the logical thread it was).
    static NAMED: Cell<bool> = const { Cell::new(false) };
    /// Replay: JNI global reference to this thread's Java-side buffer, for ThreadEnd.
    static BUFFER: Cell<jobject> = const { Cell::new(std::ptr::null_mut()) };
    /// Replay: the run of events last taken with `Replayer::next_run` for this thread. Entry
    /// `j` is served from the Java buffer's slot `3 + j`; `b[0] - 3` of them are used.
    static RUN: RefCell<Vec<replay_core::Event>> = const { RefCell::new(Vec::new()) };
}

/// Parses the agent's option string. Returns the options and a warning line per unknown key.
pub fn parse_options(s: &str) -> Result<(Options, Vec<String>), String> {
    let mut o = Options::default();
    let unknown = o.parse_list(s).map_err(|e| e.to_string())?;
    let mut warnings: Vec<String> = unknown
        .into_iter()
        .filter(|(k, _)| k != "cache") // the agent's own, see cache_option
        .map(|(k, _)| format!("replay: unknown option '{k}' ignored (options: record|replay|off, log, policy, order, strict, relaxed, sync, flush, timeout, compress, verify-output, cache)"))
        .collect();
    if o.mode == Mode::Off
        && !s
            .split(',')
            .any(|i| matches!(i.trim().split('=').next(), Some("off" | "mode")))
    {
        warnings.push("replay: no mode given (record, replay or off): the agent is off".into());
    }
    Ok((o, warnings))
}

/// The agent's own `cache=off|on|DIR` option (the last one given wins); see [`cache`].
pub fn cache_option(s: &str) -> Result<cache::Setting, String> {
    let mut setting = cache::Setting::Default;
    for item in s.split(',').map(str::trim) {
        let (k, v) = match item.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (item, None),
        };
        if k == "cache" {
            setting = cache::Setting::parse(v)?;
        }
    }
    Ok(setting)
}

fn agent() -> Option<&'static Agent> {
    AGENT.get().filter(|a| !a.disabled.load(Ordering::Relaxed))
}

/// Runs a callback body, turning a panic into "internal error" handling: never unwind into
/// the JVM.
fn guarded<R>(what: &str, fallback: R, f: impl FnOnce() -> R) -> R {
    match std::panic::catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned());
            internal_error(
                None,
                &format!("{what}: {}", msg.unwrap_or_else(|| "panic".into())),
            );
            fallback
        }
    }
}

/// One line on stderr, then: record switches the hooks off (the program runs on); replay
/// stops the program, which could only go on with wrong values.
fn internal_error(env: Option<&mut JNIEnv>, why: &str) {
    let Some(a) = AGENT.get() else {
        eprintln!("replay: internal error: {why}; the agent is disabled");
        return;
    };
    if a.disabled.swap(true, Ordering::Relaxed) {
        return;
    }
    if a.core.mode() == Mode::Replay {
        eprintln!("replay: internal error: {why}; replay cannot go on");
        stop(1);
    }
    eprintln!("replay: internal error: {why}; recording stopped, the program runs on");
    if let (Some(env), Some(h)) = (env, a.hooks.get()) {
        let _ = call_static(env, h, "stop", "()V");
    }
}

/// Applies the core's verdict on a replayed call or a checked write: the one place this agent
/// does. Returns the event to serve, or `None` to run the call live (or perform the write); a
/// stop ends the process here.
pub(crate) fn apply(v: Verdict) -> Option<replay_core::Event> {
    match v {
        Verdict::Serve(e) => Some(e),
        Verdict::Live => None,
        Verdict::Stop(code) => stop(code),
    }
}

extern "C" {
    fn fflush(stream: *mut c_void) -> i32;
    fn _exit(status: i32) -> !;
}

/// Ends the process with `code` after a report (or a refused start). What the program wrote
/// reached fd 1/2 already: `System.out`/`err` are autoflush PrintStreams, and every write to
/// them goes through the FileOutputStream natives before `output` lets it pass; C stdio (the
/// JVM's own logging) is flushed here. `_exit`, not `exit` or `System.exit`: no shutdown hook,
/// exit handler or other Java thread runs program code after the report (`System.exit` could
/// also deadlock on the PrintStream lock the stopping thread may hold), and the core gives
/// every later hooked call of every thread the same stop meanwhile.
pub(crate) fn stop(code: i32) -> ! {
    // SAFETY: flushing all C stdio streams, then leaving the process.
    unsafe {
        fflush(std::ptr::null_mut());
        _exit(code)
    }
}

/// What the JVM runs, for the log's header and replay's check: the main class or jar (the
/// first word of `sun.java.command`), or the source file for the source launcher
/// (`java Main.java`, whose first word is the launcher's own class).
fn program_of(command: &str) -> String {
    let mut words = command.split_whitespace();
    let first = words.next().unwrap_or_default();
    if first.contains("com.sun.tools.javac.launcher.") {
        return words.next().unwrap_or(first).to_string();
    }
    first.to_string()
}

/// The java command line as the program's arguments for the log's header and replay's
/// check: without the VM's own tuning and diagnostic options (`-X...`, `-XX:...`, such as
/// `-Xcheck:jni` or `-Xmx`, which a replay may well add or change without it being another
/// run of the program).
fn program_argv(args: impl Iterator<Item = String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut options = true;
    for (i, a) in args.enumerate() {
        // The VM's options come before the main class (or `-jar`/`-m`/a source file); what
        // follows it is the program's, `-X` or not.
        if options && i > 0 && !a.starts_with('-') {
            options = false;
        }
        if options && i > 0 && a.starts_with("-X") {
            continue;
        }
        // The JDK's tools (javac, jar, javadoc) take JVM options as `-J<option>` anywhere
        // among theirs: the agent's own (record here, replay there) and the VM's tuning.
        if i > 0 && (a.starts_with("-J-agentpath:") || a.starts_with("-J-X")) {
            continue;
        }
        out.push(a);
    }
    out
}

fn call_static(env: &mut JNIEnv, class: &GlobalRef, name: &str, sig: &str) -> Result<(), String> {
    let cls: &JClass = class.as_obj().into();
    let r = env.call_static_method(cls, name, sig, &[]);
    clear_exception(env);
    r.map(|_| ())
        .map_err(|e| format!("calling ReplayHooks.{name}: {e}"))
}

fn clear_exception(env: &mut JNIEnv) -> bool {
    if env.exception_check().unwrap_or(false) {
        let _ = env.exception_describe();
        let _ = env.exception_clear();
        return true;
    }
    false
}

/// # Safety
/// Called by the JVM with its `JavaVM` and the option string after `=`.
#[no_mangle]
pub unsafe extern "C" fn Agent_OnLoad(
    vm: *mut JavaVM,
    options: *mut c_char,
    _reserved: *mut c_void,
) -> jint {
    // Panics are reported by `guarded` as one line; the default hook would add a backtrace
    // banner to the host's stderr.
    std::panic::set_hook(Box::new(|_| {}));
    guarded("Agent_OnLoad", JNI_ERR, || {
        let text = if options.is_null() {
            String::new()
        } else {
            CStr::from_ptr(options).to_string_lossy().into_owned()
        };
        match on_load(vm, &text) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("replay: {e}");
                JNI_ERR
            }
        }
    })
}

/// The option list the `REPLAY_*` environment variables spell (`REPLAY_MODE=record` ->
/// `mode=record`), for the option string `env`: the launcher's JAVA_TOOL_OPTIONS is then the
/// same text in record and replay, and so is the "Picked up JAVA_TOOL_OPTIONS" line every
/// JVM prints, which a parent reading a child JVM's stderr would otherwise see differ.
fn env_options() -> String {
    let mut items = Vec::new();
    for (k, v) in std::env::vars_os() {
        let (Some(k), Some(v)) = (k.to_str(), v.to_str()) else {
            continue;
        };
        let Some(key) = k.strip_prefix("REPLAY_") else {
            continue;
        };
        let key = key.to_ascii_lowercase().replace('_', "-");
        // Only the core's keys: the C header's and Node's own are not the agent's business.
        if key == "cache" || Options::default().set(&key, Some(v)).is_ok() {
            items.push(format!("{key}={v}"));
        }
    }
    items.join(",")
}

unsafe fn on_load(vm: *mut JavaVM, text: &str) -> Result<(), String> {
    let from_env;
    let text = if text.trim() == "env" {
        from_env = env_options();
        &from_env
    } else {
        text
    };
    let (opts, warnings) = parse_options(text)?;
    let cache = cache_option(text)?;
    for w in warnings {
        eprintln!("{w}");
    }
    if opts.mode == Mode::Off {
        return Ok(()); // off: no environment, no capability, no hook
    }
    let replay = opts.mode == Mode::Replay;
    let jvmti = Jvmti::from_vm(vm).map_err(|e| format!("{e}; this JVM has no JVMTI 11"))?;
    let version = jvmti
        .system_property(c"java.version")
        .unwrap_or_else(|_| "unknown".into());
    let command = jvmti
        .system_property(c"sun.java.command")
        .unwrap_or_default();
    let program = program_of(&command);
    let argv = program_argv(std::env::args_os().map(|a| a.to_string_lossy().into_owned()));
    let fe = Frontend {
        runtime: "jvm",
        runtime_version: &version,
        program: &program,
        default_log: "java-%p.replay",
        output: true,
        per_kind: false,
        argv: Some(&argv),
    };
    let core = match Core::start(opts, &fe) {
        Ok(Some(c)) => c,
        Ok(None) => return Ok(()),
        // A log of another runtime or program: one line and exactly that status (JNI_ERR
        // would give 1 and the JVM's own "Error occurred during initialization" lines).
        Err(e) if e.exit.is_some() => {
            eprintln!("replay: {e}");
            stop(e.exit.unwrap_or(1));
        }
        Err(e) if !replay => {
            eprintln!("replay: {e}; recording is off, the program runs without it");
            return Ok(());
        }
        Err(e) => return Err(e.message),
    };
    NAMED.with(|n| n.set(true)); // the core made this thread logical thread 0, "main"
    let kinds = KINDS.map(|k| core.intern(k));
    let files = fileio::KINDS.map(|k| core.intern(k));
    let agent = Agent {
        jvmti,
        core,
        kinds,
        files,
        hooks: OnceLock::new(),
        cache,
        disabled: AtomicBool::new(false),
        bad_payload: AtomicBool::new(false),
    };
    if AGENT.set(agent).is_err() {
        return Err("the agent was loaded twice".into());
    }
    let setup = || -> Result<(), jvmti::Error> {
        let caps = Capabilities::default()
            .with(Capabilities::CAN_RETRANSFORM_CLASSES)
            .with(Capabilities::CAN_GENERATE_ALL_CLASS_HOOK_EVENTS)
            .with(Capabilities::CAN_GET_CONSTANT_POOL)
            .with(Capabilities::CAN_GENERATE_NATIVE_METHOD_BIND_EVENTS)
            .with(Capabilities::CAN_TAG_OBJECTS);
        jvmti.add_capabilities(&caps)?;
        let mut cb = Callbacks::default();
        cb.vm_start(on_vm_start);
        cb.vm_init(on_vm_init);
        cb.vm_death(on_vm_death);
        cb.thread_end(on_thread_end);
        cb.thread_start(signals::on_thread_start);
        cb.class_file_load_hook(on_class_file_load);
        cb.native_method_bind(fileio::on_native_bind);
        jvmti.set_event_callbacks(&cb)?;
        for ev in [
            jvmti::EV_VM_START,
            jvmti::EV_VM_INIT,
            jvmti::EV_VM_DEATH,
            jvmti::EV_THREAD_END,
            jvmti::EV_NATIVE_METHOD_BIND,
        ] {
            jvmti.enable_event(ev)?;
        }
        // Record: a signal handler thread starting is a signal the JVM got (src/signals.rs).
        if !replay {
            jvmti.enable_event(jvmti::EV_THREAD_START)?;
        }
        Ok(())
    };
    if let Err(e) = setup() {
        if replay {
            return Err(format!("cannot install the hooks: {e}"));
        }
        internal_error(None, &format!("cannot install the hooks: {e}"));
    }
    Ok(())
}

unsafe extern "C" fn on_vm_start(_jvmti: RawEnv, jni: *mut RawJniEnv) {
    guarded("VMStart", (), || {
        let Some(a) = agent() else { return };
        let Ok(mut env) = JNIEnv::from_raw(jni) else {
            return;
        };
        let defined = env.define_class(HOOK_CLASS, &JObject::null(), HOOK_BYTES);
        let failed = clear_exception(&mut env);
        match defined.and_then(|c| env.new_global_ref(c)) {
            Ok(g) if !failed => {
                let _ = a.hooks.set(g);
            }
            Ok(_) => internal_error(Some(&mut env), "defining the hook class threw"),
            Err(e) => internal_error(
                Some(&mut env),
                &format!("cannot define the hook class: {e}"),
            ),
        }
    })
}

unsafe extern "C" fn on_vm_init(_jvmti: RawEnv, jni: *mut RawJniEnv, _thread: jthread) {
    guarded("VMInit", (), || {
        let Some(a) = agent() else { return };
        let Ok(mut env) = JNIEnv::from_raw(jni) else {
            return;
        };
        let Some(hooks) = a.hooks.get() else { return };
        // The class hook is switched on only now: while it is on, the JVM reads every class
        // it takes from the CDS archive again from lib/modules to hand it over (~50 us each,
        // 16-40 classes before VMInit). Classes loaded before now are in GetLoadedClasses and
        // handled below like those loaded before VMStart; one loaded in between is seen twice,
        // and a second rewrite finds nothing left to change.
        if let Err(e) = a.jvmti.enable_event(jvmti::EV_CLASS_FILE_LOAD_HOOK) {
            internal_error(
                Some(&mut env),
                &format!("cannot install the class hook: {e}"),
            );
            return;
        }
        // GetLoadedClasses makes a local reference per class (~440 on JDK 17): a frame with
        // room for them keeps -Xcheck:jni quiet ("JNI local refs: 438, exceeds capacity"),
        // and popping it frees them all.
        let scanned = env.with_local_frame(LOADED_CLASSES_FRAME, |env| {
            Ok::<_, jni::errors::Error>(hook_loaded_classes(a, env))
        });
        match scanned {
            // Classes loaded from now on are still hooked; say what is missing.
            Ok(Err(e)) => eprintln!("replay: warning: {e}"),
            Err(e) => eprintln!("replay: warning: already-loaded classes are not hooked: {e}"),
            Ok(Ok(())) => {}
        }
        preinit(&mut env, hooks, true);
        let (mode, seq) = match &a.core.session {
            Session::Record(r) => {
                // The threads' clock buffers reach the log with every round that writes
                // everything, without the threads' cooperation (src/drain.rs).
                r.on_round(|| {
                    if let Some(a) = agent() {
                        drain::drain_all(&a.kinds, false);
                    }
                });
                (1, r.seq_counter().as_ptr() as jlong)
            }
            Session::Replay(_) => (2, 0),
        };
        let cls: &JClass = hooks.as_obj().into();
        let args = [
            jni::objects::JValue::Int(mode).as_jni(),
            jni::objects::JValue::Long(seq).as_jni(),
            jni::objects::JValue::Int(BATCH).as_jni(),
        ];
        let id = env.get_static_method_id(cls, "init", "(IJI)V");
        let r = id.and_then(|id| {
            env.call_static_method_unchecked(
                cls,
                id,
                jni::signature::ReturnType::Primitive(jni::signature::Primitive::Void),
                &args,
            )
        });
        if clear_exception(&mut env) || r.is_err() {
            internal_error(Some(&mut env), "cannot start the hook class");
            return;
        }
        // Natives bound before their names were known (File metadata) get their wrappers.
        fileio::bind_early(&mut env);
        // JDK classes whose initializers would take events are initialized now, by the main
        // thread (see ReplayHooks.preinit).
        preinit(&mut env, hooks, false);
        // From now on FileInputStream calls may be events.
        if let Ok(id) = env.get_static_method_id(cls, "eventThread", "()Z") {
            let _ = fileio::EVENT_THREAD.set(id);
        } else {
            clear_exception(&mut env);
        }
        match env.get_static_method_id(cls, "fileEvent", "()Z") {
            Ok(id) => {
                let _ = fileio::FILE_EVENT.set(id);
            }
            Err(_) => {
                clear_exception(&mut env);
                eprintln!(
                    "replay: warning: the hook class has no fileEvent(): file reads are not hooked"
                );
            }
        }
        // System.in, when it is not the stdin the launcher records (src/stdin.rs).
        stdin::hook(&mut env);
        // Replay: the recorded signals are raised again at their place (src/signals.rs).
        signals::start_replay();
    })
}

/// `ReplayHooks.preinit(live)`: initializes JDK classes whose initializers would take events
/// (`live`: before the hooks are on, the ones whose values need no event).
fn preinit(env: &mut JNIEnv, hooks: &GlobalRef, live: bool) {
    let cls: &JClass = hooks.as_obj().into();
    let r = env.call_static_method(
        cls,
        "preinit",
        "(Z)V",
        &[jni::objects::JValue::Bool(live.into())],
    );
    if clear_exception(env) || r.is_err() {
        eprintln!("replay: warning: cannot initialize the JDK's clock and random classes early");
    }
}

/// Retransforms the classes loaded before the hook class existed whose constant pools name a
/// hooked method (JDK 17: Thread, ClassLoader, ReferenceQueue, ...). Boot classes are looked
/// up in the class cache by name; the ones it does not know are judged from their bytes in
/// the runtime image (or, failing that, scanned with `GetConstantPool`).
fn hook_loaded_classes(a: &Agent, env: &mut JNIEnv) -> Result<(), String> {
    let classes = a.jvmti.loaded_classes().map_err(|e| e.to_string())?;
    let home = image_home(a, env);
    let mut cache = home.as_deref().and_then(|h| open_cache(a, h));
    // Opened at the first class the cache does not answer (a warm run never opens it).
    let mut image = home.map(Lazy::Home);
    let jni = env.get_raw();
    let mut todo: Vec<jclass> = Vec::new();
    for &c in &classes {
        if class_needs_hooks(a, jni, c, cache.as_mut(), image.as_mut()) {
            todo.push(c);
        } else {
            // SAFETY: a local reference GetLoadedClasses made in this frame, not used again.
            let _ = env.delete_local_ref(unsafe { JObject::from_raw(c) });
        }
    }
    // While the cache is open, the class hook notes which of the retransformed classes call
    // the clocks from <clinit> only (it sees their bytes, `GetConstantPool` does not).
    let clinit_only = cache.is_some().then(|| {
        *lock(&CLINIT_ONLY) = Some(Vec::new());
    });
    let r = retransform(a, env, &todo);
    if let (Some(cache), Some(())) = (cache.as_mut(), clinit_only) {
        for sig in lock(&CLINIT_ONLY).take().unwrap_or_default() {
            cache.insert(sig, cache::Uses::ClinitOnly);
        }
        cache.save();
    }
    r
}

/// `CLINIT_ONLY`, even if a panicking thread poisoned it.
fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Signatures of classes retransformed at VMInit whose clock calls are all in `<clinit>`
/// (`classfile::targets_only_in_clinit`); `Some` only during that retransform.
static CLINIT_ONLY: std::sync::Mutex<Option<Vec<String>>> = std::sync::Mutex::new(None);

fn retransform(a: &Agent, env: &mut JNIEnv, todo: &[jclass]) -> Result<(), String> {
    if todo.is_empty() || a.jvmti.retransform_classes(todo).is_ok() {
        return Ok(());
    }
    // One bad class fails the batch: retry one by one and name the ones left out.
    let mut missed = Vec::new();
    for &c in todo {
        if let Err(e) = a.jvmti.retransform_classes(&[c]) {
            missed.push(format!(
                "{} ({})",
                a.jvmti.class_signature(c).unwrap_or_default(),
                e.code
            ));
        }
    }
    clear_exception(env);
    if missed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "clock calls in {} already-loaded classes are not hooked: {}",
            missed.len(),
            missed.join(", ")
        ))
    }
}

/// The runtime image, opened on first use.
enum Lazy {
    Home(String),
    Open(Option<jimage::Image>),
}

impl Lazy {
    fn get(&mut self) -> Option<&mut jimage::Image> {
        if let Lazy::Home(h) = self {
            *self = Lazy::Open(jimage::Image::open(h));
        }
        match self {
            Lazy::Open(i) => i.as_mut(),
            Lazy::Home(_) => None,
        }
    }
}

/// What a boot class's original bytes in the runtime image do with the hooked methods;
/// `None` when the image cannot tell (no such class, bytes that do not parse) or may not hold
/// the loaded bytes: the CDS archive carries regenerated `java.lang.invoke` `$Holder`
/// classes, so those are scanned from the JVM.
fn image_uses(image: &mut jimage::Image, signature: &str) -> Option<cache::Uses> {
    let name = signature.strip_prefix('L')?.strip_suffix(';')?;
    if name.starts_with("java/lang/invoke/") && name.ends_with("$Holder") {
        return None;
    }
    let bytes = image.class_bytes(name)?;
    Some(match classfile::target_calls(bytes).ok()? {
        classfile::Calls::None => cache::Uses::None,
        classfile::Calls::ClinitOnly => cache::Uses::ClinitOnly,
        classfile::Calls::Anywhere => cache::Uses::Anywhere,
    })
}

/// Whether an already-loaded class must be retransformed. Boot classes are answered by the
/// cache when it knows them, else from their bytes in the runtime image; the rest are
/// scanned (`GetConstantPool`). Boot classes' answers are remembered in the cache.
fn class_needs_hooks(
    a: &Agent,
    jni: *mut RawJniEnv,
    c: jclass,
    cache: Option<&mut cache::ClassCache>,
    image: Option<&mut Lazy>,
) -> bool {
    // The hook class calls the real clocks, and the class hook leaves it as it is: a
    // retransform of it would only cost time.
    if let Some(h) = a.hooks.get() {
        // SAFETY: valid env, class reference and global reference.
        let same = unsafe { (**jni).IsSameObject.map(|f| f(jni, c, h.as_obj().as_raw())) };
        if same == Some(jni::sys::JNI_TRUE) {
            return false;
        }
    }
    let sig =
        if (cache.is_some() || image.is_some()) && a.jvmti.is_boot_class(jni, c).unwrap_or(false) {
            a.jvmti.class_signature(c).ok()
        } else {
            None
        };
    if let Some(sig) = &sig {
        // Only modifiable classes are ever stored; a listed class that names no clock after
        // all would cost one needless retransform, never a missed hook.
        match cache.as_deref().and_then(|c| c.lookup(sig)) {
            Some(cache::Uses::None) => return false,
            Some(cache::Uses::Anywhere) => return true,
            // <clinit> runs once: after it, such a class's clock calls cannot run again.
            Some(cache::Uses::ClinitOnly) => return !a.jvmti.is_initialized(c).unwrap_or(false),
            None => {}
        }
    }
    // Arrays, primitives and hidden classes: never rewritten, and never cached (hidden
    // classes' names change from run to run).
    if !a.jvmti.is_modifiable_class(c).unwrap_or(false) {
        return false;
    }
    let from_image = match (&sig, image) {
        (Some(sig), Some(image)) => image.get().and_then(|i| image_uses(i, sig)),
        _ => None,
    };
    if let Some(uses) = from_image {
        if let (Some(sig), Some(cache)) = (sig, cache) {
            cache.insert(sig, uses);
        }
        return match uses {
            cache::Uses::None => false,
            cache::Uses::Anywhere => true,
            cache::Uses::ClinitOnly => !a.jvmti.is_initialized(c).unwrap_or(false),
        };
    }
    let hooked = matches!(a.jvmti.constant_pool(c), Ok((n, pool)) if classfile::pool_references_targets(n, &pool) == Ok(true));
    if let (Some(sig), Some(cache)) = (sig, cache) {
        // Anywhere until the retransform's class hook shows the calls are in <clinit> only.
        let uses = if hooked {
            cache::Uses::Anywhere
        } else {
            cache::Uses::None
        };
        cache.insert(sig, uses);
    }
    hooked
}

/// `java.home` when boot classes can only come from the JDK's `lib/modules` (or the CDS
/// archive made from it): then the class cache and the image's bytes may answer for them.
/// `None` with `--patch-module`, `-Xbootclasspath/a` or `--upgrade-module-path`.
fn image_home(a: &Agent, env: &mut JNIEnv) -> Option<String> {
    let prop = |n: &CStr| a.jvmti.system_property(n).ok().filter(|v| !v.is_empty());
    let elsewhere = [c"jdk.module.upgrade.path", c"jdk.boot.class.path.append"];
    if elsewhere.iter().any(|p| prop(p).is_some()) || patches_modules(env) != Some(false) {
        return None;
    }
    prop(c"java.home")
}

/// The class cache of this JDK (`home` from [`image_home`]), or `None` (cache off, or no
/// home directory).
fn open_cache(a: &Agent, home: &str) -> Option<cache::ClassCache> {
    let dir = a.cache.dir(|k| std::env::var(k).ok())?;
    let version = a.jvmti.system_property(c"java.vm.version").ok()?;
    let key = cache::key(home, &version, classfile::TARGETS)?;
    Some(cache::ClassCache::open(Some(&dir), home, key))
}

/// Whether the JVM was given `--patch-module` (whose `jdk.module.patch.N` properties JVMTI
/// does not show), from `VM.getRuntimeArguments()`: the JVM's options wherever they came
/// from (command line, `@files`, `JDK_JAVA_OPTIONS`, `JAVA_TOOL_OPTIONS`). `None`: unknown.
fn patches_modules(env: &mut JNIEnv) -> Option<bool> {
    let r = env.with_local_frame(16, |env| {
        let args = env
            .call_static_method(
                "jdk/internal/misc/VM",
                "getRuntimeArguments",
                "()[Ljava/lang/String;",
                &[],
            )?
            .l()?;
        let args = jni::objects::JObjectArray::from(args);
        for i in 0..env.get_array_length(&args)? {
            let s = JString::from(env.get_object_array_element(&args, i)?);
            let arg: String = env.get_string(&s)?.into();
            if arg.starts_with("--patch-module") || arg.starts_with("-Djdk.module.patch") {
                return Ok(true);
            }
            env.delete_local_ref(s)?;
        }
        Ok::<_, jni::errors::Error>(false)
    });
    let failed = clear_exception(env);
    r.ok().filter(|_| !failed)
}

unsafe extern "C" fn on_class_file_load(
    _jvmti: RawEnv,
    _jni: *mut RawJniEnv,
    redefined: jclass,
    _loader: jobject,
    name: *const c_char,
    _domain: jobject,
    len: jint,
    data: *const c_uchar,
    new_len: *mut jint,
    new_data: *mut *mut c_uchar,
) {
    guarded("ClassFileLoadHook", (), || {
        let Some(a) = AGENT.get() else { return };
        // Only once the hook class exists may a class call it.
        if a.hooks.get().is_none()
            || data.is_null()
            || len <= 0
            || new_len.is_null()
            || new_data.is_null()
        {
            return;
        }
        if !name.is_null() && CStr::from_ptr(name).to_bytes() == HOOK_CLASS.as_bytes() {
            return;
        }
        let bytes = std::slice::from_raw_parts(data, len as usize);
        if !redefined.is_null() && !name.is_null() {
            if let Some(v) = lock(&CLINIT_ONLY).as_mut() {
                if classfile::targets_only_in_clinit(bytes) == Ok(true) {
                    v.push(format!("L{};", CStr::from_ptr(name).to_string_lossy()));
                }
            }
        }
        // HttpClient's facade calls a hook class of its own module (src/http.rs), defined
        // now; without it, the facade is left as it is.
        let mut hook_class = HOOK_CLASS;
        if !name.is_null() && CStr::from_ptr(name).to_bytes() == http::FACADE.as_bytes() {
            if !http::define(_jni, _loader) {
                return;
            }
            hook_class = http::HOOK;
        }
        // A class we cannot parse is left as it is: the JVM will judge it.
        let Ok(Some(out)) = classfile::rewrite(bytes, hook_class) else {
            return;
        };
        // Clock reads that only feed JVM statistics (`PerfCounter`) are left live.
        if classfile::target_calls(bytes) == Ok(classfile::Calls::None) {
            return;
        }
        match a.jvmti.allocate(out.len()) {
            Ok(p) => {
                std::ptr::copy_nonoverlapping(out.as_ptr(), p, out.len());
                *new_len = out.len() as jint;
                *new_data = p;
            }
            Err(e) => internal_error(None, &e.to_string()),
        }
    })
}

unsafe extern "C" fn on_thread_end(_jvmti: RawEnv, jni: *mut RawJniEnv, _thread: jthread) {
    guarded("ThreadEnd", (), || {
        let Ok(mut env) = JNIEnv::from_raw(jni) else {
            return;
        };
        flush_thread_buffer(&mut env);
    })
}

unsafe extern "C" fn on_vm_death(_jvmti: RawEnv, jni: *mut RawJniEnv) {
    guarded("VMDeath", (), || {
        let Some(a) = AGENT.get() else { return };
        if let (Ok(mut env), Some(h)) = (JNIEnv::from_raw(jni), a.hooks.get()) {
            let _ = call_static(&mut env, h, "stop", "()V");
            flush_thread_buffer(&mut env);
        }
        if a.core.mode() == Mode::Record && !a.disabled.load(Ordering::Relaxed) {
            // Other threads still run (a signal's or System.exit's shutdown does not stop
            // them): one that took a number just before `stop` publishes its event a few
            // instructions later. A moment for those, then every thread's buffer is
            // recorded, so a shutdown writes every event, not only this thread's.
            std::thread::sleep(std::time::Duration::from_millis(1));
            drain::drain_all(&a.kinds, true);
        }
        // Writes from here on (a daemon thread still printing) are not output events: the
        // log is being closed.
        output::close();
        // Replay: events left over, output not written or another exit status are a
        // divergence; under abort the process ends here with its status.
        match a.core.shutdown() {
            Ok(v) => {
                apply(v);
            }
            Err(e) => eprintln!("replay: {e}"),
        }
    })
}

/// Record: records what is left in the calling thread's buffer and frees it. Replay: checks
/// that no value fetched for the thread is left unused, and forgets its Java-side buffer.
fn flush_thread_buffer(env: &mut JNIEnv) {
    if let Some(a) = agent().filter(|a| a.core.mode() == Mode::Record) {
        drain::end_own(&a.kinds);
        return;
    }
    let buf = BUFFER.with(|b| b.replace(std::ptr::null_mut()));
    if buf.is_null() {
        return;
    }
    // SAFETY: `buf` is a live global reference to this thread's long[] (made in attach0).
    let arr = unsafe { JLongArray::from_raw(buf as jlongArray) };
    if let Some(a) = agent() {
        if let Some(_inside) = HookGuard::enter() {
            left_unused(a, env, &arr, None);
        }
    }
    clear_exception(env);
    let raw = env.get_raw();
    // SAFETY: deleting the global reference we own; `arr` is not used afterwards.
    unsafe {
        if let Some(del) = (**raw).DeleteGlobalRef {
            del(raw, buf);
        }
    }
}

/// Whether a write of the calling thread is an output event, and if so, in record, hands over
/// the thread's buffered clock events first (they took earlier numbers, and a thread's events
/// reach the core in sequence order), like `ReplayHooks.fileEvent()` for file calls. Replay
/// compares output per thread out of the threads' turns (the core's unordered kinds), so
/// clock values fetched for the thread and not used yet do not matter to a write. A thread
/// the agent knows (it named it) is handled here without calling Java; others ask
/// `fileEvent()`, which names the thread, or says no for a JDK service thread. Call inside the
/// hook guard.
pub(crate) fn output_turn(a: &Agent, env: &mut JNIEnv) -> bool {
    if !NAMED.with(|n| n.get()) {
        let (Some(id), Some(h)) = (fileio::FILE_EVENT.get(), a.hooks.get()) else {
            return false;
        };
        let cls: &JClass = h.as_obj().into();
        // SAFETY: the method ID of `static boolean fileEvent()` in that class.
        let r = unsafe {
            env.call_static_method_unchecked(
                cls,
                *id,
                jni::signature::ReturnType::Primitive(jni::signature::Primitive::Boolean),
                &[],
            )
        };
        if clear_exception(env) {
            return false;
        }
        let yes = r.ok().and_then(|v| v.z().ok()).unwrap_or(false);
        if !yes {
            a.core
                .ran_live("writes of JDK service threads (not compared)");
        }
        return yes;
    }
    if a.core.mode() == Mode::Record {
        drain::flush_own(&a.kinds);
    }
    true
}

/// Records an event the calling thread makes directly (a file, socket or entropy call),
/// after the thread's buffered clock events, which took earlier numbers ([`drain`]). Call
/// right before the record: a clock read in between (Java code the call ran) would
/// otherwise be numbered before it and reach the log after it.
pub(crate) fn record_direct(
    a: &Agent,
    kind: u32,
    site: u32,
    digest: Option<u64>,
    payload: PayloadRef<'_>,
) {
    drain::flush_own(&a.kinds);
    a.core.record(kind, site, digest, payload);
}

/// The calling Java stack for a divergence report. Runs Java: call it inside the hook guard,
/// so that what it does (class loading, clock reads) is not an event.
fn java_stack(a: &Agent, env: &mut JNIEnv) -> Option<String> {
    let h = a.hooks.get()?;
    let cls: &JClass = h.as_obj().into();
    let r = env.call_static_method(cls, "stack", "()Ljava/lang/String;", &[]);
    if clear_exception(env) {
        return None;
    }
    let s = JString::from(r.ok()?.l().ok()?);
    let text: String = env.get_string(&s).ok()?.into();
    Some(format!("Java stack:\n{}", text.trim_end()))
}

/// Replay: the first fetched event of this thread's run that no call used yet, if any.
fn pending_event(env: &mut JNIEnv, b: &JLongArray) -> Option<(usize, replay_core::Event)> {
    let mut head = [0 as jlong; 1];
    env.get_long_array_region(b, 0, &mut head).ok()?;
    let pos = usize::try_from(head[0] - 3).ok()?;
    RUN.with(|r| r.borrow().get(pos).cloned().map(|e| (pos, e)))
}

/// Drops this thread's fetched run: the Java buffer then holds nothing to serve.
fn drop_run(env: &mut JNIEnv, b: &JLongArray) {
    RUN.with(|r| r.borrow_mut().clear());
    let _ = env.set_long_array_region(b, 0, &[3, 3, -1]);
    clear_exception(env);
}

/// Replay: if fetched events of this thread are unused when the program makes another kind
/// of call (`actual`: its kind id and digest; `None`: the thread ends), reports the
/// divergence and applies the policy. Returns whether there was one; the run is dropped.
/// Call inside the hook guard (the stack helper runs Java).
fn left_unused(
    a: &Agent,
    env: &mut JNIEnv,
    b: &JLongArray,
    actual: Option<(u32, Option<u64>)>,
) -> bool {
    let Session::Replay(r) = &a.core.session else {
        return false;
    };
    let Some((_, expected)) = pending_event(env, b) else {
        return false;
    };
    if r.is_live() {
        drop_run(env, b);
        return false;
    }
    let (kind, digest, context) = match actual {
        Some((k, d)) => (k, d, java_stack(a, env)),
        None => (
            a.core
                .intern("end of the thread (fetched clock values left unused)"),
            None,
            None,
        ),
    };
    let d = r.mismatch(expected, kind, 0, digest);
    let d = match context {
        Some(c) => d.with_context(c),
        None => d,
    };
    drop_run(env, b);
    // The unused values are dropped whatever the policy (warn-continue serves nothing here:
    // the call that came is handled on its own); abort stops in `apply`.
    let _ = apply(a.core.diverged(d));
    true
}

fn adjust_digest(arg: jlong) -> u64 {
    replay_core::digest(&[&arg.to_le_bytes()])
}

// ---- natives of java.lang.ReplayHooks -------------------------------------------------------

#[no_mangle]
pub extern "system" fn Java_java_lang_ReplayHooks_attach0<'l>(
    mut env: JNIEnv<'l>,
    _c: JClass<'l>,
    name: JString<'l>,
    buf: JLongArray<'l>,
    buffered: jni::sys::jboolean,
) -> jlong {
    guarded("attach0", 0, || {
        let Some(a) = agent() else { return 0 };
        if !NAMED.with(|n| n.replace(true)) {
            let name: String = env.get_string(&name).map(Into::into).unwrap_or_default();
            a.core.name_thread(&name);
        }
        if let Session::Record(r) = &a.core.session {
            return if buffered != 0 {
                drain::attach(r, BATCH as usize, &a.kinds)
            } else {
                0
            };
        }
        // The fetched run of an earlier Java thread on this OS thread (`RUN` belongs to the OS
        // thread) is not this buffer's: the JVM's shutdown runs on main's OS thread as another
        // Java thread (DestroyJavaVM), whose new buffer then found main's last run at its start
        // and reported main's first clock value, used long before, as left unused (a
        // File.deleteOnExit's delete at shutdown diverged so, every time).
        RUN.with(|r| r.borrow_mut().clear());
        // Replay keeps the buffer of a buffering (non-daemon) thread: its ThreadEnd checks
        // that no fetched value was left unused.
        let keep = !buf.is_null() && env.get_array_length(&buf).is_ok_and(|n| n > 1);
        if keep {
            let raw = env.get_raw();
            // SAFETY: a valid env and local reference; the global reference is deleted by
            // flush_thread_buffer at ThreadEnd or VMDeath.
            let g = unsafe {
                (**raw)
                    .NewGlobalRef
                    .map_or(std::ptr::null_mut(), |f| f(raw, buf.as_raw()))
            };
            let old = BUFFER.with(|b| b.replace(g));
            if !old.is_null() {
                // An earlier Java thread on this OS thread whose end we did not see: drop it.
                // SAFETY: our own global reference.
                unsafe {
                    if let Some(del) = (**raw).DeleteGlobalRef {
                        del(raw, old);
                    }
                }
            }
        }
        0
    })
}

#[no_mangle]
pub extern "system" fn Java_java_lang_ReplayHooks_flush0<'l>(_env: JNIEnv<'l>, _c: JClass<'l>) {
    guarded("flush0", (), || {
        if let Some(a) = agent() {
            drain::flush_own(&a.kinds);
        }
    })
}

#[no_mangle]
pub extern "system" fn Java_java_lang_ReplayHooks_record0<'l>(
    _env: JNIEnv<'l>,
    _c: JClass<'l>,
    kind: jint,
    value: jlong,
    arg: jlong,
) {
    guarded("record0", (), || {
        let Some(a) = agent() else { return };
        let k = kind as usize;
        if k < KINDS.len() {
            let digest = (k >= K_ADJUST).then(|| adjust_digest(arg));
            record_direct(a, a.kinds[k], 0, digest, PayloadRef::Int(value));
        }
    })
}

#[no_mangle]
pub extern "system" fn Java_java_lang_ReplayHooks_replay0<'l>(
    env: JNIEnv<'l>,
    _c: JClass<'l>,
    kind: jint,
    live: jlong,
    arg: jlong,
) -> jlong {
    guarded("replay0", live, || {
        let Some(a) = agent() else { return live };
        let k = kind as usize;
        if k >= KINDS.len() {
            return live;
        }
        // The stack helper runs Java: its own clock reads (if any) are not events.
        let Some(_inside) = HookGuard::enter() else {
            return live;
        };
        let digest = (k >= K_ADJUST).then(|| adjust_digest(arg));
        if k == K_SLEEP || k == K_WAIT {
            // A sleep past the thread's recording: it slept when the recorded program ended.
            a.core.replay_wait_if_ended();
        }
        let env = RefCell::new(env);
        let stack = || java_stack(a, &mut env.borrow_mut());
        match apply(a.core.replay(a.kinds[k], 0, digest, &stack)) {
            Some(e) => int_or(a, &e, k, live),
            None => live,
        }
    })
}

fn int_or(a: &Agent, e: &replay_core::Event, k: usize, live: jlong) -> jlong {
    match e.payload {
        Payload::Int { value } => value,
        ref other => {
            if !a.bad_payload.swap(true, Ordering::Relaxed) {
                eprintln!(
                    "replay: event {} ({}) holds {} instead of a time; the live value is used",
                    e.seq,
                    KINDS[k],
                    other.summary()
                );
            }
            live
        }
    }
}

/// Serves a clock call of a buffering thread in replay: a pending event of another kind is a
/// divergence; otherwise the thread's next run of same-kind events is fetched into `b`
/// (`Replayer::next_run`; `getNanoTimeAdjustment`, which has an input digest, is one event
/// alone) and the first is returned. Events of a run that are not times stay in `RUN` past
/// the buffer's end and are served here one by one.
#[no_mangle]
pub extern "system" fn Java_java_lang_ReplayHooks_run0<'l>(
    mut env: JNIEnv<'l>,
    _c: JClass<'l>,
    kind: jint,
    live: jlong,
    arg: jlong,
    b: JLongArray<'l>,
) -> jlong {
    guarded("run0", live, || {
        let Some(a) = agent() else { return live };
        let k = kind as usize;
        let Session::Replay(r) = &a.core.session else {
            return live;
        };
        if k >= KINDS.len() || r.is_live() {
            return live;
        }
        let Some(_inside) = HookGuard::enter() else {
            return live;
        };
        let digest = (k >= K_ADJUST).then(|| adjust_digest(arg));
        if let Some((pos, e)) = pending_event(&mut env, &b) {
            if e.kind == a.kinds[k] && digest.is_none() {
                // A time the Java buffer could not hold (not an Int): served from here.
                let _ = env.set_long_array_region(&b, 0, &[pos as jlong + 4]);
                return int_or(a, &e, k, live);
            }
            left_unused(a, &mut env, &b, Some((a.kinds[k], digest)));
            // Abort has stopped; warn-live is live now; warn-continue goes on with this call.
            if r.is_live() {
                return live;
            }
        }
        if k == K_SLEEP || k == K_WAIT {
            // A sleep past the thread's recording: it slept when the recorded program ended
            // (a daemon's periodic sleep), so it waits for the program's end here too.
            a.core.replay_wait_if_ended();
        }
        let mut run = RUN.with(|x| std::mem::take(&mut *x.borrow_mut()));
        run.clear();
        let max = if digest.is_some() {
            1
        } else {
            env.get_array_length(&b)
                .map_or(1, |n| (n as usize).saturating_sub(3).max(1))
        };
        // The core's one run API (getNanoTimeAdjustment, which has an input digest, is one
        // call alone); a verdict instead of a run is applied here: stop, live, or
        // (warn-continue) the recorded value.
        let verdict = {
            let env = RefCell::new(&mut env);
            let stack = || java_stack(a, &mut env.borrow_mut());
            if digest.is_some() {
                match a.core.replay(a.kinds[k], 0, digest, &stack) {
                    Verdict::Serve(e) => {
                        run.push(e);
                        None
                    }
                    v => Some(v),
                }
            } else {
                a.core.replay_run(a.kinds[k], max, &mut run, &stack)
            }
        };
        if let Some(v) = verdict {
            return match apply(v) {
                Some(e) => int_or(a, &e, k, live),
                None => live,
            };
        }
        // Buffer the leading times of the run; the first is this call's.
        let values: Vec<jlong> = run
            .iter()
            .map_while(|e| match e.payload {
                Payload::Int { value } => Some(value),
                _ => None,
            })
            .collect();
        let first = run.first().map(|e| int_or(a, e, k, live)).unwrap_or(live);
        let ok = env.set_long_array_region(&b, 3, &values).is_ok()
            && env
                .set_long_array_region(&b, 0, &[4, 3 + values.len() as jlong, kind as jlong])
                .is_ok();
        if !ok {
            clear_exception(&mut env);
            internal_error(Some(&mut env), "cannot fill the replay buffer");
            return first;
        }
        RUN.with(|x| *x.borrow_mut() = run);
        first
    })
}

/// Replay: a file call of a thread whose fetched clock values are not all used yet.
#[no_mangle]
pub extern "system" fn Java_java_lang_ReplayHooks_pending0<'l>(
    mut env: JNIEnv<'l>,
    _c: JClass<'l>,
    b: JLongArray<'l>,
) {
    guarded("pending0", (), || {
        let Some(a) = agent() else { return };
        // Called from fileEvent, which native file wrappers call inside the hook guard.
        let kind = a.core.intern("java.io file call");
        left_unused(a, &mut env, &b, Some((kind, None)));
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use replay_core::options::{Order, Policy};

    #[test]
    fn program_and_its_arguments() {
        assert_eq!(program_of("Main a b"), "Main");
        assert_eq!(program_of("app.jar --x"), "app.jar");
        assert_eq!(
            program_of("jdk.compiler/com.sun.tools.javac.launcher.Main Hello.java 1"),
            "Hello.java"
        );
        assert_eq!(
            program_of("jdk.compiler/com.sun.tools.javac.launcher.SourceLauncher Hello.java"),
            "Hello.java"
        );
        assert_eq!(program_of(""), "");
        let args = [
            "java",
            "-Xcheck:jni",
            "-XX:+UseG1GC",
            "-Da=b",
            "-cp",
            "c",
            "Main",
            "-Xy",
        ];
        assert_eq!(
            program_argv(args.iter().map(|s| s.to_string())),
            ["java", "-Da=b", "-cp", "c", "Main", "-Xy"]
        );
        let javac = [
            "javac",
            "-d",
            "out",
            "-J-agentpath:/a.so=record",
            "-J-Xmx1g",
            "A.java",
        ];
        assert_eq!(
            program_argv(javac.iter().map(|s| s.to_string())),
            ["javac", "-d", "out", "A.java"]
        );
    }

    #[test]
    fn agent_options() {
        let (o, w) = parse_options("record,log=/tmp/x-%p.replay,policy=warn-live,relaxed").unwrap();
        assert_eq!(o.mode, Mode::Record);
        assert_eq!(o.log.as_deref(), Some("/tmp/x-%p.replay"));
        assert_eq!(o.policy, Policy::WarnLive);
        assert_eq!(o.order, Order::Relaxed);
        assert!(w.is_empty(), "{w:?}");
    }

    #[test]
    fn unknown_keys_warn_and_bad_values_fail() {
        let (o, w) = parse_options("replay,log=a.replay,colour=red").unwrap();
        assert_eq!(o.mode, Mode::Replay);
        assert_eq!(w.len(), 1);
        assert!(
            w[0].starts_with("replay: unknown option 'colour' ignored"),
            "{}",
            w[0]
        );
        let e = parse_options("record,timeout=soon").unwrap_err();
        assert_eq!(
            e,
            "bad value 'soon' for option 'timeout': expected a duration such as 100ms or 10s"
        );
        assert!(parse_options("mode=fast").is_err());
    }

    #[test]
    fn cache_option_is_the_agents_own_and_checked() {
        let (_, w) = parse_options("record,cache=off").unwrap();
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(cache_option("record"), Ok(cache::Setting::Default));
        assert_eq!(cache_option("record,cache=off"), Ok(cache::Setting::Off));
        assert_eq!(
            cache_option("cache=off, cache=/tmp/c ,record"),
            Ok(cache::Setting::Dir("/tmp/c".into()))
        );
        assert_eq!(
            cache_option("record,cache="),
            Err("bad value '' for option 'cache': expected off, on or a directory".into())
        );
    }

    #[test]
    fn no_mode_means_off_with_a_warning_but_explicit_off_is_silent() {
        let (o, w) = parse_options("").unwrap();
        assert_eq!(o.mode, Mode::Off);
        assert_eq!(
            w,
            vec!["replay: no mode given (record, replay or off): the agent is off".to_string()]
        );
        let (o, w) = parse_options("off").unwrap();
        assert_eq!(o.mode, Mode::Off);
        assert!(w.is_empty());
    }

    #[test]
    fn hook_class_is_embedded_and_is_one_we_would_not_rewrite() {
        assert_eq!(&HOOK_BYTES[..4], &[0xCA, 0xFE, 0xBA, 0xBE]);
        // Version 61: loadable by JDK 17 and later.
        assert_eq!(u16::from_be_bytes([HOOK_BYTES[6], HOOK_BYTES[7]]), 61);
        // It calls the real clocks; the agent skips it by name, and it must parse.
        assert!(classfile::rewrite(HOOK_BYTES, HOOK_CLASS)
            .unwrap()
            .is_some());
        // A real class from javac: its clock calls are in methods, not only in <clinit>.
        assert_eq!(classfile::targets_only_in_clinit(HOOK_BYTES), Ok(false));
    }
}
