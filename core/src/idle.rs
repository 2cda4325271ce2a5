//! Compression on idle CPU time: the log writer hands large frames to a helper thread that
//! runs at the `SCHED_IDLE` policy, so zstd only runs on a core the program (and anything
//! else on the machine) leaves free, instead of competing with the program's own threads.
//!
//! Why: on a loaded machine the recorder's compression was the main cost of recording bulk
//! data. With a client and a server keeping both cores of a 2-core machine busy (fetch of
//! 64 KB JSON bodies), zstd at normal priority made each request 1.2x slower; at idle
//! priority the same CPU time fits in the gaps and the program ran at live speed.
//!
//! Why it cannot starve the log: an idle thread may get no CPU at all while the machine is
//! busy, and an unprivileged thread cannot raise its priority again. So the writer (at normal
//! priority) waits only a bounded time for each frame, then compresses it itself and marks
//! the job abandoned; no lock is shared with the helper (the result goes through a `OnceLock`
//! and the wake-up through `unpark`), so a preempted helper never holds up the writer.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, OnceLock};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

/// Frames smaller than this are compressed in place: a hand-over costs a thread wake-up
/// (tens of microseconds of latency), more than zstd takes for a few kilobytes.
pub(crate) const HELP_FROM: usize = 64 << 10;

/// How long the writer waits for a frame: 2.5x what level 1 takes on text (about 2 ns a
/// byte here) plus `WAIT` of wake-up slack, so a helper that is merely slow finishes and a
/// starved one is not waited for long. The wait itself costs no CPU. (Waiting 4x and 20x
/// longer made no measurable difference to the program.)
const WAIT: Duration = Duration::from_millis(1);
const WAIT_NS_PER_BYTE: u64 = 5;

const STARTING: u8 = 0;
const READY: u8 = 1;
const FAILED: u8 = 2;

struct Job {
    input: Vec<u8>,
    /// The compressed frame, or None when zstd failed (the writer then tries itself, and
    /// reports the error if it fails again).
    out: OnceLock<Option<Vec<u8>>>,
    abandoned: AtomicBool,
    waiter: Thread,
}

/// How many frames went which way (tests, and `replay info`-style reporting).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct IdleStats {
    /// Compressed by the idle helper.
    pub helped: u64,
    /// Waited for, then compressed by the writer because the helper got no CPU in time.
    pub taken_over: u64,
}

pub(crate) struct IdleCompressor {
    level: i32,
    tx: Option<Sender<Arc<Job>>>,
    state: Arc<AtomicU8>,
    /// The last job's input buffer, reused: frames are up to megabytes, and a fresh
    /// allocation each time is paid again in page faults on the writer's thread.
    spare: Vec<u8>,
    pub(crate) stats: IdleStats,
    /// `WAIT` (tests wait longer, to not depend on the machine's load).
    wait: Duration,
    /// Tests hold the helper here to play a starved one.
    #[cfg(test)]
    pub(crate) hold: Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>,
}

impl IdleCompressor {
    pub(crate) fn new(level: i32) -> Self {
        IdleCompressor {
            level,
            tx: None,
            state: Arc::new(AtomicU8::new(STARTING)),
            spare: Vec::new(),
            stats: IdleStats::default(),
            wait: WAIT,
            #[cfg(test)]
            hold: Arc::default(),
        }
    }

    /// Compresses `raw` on the helper into `dst` (at least zstd's bound for `raw`) and
    /// returns the compressed length; None when the caller must compress it itself: the
    /// helper is not running (not yet started, or it could not get the idle policy) or did
    /// not finish within the wait bound.
    pub(crate) fn compress_into(&mut self, raw: &[u8], dst: &mut [u8]) -> Option<usize> {
        let tx = self.tx.get_or_insert_with(|| {
            let (tx, rx) = channel();
            let state = self.state.clone();
            let level = self.level;
            #[cfg(test)]
            let hold = self.hold.clone();
            let spawned = thread::Builder::new()
                .name("replay-zstd".into())
                .spawn(move || {
                    helper_main(
                        rx,
                        &state,
                        level,
                        #[cfg(test)]
                        &hold,
                    )
                });
            if spawned.is_err() {
                self.state.store(FAILED, Ordering::Relaxed);
            }
            tx
        });
        // Until the helper runs at idle priority (the first large frame, usually), and for
        // good if it cannot, frames are compressed in place as without a helper.
        if self.state.load(Ordering::Acquire) != READY {
            return None;
        }
        let mut input = std::mem::take(&mut self.spare);
        input.clear();
        input.extend_from_slice(raw);
        let job = Arc::new(Job {
            input,
            out: OnceLock::new(),
            abandoned: AtomicBool::new(false),
            waiter: thread::current(),
        });
        if tx.send(job.clone()).is_err() {
            self.state.store(FAILED, Ordering::Relaxed);
            return None;
        }
        let limit = self.wait + Duration::from_nanos(WAIT_NS_PER_BYTE * raw.len() as u64);
        let start = Instant::now();
        let n = loop {
            if let Some(out) = job.out.get() {
                break out.as_ref().map(|o| {
                    dst[..o.len()].copy_from_slice(o);
                    o.len()
                });
            }
            let waited = start.elapsed();
            if waited >= limit {
                job.abandoned.store(true, Ordering::Relaxed);
                self.stats.taken_over += 1;
                return None;
            }
            // Woken by the helper's unpark; a stale wake-up from an abandoned job only
            // makes one more turn of the loop.
            thread::park_timeout(limit - waited);
        };
        if n.is_some() {
            self.stats.helped += 1;
        }
        // The helper drops its reference right after unparking; if it has not yet, the
        // buffer is simply not reused this time.
        if let Ok(job) = Arc::try_unwrap(job) {
            self.spare = job.input;
        }
        n
    }
}

fn helper_main(
    rx: Receiver<Arc<Job>>,
    state: &AtomicU8,
    level: i32,
    #[cfg(test)] hold: &(std::sync::Mutex<bool>, std::sync::Condvar),
) {
    // SCHED_IDLE: runs only when a core has nothing else to run. Where it is refused (some
    // sandboxes), nice 19 is next best; if neither can be had the helper would only compete
    // like the writer itself, so it stops and the writer compresses everything.
    let idle = libc::sched_param { sched_priority: 0 };
    // SAFETY: plain syscalls on the calling thread (pid 0 / its own tid).
    let ok = unsafe {
        libc::sched_setscheduler(0, libc::SCHED_IDLE, &idle) == 0
            || libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 19) == 0
    };
    let Ok(mut zstd) = zstd::bulk::Compressor::new(level) else {
        state.store(FAILED, Ordering::Release);
        return;
    };
    state.store(if ok { READY } else { FAILED }, Ordering::Release);
    if !ok {
        return;
    }
    // Ends when the writer is dropped (its sender with it). Not joined: a starved helper
    // would hold up the end of the recording; it finishes its one job and exits.
    for job in rx {
        #[cfg(test)]
        {
            let mut held = hold.0.lock().unwrap();
            while *held {
                held = hold.1.wait(held).unwrap();
            }
        }
        if job.abandoned.load(Ordering::Relaxed) {
            continue;
        }
        let mut out = Vec::with_capacity(zstd::zstd_safe::compress_bound(job.input.len()));
        let r = zstd
            .compress_to_buffer(&job.input, &mut out)
            .ok()
            .map(|_| out);
        let _ = job.out.set(r);
        job.waiter.unpark();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(n: usize) -> Vec<u8> {
        (0..n)
            .map(|i| format!("{{\"id\":{i},\"v\":{}}},", i * 7919 % 1000))
            .collect::<String>()
            .into_bytes()
    }

    /// Runs `raw` through the helper until it takes the job (the first frames go in place
    /// while it starts); the result is what zstd would make of it.
    fn helped(ic: &mut IdleCompressor, raw: &[u8]) -> Vec<u8> {
        let mut dst = vec![0; zstd::zstd_safe::compress_bound(raw.len())];
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(n) = ic.compress_into(raw, &mut dst) {
                return zstd::bulk::decompress(&dst[..n], raw.len()).unwrap();
            }
            assert!(Instant::now() < deadline, "the helper never took a job");
            thread::sleep(Duration::from_millis(5));
        }
    }

    /// The scheduling policy of every live thread of this process named `name`.
    fn policies(name: &str) -> Vec<u64> {
        let mut out = Vec::new();
        for t in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
            let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
            if comm.trim_end() != name {
                continue;
            }
            // Field 41 of stat is the policy; fields are counted after the ")" that ends
            // the command name (which may hold spaces).
            let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
            let rest = &stat[stat.rfind(')').unwrap() + 2..];
            out.push(rest.split(' ').nth(41 - 3).unwrap().parse().unwrap());
        }
        out
    }

    #[test]
    fn large_frames_are_compressed_by_an_idle_thread() {
        let mut ic = IdleCompressor::new(1);
        ic.wait = Duration::from_secs(60);
        let raw = text(20_000);
        assert_eq!(helped(&mut ic, &raw), raw);
        assert_eq!(ic.stats.helped, 1);
        assert_eq!(ic.stats.taken_over, 0);
        assert!(
            policies("replay-zstd").contains(&(libc::SCHED_IDLE as u64)),
            "no replay-zstd thread at SCHED_IDLE: {:?}",
            policies("replay-zstd")
        );
        // The input buffer is reused, and another frame comes out right too.
        let raw2 = text(30_000);
        assert_eq!(helped(&mut ic, &raw2), raw2);
        assert_eq!(ic.stats.helped, 2);
    }

    /// A helper that gets no CPU (held here) is waited for a bounded time, then the writer
    /// is told to compress the frame itself; once the helper runs again it skips the
    /// abandoned job and serves the next one.
    #[test]
    fn a_starved_helper_is_taken_over() {
        let mut ic = IdleCompressor::new(1);
        ic.wait = Duration::from_secs(60);
        let raw = text(20_000);
        assert_eq!(helped(&mut ic, &raw), raw);
        *ic.hold.0.lock().unwrap() = true;
        ic.wait = Duration::from_millis(20);
        let mut dst = vec![0; zstd::zstd_safe::compress_bound(raw.len())];
        let t = Instant::now();
        assert_eq!(ic.compress_into(&raw, &mut dst), None);
        assert!(t.elapsed() >= Duration::from_millis(20));
        assert_eq!(ic.stats.taken_over, 1);
        *ic.hold.0.lock().unwrap() = false;
        ic.hold.1.notify_all();
        ic.wait = Duration::from_secs(60);
        let raw2 = text(25_000);
        assert_eq!(helped(&mut ic, &raw2), raw2);
        assert_eq!(
            ic.stats,
            IdleStats {
                helped: 2,
                taken_over: 1
            }
        );
    }
}
