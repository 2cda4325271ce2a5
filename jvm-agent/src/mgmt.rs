//! The JVM's start time and uptime (`RuntimeMXBean.getStartTime()`/`getUptime()`): clocks the
//! clock hooks do not see (natives of `sun.management.VMManagementImpl`). Servers log them at
//! start ("Started @359ms", Spring Boot's "process running for"), and a replay printed the
//! new run's values and diverged on every start. Each call is an event whose payload is the
//! value; replay returns the recorded one.

use crate::fileio::{begin, run};
use crate::{apply, java_stack};
use jni::sys::{jlong, jobject, JNIEnv as RawJniEnv};
use replay_core::session::Session;
use replay_core::{Payload, PayloadRef};
use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, Ordering};

const OWNER: &str = "Lsun/management/VMManagementImpl;";
/// (native name, event kind), in the order of [`ORIG`].
const NATIVES: [(&str, &str); 2] = [
    ("getUptime0", "java.lang.management.RuntimeMXBean.getUptime"),
    (
        "getStartupTime",
        "java.lang.management.RuntimeMXBean.getStartTime",
    ),
];
static ORIG: [AtomicPtr<c_void>; 2] = [const { AtomicPtr::new(std::ptr::null_mut()) }; 2];

type LongFn = unsafe extern "system" fn(*mut RawJniEnv, jobject) -> jlong;

/// NativeMethodBind of one of [`NATIVES`]: the wrapper to bind instead of `address`.
pub(crate) fn bind(
    owner: &str,
    name: &str,
    sig: &str,
    address: *mut c_void,
) -> Option<*mut c_void> {
    if owner != OWNER || sig != "()J" {
        return None;
    }
    let i = NATIVES.iter().position(|(n, _)| *n == name)?;
    let w = wrapper(i);
    if address != w {
        ORIG[i].store(address, Ordering::Release);
    }
    Some(w)
}

fn wrapper(i: usize) -> *mut c_void {
    match i {
        0 => uptime0 as LongFn as *mut c_void,
        _ => startup_time as LongFn as *mut c_void,
    }
}

unsafe extern "system" fn uptime0(raw: *mut RawJniEnv, this: jobject) -> jlong {
    value(raw, this, 0)
}

unsafe extern "system" fn startup_time(raw: *mut RawJniEnv, this: jobject) -> jlong {
    value(raw, this, 1)
}

fn value(raw: *mut RawJniEnv, this: jobject, i: usize) -> jlong {
    let live = || {
        let p = ORIG[i].load(Ordering::Acquire);
        // SAFETY: the JVM's own implementation of NATIVES[i] (a `()J` instance native),
        // stored at its bind before this wrapper could be called.
        unsafe { std::mem::transmute::<*mut c_void, LongFn>(p)(raw, this) }
    };
    run(NATIVES[i].1, live, |call| {
        let mut c = begin(raw)?;
        let a = c.a;
        let kind = a.core.intern(NATIVES[i].1);
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
