//! Values of the JVM's own that the program reads through natives: its start time and uptime
//! (`RuntimeMXBean.getStartTime()`/`getUptime()`, natives of `sun.management.VMManagementImpl`:
//! clocks the clock hooks do not see; servers log them at start, "Started @359ms"), and
//! `Runtime`'s heap sizes and processor count. Each call is an event whose payload is the
//! value; replay returns the recorded one.

use crate::fileio::{begin, run};
use crate::{apply, java_stack};
use jni::sys::{jclass, jint, jlong, jobject, JNIEnv as RawJniEnv};
use replay_core::session::Session;
use replay_core::{Payload, PayloadRef};
use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, Ordering};

const OS: &str = "Lcom/sun/management/internal/OperatingSystemImpl;";
const THREADS: &str = "Lsun/management/ThreadImpl;";

/// (owner, native name, descriptor, event kind), in the order of [`ORIG`].
const NATIVES: [(&str, &str, &str, &str); 19] = [
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
    // `com.sun.management.OperatingSystemMXBean`'s and `ThreadMXBean`'s figures of this
    // process and machine: read live, they went into a program's reports (CPU time spent,
    // free memory), other in every replay.
    (
        OS,
        "getProcessCpuTime0",
        "()J",
        "com.sun.management.OperatingSystemMXBean.getProcessCpuTime",
    ),
    (
        OS,
        "getFreeMemorySize0",
        "()J",
        "com.sun.management.OperatingSystemMXBean.getFreeMemorySize",
    ),
    (
        OS,
        "getTotalMemorySize0",
        "()J",
        "com.sun.management.OperatingSystemMXBean.getTotalMemorySize",
    ),
    (
        OS,
        "getFreeSwapSpaceSize0",
        "()J",
        "com.sun.management.OperatingSystemMXBean.getFreeSwapSpaceSize",
    ),
    (
        OS,
        "getTotalSwapSpaceSize0",
        "()J",
        "com.sun.management.OperatingSystemMXBean.getTotalSwapSpaceSize",
    ),
    (
        OS,
        "getCommittedVirtualMemorySize0",
        "()J",
        "com.sun.management.OperatingSystemMXBean.getCommittedVirtualMemorySize",
    ),
    (
        OS,
        "getOpenFileDescriptorCount0",
        "()J",
        "com.sun.management.UnixOperatingSystemMXBean.getOpenFileDescriptorCount",
    ),
    // Garbage collections and compilation, as monitoring code reports them.
    (
        "Lsun/management/GarbageCollectorImpl;",
        "getCollectionCount",
        "()J",
        "java.lang.management.GarbageCollectorMXBean.getCollectionCount",
    ),
    (
        "Lsun/management/GarbageCollectorImpl;",
        "getCollectionTime",
        "()J",
        "java.lang.management.GarbageCollectorMXBean.getCollectionTime",
    ),
    (
        "Lsun/management/VMManagementImpl;",
        "getTotalCompileTime",
        "()J",
        "java.lang.management.CompilationMXBean.getTotalCompilationTime",
    ),
    // Static, with the thread id (0: the calling thread) as the input digest.
    (
        THREADS,
        "getThreadTotalCpuTime0",
        "(J)J",
        "java.lang.management.ThreadMXBean.getThreadCpuTime",
    ),
    (
        THREADS,
        "getThreadUserCpuTime0",
        "(J)J",
        "java.lang.management.ThreadMXBean.getThreadUserTime",
    ),
    (
        THREADS,
        "getThreadAllocatedMemory0",
        "(J)J",
        "com.sun.management.ThreadMXBean.getThreadAllocatedBytes",
    ),
];
/// The index of `availableProcessors`, the one `()I` native.
const PROCESSORS: usize = 5;
/// The first of the static `(J)J` natives.
const PER_THREAD: usize = 16;
static ORIG: [AtomicPtr<c_void>; NATIVES.len()] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; NATIVES.len()];

type LongFn = unsafe extern "system" fn(*mut RawJniEnv, jobject) -> jlong;
type IntFn = unsafe extern "system" fn(*mut RawJniEnv, jobject) -> jint;
type ThreadFn = unsafe extern "system" fn(*mut RawJniEnv, jclass, jlong) -> jlong;

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
        PROCESSORS => processors as IntFn as *mut c_void,
        6 => os::<6> as LongFn as *mut c_void,
        7 => os::<7> as LongFn as *mut c_void,
        8 => os::<8> as LongFn as *mut c_void,
        9 => os::<9> as LongFn as *mut c_void,
        10 => os::<10> as LongFn as *mut c_void,
        11 => os::<11> as LongFn as *mut c_void,
        12 => os::<12> as LongFn as *mut c_void,
        13 => os::<13> as LongFn as *mut c_void,
        14 => os::<14> as LongFn as *mut c_void,
        15 => os::<15> as LongFn as *mut c_void,
        16 => per_thread::<16> as ThreadFn as *mut c_void,
        17 => per_thread::<17> as ThreadFn as *mut c_void,
        _ => per_thread::<18> as ThreadFn as *mut c_void,
    }
}

/// The instance `()J` natives after `availableProcessors` (the operating system's figures,
/// garbage collections, compilation), by their index.
unsafe extern "system" fn os<const I: usize>(raw: *mut RawJniEnv, this: jobject) -> jlong {
    value(raw, this, I, 0)
}

/// `ThreadImpl`'s static `(J)J` natives, by their index; `id` is the thread asked about.
unsafe extern "system" fn per_thread<const I: usize>(
    raw: *mut RawJniEnv,
    cls: jclass,
    id: jlong,
) -> jlong {
    value(raw, cls, I, id)
}

unsafe extern "system" fn uptime0(raw: *mut RawJniEnv, this: jobject) -> jlong {
    value(raw, this, 0, 0)
}

unsafe extern "system" fn startup_time(raw: *mut RawJniEnv, this: jobject) -> jlong {
    value(raw, this, 1, 0)
}

unsafe extern "system" fn free_memory(raw: *mut RawJniEnv, this: jobject) -> jlong {
    value(raw, this, 2, 0)
}

unsafe extern "system" fn total_memory(raw: *mut RawJniEnv, this: jobject) -> jlong {
    value(raw, this, 3, 0)
}

unsafe extern "system" fn max_memory(raw: *mut RawJniEnv, this: jobject) -> jlong {
    value(raw, this, 4, 0)
}

unsafe extern "system" fn processors(raw: *mut RawJniEnv, this: jobject) -> jint {
    value(raw, this, PROCESSORS, 0) as jint
}

/// One call of native `i` (`arg`: a per-thread native's thread id, 0 for the others, the
/// event's input digest): record its value, or replay the recorded one.
fn value(raw: *mut RawJniEnv, this: jobject, i: usize, arg: jlong) -> jlong {
    let live = || {
        let p = ORIG[i].load(Ordering::Acquire);
        // SAFETY: the JVM's own implementation of NATIVES[i] (a native of that descriptor:
        // the receiver or class, and for the per-thread ones the id), stored at its bind
        // before this wrapper could be called.
        unsafe {
            if i == PROCESSORS {
                jlong::from(std::mem::transmute::<*mut c_void, IntFn>(p)(raw, this))
            } else if i >= PER_THREAD {
                std::mem::transmute::<*mut c_void, ThreadFn>(p)(raw, this, arg)
            } else {
                std::mem::transmute::<*mut c_void, LongFn>(p)(raw, this)
            }
        }
    };
    let digest = (i >= PER_THREAD).then(|| replay_core::digest(&[&arg.to_le_bytes()]));
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
                    digest,
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
                let e = apply(a.core.replay(kind, 0, digest, &stack))?;
                match e.payload {
                    Payload::Ret { ret, .. } => Some(ret),
                    _ => None,
                }
            }
        }
    })
}
