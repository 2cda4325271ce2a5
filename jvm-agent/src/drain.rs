//! Recording: each platform thread's clock events go into a buffer in native memory that the
//! core's flusher drains, so they reach the log within the flush interval without the
//! thread's cooperation (a thread waiting in `join()` or a lock runs no hook), and the JVM's
//! shutdown (VMDeath: the program's end, `System.exit`, SIGTERM/SIGINT) writes every thread's
//! events, not only the exiting thread's.
//!
//! The protocol (`ReplayHooks.event` writes, this module reads):
//! - word 0 is the next free index, written only by the owning Java thread (and by native on
//!   its behalf in [`flush_own`]); words `[1, word 0)` are pairs `(seq << 2 | kind, value)`.
//!   Java writes a pair with plain stores, then stores word 0 with release semantics
//!   (`Unsafe.putLongRelease`); a reader loads word 0 with acquire and reads the pairs below.
//! - Consumers take a buffer's `taken` lock, then hold its [`Appender`], record the pairs
//!   `[taken, word 0)` and advance `taken`. The flusher ([`drain_all`], before every round
//!   that writes everything) only tries both locks and skips a buffer that is busy (its
//!   owner is handing it over or recording directly: the next round, half an interval
//!   later, takes it). Only the owner resets the buffer (word 0 and `taken` back to 1), in
//!   [`flush_own`], when Java finds it full and before each event the thread records
//!   directly.
//! - The appender shares the thread's logical thread with the thread itself
//!   (`Recorder::shared_appender`): the thread's direct records (file, socket and output
//!   events) and its drained clock events are one logical thread. Sequence numbers were
//!   taken when the events happened, so they must reach that logical thread in order: every
//!   direct record of a thread is preceded by [`flush_own`] (which hands over the clock
//!   events that took earlier numbers), and nothing else records as that thread meanwhile.
//!
//! Virtual threads are not buffered (they have no ThreadEnd to free a buffer by, and move
//! between carriers): their clock reads are recorded one by one on the carrier, after the
//! carrier's own buffer is handed over.

use replay_core::{Appender, Recorder};
use std::cell::RefCell;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// One platform thread's buffer.
pub(crate) struct ThreadBuf {
    /// Word 0: the next free index (published); then the pairs.
    mem: Box<[AtomicI64]>,
    /// The next index not recorded yet. Held while recording from the buffer.
    taken: Mutex<usize>,
    app: Appender,
}

/// Every buffer of a live thread (and of threads still running at VMDeath: their memory
/// is never freed while they may write to it).
static ALL: Mutex<Vec<Arc<ThreadBuf>>> = Mutex::new(Vec::new());

thread_local! {
    /// The buffer of the Java platform thread on this OS thread.
    static MINE: RefCell<Option<Arc<ThreadBuf>>> = const { RefCell::new(None) };
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl ThreadBuf {
    /// Records pairs `[*taken, upto)` through the appender (held by the caller's `taken`
    /// lock) and advances `taken`. `kinds`: the log's ids of the hook's kind numbers.
    fn consume(
        &self,
        taken: &mut usize,
        held: &mut replay_core::Held<'_>,
        upto: i64,
        kinds: &[u32],
    ) {
        // A word 0 that is not an odd index within the buffer would be a bug on the Java
        // side: take nothing rather than read outside the buffer.
        let upto = usize::try_from(upto).unwrap_or(0).min(self.mem.len());
        if upto <= *taken || (upto - *taken) % 2 != 0 {
            return;
        }
        let mem = &self.mem;
        held.record_batch((*taken..upto).step_by(2).filter_map(|i| {
            let w = mem[i].load(Ordering::Relaxed);
            let v = mem[i + 1].load(Ordering::Relaxed);
            let kind = *kinds.get((w & 3) as usize)?;
            Some(((w as u64) >> 2, kind, v))
        }));
        *taken = upto;
    }
}

/// Makes the calling thread's buffer (`pairs` events) and returns its address for Java.
/// The thread's logical thread becomes shared with the buffer's appender.
pub(crate) fn attach(rec: &Recorder, pairs: usize, kinds: &[u32]) -> i64 {
    // An earlier Java thread on this OS thread whose end was not seen: its events first.
    end_own(kinds);
    let buf = Arc::new(ThreadBuf {
        mem: (0..1 + 2 * pairs).map(|_| AtomicI64::new(0)).collect(),
        taken: Mutex::new(1),
        app: rec.shared_appender(),
    });
    buf.mem[0].store(1, Ordering::Release);
    let addr = buf.mem.as_ptr() as i64;
    lock(&ALL).push(buf.clone());
    MINE.with(|m| *m.borrow_mut() = Some(buf));
    addr
}

/// The owning thread hands its buffer over and starts it again at index 1: when Java found
/// it full, and before the thread records an event directly (its clock events took earlier
/// numbers). The thread's Java code does not run meanwhile (it called this, or it is inside
/// a hooked native), so the reset cannot race with its writes.
pub(crate) fn flush_own(kinds: &[u32]) {
    let Some(buf) = MINE.try_with(|m| m.borrow().clone()).ok().flatten() else {
        return;
    };
    let mut taken = lock(&buf.taken);
    let upto = buf.mem[0].load(Ordering::Acquire);
    if upto > 1 {
        let mut held = buf.app.hold();
        buf.consume(&mut taken, &mut held, upto, kinds);
        drop(held);
        *taken = 1;
        buf.mem[0].store(1, Ordering::Release);
    }
}

/// The owning thread ends (ThreadEnd): its events are recorded and its buffer freed.
pub(crate) fn end_own(kinds: &[u32]) {
    flush_own(kinds);
    let Some(buf) = MINE.try_with(|m| m.borrow_mut().take()).ok().flatten() else {
        return;
    };
    lock(&ALL).retain(|b| !Arc::ptr_eq(b, &buf));
}

/// Records what every thread published so far. `wait`: take each buffer even if busy
/// (VMDeath); else skip busy ones (the flusher must never wait for a thread, which may be
/// waiting for the flusher).
pub(crate) fn drain_all(kinds: &[u32], wait: bool) {
    let all: Vec<Arc<ThreadBuf>> = lock(&ALL).clone();
    for buf in all {
        let mut taken = if wait {
            lock(&buf.taken)
        } else {
            match buf.taken.try_lock() {
                Ok(g) => g,
                Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => continue,
            }
        };
        let upto = buf.mem[0].load(Ordering::Acquire);
        if usize::try_from(upto).map_or(true, |u| u <= *taken) {
            continue;
        }
        let held = if wait {
            Some(buf.app.hold())
        } else {
            buf.app.try_hold()
        };
        if let Some(mut held) = held {
            buf.consume(&mut taken, &mut held, upto, kinds);
        }
    }
}
