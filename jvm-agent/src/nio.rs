//! NIO files on JDK 17 and 25: reads (`Files.readAllBytes`, `readString`, `newInputStream`,
//! `newByteChannel`, `lines`, `newBufferedReader`, `FileChannel.open(...)` and their reads),
//! metadata (`Files.exists`, `notExists`, `isRegularFile`, `isDirectory`, `size`,
//! `getLastModifiedTime`, `readAttributes`, `isReadable`/`isWritable`/`isExecutable`) and
//! directory streams (`Files.list`, `newDirectoryStream`, `walk`, `find`).
//!
//! Reads. They all open through `sun.nio.fs.UnixNativeDispatcher.open0(pathAddress, flags,
//! mode)`, which returns a bare descriptor number (the JDK wraps it in a FileDescriptor
//! afterwards), and read through the FileDispatcher natives that src/fileio.rs wraps already:
//! - A read-only `open0` is an event (same filters as java.io: hooks on, not nested, not
//!   made by class or resource loading, see src/context.rs). Input digest: the path and flags; payload:
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
//! Metadata. Every `Files` metadata call ends in one native on a path: `stat0`/`lstat0`
//! (which fill a `UnixFileAttributes`), JDK 17's `stat1` (the mode, for `isDirectory` and
//! `isRegularFile`) and `exists0`, and `access0`. JDK 17's `stat0` and `access0` throw
//! `UnixException`, JDK 25's return the errno (and JDK 25 has no `stat1`/`exists0`: its
//! `isDirectory` and `exists` use `stat0` and `access0`). Each call on a path not made by class or
//! resource loading is an event: input digest = path and argument (the access mode),
//! payload = the return value, the errno and, for a successful stat, every field the native
//! fills in `UnixFileAttributes` (mode, inode, device, links, owner, size, the three or four
//! times). Replay writes those fields back, or fails the same way, without looking at the
//! file.
//!
//! Directory streams. `newDirectoryStream` opens the directory read-only (the `open0` above:
//! an event), `dup`s the descriptor and calls `fdopendir` on it; JDKs without `openat` call
//! `opendir0` on the path instead. Both are events when their descriptor or path is (payload:
//! a directory number, or the errno); the returned `DIR*` goes into [`DIRS`], and each
//! `readdir` on it is an event (payload: the name's bytes, -1 for the end). In replay the
//! handle is one the agent allocates (never a real `DIR*`, so no live call may ever see it:
//! such calls return the end of the directory), its names are the recorded ones, and
//! `closedir` frees it and closes the `/dev/null` descriptor the replayed `open0` gave.
//! `closedir` is bookkeeping, never an event.
//!
//! Write opens (any access mode but O_RDONLY) stay live. What uses the descriptor other than
//! the hooked calls (memory-mapping, `transferTo` another channel, scattering reads, the
//! `SecureDirectoryStream` operations relative to a directory's descriptor) reads `/dev/null`
//! in replay. `toRealPath` (`realpath0`) and `readSymbolicLink` are events of src/links.rs;
//! `fstat` is not hooked.

use crate::fileio::{
    begin, begin_path, orig, record_one, replay_one, run, throw_recorded, Call, CLEANUP_CLOSE,
    FD_CLOSE, KINDS, NEXT_STREAM, NIO_ACCESS, NIO_ACCESS_ERRNO, NIO_CLOSE, NIO_CLOSEDIR,
    NIO_EXISTS, NIO_FDOPENDIR, NIO_LSTAT, NIO_MKDIR, NIO_OPEN, NIO_OPENDIR, NIO_READDIR,
    NIO_RENAME, NIO_RMDIR, NIO_STAT, NIO_STAT_ERRNO, NIO_STAT_MODE, NIO_UNLINK,
};
use crate::fsmeta::path_digest;
use crate::{agent, clear_exception, guarded};
use jni::objects::{JByteArray, JFieldID, JObject, JValue};
use jni::signature::{Primitive, ReturnType};
use jni::sys::{jboolean, jbyteArray, jclass, jint, jlong, jobject, JNIEnv as RawJniEnv};
use jni::JNIEnv;
use replay_core::session::Session;
use replay_core::PayloadRef;
use std::collections::HashMap;
use std::ffi::{c_char, CStr};
use std::os::fd::{FromRawFd, IntoRawFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

pub type OpenFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jlong, jint, jint) -> jint;
pub type CloseFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jint);
pub type FdCloseFn = unsafe extern "system" fn(*mut RawJniEnv, jobject);
pub type CleanupFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jint, jlong);
pub type StatFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jlong, jobject);
pub type StatErrnoFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jlong, jobject) -> jint;
pub type ModeFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jlong) -> jint;
pub type AccessFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jlong, jint);
pub type AccessErrnoFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jlong, jint) -> jint;
pub type ExistsFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jlong) -> jboolean;
pub type OpendirFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jlong) -> jlong;
pub type FdopendirFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jint) -> jlong;
pub type ReaddirFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jlong) -> jbyteArray;
pub type ClosedirFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jlong);

/// Open descriptors whose NIO open was an event: descriptor number -> stream number.
static FDS: Mutex<Option<HashMap<jint, jlong>>> = Mutex::new(None);
/// Entries in [`FDS`]: while 0 (no NIO event file is open), the dispatcher and close
/// wrappers do not look at the descriptor at all.
static OPEN: AtomicUsize = AtomicUsize::new(0);

const O_ACCMODE: jint = 3;
const O_RDONLY: jint = 0;

/// Descriptors a NIO open for writing gave (`Files.write`, `newOutputStream`,
/// `newBufferedWriter`, `FileChannel.open(WRITE)`), to their path: what the program writes
/// through them is summed per path for the end of the run (the core's `file_written`, from
/// src/net.rs's write wrappers, which see every file dispatcher write).
static WRITTEN: Mutex<Option<HashMap<jint, String>>> = Mutex::new(None);
/// Entries in [`WRITTEN`]: while 0 the write and close wrappers look nothing up.
static OPEN_WRITTEN: AtomicUsize = AtomicUsize::new(0);

fn remember_written(fd: jint, path: String) {
    if let Ok(mut t) = WRITTEN.lock() {
        if t.get_or_insert_with(HashMap::new)
            .insert(fd, path)
            .is_none()
        {
            OPEN_WRITTEN.fetch_add(1, Ordering::AcqRel);
        }
    }
}

fn forget_written(fd: jint) {
    if OPEN_WRITTEN.load(Ordering::Acquire) == 0 {
        return;
    }
    if let Ok(mut t) = WRITTEN.lock() {
        if t.as_mut().and_then(|t| t.remove(&fd)).is_some() {
            OPEN_WRITTEN.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// The path descriptor `fd` was opened for writing with through NIO, if it was.
pub(crate) fn written_path(fd: jint) -> Option<String> {
    if OPEN_WRITTEN.load(Ordering::Acquire) == 0 {
        return None;
    }
    WRITTEN.lock().ok()?.as_ref()?.get(&fd).cloned()
}

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

/// The stream number of the NIO open that gave descriptor `fd`, if that open was an event.
pub fn stream_of_fd(fd: jint) -> Option<jlong> {
    if OPEN.load(Ordering::Acquire) == 0 {
        return None;
    }
    lookup(fd)
}

/// The `fd` field of a `java.io.FileDescriptor`.
fn descriptor_number(raw: *mut RawJniEnv, fd: jobject) -> Option<jint> {
    if fd.is_null() {
        return None;
    }
    // SAFETY: the calling thread's JNIEnv and a FileDescriptor argument of the native.
    let mut env = unsafe { JNIEnv::from_raw(raw) }.ok()?;
    let obj = unsafe { JObject::from_raw(fd) };
    static FD: OnceLock<JFieldID> = OnceLock::new();
    let id = crate::fsmeta::field_id(&mut env, &FD, "java/io/FileDescriptor", "fd", "I")?;
    let int = ReturnType::Primitive(Primitive::Int);
    match env.get_field_unchecked(&obj, id, int).and_then(|v| v.i()) {
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

/// A failure the live call left pending: `(errno, None)` for a `UnixException` with an errno,
/// `(-1, Some(class and message))` for anything else (thrown again from its text in replay).
/// The exception stays pending.
pub(crate) fn pending_failure(env: &mut JNIEnv) -> Option<(i32, Option<Vec<u8>>)> {
    if !env.exception_check().unwrap_or(false) {
        return None;
    }
    let ex = env.exception_occurred().ok();
    let _ = env.exception_clear();
    let errno = ex
        .as_ref()
        .and_then(|e| env.get_field(e, "errno", "I").and_then(|v| v.i()).ok())
        .unwrap_or(0);
    // Not a UnixException (no such field): clear the NoSuchFieldError, keep the original.
    let _ = env.exception_clear();
    if let Some(e) = ex {
        let _ = env.throw(e);
    }
    if errno != 0 {
        return Some((errno, None));
    }
    Some((-1, crate::fileio::pending_exception(env)))
}

/// Records a failed event call: its return value, errno and (errno -1) description.
fn record_failure(c: &Call, i: usize, digest: u64, ret: i64, errno: i32, text: Option<&[u8]>) {
    let payload = PayloadRef::Ret {
        ret,
        errno,
        data: text,
    };
    crate::record_direct(c.a, c.a.files[i], 0, Some(digest), payload);
}

/// Throws what [`pending_failure`] saw: `UnixException(errno)`, or the described exception.
pub(crate) fn throw_failure(env: &mut JNIEnv, errno: i64, data: Option<&[u8]>) {
    if errno > 0 {
        throw_unix_exception(env, errno as jint);
    } else {
        throw_recorded(env, data.unwrap_or_default());
    }
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
        let a = agent()?;
        crate::fileio::FILE_EVENT.get()?;
        if path == 0 {
            return None;
        }
        if flags & O_ACCMODE != O_RDONLY {
            // Live in both modes; its writes are summed by path (see WRITTEN).
            if !a.core.wants_output() {
                return None;
            }
            let fd = call();
            if fd >= 0 {
                // SAFETY: the JDK passes a NUL-terminated path in a native buffer it owns.
                let name = unsafe { CStr::from_ptr(path as *const c_char) }.to_string_lossy();
                remember_written(fd, name.into_owned());
            }
            return Some(fd);
        }
        // SAFETY: the JDK passes a NUL-terminated path in a native buffer it owns.
        let name = unsafe { CStr::from_ptr(path as *const c_char) }
            .to_string_lossy()
            .into_owned();
        let mut c = begin_path(raw)?;
        let digest = replay_core::digest(&[name.as_bytes(), &flags.to_le_bytes()]);
        match &c.a.core.session {
            Session::Record(_) => {
                let fd = call();
                match pending_failure(&mut c.env) {
                    Some((errno, text)) => {
                        record_failure(&c, NIO_OPEN, digest, -1, errno, text.as_deref());
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
                    throw_failure(&mut c.env, o.errno, o.data.as_deref());
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
    guarded("UnixNativeDispatcher.close0", (), || {
        forget(fd);
        forget_written(fd);
    });
    unsafe { orig::<CloseFn>(NIO_CLOSE)(raw, cls, fd) }
}

pub type ForceFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jobject, jboolean) -> jint;

/// `FileChannel.force` (fsync, fdatasync). A replayed open's descriptor is `/dev/null`, whose
/// fsync fails (EINVAL): Lucene's index commit then retried and slept where the recording
/// did not. The file was synced in the recording; in replay there is nothing to sync.
pub unsafe extern "system" fn force0(
    raw: *mut RawJniEnv,
    cls: jclass,
    fd: jobject,
    meta: jboolean,
) -> jint {
    let replayed = guarded("FileDispatcher.force0", false, || {
        OPEN.load(Ordering::Acquire) != 0
            && crate::agent().is_some_and(|a| matches!(a.core.session, Session::Replay(_)))
            && stream_of_descriptor(raw, fd).is_some()
    });
    if replayed {
        return 0;
    }
    unsafe { orig::<ForceFn>(crate::fileio::NIO_FORCE)(raw, cls, fd, meta) }
}

pub unsafe extern "system" fn fd_close0(raw: *mut RawJniEnv, this: jobject) {
    guarded("FileDescriptor.close0", (), || {
        if OPEN.load(Ordering::Acquire) != 0 || crate::children::has_pipes() {
            if let Some(n) = descriptor_number(raw, this) {
                forget(n);
                forget_written(n);
                crate::children::forget(n);
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
    guarded("FileCleanable.cleanupClose0", (), || {
        forget(fd);
        forget_written(fd);
        crate::children::forget(fd);
    });
    unsafe { orig::<CleanupFn>(CLEANUP_CLOSE)(raw, cls, fd, handle) }
}

// ---- metadata ------------------------------------------------------------------------------

/// How a wrapped metadata native reports a failure.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fails {
    /// It throws `UnixException` (JDK 17's stat0 and access0; lstat0).
    Throws,
    /// It returns the errno, 0 for success (JDK 25's stat0 and access0).
    Returns,
    /// It cannot fail (JDK 17's stat1 returns 0 for any failure; exists0).
    Never,
}

/// The path bytes a metadata or opendir call names, if the call may be an event.
pub(crate) fn event_path(path: jlong) -> Option<Vec<u8>> {
    agent()?;
    crate::fileio::FILE_EVENT.get()?;
    if path == 0 {
        return None;
    }
    // SAFETY: the JDK passes a NUL-terminated path in a native buffer it owns.
    let bytes = unsafe { CStr::from_ptr(path as *const c_char) }
        .to_bytes()
        .to_vec();
    (!bytes.is_empty()).then_some(bytes)
}

/// The fields the stat natives fill in `sun.nio.fs.UnixFileAttributes` (JDK 17 and 25; the
/// ones a JDK lacks are skipped). The payload holds each present one as 8 bytes.
const ATTR_FIELDS: [(&str, &str); 17] = [
    ("st_mode", "I"),
    ("st_ino", "J"),
    ("st_dev", "J"),
    ("st_rdev", "J"),
    ("st_nlink", "I"),
    ("st_uid", "I"),
    ("st_gid", "I"),
    ("st_size", "J"),
    ("st_atime_sec", "J"),
    ("st_atime_nsec", "J"),
    ("st_mtime_sec", "J"),
    ("st_mtime_nsec", "J"),
    ("st_ctime_sec", "J"),
    ("st_ctime_nsec", "J"),
    ("st_birthtime_sec", "J"),
    ("st_birthtime_nsec", "J"),
    ("birthtime_available", "Z"),
];

/// This JDK's [`ATTR_FIELDS`], looked up once (the class is a boot class: its field IDs stay
/// valid for the life of the JVM).
fn attr_fields(env: &mut JNIEnv, attrs: &JObject) -> Option<&'static [(JFieldID, Primitive)]> {
    static FIELDS: OnceLock<Vec<(JFieldID, Primitive)>> = OnceLock::new();
    if let Some(f) = FIELDS.get() {
        return Some(f);
    }
    let cls = env.get_object_class(attrs).ok()?;
    let mut found = Vec::new();
    for (name, sig) in ATTR_FIELDS {
        let ty = match sig {
            "I" => Primitive::Int,
            "J" => Primitive::Long,
            _ => Primitive::Boolean,
        };
        match env.get_field_id(&cls, name, sig) {
            Ok(id) => found.push((id, ty)),
            // Not on this JDK (birthtime on 17): the NoSuchFieldError is expected.
            Err(_) => {
                let _ = env.exception_clear();
            }
        }
    }
    let _ = env.delete_local_ref(cls);
    if found.is_empty() {
        return None;
    }
    Some(FIELDS.get_or_init(|| found))
}

/// The filled attributes, as the payload's bytes.
fn read_attrs(env: &mut JNIEnv, attrs: jobject) -> Option<Vec<u8>> {
    // SAFETY: the native's UnixFileAttributes argument, a local reference we do not delete.
    let obj = unsafe { JObject::from_raw(attrs) };
    let fields = attr_fields(env, &obj)?;
    let mut out = Vec::with_capacity(8 * fields.len());
    for &(id, ty) in fields {
        let v = env
            .get_field_unchecked(&obj, id, ReturnType::Primitive(ty))
            .ok()?;
        let n = match ty {
            Primitive::Int => v.i().ok()? as i64,
            Primitive::Long => v.j().ok()?,
            _ => v.z().ok()? as i64,
        };
        out.extend_from_slice(&n.to_le_bytes());
    }
    Some(out)
}

/// Fills the attributes from a payload of [`read_attrs`]; false if it does not fit this JDK.
fn write_attrs(env: &mut JNIEnv, attrs: jobject, data: &[u8]) -> bool {
    // SAFETY: as in read_attrs.
    let obj = unsafe { JObject::from_raw(attrs) };
    let Some(fields) = attr_fields(env, &obj) else {
        return false;
    };
    if data.len() != 8 * fields.len() {
        return false;
    }
    for (&(id, ty), b) in fields.iter().zip(data.chunks_exact(8)) {
        let n = i64::from_le_bytes(b.try_into().unwrap_or_default());
        let v = match ty {
            Primitive::Int => JValue::Int(n as jint),
            Primitive::Long => JValue::Long(n),
            _ => JValue::Bool((n != 0) as jboolean),
        };
        if env.set_field_unchecked(&obj, id, v).is_err() {
            return false;
        }
    }
    true
}

/// A metadata call `i` on `path` (argument `arg`: the access mode, or 0). `live` runs the
/// native and gives its return value (0 for a void one); `attrs` is the UnixFileAttributes a
/// stat fills (null for the others). Returns what the native returns.
fn path_call(
    raw: *mut RawJniEnv,
    i: usize,
    path: jlong,
    arg: jint,
    attrs: jobject,
    fails: Fails,
    live: impl Fn() -> jint,
) -> jint {
    run(KINDS[i], live, |call| {
        let name = event_path(path)?;
        let mut c = begin_path(raw)?;
        let digest = path_digest(&name, arg as i64);
        match &c.a.core.session {
            Session::Record(_) => {
                let r = call();
                let failed = match fails {
                    Fails::Throws => pending_failure(&mut c.env),
                    Fails::Returns => (r != 0).then_some((r, None)),
                    Fails::Never => None,
                };
                if let Some((errno, text)) = failed {
                    let ret = if fails == Fails::Returns { r } else { -1 };
                    record_failure(&c, i, digest, ret as i64, errno, text.as_deref());
                    return Some(r);
                }
                let data = if attrs.is_null() {
                    None
                } else {
                    match read_attrs(&mut c.env, attrs) {
                        Some(d) => Some(d),
                        None => {
                            let _ = c.env.exception_clear();
                            crate::internal_error(
                                Some(&mut c.env),
                                "cannot read a stat call's UnixFileAttributes",
                            );
                            return Some(r);
                        }
                    }
                };
                record_one(c.a, i, digest, r as i64, None, data.as_deref());
                Some(r)
            }
            Session::Replay(_) => {
                let o = replay_one(&mut c, i, digest)?;
                if o.thrown {
                    if fails == Fails::Returns {
                        return Some(o.ret as jint);
                    }
                    throw_failure(&mut c.env, o.errno, o.data.as_deref());
                    return Some(0);
                }
                if !attrs.is_null()
                    && !write_attrs(&mut c.env, attrs, o.data.as_deref().unwrap_or_default())
                {
                    let _ = c.env.exception_clear();
                    crate::internal_error(
                        Some(&mut c.env),
                        "recorded file attributes do not fit this JDK's UnixFileAttributes",
                    );
                    return None;
                }
                Some(o.ret as jint)
            }
        }
    })
}

pub unsafe extern "system" fn stat0(raw: *mut RawJniEnv, cls: jclass, path: jlong, attrs: jobject) {
    // SAFETY (all the `orig` calls): the saved original of this very native.
    let live = || {
        unsafe { orig::<StatFn>(NIO_STAT)(raw, cls, path, attrs) };
        0
    };
    path_call(raw, NIO_STAT, path, 0, attrs, Fails::Throws, live);
}

pub unsafe extern "system" fn stat0_errno(
    raw: *mut RawJniEnv,
    cls: jclass,
    path: jlong,
    attrs: jobject,
) -> jint {
    let live = || unsafe { orig::<StatErrnoFn>(NIO_STAT_ERRNO)(raw, cls, path, attrs) };
    path_call(raw, NIO_STAT_ERRNO, path, 0, attrs, Fails::Returns, live)
}

pub unsafe extern "system" fn lstat0(
    raw: *mut RawJniEnv,
    cls: jclass,
    path: jlong,
    attrs: jobject,
) {
    let live = || {
        unsafe { orig::<StatFn>(NIO_LSTAT)(raw, cls, path, attrs) };
        0
    };
    path_call(raw, NIO_LSTAT, path, 0, attrs, Fails::Throws, live);
}

pub unsafe extern "system" fn stat1(raw: *mut RawJniEnv, cls: jclass, path: jlong) -> jint {
    let live = || unsafe { orig::<ModeFn>(NIO_STAT_MODE)(raw, cls, path) };
    let none = std::ptr::null_mut();
    path_call(raw, NIO_STAT_MODE, path, 0, none, Fails::Never, live)
}

pub unsafe extern "system" fn access0(raw: *mut RawJniEnv, cls: jclass, path: jlong, mode: jint) {
    let live = || {
        unsafe { orig::<AccessFn>(NIO_ACCESS)(raw, cls, path, mode) };
        0
    };
    let none = std::ptr::null_mut();
    path_call(raw, NIO_ACCESS, path, mode, none, Fails::Throws, live);
}

pub unsafe extern "system" fn access0_errno(
    raw: *mut RawJniEnv,
    cls: jclass,
    path: jlong,
    mode: jint,
) -> jint {
    let live = || unsafe { orig::<AccessErrnoFn>(NIO_ACCESS_ERRNO)(raw, cls, path, mode) };
    let none = std::ptr::null_mut();
    path_call(
        raw,
        NIO_ACCESS_ERRNO,
        path,
        mode,
        none,
        Fails::Returns,
        live,
    )
}

pub unsafe extern "system" fn exists0(raw: *mut RawJniEnv, cls: jclass, path: jlong) -> jboolean {
    let live = || unsafe { orig::<ExistsFn>(NIO_EXISTS)(raw, cls, path) } as jint;
    let none = std::ptr::null_mut();
    (path_call(raw, NIO_EXISTS, path, 0, none, Fails::Never, live) != 0) as jboolean
}

// ---- directory streams ---------------------------------------------------------------------

/// A directory stream whose open was an event.
#[derive(Clone, Copy)]
struct Dir {
    /// Its number: the readdir events' input digest.
    id: jlong,
    /// The descriptor its `DIR` owns (`fdopendir`'s argument; -1 for `opendir0`): closedir
    /// closes it, so it leaves [`FDS`] then.
    fd: jint,
    /// Replay: the handle is the agent's own allocation, not a `DIR*`.
    replayed: bool,
}

/// Open directory streams whose open was an event, by handle (the `DIR*`, or in replay the
/// agent's allocation).
static DIRS: Mutex<Option<HashMap<jlong, Dir>>> = Mutex::new(None);
/// Entries in [`DIRS`]: while 0 the readdir and closedir wrappers look nothing up.
static OPEN_DIRS: AtomicUsize = AtomicUsize::new(0);

fn remember_dir(handle: jlong, dir: Dir) {
    if let Ok(mut t) = DIRS.lock() {
        if t.get_or_insert_with(HashMap::new)
            .insert(handle, dir)
            .is_none()
        {
            OPEN_DIRS.fetch_add(1, Ordering::AcqRel);
        }
    }
}

fn dir_of(handle: jlong) -> Option<Dir> {
    if OPEN_DIRS.load(Ordering::Acquire) == 0 {
        return None;
    }
    DIRS.lock().ok()?.as_ref()?.get(&handle).copied()
}

fn forget_dir(handle: jlong) -> Option<Dir> {
    if OPEN_DIRS.load(Ordering::Acquire) == 0 {
        return None;
    }
    let d = DIRS.lock().ok()?.as_mut()?.remove(&handle);
    if d.is_some() {
        OPEN_DIRS.fetch_sub(1, Ordering::AcqRel);
    }
    d
}

/// A replay handle: a live allocation, so no real `DIR*` can have its address while it is
/// open. Freed by [`closedir`].
fn new_replay_handle() -> jlong {
    Box::into_raw(Box::new(0u64)) as jlong
}

/// Records or replays a directory open (`opendir0` or `fdopendir`, whose `DIR` will own
/// `fd`): payload the directory's number, or the errno.
fn open_dir(c: &mut Call, i: usize, digest: u64, fd: jint, call: &dyn Fn() -> jlong) -> jlong {
    match &c.a.core.session {
        Session::Record(_) => {
            let dp = call();
            if let Some((errno, text)) = pending_failure(&mut c.env) {
                record_failure(c, i, digest, -1, errno, text.as_deref());
                return dp;
            }
            let id = NEXT_STREAM.fetch_add(1, Ordering::Relaxed);
            let replayed = false;
            remember_dir(dp, Dir { id, fd, replayed });
            record_one(c.a, i, digest, id, None, None);
            dp
        }
        Session::Replay(_) => {
            let Some(o) = replay_one(c, i, digest) else {
                // Run live (warn-live after a divergence): a replayed descriptor is /dev/null,
                // which fdopendir refuses with ENOTDIR; a path opens for real.
                return call();
            };
            if o.thrown {
                throw_failure(&mut c.env, o.errno, o.data.as_deref());
                return 0;
            }
            let id = if o.ret > 0 {
                o.ret
            } else {
                NEXT_STREAM.fetch_add(1, Ordering::Relaxed)
            };
            let handle = new_replay_handle();
            let replayed = true;
            remember_dir(handle, Dir { id, fd, replayed });
            handle
        }
    }
}

pub unsafe extern "system" fn opendir0(raw: *mut RawJniEnv, cls: jclass, path: jlong) -> jlong {
    let live = || unsafe { orig::<OpendirFn>(NIO_OPENDIR)(raw, cls, path) };
    run(KINDS[NIO_OPENDIR], live, |call| {
        let name = event_path(path)?;
        let mut c = begin_path(raw)?;
        let digest = path_digest(&name, 0);
        Some(open_dir(&mut c, NIO_OPENDIR, digest, -1, call))
    })
}

pub unsafe extern "system" fn fdopendir(raw: *mut RawJniEnv, cls: jclass, fd: jint) -> jlong {
    let live = || unsafe { orig::<FdopendirFn>(NIO_FDOPENDIR)(raw, cls, fd) };
    run(KINDS[NIO_FDOPENDIR], live, |call| {
        if OPEN.load(Ordering::Acquire) == 0 {
            return None;
        }
        // An event when the descriptor's open was one (newDirectoryStream's open0).
        let stream = lookup(fd)?;
        let mut c = begin(raw)?;
        let digest = replay_core::digest(&[&stream.to_le_bytes()]);
        Some(open_dir(&mut c, NIO_FDOPENDIR, digest, fd, call))
    })
}

pub unsafe extern "system" fn readdir(raw: *mut RawJniEnv, cls: jclass, dp: jlong) -> jbyteArray {
    let dir = guarded("UnixNativeDispatcher.readdir", None, || dir_of(dp));
    let replayed = dir.is_some_and(|d| d.replayed);
    // A replay handle is no DIR*: when such a call runs live (a nested call, a JDK service
    // thread, warn-live after a divergence) it reads as the end of the directory.
    let live = || {
        if replayed {
            std::ptr::null_mut()
        } else {
            unsafe { orig::<ReaddirFn>(NIO_READDIR)(raw, cls, dp) }
        }
    };
    run(KINDS[NIO_READDIR], live, |call| {
        let d = dir?;
        let mut c = begin(raw)?;
        let digest = replay_core::digest(&[&d.id.to_le_bytes()]);
        match &c.a.core.session {
            Session::Record(_) => {
                let r = call();
                if let Some((errno, text)) = pending_failure(&mut c.env) {
                    record_failure(&c, NIO_READDIR, digest, -1, errno, text.as_deref());
                    return Some(r);
                }
                if r.is_null() {
                    record_one(c.a, NIO_READDIR, digest, -1, None, None);
                    return Some(r);
                }
                // SAFETY: the live call's result, a local reference we return, not delete.
                let arr = unsafe { JByteArray::from_raw(r) };
                match c.env.convert_byte_array(&arr) {
                    Ok(name) => {
                        let n = name.len() as i64;
                        record_one(c.a, NIO_READDIR, digest, n, None, Some(&name));
                    }
                    Err(_) => {
                        let _ = c.env.exception_clear();
                        crate::internal_error(Some(&mut c.env), "cannot read a readdir name");
                    }
                }
                Some(r)
            }
            Session::Replay(_) => {
                let o = replay_one(&mut c, NIO_READDIR, digest)?;
                if o.thrown {
                    throw_failure(&mut c.env, o.errno, o.data.as_deref());
                    return Some(std::ptr::null_mut());
                }
                if o.ret < 0 {
                    return Some(std::ptr::null_mut());
                }
                let name = o.data.unwrap_or_default();
                match c.env.byte_array_from_slice(&name) {
                    Ok(a) => Some(a.into_raw()),
                    Err(_) => {
                        let _ = c.env.exception_clear();
                        crate::internal_error(Some(&mut c.env), "cannot make a readdir name");
                        None
                    }
                }
            }
        }
    })
}

pub unsafe extern "system" fn closedir(raw: *mut RawJniEnv, cls: jclass, dp: jlong) {
    let dir = guarded("UnixNativeDispatcher.closedir", None, || {
        let d = forget_dir(dp)?;
        // The DIR owns its descriptor, which closedir closes: out of the table first.
        if d.fd >= 0 {
            forget(d.fd);
        }
        Some(d)
    });
    match dir {
        Some(d) if d.replayed => guarded("UnixNativeDispatcher.closedir", (), || {
            if d.fd >= 0 {
                // SAFETY: the /dev/null descriptor the replayed open0 made; the JDK handed
                // it to fdopendir, so nothing else closes it.
                drop(unsafe { std::fs::File::from_raw_fd(d.fd) });
            }
            // SAFETY: made by new_replay_handle and just taken out of DIRS: freed once.
            drop(unsafe { Box::from_raw(dp as *mut u64) });
        }),
        _ => unsafe { orig::<ClosedirFn>(NIO_CLOSEDIR)(raw, cls, dp) },
    }
}

pub type MkdirFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jlong, jint);
pub type PathFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jlong);
pub type RenameFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jlong, jlong);

/// A change of the file system through NIO (`Files.createDirectory`, `delete`, `move`): as
/// java.io's (src/fsmeta.rs `change`), it runs live in both modes and replay returns the
/// recorded outcome; a recorded failure throws the recorded UnixException without acting.
fn change(raw: *mut RawJniEnv, i: usize, paths: &[jlong], arg: i64, live: impl Fn()) {
    let live = || {
        live();
        0i64
    };
    run(KINDS[i], live, |call| {
        agent()?;
        crate::fileio::FILE_EVENT.get()?;
        let mut key = Vec::new();
        for p in paths {
            if *p == 0 {
                return None;
            }
            // SAFETY: the JDK passes NUL-terminated paths in native buffers it owns.
            key.extend_from_slice(unsafe { CStr::from_ptr(*p as *const c_char) }.to_bytes());
            key.push(0);
        }
        let mut c = begin_path(raw)?;
        let digest = path_digest(&key, arg);
        match &c.a.core.session {
            Session::Record(_) => {
                call();
                match pending_failure(&mut c.env) {
                    Some((errno, text)) => {
                        record_failure(&c, i, digest, -1, errno, text.as_deref())
                    }
                    None => record_one(c.a, i, digest, 0, None, None),
                }
                Some(0)
            }
            Session::Replay(_) => {
                let o = replay_one(&mut c, i, digest)?;
                if o.thrown {
                    throw_failure(&mut c.env, o.errno, o.data.as_deref());
                    return Some(0);
                }
                // Made again; how it goes now is not the program's business (an
                // exception it throws is dropped without a word).
                call();
                let _ = c.env.exception_clear();
                Some(0)
            }
        }
    });
}

/// `mkdir0(path, mode)`: `Files.createDirectory`, `createDirectories` per level.
pub unsafe extern "system" fn mkdir0(raw: *mut RawJniEnv, cls: jclass, path: jlong, mode: jint) {
    // SAFETY (each `orig`): the saved original of this very native, with the JVM's arguments.
    let live = || unsafe { orig::<MkdirFn>(NIO_MKDIR)(raw, cls, path, mode) };
    change(raw, NIO_MKDIR, &[path], i64::from(mode), live);
}

/// `unlink0(path)`: `Files.delete` of a file.
pub unsafe extern "system" fn unlink0(raw: *mut RawJniEnv, cls: jclass, path: jlong) {
    let live = || unsafe { orig::<PathFn>(NIO_UNLINK)(raw, cls, path) };
    change(raw, NIO_UNLINK, &[path], 0, live);
}

/// `rmdir0(path)`: `Files.delete` of a directory.
pub unsafe extern "system" fn rmdir0(raw: *mut RawJniEnv, cls: jclass, path: jlong) {
    let live = || unsafe { orig::<PathFn>(NIO_RMDIR)(raw, cls, path) };
    change(raw, NIO_RMDIR, &[path], 0, live);
}

/// `rename0(from, to)`: `Files.move` within a file system.
pub unsafe extern "system" fn rename0(raw: *mut RawJniEnv, cls: jclass, from: jlong, to: jlong) {
    let live = || unsafe { orig::<RenameFn>(NIO_RENAME)(raw, cls, from, to) };
    change(raw, NIO_RENAME, &[from, to], 0, live);
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

    #[test]
    fn directory_handles_are_known_until_closed_and_replay_handles_are_unique() {
        let a = new_replay_handle();
        let b = new_replay_handle();
        assert_ne!(a, b);
        assert_ne!(a, 0);
        let (id, fd, replayed) = (41, -1, true);
        remember_dir(a, Dir { id, fd, replayed });
        assert_eq!(dir_of(a).map(|d| (d.id, d.replayed)), Some((41, true)));
        assert!(dir_of(b).is_none());
        assert_eq!(forget_dir(a).map(|d| d.id), Some(41));
        assert!(dir_of(a).is_none() && forget_dir(a).is_none());
        // SAFETY: both made by new_replay_handle above and never entered or freed elsewhere.
        unsafe {
            drop(Box::from_raw(a as *mut u64));
            drop(Box::from_raw(b as *mut u64));
        }
    }
}
