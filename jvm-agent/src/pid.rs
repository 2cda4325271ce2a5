//! The process id. Programs write it into what they produce (lock files, log lines through
//! `RuntimeMXBean.getName()`'s "pid@host", temporary file names), so replay gives the
//! program the recorded process's id, as the Node side does with `process.pid`: the id is
//! in the log's header, so this takes no event. `ProcessHandle.current().pid()` comes from
//! `ProcessHandleImpl.getCurrentPid0`, `RuntimeMXBean.getName()` and `getPid()` from it or
//! from `VMManagementImpl.getProcessId`.
//!
//! The JDK then asks the system about that id (`ProcessHandle.current().isAlive()`,
//! `.parent()`, `.info()`): those natives get the live id for the recorded one, so the
//! answers are about this process, as they were about the recorded one.

use crate::agent;
use jni::sys::{jclass, jint, jlong, jobject, JNIEnv as RawJniEnv};
use replay_core::session::Session;
use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, Ordering};

/// (owner, native name, descriptor), in the order of [`ORIG`].
const NATIVES: [(&str, &str, &str); 5] = [
    ("Ljava/lang/ProcessHandleImpl;", "getCurrentPid0", "()J"),
    ("Lsun/management/VMManagementImpl;", "getProcessId", "()I"),
    ("Ljava/lang/ProcessHandleImpl;", "isAlive0", "(J)J"),
    ("Ljava/lang/ProcessHandleImpl;", "parent0", "(JJ)J"),
    ("Ljava/lang/ProcessHandleImpl$Info;", "info0", "(J)V"),
];
static ORIG: [AtomicPtr<c_void>; NATIVES.len()] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; NATIVES.len()];

type PidFn = unsafe extern "system" fn(*mut RawJniEnv, jclass) -> jlong;
type ProcessIdFn = unsafe extern "system" fn(*mut RawJniEnv, jobject) -> jint;
type AliveFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jlong) -> jlong;
type ParentFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jlong, jlong) -> jlong;
type InfoFn = unsafe extern "system" fn(*mut RawJniEnv, jobject, jlong);

fn index(owner: &str, name: &str, sig: &str) -> Option<usize> {
    NATIVES
        .iter()
        .position(|(o, n, s)| *o == owner && *n == name && *s == sig)
}

/// Whether the native is one of [`NATIVES`] (`fileio::bind_early`).
pub(crate) fn hooked(owner: &str, name: &str, sig: &str) -> bool {
    index(owner, name, sig).is_some()
}

/// NativeMethodBind of one of [`NATIVES`]: the wrapper to bind instead of `address`.
pub(crate) fn bind(
    owner: &str,
    name: &str,
    sig: &str,
    address: *mut c_void,
) -> Option<*mut c_void> {
    let i = index(owner, name, sig)?;
    let w = match i {
        0 => current_pid as PidFn as *mut c_void,
        1 => process_id as ProcessIdFn as *mut c_void,
        2 => is_alive as AliveFn as *mut c_void,
        3 => parent as ParentFn as *mut c_void,
        _ => info as InfoFn as *mut c_void,
    };
    Some(crate::fileio::bound(&ORIG[i], address, w))
}

/// The original of native `i`, as type `F`.
///
/// # Safety
/// `F` must be the C signature of `NATIVES[i]`; only called from its wrapper, which the JVM
/// calls only after the bind stored the original.
unsafe fn orig<F: Copy>(i: usize) -> F {
    let p = ORIG[i].load(Ordering::Acquire);
    std::mem::transmute_copy::<*mut c_void, F>(&p)
}

/// Replay: the recorded process's id, when the log has one and it is not this process's.
fn recorded() -> Option<u32> {
    let a = agent()?;
    match &a.core.session {
        Session::Replay(r) => {
            let pid = r.header().pid;
            (pid != 0 && pid != std::process::id()).then_some(pid)
        }
        Session::Record(_) => None,
    }
}

/// The live id for the recorded one.
fn live(pid: jlong) -> jlong {
    match recorded() {
        Some(rec) if pid == jlong::from(rec) => jlong::from(std::process::id()),
        _ => pid,
    }
}

unsafe extern "system" fn current_pid(raw: *mut RawJniEnv, class: jclass) -> jlong {
    let real = orig::<PidFn>(0)(raw, class);
    crate::guarded("ProcessHandleImpl.getCurrentPid0", real, || {
        recorded().map_or(real, jlong::from)
    })
}

unsafe extern "system" fn process_id(raw: *mut RawJniEnv, this: jobject) -> jint {
    let real = orig::<ProcessIdFn>(1)(raw, this);
    crate::guarded("VMManagementImpl.getProcessId", real, || {
        recorded().map_or(real, |p| p as jint)
    })
}

unsafe extern "system" fn is_alive(raw: *mut RawJniEnv, class: jclass, pid: jlong) -> jlong {
    let pid = crate::guarded("ProcessHandleImpl.isAlive0", pid, || live(pid));
    orig::<AliveFn>(2)(raw, class, pid)
}

unsafe extern "system" fn parent(
    raw: *mut RawJniEnv,
    class: jclass,
    pid: jlong,
    start: jlong,
) -> jlong {
    let pid = crate::guarded("ProcessHandleImpl.parent0", pid, || live(pid));
    orig::<ParentFn>(3)(raw, class, pid, start)
}

unsafe extern "system" fn info(raw: *mut RawJniEnv, this: jobject, pid: jlong) {
    let pid = crate::guarded("ProcessHandleImpl.Info.info0", pid, || live(pid));
    orig::<InfoFn>(4)(raw, this, pid)
}
