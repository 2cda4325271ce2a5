//! Values threads take from the JDK's shared seed generators, whose order races: the seed
//! uniquifier of `new Random()` (a CAS loop on a static `AtomicLong`), `ThreadLocalRandom`'s
//! seeder (`localInit` and `nextSecondarySeed`: a `getAndAdd` on a static `AtomicLong`, taken
//! in the order threads first use it) and `SplittableRandom()`'s `defaultGen`. The clock
//! values mixed in are events already; without these, 4 threads each making `new Random()`
//! got other values in replay (31-74 of 400) and 6 threads using `ThreadLocalRandom` swapped
//! theirs in 5 of 5 replays.
//!
//! How: the class hook points `Random`'s calls of its private `seedUniquifier()` at
//! `ReplayHooks.seedUniquifier()` (a constant-pool target like the clocks, src/classfile.rs
//! `TARGETS`), which calls the original through JNI (`uniquifier0`, JNI ignores access), and
//! replaces each `invokevirtual AtomicLong.getAndAdd(J)J` of `ThreadLocalRandom` and
//! `SplittableRandom` with an `invokestatic` of a hook taking the atomic as argument
//! (`classfile::SITES`). The hooks always perform the live operation (the generator goes on
//! as it would), then record its value as an event of the calling thread, or in replay give
//! the thread its own recorded value back.
//!
//! The events are of the core's seed kinds (`SEED_KINDS`): replay serves them per thread in
//! the thread's order of calls of each kind, out of the threads' turns. The order across
//! threads is the race itself, and where a thread first takes a `ThreadLocalRandom` seed can
//! depend on contention (a failed CAS in a `ConcurrentHashMap` counter or a `LongAdder`
//! initializes it): the thread still gets its recorded seed wherever it asks first.

use crate::{apply, clear_exception, guarded, java_stack, Agent};
use jni::objects::{GlobalRef, JClass, JStaticMethodID};
use jni::signature::{Primitive, ReturnType};
use jni::sys::jlong;
use jni::JNIEnv;
use replay_core::guard::HookGuard;
use replay_core::session::{Session, SEED_KINDS};
use replay_core::{Payload, PayloadRef};
use std::cell::RefCell;
use std::sync::OnceLock;

/// The kinds' ids, interned once.
fn kinds(a: &Agent) -> &'static [u32; SEED_KINDS.len()] {
    static K: OnceLock<[u32; SEED_KINDS.len()]> = OnceLock::new();
    K.get_or_init(|| SEED_KINDS.map(|k| a.core.intern(k)))
}

/// `Random.seedUniquifier()`, the original (private) method, called live.
#[no_mangle]
pub extern "system" fn Java_java_lang_ReplayHooks_uniquifier0<'l>(
    mut env: JNIEnv<'l>,
    _c: JClass<'l>,
) -> jlong {
    static M: OnceLock<Option<(GlobalRef, JStaticMethodID)>> = OnceLock::new();
    let m = M.get_or_init(|| {
        let c = env.find_class("java/util/Random").ok()?;
        let id = env.get_static_method_id(&c, "seedUniquifier", "()J").ok()?;
        Some((env.new_global_ref(c).ok()?, id))
    });
    let Some((class, id)) = m else {
        clear_exception(&mut env);
        // Never reached on a JDK whose Random the class hook rewrote (it has the method):
        // a value that is still unique enough, from the clock.
        return std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as jlong);
    };
    let cls: &JClass = class.as_obj().into();
    // SAFETY: the method ID of `static long seedUniquifier()` of that class.
    let r = unsafe {
        env.call_static_method_unchecked(cls, *id, ReturnType::Primitive(Primitive::Long), &[])
    };
    r.and_then(|v| v.j()).unwrap_or(0)
}

/// Records `live`, the value the calling thread took from seed generator `which` (an index
/// of `SEED_KINDS`), or in replay returns the thread's recorded one.
#[no_mangle]
pub extern "system" fn Java_java_lang_ReplayHooks_seed0<'l>(
    mut env: JNIEnv<'l>,
    _c: JClass<'l>,
    which: jni::sys::jint,
    live: jlong,
) -> jlong {
    guarded("seed0", live, || {
        let Some(a) = crate::agent() else { return live };
        let Some(&kind) = kinds(a).get(which as usize) else {
            return live;
        };
        match &a.core.session {
            Session::Record(_) => {
                // Clock events this thread buffered took earlier numbers: they go first.
                crate::record_direct(a, kind, 0, None, PayloadRef::Int(live));
                live
            }
            Session::Replay(r) => {
                // The stack helper runs Java: what it does is not an event.
                let Some(_inside) = HookGuard::enter() else {
                    return live;
                };
                // ThreadLocalRandom also starts in a thread on contention (a failed CAS in a
                // ConcurrentHashMap counter picks a random probe): a thread that never took a
                // seed in the recording, and does now on contention the recording did not
                // have, gets a live one. It only spreads the counter's cells; a thread that
                // took a seed in the recording gets it back wherever it asks first.
                if which == 1 && !r.has_unordered(kind) {
                    return live;
                }
                let env = RefCell::new(&mut env);
                let stack = || java_stack(a, &mut env.borrow_mut());
                match apply(a.core.replay_seed(kind, &stack)).map(|e| e.payload) {
                    Some(Payload::Int { value }) => value,
                    Some(other) => {
                        eprintln!(
                            "replay: a {} event holds {} instead of a seed; the live value is used",
                            SEED_KINDS[which as usize],
                            other.summary()
                        );
                        live
                    }
                    None => live,
                }
            }
        }
    })
}

/// JDK 21+: the original `Thread.sleepNanos(long)` (private), for the sleep hook's live sleep;
/// an `InterruptedException` it throws stays pending for the hook's caller.
#[no_mangle]
pub extern "system" fn Java_java_lang_ReplayHooks_sleepNanos0<'l>(
    mut env: JNIEnv<'l>,
    _c: JClass<'l>,
    nanos: jlong,
) {
    static M: OnceLock<Option<(GlobalRef, JStaticMethodID)>> = OnceLock::new();
    let m = M.get_or_init(|| {
        let c = env.find_class("java/lang/Thread").ok()?;
        let id = env.get_static_method_id(&c, "sleepNanos", "(J)V").ok()?;
        Some((env.new_global_ref(c).ok()?, id))
    });
    let Some((class, id)) = m else {
        clear_exception(&mut env);
        return;
    };
    let cls: &JClass = class.as_obj().into();
    // SAFETY: the method ID of `static void sleepNanos(long)` of that class.
    let _ = unsafe {
        env.call_static_method_unchecked(
            cls,
            *id,
            ReturnType::Primitive(Primitive::Void),
            &[jni::objects::JValue::Long(nanos).as_jni()],
        )
    };
}
