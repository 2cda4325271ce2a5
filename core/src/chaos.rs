//! Chaos mode (`chaos=SEED`, record only): perturbs the schedule at the points the core and
//! the front ends see, so that a rare interleaving shows up in a few dozen recorded runs
//! instead of one in a thousand. The recording of a chaos run replays like any other: replay
//! follows the recorded order, chaos or not.
//!
//! In the spirit of rr's chaos mode, which gives threads random priorities for random
//! stretches of time: each thread is, for a random stretch of its scheduling points, either
//! "low" (it often sleeps a little, so the other threads run ahead of it, or it is pre-empted
//! inside a window where it would not be) or "high" (it rarely does). Sleeps are short and
//! log-uniform (20 µs to 2 ms), with an occasional yield; a thread sleeps at most as long as
//! it ran, so chaos at most doubles a thread's time.
//!
//! The seed picks every decision of a thread from a generator seeded by the seed and the
//! thread's order of first arrival here: the same seed gives the same decisions, not the same
//! schedule (the OS still schedules), and another seed gives other decisions.
//!
//! Points: [`crate::session::Core::record`] (every event a front end records one at a time,
//! before it is sequenced) and whatever a front end calls [`Chaos::point`] at itself (the C
//! header: before each macro call runs, before a mutex lock and after an unlock).

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Session ids: a thread's state belongs to the session it was made for.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

pub struct Chaos {
    seed: u64,
    id: u64,
    /// Threads seen so far, in order of their first point: a thread's generator stream.
    threads: AtomicU64,
}

#[derive(Clone, Copy)]
struct ThreadState {
    id: u64,
    rng: u64,
    /// Points left in the current stretch, and whether the thread is low in it.
    stretch: u32,
    low: bool,
    first: Option<Instant>,
    slept: Duration,
}

thread_local! {
    static STATE: Cell<ThreadState> = const {
        Cell::new(ThreadState { id: 0, rng: 0, stretch: 0, low: false, first: None, slept: Duration::ZERO })
    };
}

/// splitmix64: one multiply-xorshift step, enough for scheduling decisions.
fn next(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// What a point does.
#[derive(Debug, PartialEq, Eq)]
enum Act {
    Nothing,
    Yield,
    Sleep(Duration),
}

impl Chaos {
    pub fn new(seed: u64) -> Chaos {
        Chaos {
            seed,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            threads: AtomicU64::new(0),
        }
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// A scheduling point of the calling thread: maybe yields or sleeps (see the module).
    pub fn point(&self) {
        let act = STATE
            .try_with(|s| {
                let mut st = s.get();
                if st.id != self.id {
                    let n = self.threads.fetch_add(1, Ordering::Relaxed);
                    let mut rng = self.seed ^ n.wrapping_mul(0xD6E8_FEB8_6659_FD93);
                    next(&mut rng);
                    st = ThreadState {
                        id: self.id,
                        rng,
                        stretch: 0,
                        low: false,
                        first: Some(Instant::now()),
                        slept: Duration::ZERO,
                    };
                }
                let act = decide(&mut st);
                if let Act::Sleep(d) = act {
                    // The budget: never more sleep than run time, so a long program stays
                    // at most twice as slow.
                    let ran = st.first.map_or(Duration::ZERO, |f| f.elapsed());
                    let worked = ran.saturating_sub(st.slept);
                    if st.slept + d > worked + Duration::from_millis(3) {
                        s.set(st);
                        return Act::Yield;
                    }
                    st.slept += d;
                }
                s.set(st);
                act
            })
            .unwrap_or(Act::Nothing);
        match act {
            Act::Nothing => {}
            Act::Yield => std::thread::yield_now(),
            Act::Sleep(d) => std::thread::sleep(d),
        }
    }
}

fn decide(st: &mut ThreadState) -> Act {
    if st.stretch == 0 {
        let r = next(&mut st.rng);
        st.low = r & 1 == 0;
        // 4 to 131 points.
        st.stretch = 4 + ((r >> 1) % 128) as u32;
    }
    st.stretch -= 1;
    let r = next(&mut st.rng);
    // Out of 256: low threads sleep 1 in 6, high ones 1 in 64; both yield now and then.
    let roll = (r & 0xff) as u32;
    let sleep = if st.low { roll < 42 } else { roll < 4 };
    if sleep {
        // log-uniform in [20 µs, 2.56 ms): 20 µs × 2^(0..7) × (1..2)
        let shift = ((r >> 8) % 7) as u32;
        let frac = 1.0 + ((r >> 16) & 0xffff) as f64 / 65536.0;
        let us = 20.0 * f64::from(1u32 << shift) * frac;
        return Act::Sleep(Duration::from_micros(us as u64));
    }
    if roll < 96 {
        return Act::Yield;
    }
    Act::Nothing
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decisions(seed: u64, n: usize) -> Vec<Act> {
        let mut st = ThreadState {
            id: 1,
            rng: seed,
            stretch: 0,
            low: false,
            first: None,
            slept: Duration::ZERO,
        };
        next(&mut st.rng);
        (0..n).map(|_| decide(&mut st)).collect()
    }

    #[test]
    fn the_seed_picks_the_decisions() {
        assert_eq!(decisions(7, 500), decisions(7, 500));
        assert_ne!(decisions(7, 500), decisions(8, 500));
        let d = decisions(42, 10_000);
        let sleeps: Vec<Duration> = d
            .iter()
            .filter_map(|a| match a {
                Act::Sleep(d) => Some(*d),
                _ => None,
            })
            .collect();
        // Some of each, sleeps short.
        assert!(
            sleeps.len() > 100 && sleeps.len() < 3000,
            "{}",
            sleeps.len()
        );
        assert!(d.contains(&Act::Nothing));
        assert!(sleeps
            .iter()
            .all(|s| *s >= Duration::from_micros(20) && *s < Duration::from_micros(2600)));
    }

    #[test]
    fn sleep_is_bounded_by_run_time() {
        let c = Chaos::new(3);
        let t = Instant::now();
        for _ in 0..2000 {
            c.point();
        }
        let took = t.elapsed();
        let slept = STATE.with(|s| s.get().slept);
        // Sleep never exceeds the time the thread ran otherwise, plus a few ms of slack.
        assert!(
            slept <= took.saturating_sub(slept) + Duration::from_millis(3),
            "slept {slept:?} in {took:?}"
        );
    }
}
