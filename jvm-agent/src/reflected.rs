//! Clock reads that no call site names: `Method.invoke` of `System.nanoTime` or
//! `currentTimeMillis` (rhino, bsh and jython run a script's Java calls through reflection),
//! a `MethodHandle` from `findStatic` or `unreflect` (invokedynamic-based languages), and JNI
//! calls from native code.
//!
//! The class hook only redirects Methodrefs (src/classfile.rs), so these calls reached the
//! JVM's natives and read the live clock in replay. The two natives are now bound to wrappers
//! here, which call the hook class's `nanoTime`/`currentTimeMillis` like a redirected call
//! site does. The hook class itself reads the real clock through the same natives: a wrapper
//! called from the hook class calls the JVM's function. C1 and C2 compile the hook class's
//! reads as intrinsics that never reach a native, so only its interpreted calls (its first
//! few hundred) pay the frame lookup.
//!
//! The binding is made by `ReplayHooks.bindClocks0`, called from `ReplayHooks.init`: the JVM
//! warns about a platform class's natives bound again unless the caller of `RegisterNatives`
//! is a class of the same loader. Not covered: a constant `MethodHandle` that C2 inlines into
//! its caller reads the clock as an intrinsic, live.

use crate::jvmti::FrameInfo;
use crate::{agent, clear_exception, guarded};
use jni::objects::{JClass, JStaticMethodID};
use jni::signature::{Primitive, ReturnType};
use jni::sys::{jclass, jlong, jmethodID, JNIEnv as RawJniEnv};
use jni::{JNIEnv, NativeMethod};
use std::collections::HashMap;
use std::ffi::{c_char, c_void, CStr};
use std::sync::{Mutex, OnceLock};

/// The JVM's functions behind `System.nanoTime` and `currentTimeMillis` (exported by libjvm,
/// bound by `System.registerNatives`).
type ClockFn = unsafe extern "system" fn(*mut RawJniEnv, jclass) -> jlong;

/// (the JVM's function's name, `System`'s method, the hook class's static method of the same
/// name).
const CLOCKS: [&CStr; 2] = [c"JVM_NanoTime", c"JVM_CurrentTimeMillis"];
const NAMES: [&str; 2] = ["nanoTime", "currentTimeMillis"];

static ORIGINAL: [OnceLock<ClockFn>; 2] = [OnceLock::new(), OnceLock::new()];
static HOOK_IDS: [OnceLock<JStaticMethodID>; 2] = [OnceLock::new(), OnceLock::new()];

extern "C" {
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}

/// `ReplayHooks.bindClocks0()`: binds `System.nanoTime` and `currentTimeMillis` to the
/// wrappers. A clock whose JVM function cannot be found keeps the JVM's binding.
#[no_mangle]
pub extern "system" fn Java_java_lang_ReplayHooks_bindClocks0<'l>(
    mut env: JNIEnv<'l>,
    hooks: JClass<'l>,
) {
    guarded("binding the clocks", (), || {
        let wrappers: [*mut c_void; 2] = [nano as *mut c_void, millis as *mut c_void];
        let mut natives = Vec::new();
        for i in 0..2 {
            // SAFETY: RTLD_DEFAULT (null on glibc) searches the global scope, where the java
            // launcher loaded libjvm; the name is NUL-terminated.
            let f = unsafe { dlsym(std::ptr::null_mut(), CLOCKS[i].as_ptr()) };
            if f.is_null() {
                continue;
            }
            let Ok(id) = env.get_static_method_id(&hooks, NAMES[i], "()J") else {
                clear_exception(&mut env);
                continue;
            };
            // SAFETY: the JVM's exported function of that name has this signature (jvm.h).
            let _ = ORIGINAL[i].set(unsafe { std::mem::transmute::<*mut c_void, ClockFn>(f) });
            let _ = HOOK_IDS[i].set(id);
            natives.push(NativeMethod {
                name: NAMES[i].into(),
                sig: "()J".into(),
                fn_ptr: wrappers[i],
            });
        }
        if natives.len() < 2 {
            eprintln!(
                "replay: warning: the JVM's clock functions were not found: clock reads through reflection or method handles run live"
            );
        }
        if natives.is_empty() {
            return;
        }
        let bound = env
            .find_class("java/lang/System")
            .and_then(|s| env.register_native_methods(&s, &natives));
        if clear_exception(&mut env) || bound.is_err() {
            eprintln!("replay: warning: cannot bind System's clocks: clock reads through reflection or method handles run live");
        }
    })
}

extern "system" fn nano(env: *mut RawJniEnv, cls: jclass) -> jlong {
    read(0, env, cls)
}

extern "system" fn millis(env: *mut RawJniEnv, cls: jclass) -> jlong {
    read(1, env, cls)
}

/// The JVM's clock.
fn live(i: usize, env: *mut RawJniEnv, cls: jclass) -> jlong {
    match ORIGINAL[i].get() {
        // SAFETY: the JVM's own function, called as its native binding would be.
        Some(f) => unsafe { f(env, cls) },
        None => 0,
    }
}

/// Whether a read by `method` is the real clock. A class whose bytecode still calls the
/// native is one the class hook left as it was on purpose (the hook class itself, the classes
/// whose clock reads stay live, statistics-only and `<clinit>`-only callers): its read is live.
/// The program's reads that come here come from a native method (reflection's
/// `NativeMethodAccessorImpl.invoke0` on JDK 17, a JNI call) or from a method handle's
/// `java.lang.invoke` frame (method handles; reflection on JDK 18+). Remembered per method:
/// the live classes' interpreted calls come here until C1 compiles them.
fn live_caller(a: &crate::Agent, raw: *mut RawJniEnv, method: jmethodID) -> bool {
    static SEEN: Mutex<Option<HashMap<usize, bool>>> = Mutex::new(None);
    let key = method as usize;
    if let Some(v) = SEEN
        .lock()
        .ok()
        .and_then(|m| m.as_ref()?.get(&key).copied())
    {
        return v;
    }
    let v = match (a.jvmti.is_native(method), a.jvmti.method_names(raw, method)) {
        (Ok(native), Ok((owner, _, _))) => !(native || owner.starts_with("Ljava/lang/invoke/")),
        _ => true,
    };
    if let Ok(mut m) = SEEN.lock() {
        m.get_or_insert_with(HashMap::new).insert(key, v);
    }
    v
}

/// A call of the native: a live caller's read is the real clock; any other caller's read goes
/// through the hook class, as a redirected call site's does.
fn read(i: usize, raw: *mut RawJniEnv, cls: jclass) -> jlong {
    guarded("a clock read through reflection", 0, || {
        let (Some(a), Some(id)) = (agent(), HOOK_IDS[i].get()) else {
            return live(i, raw, cls);
        };
        let Some(hooks) = a.hooks.get() else {
            return live(i, raw, cls);
        };
        // SAFETY: the JNIEnv the JVM passed to this native.
        let Ok(mut env) = (unsafe { JNIEnv::from_raw(raw) }) else {
            return live(i, raw, cls);
        };
        // Frame 0 is the native itself, frame 1 its caller.
        let mut frame = [FrameInfo::default()];
        let caller = match a.jvmti.own_stack(1, &mut frame) {
            Ok(1) => frame[0].method,
            _ => return live(i, raw, cls),
        };
        if live_caller(a, raw, caller) {
            return live(i, raw, cls);
        }
        let hc: &JClass = hooks.as_obj().into();
        // SAFETY: the ID of the hook class's `static long NAME()`.
        let v = unsafe {
            env.call_static_method_unchecked(hc, *id, ReturnType::Primitive(Primitive::Long), &[])
        };
        // A pending exception (a replay that stops the program) propagates to the caller.
        v.and_then(|v| v.j()).unwrap_or(0)
    })
}
