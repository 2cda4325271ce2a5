//! Values of the JVM's own that the program reads through natives: its start time and uptime
//! (`RuntimeMXBean.getStartTime()`/`getUptime()`, natives of `sun.management.VMManagementImpl`:
//! clocks the clock hooks do not see; servers log them at start, "Started @359ms"), and
//! `Runtime`'s heap sizes and processor count. Each call is an event whose payload is the
//! value; replay returns the recorded one.

use crate::fileio::{begin, run};
use crate::{apply, java_stack};
use jni::sys::{jint, jlong, jobject, JNIEnv as RawJniEnv};
use replay_core::session::Session;
use replay_core::{Payload, PayloadRef};
use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, Ordering};

/// (owner, native name, descriptor, event kind), in the order of [`ORIG`].
const NATIVES: [(&str, &str, &str, &str); 6] = [
    (
        "Lsun/management/VMManagementImpl;",
        "getUptime0",
        "()J",
        "java.lang.management.RuntimeMXBean.getUptime",
    ),
    (
        "Lsun/management/VMManagementImpl;",
        "getStartupTime",
        "()J",
        "java.lang.management.RuntimeMXBean.getStartTime",
    ),
    // The heap's sizes and the processor count: pdftk (iText) makes each PDF's /ID from
    // `currentTimeMillis() + "+" + freeMemory()`, and the processor count decides how a
    // parallel stream splits its work and how many workers a pool starts.
    (
        "Ljava/lang/Runtime;",
        "freeMemory",
        "()J",
        "java.lang.Runtime.freeMemory",
    ),
    (
        "Ljava/lang/Runtime;",
        "totalMemory",
        "()J",
        "java.lang.Runtime.totalMemory",
    ),
    (
        "Ljava/lang/Runtime;",
        "maxMemory",
        "()J",
        "java.lang.Runtime.maxMemory",
    ),
    (
        "Ljava/lang/Runtime;",
        "availableProcessors",
        "()I",
        "java.lang.Runtime.availableProcessors",
    ),
];
/// The index of `availableProcessors`, the one `()I` native.
const PROCESSORS: usize = 5;
static ORIG: [AtomicPtr<c_void>; NATIVES.len()] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; NATIVES.len()];

type LongFn = unsafe extern "system" fn(*mut RawJniEnv, jobject) -> jlong;
type IntFn = unsafe extern "system" fn(*mut RawJniEnv, jobject) -> jint;

/// The native's index in [`NATIVES`].
fn index(owner: &str, name: &str, sig: &str) -> Option<usize> {
    NATIVES
        .iter()
        .position(|(o, n, s, _)| *o == owner && *n == name && *s == sig)
}

/// Whether the native is one of [`NATIVES`] (for the natives bound before their names could
/// be read, `fileio::bind_early`).
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
    Some(crate::fileio::bound(&ORIG[i], address, wrapper(i)))
}

fn wrapper(i: usize) -> *mut c_void {
    match i {
        0 => uptime0 as LongFn as *mut c_void,
        1 => startup_time as LongFn as *mut c_void,
        2 => free_memory as LongFn as *mut c_void,
        3 => total_memory as LongFn as *mut c_void,
        4 => max_memory as LongFn as *mut c_void,
        _ => processors as IntFn as *mut c_void,
    }
}

unsafe extern "system" fn uptime0(raw: *mut RawJniEnv, this: jobject) -> jlong {
    value(raw, this, 0)
}

unsafe extern "system" fn startup_time(raw: *mut RawJniEnv, this: jobject) -> jlong {
    value(raw, this, 1)
}

unsafe extern "system" fn free_memory(raw: *mut RawJniEnv, this: jobject) -> jlong {
    value(raw, this, 2)
}

unsafe extern "system" fn total_memory(raw: *mut RawJniEnv, this: jobject) -> jlong {
    value(raw, this, 3)
}

unsafe extern "system" fn max_memory(raw: *mut RawJniEnv, this: jobject) -> jlong {
    value(raw, this, 4)
}

unsafe extern "system" fn processors(raw: *mut RawJniEnv, this: jobject) -> jint {
    value(raw, this, PROCESSORS) as jint
}

fn value(raw: *mut RawJniEnv, this: jobject, i: usize) -> jlong {
    let live = || {
        let p = ORIG[i].load(Ordering::Acquire);
        // SAFETY: the JVM's own implementation of NATIVES[i] (an instance native of that
        // descriptor), stored at its bind before this wrapper could be called.
        unsafe {
            if i == PROCESSORS {
                jlong::from(std::mem::transmute::<*mut c_void, IntFn>(p)(raw, this))
            } else {
                std::mem::transmute::<*mut c_void, LongFn>(p)(raw, this)
            }
        }
    };
    run(NATIVES[i].3, live, |call| {
        let mut c = begin(raw)?;
        let a = c.a;
        let kind = a.core.intern(NATIVES[i].3);
        match &a.core.session {
            Session::Record(_) => {
                let r = call();
                crate::record_direct(
                    a,
                    kind,
                    0,
                    None,
                    PayloadRef::Ret {
                        ret: r,
                        errno: 0,
                        data: None,
                    },
                );
                Some(r)
            }
            Session::Replay(_) => {
                let env = std::cell::RefCell::new(&mut c.env);
                let stack = || java_stack(a, &mut env.borrow_mut());
                let e = apply(a.core.replay(kind, 0, None, &stack))?;
                match e.payload {
                    Payload::Ret { ret, .. } => Some(ret),
                    _ => None,
                }
            }
        }
    })
}
