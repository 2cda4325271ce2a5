//! Which worker of a `ThreadPoolExecutor` runs which task, and whether a cached pool's
//! `SynchronousQueue` accepted a task or the pool started a new worker for it: both are races
//! (idle workers wait on one queue), and a task replayed on another worker than recorded
//! made its calls in the wrong thread (an executor program diverged in every replay).
//!
//! How: the class hook replaces `ThreadPoolExecutor`'s calls of `workQueue.offer`, `take`
//! and `poll(timeout)` with `ReplayHooks.poolOffer`, `poolTake` and `poolPoll`
//! (`classfile::SITES`: `invokeinterface` becomes `invokestatic` and two `nop`s). A task is
//! known by its number, its place among the offers to its queue (made in the program's order
//! by the submitting threads). Record: whether each offer was accepted is an event of the
//! submitting thread (`seed.java.util.concurrent.ThreadPoolExecutor.offer`, a seed kind served
//! out of the threads' turns: it is recorded after the offer returned, possibly after the
//! worker recorded its take), and each task a worker takes is an event of the worker holding
//! the task's number (`K_POOL_TAKE` of src/lib.rs). Replay: at its event's turn a worker
//! takes the task it took in the recording, from the queue or from those other workers took
//! out for theirs; an offer gets its recorded answer. `ExecutorCompletionService` is done the
//! same way: its futures are numbered at submit, and `take`/`poll` give each caller the
//! future it got. The Java side is `ReplayHooks.poolTaken`.
//!
//! The clock reads of `java.util.concurrent` itself (timed waits) are not events at all
//! (`classfile::LIVE_CLOCKS`).
//!
//! Not covered: `ForkJoinPool` (parallel streams, `CompletableFuture`'s default executor:
//! work stealing), `ScheduledThreadPoolExecutor`'s delay queue (its tasks are not offered
//! through `execute`: taken live), and which of two threads submitting to one pool offers
//! first when nothing else orders them.

use crate::{agent, apply, guarded, java_stack};
use jni::objects::JClass;
use jni::sys::{jint, jlong};
use jni::JNIEnv;
use replay_core::guard::HookGuard;
use replay_core::report::{Divergence, DivergenceKind};
use replay_core::session::Session;
use std::cell::RefCell;

/// Replay: task `n` of a pool's queue did not come within 30 s (`taking` 1: the worker
/// waited to take it; 0: no worker took the offer the recording says was accepted). A
/// divergence naming the task and the worker, under the policy.
#[no_mangle]
pub extern "system" fn Java_java_lang_ReplayHooks_poolStall0<'l>(
    env: JNIEnv<'l>,
    _c: JClass<'l>,
    n: jlong,
    taking: jint,
) {
    guarded("poolStall0", (), || {
        let Some(a) = agent() else { return };
        let Session::Replay(r) = &a.core.session else {
            return;
        };
        let Some(_inside) = HookGuard::enter() else {
            return;
        };
        let (me, name) = r.caller();
        let why = if taking == 2 {
            "this worker took a task where the recording's take was interrupted (by a \
             shutdown) or made no take"
                .to_string()
        } else if taking == 1 {
            format!(
                "this worker took task #{n} of the queue in the recording; it waited 30 s and \
                 the task never came (submitted in another order, or not at all)"
            )
        } else {
            format!(
                "task #{n} was taken by a waiting worker in the recording; for 30 s no \
                 worker took it"
            )
        };
        let mut d = Divergence::at(
            DivergenceKind::Lock {
                lock: "the task queue of a ThreadPoolExecutor".into(),
                why,
            },
            0,
            me,
            name,
            a.core.log.clone(),
        );
        d.threads = r.thread_states();
        let env = RefCell::new(env);
        if let Some(stack) = java_stack(a, &mut env.borrow_mut()) {
            d.actual.context = Some(stack);
        }
        let _ = apply(a.core.diverged(Box::new(d)));
    })
}

/// Replay: whether the calling thread's next recorded event is a pool take: a take that is
/// not (an interrupted one, not recorded) runs live.
#[no_mangle]
pub extern "system" fn Java_java_lang_ReplayHooks_nextIsTake0<'l>(
    _env: JNIEnv<'l>,
    _c: JClass<'l>,
) -> jni::sys::jboolean {
    guarded("nextIsTake0", 0, || {
        let Some(a) = agent() else { return 0 };
        a.core.replay_next_is(a.kinds[crate::K_POOL_TAKE]) as jni::sys::jboolean
    })
}
