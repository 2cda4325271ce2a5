//! The program's output and exit status, for replay's output verification (the core's
//! `Core::output` / `Core::exit_status`).
//!
//! Every write of Java code that reaches fd 1 or 2 ends in one of `FileOutputStream`'s two
//! write natives (`System.out`/`err`, a `FileOutputStream` on `FileDescriptor.out`/`err`,
//! PrintStream/PrintWriter/Writers over them, the uncaught-exception trace that
//! `ThreadGroup.uncaughtException` prints to `System.err`). They are wrapped like the
//! FileInputStream natives (NativeMethodBind, table in src/fileio.rs). A write is an output
//! event when the stream's `FileDescriptor.fd` is 1 or 2, the hooks are on (after VMInit,
//! before VMDeath), the thread is not inside a hook (what the agent's own Java prints, such
//! as an exception it describes, is not the program's output) and not a JDK service thread.
//! Record hands the bytes to the core before the real write; replay hands them over before
//! the real write too, and a difference stops the program there under `abort`, so nothing
//! after the first differing byte reaches the terminal. Writes to other descriptors pay two
//! field reads.
//!
//! The exit status of `System.exit`, `Runtime.exit` and `Runtime.halt` (and a signal's
//! `Shutdown.exit`) all pass `java.lang.Shutdown.halt0`, before VMDeath closes the log. When
//! `main` just returns, the launcher decides 0 or 1 after VMDeath: nothing is compared then.

use crate::fileio::{orig, HALT, OUT_WRITE, OUT_WRITE_BYTES, RAF_WRITE, RAF_WRITE_BYTES};
use crate::{agent, apply, fsmeta, guarded, java_stack, output_turn, Agent};
use jni::objects::JFieldID;
use jni::sys::{jboolean, jbyteArray, jclass, jint, jobject, JNIEnv as RawJniEnv};
use jni::JNIEnv;
use replay_core::guard::HookGuard;
use replay_core::session::Stream;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

pub type WriteBytesFn =
    unsafe extern "system" fn(*mut RawJniEnv, jobject, jbyteArray, jint, jint, jboolean);
pub type WriteFn = unsafe extern "system" fn(*mut RawJniEnv, jobject, jint, jboolean);
pub type HaltFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jint);
pub type RafWriteBytesFn =
    unsafe extern "system" fn(*mut RawJniEnv, jobject, jbyteArray, jint, jint);
pub type RafWriteFn = unsafe extern "system" fn(*mut RawJniEnv, jobject, jint);

/// Set at VMDeath before the session closes: later writes (a daemon thread still printing)
/// are not events.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// A larger write buffer than this is not kept for the thread's next write.
const KEEP: usize = 1 << 20;

thread_local! {
    /// The bytes of the write being checked: one buffer per thread, reused.
    static BYTES: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

pub(crate) fn close() {
    CLOSED.store(true, Ordering::Release);
}

/// The stream `this` (a FileOutputStream) writes to, when its writes are output events.
fn output_stream(env: &mut JNIEnv, this: jobject) -> Option<(&'static Agent, Stream)> {
    let a = agent()?;
    if CLOSED.load(Ordering::Acquire) || !a.core.wants_output() {
        return None;
    }
    crate::fileio::FILE_EVENT.get()?;
    static FOS_FD: OnceLock<JFieldID> = OnceLock::new();
    static FD_FD: OnceLock<JFieldID> = OnceLock::new();
    let fos_fd = fsmeta::field_id(
        env,
        &FOS_FD,
        "java/io/FileOutputStream",
        "fd",
        "Ljava/io/FileDescriptor;",
    )?;
    let fd_fd = fsmeta::field_id(env, &FD_FD, "java/io/FileDescriptor", "fd", "I")?;
    // Raw JNI, without the wrapper's exception checks after each call: these field reads
    // cannot throw (valid IDs of the receiver's own class), and every write to any file pays
    // them.
    let raw = env.get_raw();
    // SAFETY: a valid env; `this` is a live FileOutputStream and the field IDs are its `fd`
    // and FileDescriptor's `fd`. The one local reference made here is not deleted: the JVM
    // frees it when the native returns (a native frame has room for 16), and a DeleteLocalRef
    // would be one more VM transition on every write.
    let n = unsafe {
        let (Some(get_obj), Some(get_int)) = ((**raw).GetObjectField, (**raw).GetIntField) else {
            return None;
        };
        let fd = get_obj(raw, this, fos_fd.into_raw());
        if fd.is_null() {
            return None;
        }
        get_int(raw, fd, fd_fd.into_raw())
    };
    Some((a, Stream::from_fd(n as i64)?))
}

/// The path a FileOutputStream or RandomAccessFile (`class`, its field ID cached in `cache`)
/// was opened with: its `path` field (null for a stream on a descriptor).
fn path_field(
    env: &mut JNIEnv,
    this: jobject,
    cache: &OnceLock<JFieldID>,
    class: &str,
) -> Option<String> {
    let a = agent()?;
    if CLOSED.load(Ordering::Acquire) || !a.core.wants_output() {
        return None;
    }
    let id = fsmeta::field_id(env, cache, class, "path", "Ljava/lang/String;")?;
    // SAFETY: `this` is a live object of `class` (the native's receiver).
    let this = unsafe { jni::objects::JObject::from_raw(this) };
    let p = env
        .get_field_unchecked(&this, id, jni::signature::ReturnType::Object)
        .and_then(|v| v.l())
        .ok()
        .filter(|p| !p.is_null())?;
    let _ = this.into_raw();
    let s = jni::objects::JString::from(p);
    let text = env.get_string(&s).map(String::from).ok();
    let _ = env.delete_local_ref(s);
    text
}

/// The path of the file `this` (a FileOutputStream) writes, when it was opened by name.
fn file_path(env: &mut JNIEnv, this: jobject) -> Option<String> {
    static FOS_PATH: OnceLock<JFieldID> = OnceLock::new();
    path_field(env, this, &FOS_PATH, "java/io/FileOutputStream")
}

/// Hands one write to the core (`fill` puts its bytes into the buffer; false: they cannot be
/// read, the original write reports why). A stop verdict ends the process here, before the
/// write; anything else lets the caller write. A write into a file opened by name is summed
/// for the end of the run instead (the core's `file_written`: replay compares what the
/// program wrote into each file with the recording).
fn check(raw: *mut RawJniEnv, this: jobject, fill: impl FnOnce(&mut JNIEnv, &mut Vec<u8>) -> bool) {
    guarded("FileOutputStream.write", (), || {
        // SAFETY: the JNIEnv the JVM passed to the native.
        let Ok(mut env) = (unsafe { JNIEnv::from_raw(raw) }) else {
            return;
        };
        // Writes made while the agent is inside a hook are its own, not the program's (and
        // what the JNI calls below might print is not checked again).
        let Some(_inside) = HookGuard::enter() else {
            return;
        };
        let Some((a, stream)) = output_stream(&mut env, this) else {
            let Some(path) = file_path(&mut env, this) else {
                crate::clear_exception(&mut env);
                return;
            };
            let Some(a) = agent() else { return };
            if !output_turn(a, &mut env) {
                return;
            }
            BYTES.with(|b| {
                let mut b = b.borrow_mut();
                b.clear();
                if fill(&mut env, &mut b) {
                    a.core.file_written(&path, &b);
                }
                if b.capacity() > KEEP {
                    *b = Vec::new();
                }
            });
            return;
        };
        if !output_turn(a, &mut env) {
            return;
        }
        BYTES.with(|b| {
            let mut b = b.borrow_mut();
            b.clear();
            if fill(&mut env, &mut b) {
                let env = RefCell::new(&mut env);
                let stack = || java_stack(a, &mut env.borrow_mut());
                let _ = apply(a.core.output(stream, &b, &stack));
            }
            if b.capacity() > KEEP {
                *b = Vec::new();
            }
        });
    })
}

/// `FileOutputStream.writeBytes(byte[], int, int, boolean)`.
pub unsafe extern "system" fn write_bytes(
    raw: *mut RawJniEnv,
    this: jobject,
    bytes: jbyteArray,
    off: jint,
    len: jint,
    append: jboolean,
) {
    if len > 0 && !bytes.is_null() {
        check(raw, this, |env, b| {
            let n = len as usize;
            b.reserve(n);
            let raw = env.get_raw();
            // SAFETY: `b` has room for `n` bytes; JNI checks `off`/`len` against the array
            // and throws instead of copying when they are out of bounds.
            unsafe {
                let Some(get) = (**raw).GetByteArrayRegion else {
                    return false;
                };
                get(raw, bytes, off, len, b.as_mut_ptr() as *mut i8);
            }
            if clear_pending(env) {
                // Bad bounds: the original throws its own exception for them.
                return false;
            }
            // SAFETY: the JVM filled the first `n` bytes.
            unsafe { b.set_len(n) };
            true
        });
    }
    // SAFETY (both `orig` calls): the saved original of this very native.
    unsafe { orig::<WriteBytesFn>(OUT_WRITE_BYTES)(raw, this, bytes, off, len, append) }
}

/// `FileOutputStream.write(int, boolean)`: one byte.
pub unsafe extern "system" fn write(
    raw: *mut RawJniEnv,
    this: jobject,
    byte: jint,
    append: jboolean,
) {
    check(raw, this, |_, b| {
        b.push(byte as u8);
        true
    });
    unsafe { orig::<WriteFn>(OUT_WRITE)(raw, this, byte, append) }
}

/// `java.lang.Shutdown.halt0(int)`: the status the process exits with, before VMDeath.
pub unsafe extern "system" fn halt0(raw: *mut RawJniEnv, cls: jclass, status: jint) {
    guarded("Shutdown.halt0", (), || {
        if let Some(a) = agent() {
            if !CLOSED.load(Ordering::Acquire) {
                a.core.exit_status(status);
            }
        }
    });
    // SAFETY: the saved original of this very native.
    unsafe { orig::<HaltFn>(HALT)(raw, cls, status) }
}

/// Clears an exception a JNI call left pending, without describing it (that would print).
fn clear_pending(env: &mut JNIEnv) -> bool {
    if env.exception_check().unwrap_or(false) {
        let _ = env.exception_clear();
        return true;
    }
    false
}

/// The path a RandomAccessFile was opened with.
fn raf_path(env: &mut JNIEnv, this: jobject) -> Option<String> {
    static RAF_PATH: OnceLock<JFieldID> = OnceLock::new();
    path_field(env, this, &RAF_PATH, "java/io/RandomAccessFile")
}

/// A RandomAccessFile write: its bytes are summed for its path (the core's `file_written`),
/// as a FileOutputStream's are; the write runs live in both modes.
fn raf_note(
    raw: *mut RawJniEnv,
    this: jobject,
    bytes: impl FnOnce(&mut JNIEnv) -> Option<Vec<u8>>,
) {
    guarded("RandomAccessFile.write", (), || {
        // SAFETY: the JNIEnv the JVM passed to the native.
        let Ok(mut env) = (unsafe { JNIEnv::from_raw(raw) }) else {
            return;
        };
        let Some(_inside) = HookGuard::enter() else {
            return;
        };
        let Some(path) = raf_path(&mut env, this) else {
            crate::clear_exception(&mut env);
            return;
        };
        let Some(a) = agent() else { return };
        if !output_turn(a, &mut env) {
            return;
        }
        match bytes(&mut env) {
            Some(b) => a.core.file_written(&path, &b),
            None => {
                crate::clear_exception(&mut env);
            }
        }
    })
}

/// `RandomAccessFile.writeBytes(byte[], int, int)` (JDK 21+: `writeBytes0`).
pub unsafe extern "system" fn raf_write_bytes(
    raw: *mut RawJniEnv,
    this: jobject,
    bytes: jbyteArray,
    off: jint,
    len: jint,
) {
    if len > 0 && off >= 0 && !bytes.is_null() {
        raf_note(raw, this, |env| {
            let mut b = vec![0i8; len as usize];
            // SAFETY: the native's byte[] argument; JNI checks the region's bounds and throws
            // (cleared above) instead of copying.
            let arr = unsafe { jni::objects::JByteArray::from_raw(bytes) };
            let r = env.get_byte_array_region(&arr, off, &mut b).ok();
            let _ = arr.into_raw();
            r.map(|_| b.into_iter().map(|x| x as u8).collect())
        });
    }
    // SAFETY: the saved original of this very native.
    unsafe { orig::<RafWriteBytesFn>(RAF_WRITE_BYTES)(raw, this, bytes, off, len) }
}

/// `RandomAccessFile.write(int)`: one byte.
pub unsafe extern "system" fn raf_write(raw: *mut RawJniEnv, this: jobject, byte: jint) {
    raf_note(raw, this, |_| Some(vec![byte as u8]));
    // SAFETY: the saved original of this very native.
    unsafe { orig::<RafWriteFn>(RAF_WRITE)(raw, this, byte) }
}
