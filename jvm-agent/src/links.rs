//! Where a path leads: `Path.toRealPath` (`UnixNativeDispatcher.realpath0`),
//! `Files.readSymbolicLink` (`readlink0`) and `File.getCanonicalPath`/`getCanonicalFile`
//! (`UnixFileSystem.canonicalize0`). Their answers are inputs: a symbolic link retargeted
//! after the recording made the replayed program name another file in what it wrote (exit
//! 0), while the bytes read through the link were the recorded ones.
//!
//! Each call is an event of the calling thread unless class or resource loading makes it
//! (src/context.rs: class loaders canonicalize class path entries); input digest: the path,
//! payload: the answer's bytes, or the failure (`UnixException` errno, or the exception's
//! class and message), thrown again in replay. Replay never asks the file system.

use crate::fileio::{begin_path, pending_exception, run, throw_recorded, Call};
use crate::nio::{event_path, pending_failure, throw_failure};
use crate::{agent, clear_exception};
use jni::objects::{JObject, JString};
use jni::sys::{jbyteArray, jclass, jlong, jobject, jstring, JNIEnv as RawJniEnv};
use replay_core::session::Session;
use replay_core::PayloadRef;
use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::OnceLock;

/// (owner, native name, descriptor), in the order of [`ORIG`] and [`KINDS`]; the same on JDK
/// 17 and 25.
const NATIVES: [(&str, &str, &str); 3] = [
    ("Lsun/nio/fs/UnixNativeDispatcher;", "realpath0", "(J)[B"),
    ("Lsun/nio/fs/UnixNativeDispatcher;", "readlink0", "(J)[B"),
    (
        "Ljava/io/UnixFileSystem;",
        "canonicalize0",
        "(Ljava/lang/String;)Ljava/lang/String;",
    ),
];
const KINDS: [&str; 3] = [
    "sun.nio.fs.UnixNativeDispatcher.realpath",
    "sun.nio.fs.UnixNativeDispatcher.readlink",
    "java.io.UnixFileSystem.canonicalize",
];
const REALPATH: usize = 0;
const READLINK: usize = 1;
const CANONICALIZE: usize = 2;

static ORIG: [AtomicPtr<c_void>; NATIVES.len()] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; NATIVES.len()];
static KIND_IDS: OnceLock<[u32; KINDS.len()]> = OnceLock::new();

type BytesFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jlong) -> jbyteArray;
type CanonFn = unsafe extern "system" fn(*mut RawJniEnv, jobject, jstring) -> jstring;

fn index(owner: &str, name: &str, sig: &str) -> Option<usize> {
    NATIVES
        .iter()
        .position(|(o, n, s)| *o == owner && *n == name && *s == sig)
}

/// Whether the native is one of [`NATIVES`] (`fileio::bind_early`: canonicalize0 is bound
/// during the JDK's start-up).
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
        REALPATH => realpath0 as BytesFn as *mut c_void,
        READLINK => readlink0 as BytesFn as *mut c_void,
        _ => canonicalize0 as CanonFn as *mut c_void,
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

fn kind(a: &crate::Agent, i: usize) -> u32 {
    KIND_IDS.get_or_init(|| KINDS.map(|k| a.core.intern(k)))[i]
}

/// Record: one event of kind `i`: the answer's bytes, or the failure (errno, or -1 and the
/// exception's description).
fn record(c: &Call, i: usize, digest: u64, failed: Option<(i32, Option<Vec<u8>>)>, data: &[u8]) {
    let payload = match &failed {
        Some((errno, text)) => PayloadRef::Ret {
            ret: -1,
            errno: *errno,
            data: text.as_deref(),
        },
        None => PayloadRef::Ret {
            ret: 0,
            errno: 0,
            data: Some(data),
        },
    };
    crate::record_direct(c.a, kind(c.a, i), 0, Some(digest), payload);
}

/// A recorded answer: its bytes, or the failure (errno, or -1, and the description).
type Answer = Result<Vec<u8>, (i64, Vec<u8>)>;

/// Replay: the recorded outcome of kind `i`; `None`: run live (policy went live, or a
/// payload of another shape).
fn replay(c: &mut Call, i: usize, digest: u64) -> Option<Answer> {
    let k = kind(c.a, i);
    let o = crate::fileio::replay_outcome(c, k, KINDS[i], digest)?;
    let data = o.data.unwrap_or_default();
    Some(if o.thrown {
        Err((o.errno, data))
    } else {
        Ok(data)
    })
}

/// realpath0 and readlink0: path in, the answer's bytes out (a `UnixException` on failure).
fn bytes_call(
    raw: *mut RawJniEnv,
    i: usize,
    path: jlong,
    live: impl Fn() -> jbyteArray,
) -> jbyteArray {
    run(KINDS[i], live, |call| {
        let name = event_path(path)?;
        let mut c = begin_path(raw)?;
        let digest = replay_core::digest(&[&name]);
        match &c.a.core.session {
            Session::Record(_) => {
                let r = call();
                if let Some(failed) = pending_failure(&mut c.env) {
                    record(&c, i, digest, Some(failed), &[]);
                    return Some(r);
                }
                if r.is_null() {
                    return Some(r);
                }
                // SAFETY: the native's result, a local reference to a byte[].
                let arr = unsafe { jni::objects::JByteArray::from_raw(r) };
                let bytes = c.env.convert_byte_array(&arr);
                let r = arr.into_raw();
                match bytes {
                    Ok(b) => record(&c, i, digest, None, &b),
                    Err(_) => {
                        clear_exception(&mut c.env);
                        crate::internal_error(Some(&mut c.env), "cannot read a path's answer");
                    }
                }
                Some(r)
            }
            Session::Replay(_) => match replay(&mut c, i, digest)? {
                Err((errno, text)) => {
                    throw_failure(&mut c.env, errno, Some(&text));
                    Some(std::ptr::null_mut())
                }
                Ok(b) => match c.env.byte_array_from_slice(&b) {
                    Ok(arr) => Some(arr.into_raw()),
                    Err(_) => {
                        clear_exception(&mut c.env);
                        crate::internal_error(Some(&mut c.env), "cannot rebuild a path's answer");
                        None
                    }
                },
            },
        }
    })
}

unsafe extern "system" fn realpath0(raw: *mut RawJniEnv, cls: jclass, path: jlong) -> jbyteArray {
    // SAFETY (both): the saved original of this very native.
    let live = || unsafe { orig::<BytesFn>(REALPATH)(raw, cls, path) };
    bytes_call(raw, REALPATH, path, live)
}

unsafe extern "system" fn readlink0(raw: *mut RawJniEnv, cls: jclass, path: jlong) -> jbyteArray {
    let live = || unsafe { orig::<BytesFn>(READLINK)(raw, cls, path) };
    bytes_call(raw, READLINK, path, live)
}

/// `File.getCanonicalPath`: the path string in, the canonical one out (an `IOException` on
/// failure).
unsafe extern "system" fn canonicalize0(
    raw: *mut RawJniEnv,
    this: jobject,
    path: jstring,
) -> jstring {
    let live = || unsafe { orig::<CanonFn>(CANONICALIZE)(raw, this, path) };
    run(KINDS[CANONICALIZE], live, |call| {
        agent()?;
        crate::fileio::FILE_EVENT.get()?;
        if path.is_null() {
            return None;
        }
        let mut c = begin_path(raw)?;
        // SAFETY: the call's argument, a local reference to a String.
        let p = unsafe { JString::from_raw(path) };
        let text = c.env.get_string(&p).map(String::from);
        let _ = p.into_raw();
        let Ok(text) = text else {
            clear_exception(&mut c.env);
            return None;
        };
        let digest = replay_core::digest(&[text.as_bytes()]);
        match &c.a.core.session {
            Session::Record(_) => {
                let r = call();
                if let Some(ex) = pending_exception(&mut c.env) {
                    record(&c, CANONICALIZE, digest, Some((-1, Some(ex))), &[]);
                    return Some(r);
                }
                if r.is_null() {
                    return Some(r);
                }
                // SAFETY: the native's result, a local reference to a String.
                let s = unsafe { JString::from_raw(r) };
                let answer = c.env.get_string(&s).map(String::from);
                let r = s.into_raw();
                match answer {
                    Ok(a) => record(&c, CANONICALIZE, digest, None, a.as_bytes()),
                    Err(_) => {
                        clear_exception(&mut c.env);
                        crate::internal_error(Some(&mut c.env), "cannot read a canonical path");
                    }
                }
                Some(r)
            }
            Session::Replay(_) => match replay(&mut c, CANONICALIZE, digest)? {
                Err((_, text)) => {
                    throw_recorded(&mut c.env, &text);
                    Some(std::ptr::null_mut())
                }
                Ok(b) => match c.env.new_string(String::from_utf8_lossy(&b)) {
                    Ok(s) => Some(JObject::from(s).into_raw()),
                    Err(_) => {
                        clear_exception(&mut c.env);
                        crate::internal_error(Some(&mut c.env), "cannot rebuild a canonical path");
                        None
                    }
                },
            },
        }
    })
}
