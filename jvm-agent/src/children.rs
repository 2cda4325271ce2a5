//! Child processes (`ProcessBuilder.start`, `Runtime.exec`), replayed from the parent's side.
//!
//! Every start passes `java.lang.ProcessImpl.forkAndExec`. Its call is an event of the calling
//! thread: the input digest is the program and its arguments (replay checks that the program
//! starts the same command), the payload the child's number, 0 for a child that runs live in
//! replay too, or the exception the start threw.
//!
//! A child whose stdout and stderr are pipes to the program (the default, and
//! `redirectErrorStream`) is replayed without running it:
//! - Record: the child runs. What the program reads from its pipes (`FileInputStream`'s read
//!   natives on the pipe's descriptor, whichever thread reads: the program's, or the JDK's
//!   "process reaper" draining what is left at exit) and the exit status the reaper collects
//!   (`ProcessHandleImpl.waitForProcessExit0`) are side records (`SIDE_KINDS`), appended
//!   through a logical thread of their own as they happen.
//! - Replay: the start reads them back (`Core::side_events`, a pass over the whole log: the
//!   program has not reached them yet) and starts a stand-in instead, `/bin/sh` writing the
//!   recorded bytes to the same pipes (the JDK's own pipes, reaper and drain work as in the
//!   recording). Its stdin is drained so that a program feeding the child never blocks. The
//!   reaper gets the recorded exit status.
//!
//! A child whose stdout or stderr is inherited (`inheritIO`, `Redirect.INHERIT`) is replayed
//! the same way: record gives it a pipe instead, and a copier thread of the agent writes what
//! comes through to the program's own descriptor as it records it (the program still sees no
//! stream, as with an inherited output); the reaper's exit status waits for the copy to end
//! (at most `COPY_WAIT`), so that the child's output comes before what the program prints
//! after `waitFor`. In replay the stand-in inherits the descriptor and writes the recorded
//! bytes there.
//!
//! Children that run live in replay (counted as such at the end of replay): a runtime the
//! process tree records in its own log (`java`, `node`, ...: checked there), and a child with
//! an output sent to a file.

use crate::fileio::{
    begin, orig, pending_exception, record_one, replay_one, run, throw_recorded, FORK,
};
use crate::{agent, guarded, Agent};
use jni::objects::{JByteArray, JFieldID, JIntArray};
use jni::sys::{jboolean, jbyteArray, jclass, jint, jlong, jobject, JNIEnv as RawJniEnv};
use jni::JNIEnv;
use replay_core::session::{Session, SIDE_KINDS};
use replay_core::{Appender, FieldValue, Payload, Record};
use std::collections::HashMap;
use std::ffi::c_void;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

pub type ForkFn = unsafe extern "system" fn(
    *mut RawJniEnv,
    jobject,
    jint,
    jobject,
    jobject,
    jobject,
    jint,
    jobject,
    jint,
    jobject,
    jobject,
    jboolean,
) -> jint;
type WaitFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jlong, jboolean) -> jint;

/// The native this module binds itself (`forkAndExec` is in src/fileio.rs's table).
const WAIT: (&str, &str, &str) = (
    "Ljava/lang/ProcessHandleImpl;",
    "waitForProcessExit0",
    "(JZ)I",
);
static WAIT_ORIG: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

/// Numbers of replayed children, from 1 in order of start.
static NEXT_CHILD: AtomicU32 = AtomicU32::new(1);
/// Record: the program's ends of replayed children's output pipes, descriptor -> (child,
/// stream: 1 stdout, 2 stderr). `PIPE_COUNT` is its length: a read of any other stream pays
/// one load.
static PIPES: Mutex<Vec<(jint, u32, u8)>> = Mutex::new(Vec::new());
static PIPE_COUNT: AtomicUsize = AtomicUsize::new(0);
/// Child pid (the stand-in's in replay) -> its number.
static PIDS: Mutex<Option<HashMap<jlong, u32>>> = Mutex::new(None);
/// Record: per child, its copiers of inherited output still running (`COPY_DONE` wakes
/// the reaper waiting for them).
static COPIERS: Mutex<Option<HashMap<u32, usize>>> = Mutex::new(None);
static COPY_DONE: std::sync::Condvar = std::sync::Condvar::new();
/// How long the reaper waits for a child's inherited output to be copied after it exited (a
/// grandchild still holding the pipe keeps it open).
const COPY_WAIT: std::time::Duration = std::time::Duration::from_secs(2);
/// Record: the side records' logical thread.
static SIDE: OnceLock<Option<Appender>> = OnceLock::new();
/// Replay: what the recording holds of each child, read once at the first stand-in.
static SCAN: OnceLock<Result<Scan, String>> = OnceLock::new();

#[derive(Default)]
struct Scan {
    /// Child -> (stdout, stderr) as the program read them.
    output: HashMap<u32, (Vec<u8>, Vec<u8>)>,
    exit: HashMap<u32, i32>,
}

/// Child `child` runs as process `pid` (the stand-in's in replay); nothing for a failed start.
fn remember_pid(pid: jint, child: u32) {
    if pid <= 0 {
        return;
    }
    if let Ok(mut m) = PIDS.lock() {
        m.get_or_insert_with(HashMap::new)
            .insert(pid as jlong, child);
    }
}

/// NativeMethodBind for `waitForProcessExit0`: the wrapper to bind instead of `address`.
pub(crate) fn bind(
    owner: &str,
    name: &str,
    sig: &str,
    address: *mut c_void,
) -> Option<*mut c_void> {
    if (owner, name, sig) != WAIT {
        return None;
    }
    Some(crate::fileio::bound(
        &WAIT_ORIG,
        address,
        wait_for_process_exit0 as WaitFn as *mut c_void,
    ))
}

fn side(a: &Agent) -> Option<&'static Appender> {
    SIDE.get_or_init(|| a.core.side_appender("[child processes]"))
        .as_ref()
}

fn record_side(a: &Agent, kind: &str, fields: Vec<replay_core::Field>, child: u32) {
    let Some(app) = side(a) else { return };
    let mut all = vec![replay_core::Field {
        name: "child".into(),
        value: FieldValue::Uint(child as u64),
    }];
    all.extend(fields);
    let k = a.core.intern(kind);
    app.record_owned(k, 0, None, Record { fields: all });
}

/// Record: the child and stream whose pipe `this` (a FileInputStream) reads, if any.
pub(crate) fn pipe_of(raw: *mut RawJniEnv, this: jobject) -> Option<(u32, u8)> {
    if PIPE_COUNT.load(Ordering::Relaxed) == 0 {
        return None;
    }
    let fd = stream_descriptor(raw, this)?;
    let pipes = PIPES.lock().ok()?;
    pipes
        .iter()
        .find(|p| p.0 == fd)
        .map(|&(_, child, stream)| (child, stream))
}

/// Record: whether some child's pipe is open.
pub(crate) fn has_pipes() -> bool {
    PIPE_COUNT.load(Ordering::Relaxed) != 0
}

/// A descriptor is closed: it is no longer a child's pipe.
pub(crate) fn forget(fd: jint) {
    if PIPE_COUNT.load(Ordering::Relaxed) == 0 {
        return;
    }
    if let Ok(mut pipes) = PIPES.lock() {
        pipes.retain(|p| p.0 != fd);
        PIPE_COUNT.store(pipes.len(), Ordering::Relaxed);
    }
}

/// Record: bytes the program read from a child's pipe (a read of `n` into `b[off..]`).
pub(crate) fn read_bytes(raw: *mut RawJniEnv, pipe: (u32, u8), b: jbyteArray, off: jint, n: jint) {
    if n <= 0 {
        return;
    }
    guarded("child pipe read", (), || {
        let Some(a) = agent() else { return };
        // SAFETY: the JNIEnv the JVM passed to the native; `b` is its array argument.
        let Ok(mut env) = (unsafe { JNIEnv::from_raw(raw) }) else {
            return;
        };
        let arr = unsafe { JByteArray::from_raw(b) };
        let mut buf = vec![0i8; n as usize];
        if env.get_byte_array_region(&arr, off, &mut buf).is_err() {
            crate::clear_exception(&mut env);
            crate::internal_error(Some(&mut env), "cannot read a child pipe's buffer");
            return;
        }
        let bytes: Vec<u8> = buf.iter().map(|&x| x as u8).collect();
        read_data(a, pipe, bytes);
    });
}

/// Record: one byte the program read from a child's pipe (`read0`'s result, -1 at the end).
pub(crate) fn read_byte(pipe: (u32, u8), r: jint) {
    if r < 0 {
        return;
    }
    guarded("child pipe read", (), || {
        if let Some(a) = agent() {
            read_data(a, pipe, vec![r as u8]);
        }
    });
}

fn read_data(a: &Agent, (child, stream): (u32, u8), bytes: Vec<u8>) {
    let name = if stream == 2 { "stderr" } else { "stdout" };
    let fields = vec![
        replay_core::Field {
            name: "stream".into(),
            value: FieldValue::Text(name.into()),
        },
        replay_core::Field {
            name: "data".into(),
            value: FieldValue::Bytes(bytes.into()),
        },
    ];
    record_side(a, SIDE_KINDS[0], fields, child);
}

/// Record: copies an inherited output of `child` (`stream`: 1 or 2) from the pipe `from` to
/// the program's own descriptor, recording each chunk before writing it, until the end.
fn copy_inherited(child: u32, stream: u8, from: jint) {
    if let Ok(mut c) = COPIERS.lock() {
        *c.get_or_insert_with(HashMap::new).entry(child).or_default() += 1;
    }
    let done = move || {
        if let Ok(mut c) = COPIERS.lock() {
            if let Some(n) = c.as_mut().and_then(|m| m.get_mut(&child)) {
                *n = n.saturating_sub(1);
            }
            COPY_DONE.notify_all();
        }
    };
    let copy = move || {
        use std::io::{Read, Write};
        use std::os::fd::FromRawFd;
        // SAFETY: `from` is the read end of the pipe the JVM just made for the child, which
        // nothing else in the process knows (the program got -1 for it): this owns it.
        let mut src = unsafe { std::fs::File::from_raw_fd(from) };
        // SAFETY: the program's stdout or stderr, borrowed (never closed here).
        let mut dst =
            std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(stream as i32) });
        let mut buf = vec![0u8; 1 << 16];
        loop {
            match src.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if let Some(a) = agent() {
                        read_data(a, (child, stream), buf[..n].to_vec());
                    }
                    let _ = dst.write_all(&buf[..n]);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        done();
    };
    if std::thread::Builder::new()
        .name("replay child output".into())
        .spawn(copy)
        .is_err()
    {
        eprintln!("replay: internal error: cannot start a thread copying a child's output");
        done();
    }
}

/// Record: waits (at most [`COPY_WAIT`]) until the inherited outputs of `child` are copied.
fn wait_copied(child: u32) {
    let Ok(mut c) = COPIERS.lock() else { return };
    let deadline = std::time::Instant::now() + COPY_WAIT;
    while c
        .as_ref()
        .and_then(|m| m.get(&child))
        .is_some_and(|&n| n > 0)
    {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return;
        }
        match COPY_DONE.wait_timeout(c, left) {
            Ok((g, _)) => c = g,
            Err(_) => return,
        }
    }
}

/// The descriptor number of a FileInputStream.
fn stream_descriptor(raw: *mut RawJniEnv, this: jobject) -> Option<jint> {
    static FIS_FD: OnceLock<JFieldID> = OnceLock::new();
    static FD_FD: OnceLock<JFieldID> = OnceLock::new();
    // SAFETY: the JNIEnv the JVM passed to the native.
    let mut env = unsafe { JNIEnv::from_raw(raw) }.ok()?;
    let fis_fd = crate::fsmeta::field_id(
        &mut env,
        &FIS_FD,
        "java/io/FileInputStream",
        "fd",
        "Ljava/io/FileDescriptor;",
    )?;
    let fd_fd = crate::fsmeta::field_id(&mut env, &FD_FD, "java/io/FileDescriptor", "fd", "I")?;
    // SAFETY: `this` is a live FileInputStream, the IDs its `fd` and FileDescriptor's `fd`;
    // field reads of the receiver's own class cannot throw. The local reference is freed when
    // the native returns.
    unsafe {
        let (Some(get_obj), Some(get_int)) = ((**raw).GetObjectField, (**raw).GetIntField) else {
            return None;
        };
        let fd = get_obj(raw, this, fis_fd.into_raw());
        if fd.is_null() {
            return None;
        }
        Some(get_int(raw, fd, fd_fd.into_raw()))
    }
}

/// `ProcessHandleImpl.waitForProcessExit0(pid, reap)`: the reaper learns a child's exit
/// status. Record: a replayed child's is a side record. Replay: a stand-in's is the recorded.
unsafe extern "system" fn wait_for_process_exit0(
    raw: *mut RawJniEnv,
    cls: jclass,
    pid: jlong,
    reap: jboolean,
) -> jint {
    let p = WAIT_ORIG.load(Ordering::Acquire);
    // SAFETY: the JVM's own implementation, saved at its bind before it bound this wrapper.
    let live: WaitFn = unsafe { std::mem::transmute::<*mut c_void, WaitFn>(p) };
    let status = unsafe { live(raw, cls, pid, reap) };
    guarded("ProcessHandleImpl.waitForProcessExit0", status, || {
        let Some(a) = agent() else { return status };
        let Some(child) = PIDS
            .lock()
            .ok()
            .and_then(|m| m.as_ref().and_then(|m| m.get(&pid).copied()))
        else {
            return status;
        };
        match &a.core.session {
            Session::Record(_) => {
                if reap != 0 {
                    wait_copied(child);
                    let fields = vec![replay_core::Field {
                        name: "status".into(),
                        value: FieldValue::Int(status as i64),
                    }];
                    record_side(a, SIDE_KINDS[1], fields, child);
                }
                status
            }
            Session::Replay(_) => match scan(a) {
                Ok(s) => s.exit.get(&child).copied().unwrap_or(status),
                Err(_) => status,
            },
        }
    })
}

fn scan(a: &Agent) -> &'static Result<Scan, String> {
    SCAN.get_or_init(|| {
        let mut s = Scan::default();
        let uint = |r: &Record, f: &str| match r.get(f) {
            Some(FieldValue::Uint(v)) => Some(*v as u32),
            _ => None,
        };
        for e in a.core.side_events(&SIDE_KINDS[..2])? {
            let Payload::Record { record } = e.payload else {
                continue;
            };
            let Some(child) = uint(&record, "child") else {
                continue;
            };
            match (record.get("data"), record.get("status")) {
                (Some(FieldValue::Bytes(data)), _) => {
                    let entry = s.output.entry(child).or_default();
                    match record.get("stream") {
                        Some(FieldValue::Text(t)) if t == "stderr" => {
                            entry.1.extend_from_slice(data)
                        }
                        _ => entry.0.extend_from_slice(data),
                    }
                }
                (_, Some(FieldValue::Int(st))) => {
                    s.exit.insert(child, *st as i32);
                }
                _ => {}
            }
        }
        Ok(s)
    })
}

/// Whether a child running `prog` (a NUL-terminated path or name) is recorded in its own
/// log by the process tree (a runtime the launcher's tree reaches): replayed and checked there.
fn tree_runtime(prog: &[u8]) -> bool {
    // The launcher's list of JDK tools and JVM launchers (cli/src/cmd/runtime.rs,
    // JAVA_TOOLS) and Node's (lib/child.js, RUNTIMES): each records its own log in the tree,
    // so it runs again from that log in replay. A stand-in for one (ant's `<javadoc>`) wrote
    // none of the files the tool wrote.
    const RUNTIMES: &[&[u8]] = &[
        b"java",
        b"javac",
        b"jshell",
        b"jar",
        b"javadoc",
        b"javap",
        b"jdb",
        b"jlink",
        b"jpackage",
        b"kotlin",
        b"kotlinc",
        b"scala",
        b"groovy",
        b"mvn",
        b"gradle",
        b"sbt",
        b"lein",
        b"clojure",
        b"node",
        b"nodejs",
        b"npm",
        b"npx",
        b"yarn",
        b"pnpm",
    ];
    let prog = prog.split(|&b| b == 0).next().unwrap_or_default();
    let base = prog.rsplit(|&b| b == b'/').next().unwrap_or_default();
    std::env::var_os(replay_core::tree::ENV_TREE).is_some() && RUNTIMES.contains(&base)
}

/// Counts a child that runs live in replay.
fn count_live(a: &Agent, runtime: bool) {
    if runtime {
        a.core.ran_live("child process with its own log");
    } else {
        a.core.ran_unchecked("child process");
    }
}

/// The stand-in's script: `$0` is the directory of the recorded output, `$1` says whether
/// its stdin is a pipe from the program (drained in the background, so that the program's
/// writes never block; an inherited terminal is left alone). The two outputs are written at
/// once: a program reading stderr to its end before stdout must not wait for a full pipe.
const STAND_IN: &str =
    "d=$0; if [ \"$1\" = 1 ]; then exec 3<&0; (cat <&3 >/dev/null 2>&1 &); exec 3<&-; fi; \
cat \"$d/out\" & cat \"$d/err\" >&2 & wait; rm -rf \"$d\"";

/// Replay: starts the stand-in of child `child` with the program's descriptors `fds`; its pid.
fn stand_in(
    a: &Agent,
    env: &mut JNIEnv,
    child: u32,
    drain_stdin: bool,
    start: &dyn Fn(jobject, jobject, jint) -> jint,
) -> Option<jint> {
    let scan = match scan(a) {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "replay: cannot read the recorded output of child processes ({e}): they run live"
            );
            return None;
        }
    };
    let (out, err) = scan.output.get(&child).cloned().unwrap_or_default();
    let dir = std::env::temp_dir().join(format!("replay-child-{}-{child}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let written = (|| {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        std::fs::write(dir.join("out"), &out)?;
        std::fs::write(dir.join("err"), &err)
    })();
    if let Err(e) = written {
        eprintln!(
            "replay: cannot write the recorded output of a child process to {} ({e}): it runs live",
            dir.display()
        );
        return None;
    }
    let mut args = b"-c\0".to_vec();
    args.extend_from_slice(STAND_IN.as_bytes());
    args.push(0);
    args.extend_from_slice(dir.as_os_str().as_encoded_bytes());
    args.push(0);
    args.extend_from_slice(if drain_stdin { b"1\0" } else { b"0\0" });
    let prog = env.byte_array_from_slice(b"/bin/sh\0").ok()?;
    let block = env.byte_array_from_slice(&args).ok()?;
    let pid = start(prog.as_raw(), block.as_raw(), 4);
    Some(pid)
}

/// `java.lang.ProcessImpl.forkAndExec`: a child process starts.
#[allow(clippy::too_many_arguments)]
/// A child's own environment block (`name=value\0` entries; null: it inherits this
/// process's) with this process's `REPLAY_*` variables added where it has none: the program
/// never saw them (src/environ.rs), so `ProcessBuilder.environment()` left them out, and the
/// child must still find its log.
fn with_control_vars(raw: *mut RawJniEnv, envb: jobject, envc: jint) -> (jobject, jint) {
    let unchanged = (envb, envc);
    if envb.is_null() || agent().is_none() {
        return unchanged;
    }
    let ours: Vec<Vec<u8>> = std::env::vars_os()
        .filter(|(k, _)| k.as_bytes().starts_with(crate::environ::PREFIX))
        .map(|(k, v)| [k.as_bytes(), b"=", v.as_bytes(), b"\0"].concat())
        .collect();
    if ours.is_empty() {
        return unchanged;
    }
    // SAFETY: the calling thread's JNIEnv; `envb` is the call's byte[] argument.
    let Ok(mut env) = (unsafe { JNIEnv::from_raw(raw) }) else {
        return unchanged;
    };
    let arr = unsafe { JByteArray::from_raw(envb) };
    let Ok(mut block) = env.convert_byte_array(&arr) else {
        crate::clear_exception(&mut env);
        return unchanged;
    };
    let _ = arr.into_raw();
    let has = |entry: &[u8]| {
        let name = &entry[..=entry.iter().position(|&b| b == b'=').unwrap_or(0)];
        block.split(|&b| b == 0).any(|e| e.starts_with(name))
    };
    let missing: Vec<&Vec<u8>> = ours.iter().filter(|e| !has(e)).collect();
    if missing.is_empty() {
        return unchanged;
    }
    for e in &missing {
        block.extend_from_slice(e);
    }
    match env.byte_array_from_slice(&block) {
        Ok(b) => (b.into_raw(), envc + missing.len() as jint),
        Err(_) => {
            crate::clear_exception(&mut env);
            unchanged
        }
    }
}

pub unsafe extern "system" fn fork_and_exec(
    raw: *mut RawJniEnv,
    this: jobject,
    mode: jint,
    helper: jobject,
    prog: jobject,
    args: jobject,
    argc: jint,
    envb: jobject,
    envc: jint,
    dir: jobject,
    fds: jobject,
    redirect: jboolean,
) -> jint {
    let (envb, envc) = crate::guarded("ProcessImpl.forkAndExec", (envb, envc), || {
        with_control_vars(raw, envb, envc)
    });
    // SAFETY (both calls): the saved original of this very native, with the JVM's arguments
    // or a stand-in's program and arguments.
    let start = |prog: jobject, args: jobject, argc: jint| unsafe {
        orig::<ForkFn>(FORK)(
            raw, this, mode, helper, prog, args, argc, envb, envc, dir, fds, redirect,
        )
    };
    let start_null_dir = |prog: jobject, args: jobject, argc: jint| unsafe {
        orig::<ForkFn>(FORK)(
            raw,
            this,
            mode,
            helper,
            prog,
            args,
            argc,
            envb,
            envc,
            std::ptr::null_mut(),
            fds,
            redirect,
        )
    };
    let live = || start(prog, args, argc);
    run("ProcessImpl.forkAndExec", live, |call| {
        let a = agent()?;
        // SAFETY: the calling thread's JNIEnv; the arrays are the call's arguments (local
        // references we do not delete).
        let mut env = unsafe { JNIEnv::from_raw(raw) }.ok()?;
        let bytes = |env: &mut JNIEnv, o: jobject| -> Vec<u8> {
            if o.is_null() {
                return Vec::new();
            }
            let arr = unsafe { JByteArray::from_raw(o) };
            let v = env.convert_byte_array(&arr).unwrap_or_default();
            crate::clear_exception(env);
            v
        };
        let name = bytes(&mut env, prog);
        let argv = bytes(&mut env, args);
        let runtime = tree_runtime(&name);
        let fds_arr = unsafe { JIntArray::from_raw(fds) };
        let mut given = [0; 3];
        if fds.is_null() || env.get_int_array_region(&fds_arr, 0, &mut given).is_err() {
            crate::clear_exception(&mut env);
            count_live(a, runtime);
            return None;
        }
        // -1: a pipe to the program; 1 and 2: the program's own stdout and stderr, inherited.
        // What the child says reaches the program or its output (error may go with output).
        let inherit = [false, given[1] == 1, given[2] == 2 && redirect == 0];
        let out_ok = given[1] == -1 || inherit[1];
        let err_ok = given[2] == -1 || redirect != 0 || inherit[2];
        let replayable = out_ok && err_ok && !runtime;
        let Some(mut c) = begin(raw) else {
            count_live(a, runtime);
            return None;
        };
        let digest = replay_core::digest(&[&name, &argv]);
        match &c.a.core.session {
            Session::Record(_) => {
                // An inherited output becomes a pipe the agent copies (see the module's doc).
                let swap = replayable && (inherit[1] || inherit[2]);
                if swap {
                    let pipes = [
                        given[0],
                        if inherit[1] { -1 } else { given[1] },
                        if inherit[2] { -1 } else { given[2] },
                    ];
                    if c.env.set_int_array_region(&fds_arr, 0, &pipes).is_err() {
                        crate::clear_exception(&mut c.env);
                        count_live(a, runtime);
                        return Some(call());
                    }
                }
                let pid = call();
                if let Some(ex) = pending_exception(&mut c.env) {
                    record_one(c.a, FORK, digest, -1, Some(&ex), None);
                    return Some(pid);
                }
                if !replayable {
                    record_one(c.a, FORK, digest, 0, None, None);
                    return Some(pid);
                }
                let child = NEXT_CHILD.fetch_add(1, Ordering::Relaxed);
                let mut now = [0; 3];
                if c.env.get_int_array_region(&fds_arr, 0, &mut now).is_ok() {
                    if let Ok(mut pipes) = PIPES.lock() {
                        for (i, stream) in [(1, 1u8), (2, 2u8)] {
                            if now[i] >= 0 && !inherit[i] {
                                pipes.push((now[i], child, stream));
                            }
                        }
                        PIPE_COUNT.store(pipes.len(), Ordering::Relaxed);
                    }
                    if swap {
                        // The program sees what an inherited output gives it: no stream.
                        let _ = c.env.set_int_array_region(
                            &fds_arr,
                            0,
                            &[
                                now[0],
                                if inherit[1] { -1 } else { now[1] },
                                if inherit[2] { -1 } else { now[2] },
                            ],
                        );
                        crate::clear_exception(&mut c.env);
                        for (i, stream) in [(1, 1u8), (2, 2u8)] {
                            if inherit[i] && now[i] >= 0 {
                                copy_inherited(child, stream, now[i]);
                            }
                        }
                    }
                } else {
                    crate::clear_exception(&mut c.env);
                }
                remember_pid(pid, child);
                record_one(c.a, FORK, digest, child as i64, None, None);
                Some(pid)
            }
            Session::Replay(_) => {
                let o = replay_one(&mut c, FORK, digest)?;
                if o.thrown {
                    throw_recorded(&mut c.env, o.data.as_deref().unwrap_or_default());
                    return Some(-1);
                }
                if o.ret <= 0 || !replayable {
                    count_live(a, runtime);
                    return Some(call());
                }
                let child = o.ret as u32;
                let drain = given[0] == -1;
                let Some(pid) = stand_in(a, &mut c.env, child, drain, &start_null_dir) else {
                    count_live(a, runtime);
                    return Some(call());
                };
                remember_pid(pid, child);
                // What the child did besides its pipes and status (files) does not happen.
                a.core.not_run("child process");
                Some(pid)
            }
        }
    })
}
