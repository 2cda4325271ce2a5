//! `FileChannel.map` of a file the program reads (a replayed stream): the mapping's bytes.
//!
//! A replayed channel's descriptor is `/dev/null`, which cannot be mapped: `map` threw
//! "No such device" in replay (loud), or, where the program swallowed it (libraries with a
//! read fallback, and copies through a mapping), wrote nothing without a word. Record maps the
//! file as usual and records the mapped bytes as one event (input: the stream, protection,
//! position and length); replay maps that many anonymous bytes, fills them with the recorded
//! ones and gives that mapping (read-only unless the program asked for a private one), which
//! `unmap0` unmaps like any other. What the program then reads from the buffer needs no hook.
//!
//! The natives: JDK 17's `sun.nio.ch.FileChannelImpl.map0(prot, position, length, isSync)`
//! (an instance method: the descriptor is the channel's `fd` field), JDK 21+'s
//! `sun.nio.ch.UnixFileDispatcherImpl.map0(fd, prot, position, length, isSync)` (static).
//! Maps of files opened for writing (live descriptors) run live.

use crate::fileio::{begin, orig_stream, run};
use crate::{apply, java_stack};
use jni::objects::JObject;
use jni::sys::{jboolean, jclass, jint, jlong, jobject, JNIEnv as RawJniEnv};
use replay_core::session::Session;
use replay_core::{Payload, PayloadRef};
use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, Ordering};

const KIND: &str = "java.nio.channels.FileChannel.map";

/// (owner, name, descriptor) of the two natives, in the order of [`ORIG`].
const NATIVES: [(&str, &str, &str); 2] = [
    ("Lsun/nio/ch/FileChannelImpl;", "map0", "(IJJZ)J"),
    (
        "Lsun/nio/ch/UnixFileDispatcherImpl;",
        "map0",
        "(Ljava/io/FileDescriptor;IJJZ)J",
    ),
];
static ORIG: [AtomicPtr<c_void>; 2] = [const { AtomicPtr::new(std::ptr::null_mut()) }; 2];

type Map17 =
    unsafe extern "system" fn(*mut RawJniEnv, jobject, jint, jlong, jlong, jboolean) -> jlong;
type Map25 = unsafe extern "system" fn(
    *mut RawJniEnv,
    jclass,
    jobject,
    jint,
    jlong,
    jlong,
    jboolean,
) -> jlong;

/// The JDK's protection codes (`FileChannelImpl.MAP_RO`, `MAP_RW`, `MAP_PV`).
const MAP_RO: jint = 0;

extern "C" {
    fn mmap(addr: *mut c_void, len: usize, prot: i32, flags: i32, fd: i32, off: i64)
        -> *mut c_void;
    fn mprotect(addr: *mut c_void, len: usize, prot: i32) -> i32;
}
const PROT_READ: i32 = 1;
const PROT_WRITE: i32 = 2;
const MAP_PRIVATE: i32 = 2;
const MAP_ANONYMOUS: i32 = 0x20;

/// NativeMethodBind of one of [`NATIVES`]: the wrapper to bind instead of `address`.
pub(crate) fn bind(
    owner: &str,
    name: &str,
    sig: &str,
    address: *mut c_void,
) -> Option<*mut c_void> {
    let i = NATIVES
        .iter()
        .position(|(o, n, s)| *o == owner && *n == name && *s == sig)?;
    let w = if i == 0 {
        map17 as Map17 as *mut c_void
    } else {
        map25 as Map25 as *mut c_void
    };
    Some(crate::fileio::bound(&ORIG[i], address, w))
}

unsafe extern "system" fn map17(
    raw: *mut RawJniEnv,
    this: jobject,
    prot: jint,
    pos: jlong,
    len: jlong,
    sync: jboolean,
) -> jlong {
    let live = || {
        let p = ORIG[0].load(Ordering::Acquire);
        // SAFETY: the JVM's own map0, stored at its bind before this wrapper could run.
        unsafe { std::mem::transmute::<*mut c_void, Map17>(p)(raw, this, prot, pos, len, sync) }
    };
    mapped(raw, Descriptor::Field(this), prot, pos, len, live)
}

unsafe extern "system" fn map25(
    raw: *mut RawJniEnv,
    cls: jclass,
    fd: jobject,
    prot: jint,
    pos: jlong,
    len: jlong,
    sync: jboolean,
) -> jlong {
    let live = || {
        let p = ORIG[1].load(Ordering::Acquire);
        // SAFETY: as in map17.
        unsafe { std::mem::transmute::<*mut c_void, Map25>(p)(raw, cls, fd, prot, pos, len, sync) }
    };
    mapped(raw, Descriptor::Given(fd), prot, pos, len, live)
}

/// Where the mapped file's FileDescriptor is.
enum Descriptor {
    /// The channel's `fd` field (JDK 17).
    Field(jobject),
    Given(jobject),
}

fn mapped(
    raw: *mut RawJniEnv,
    fd: Descriptor,
    prot: jint,
    pos: jlong,
    len: jlong,
    live: impl Fn() -> jlong,
) -> jlong {
    run(KIND, live, |call| {
        if len <= 0 {
            return None;
        }
        let mut c = begin(raw)?;
        let fdobj = match fd {
            Descriptor::Given(o) => o,
            Descriptor::Field(this) => {
                // SAFETY: the channel the JVM passed to its own native.
                let ch = unsafe { JObject::from_raw(this) };
                let f = c
                    .env
                    .get_field(&ch, "fd", "Ljava/io/FileDescriptor;")
                    .and_then(|v| v.l());
                match f {
                    Ok(o) => o.into_raw(),
                    Err(_) => {
                        crate::clear_exception(&mut c.env);
                        return None;
                    }
                }
            }
        };
        // Replayed streams only (a positive number); a file open for writing is live.
        let stream = orig_stream(raw, fdobj).filter(|&s| s > 0)?;
        let a = c.a;
        let kind = a.core.intern(KIND);
        let d = replay_core::digest(&[
            &stream.to_le_bytes(),
            &prot.to_le_bytes(),
            &pos.to_le_bytes(),
            &len.to_le_bytes(),
        ]);
        match &a.core.session {
            Session::Record(_) => {
                let addr = call();
                if addr == 0 || c.env.exception_check().unwrap_or(true) {
                    return Some(addr);
                }
                // SAFETY: the JVM just mapped `len` bytes of the file at `addr`, within its
                // size (FileChannelImpl checks that before it maps a file read-only).
                let bytes = unsafe { std::slice::from_raw_parts(addr as *const u8, len as usize) };
                crate::record_direct(a, kind, 0, Some(d), PayloadRef::Bytes(bytes));
                Some(addr)
            }
            Session::Replay(_) => {
                let env = std::cell::RefCell::new(&mut c.env);
                let stack = || java_stack(a, &mut env.borrow_mut());
                let e = apply(a.core.replay(kind, 0, Some(d), &stack))?;
                let Payload::Bytes { data } = e.payload else {
                    crate::internal_error(
                        Some(env.into_inner()),
                        &format!("event {} ({KIND}) holds no bytes", e.seq),
                    );
                    return None;
                };
                let n = len as usize;
                // SAFETY: a fresh private anonymous mapping of `n` bytes, filled, then made
                // read-only for a read-only map; the buffer's unmap0 unmaps it.
                unsafe {
                    let p = mmap(
                        std::ptr::null_mut(),
                        n,
                        PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS,
                        -1,
                        0,
                    );
                    if p as isize == -1 {
                        return None;
                    }
                    let k = data.len().min(n);
                    std::ptr::copy_nonoverlapping(data.as_ptr(), p as *mut u8, k);
                    if prot == MAP_RO {
                        mprotect(p, n, PROT_READ);
                    }
                    Some(p as jlong)
                }
            }
        }
    })
}
