//! NIO file reads: `Files.readAllBytes`, `readString`, `newInputStream`, `newByteChannel`,
//! `lines`, `newBufferedReader`, `FileChannel.open(...)` and their reads, on JDK 17 and 25.
//!
//! They all open through `sun.nio.fs.UnixNativeDispatcher.open0(pathAddress, flags, mode)`,
//! which returns a bare descriptor number (the JDK wraps it in a FileDescriptor afterwards),
//! and read through the FileDispatcher natives that src/fileio.rs wraps already. So:
//! - A read-only `open0` is an event (same filters as java.io: hooks on, not nested, not a
//!   class-loading or JDK path, see src/fsmeta.rs). Input digest: the path and flags; payload:
//!   the stream's number, or the failure's errno (`UnixException`, which the JDK turns into
//!   `NoSuchFileException`, `AccessDeniedException`, ... from the errno).
//! - Its descriptor number goes into [`FDS`] with the stream's number; the dispatcher wrappers
//!   look a FileDescriptor's number up there when the object carries no tag, so reads, `size`
//!   and `position` on it are events like those of a FileInputStream's channel.
//! - Replay never opens the file: the open returns a descriptor of `/dev/null` (a real one,
//!   so the JDK's close and Cleaner work unchanged) entered in the table; a recorded failure
//!   throws `UnixException(errno)` again, so the program sees the same exception type.
//! - Every close of a descriptor (`FileDescriptor.close0`, `UnixNativeDispatcher.close0`,
//!   the Cleaner's `FileCleanable.cleanupClose0`) takes its number out of the table first: a
//!   number the OS hands out again later is then a live file's. Closes are never events.
//!
//! Write opens (any access mode but O_RDONLY) stay live. What uses the descriptor other than
//! the hooked calls (memory-mapping, `transferTo` another channel, scattering reads) reads
//! `/dev/null` in replay.

use crate::fileio::{
    begin, orig, record_one, replay_one, run, throw_recorded, CLEANUP_CLOSE, FD_CLOSE, KINDS,
    NEXT_STREAM, NIO_CLOSE, NIO_OPEN,
};
use crate::fsmeta::{live_roots, stays_live};
use crate::{agent, clear_exception, guarded};
use jni::objects::{JObject, JValue};
use jni::sys::{jclass, jint, jlong, jobject, JNIEnv as RawJniEnv};
use jni::JNIEnv;
use replay_core::session::Session;
use replay_core::PayloadRef;
use std::collections::HashMap;
use std::ffi::{c_char, CStr};
use std::os::fd::IntoRawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

pub type OpenFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jlong, jint, jint) -> jint;
pub type CloseFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jint);
pub type FdCloseFn = unsafe extern "system" fn(*mut RawJniEnv, jobject);
pub type CleanupFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jint, jlong);

/// Open descriptors whose NIO open was an event: descriptor number -> stream number.
static FDS: Mutex<Option<HashMap<jint, jlong>>> = Mutex::new(None);
/// Entries in [`FDS`]: while 0 (no NIO event file is open), the dispatcher and close
/// wrappers do not look at the descriptor at all.
static OPEN: AtomicUsize = AtomicUsize::new(0);

const O_ACCMODE: jint = 3;
const O_RDONLY: jint = 0;

fn remember(fd: jint, stream: jlong) {
    if let Ok(mut t) = FDS.lock() {
        if t.get_or_insert_with(HashMap::new)
            .insert(fd, stream)
            .is_none()
        {
            OPEN.fetch_add(1, Ordering::AcqRel);
        }
    }
}

fn forget(fd: jint) {
    if OPEN.load(Ordering::Acquire) == 0 {
        return;
    }
    if let Ok(mut t) = FDS.lock() {
        if t.as_mut().and_then(|t| t.remove(&fd)).is_some() {
            OPEN.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

fn lookup(fd: jint) -> Option<jlong> {
    FDS.lock().ok()?.as_ref()?.get(&fd).copied()
}

/// The `fd` field of a `java.io.FileDescriptor`.
fn descriptor_number(raw: *mut RawJniEnv, fd: jobject) -> Option<jint> {
    if fd.is_null() {
        return None;
    }
    // SAFETY: the calling thread's JNIEnv and a FileDescriptor argument of the native.
    let mut env = unsafe { JNIEnv::from_raw(raw) }.ok()?;
    let obj = unsafe { JObject::from_raw(fd) };
    match env.get_field(&obj, "fd", "I").and_then(|v| v.i()) {
        Ok(n) => Some(n),
        Err(_) => {
            clear_exception(&mut env);
            None
        }
    }
}

/// The stream number of the NIO open that gave this FileDescriptor its descriptor, if that
/// open was an event.
pub fn stream_of_descriptor(raw: *mut RawJniEnv, fd: jobject) -> Option<jlong> {
    if OPEN.load(Ordering::Acquire) == 0 {
        return None;
    }
    lookup(descriptor_number(raw, fd)?)
}

/// The pending `UnixException`'s errno (0 if it has none) and `class\nmessage`, left pending.
fn pending_unix_exception(env: &mut JNIEnv) -> Option<(i32, Vec<u8>)> {
    if !env.exception_check().unwrap_or(false) {
        return None;
    }
    let ex = env.exception_occurred().ok();
    let _ = env.exception_clear();
    let errno = ex
        .as_ref()
        .and_then(|e| env.get_field(e, "errno", "I").and_then(|v| v.i()).ok())
        .unwrap_or(0);
    clear_exception(env);
    if let Some(e) = ex {
        let _ = env.throw(e);
    }
    // The description is for errno-less failures (and for `replay dump`).
    let text = crate::fileio::pending_exception(env).unwrap_or_default();
    Some((errno, text))
}

pub unsafe extern "system" fn open0(
    raw: *mut RawJniEnv,
    cls: jclass,
    path: jlong,
    flags: jint,
    mode: jint,
) -> jint {
    // SAFETY (all the `orig` calls): the saved original of this very native.
    let live = || unsafe { orig::<OpenFn>(NIO_OPEN)(raw, cls, path, flags, mode) };
    run(KINDS[NIO_OPEN], live, |call| {
        agent()?;
        crate::fileio::FILE_EVENT.get()?;
        if flags & O_ACCMODE != O_RDONLY || path == 0 {
            return None;
        }
        // SAFETY: the JDK passes a NUL-terminated path in a native buffer it owns.
        let name = unsafe { CStr::from_ptr(path as *const c_char) }
            .to_string_lossy()
            .into_owned();
        if stays_live(&name, live_roots()) {
            return None;
        }
        let mut c = begin(raw)?;
        let digest = replay_core::digest(&[name.as_bytes(), &flags.to_le_bytes()]);
        match &c.a.core.session {
            Session::Record(_) => {
                let fd = call();
                match pending_unix_exception(&mut c.env) {
                    Some((errno, text)) => {
                        // errno -1: an exception without one, thrown again from its text.
                        let errno = if errno != 0 { errno } else { -1 };
                        let payload = PayloadRef::Ret {
                            ret: -1,
                            errno,
                            data: Some(&text),
                        };
                        c.a.core
                            .record(c.a.files[NIO_OPEN], 0, Some(digest), payload);
                    }
                    None => {
                        let id = NEXT_STREAM.fetch_add(1, Ordering::Relaxed);
                        remember(fd, id);
                        record_one(c.a, NIO_OPEN, digest, id, None, None);
                    }
                }
                Some(fd)
            }
            Session::Replay(_) => {
                let o = replay_one(&mut c, NIO_OPEN, digest)?;
                if o.thrown {
                    if o.errno > 0 {
                        throw_unix_exception(&mut c.env, o.errno as jint);
                    } else {
                        throw_recorded(&mut c.env, o.data.as_deref().unwrap_or_default());
                    }
                    return Some(-1);
                }
                let fd = match std::fs::File::open("/dev/null") {
                    Ok(f) => f.into_raw_fd(),
                    Err(e) => {
                        crate::internal_error(
                            Some(&mut c.env),
                            &format!("cannot open /dev/null for a replayed NIO open: {e}"),
                        );
                        return None;
                    }
                };
                let id = if o.ret > 0 {
                    o.ret
                } else {
                    NEXT_STREAM.fetch_add(1, Ordering::Relaxed)
                };
                remember(fd, id);
                Some(fd)
            }
        }
    })
}

/// Throws `new sun.nio.fs.UnixException(errno)`, what the JDK's open0 throws.
fn throw_unix_exception(env: &mut JNIEnv, errno: jint) {
    let thrown = env
        .find_class("sun/nio/fs/UnixException")
        .and_then(|cls| env.new_object(cls, "(I)V", &[JValue::Int(errno)]))
        .and_then(|ex| env.throw(jni::objects::JThrowable::from(ex)));
    if thrown.is_err() {
        clear_exception(env);
        let _ = env.throw_new("java/io/IOException", format!("errno {errno}"));
    }
}

pub unsafe extern "system" fn close0(raw: *mut RawJniEnv, cls: jclass, fd: jint) {
    guarded("UnixNativeDispatcher.close0", (), || forget(fd));
    unsafe { orig::<CloseFn>(NIO_CLOSE)(raw, cls, fd) }
}

pub unsafe extern "system" fn fd_close0(raw: *mut RawJniEnv, this: jobject) {
    guarded("FileDescriptor.close0", (), || {
        if OPEN.load(Ordering::Acquire) != 0 {
            if let Some(n) = descriptor_number(raw, this) {
                forget(n);
            }
        }
    });
    unsafe { orig::<FdCloseFn>(FD_CLOSE)(raw, this) }
}

pub unsafe extern "system" fn cleanup_close0(
    raw: *mut RawJniEnv,
    cls: jclass,
    fd: jint,
    handle: jlong,
) {
    guarded("FileCleanable.cleanupClose0", (), || forget(fd));
    unsafe { orig::<CleanupFn>(CLEANUP_CLOSE)(raw, cls, fd, handle) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_descriptor_table_forgets_closed_numbers() {
        remember(1_000_001, 7);
        remember(1_000_002, 8);
        assert_eq!(lookup(1_000_001), Some(7));
        forget(1_000_001);
        assert_eq!(lookup(1_000_001), None);
        assert_eq!(lookup(1_000_002), Some(8));
        forget(1_000_002);
        forget(1_000_002);
        assert_eq!(lookup(1_000_002), None);
    }
}
