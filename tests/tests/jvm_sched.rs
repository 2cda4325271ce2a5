//! What threads take from shared JDK state in an order that races, and timed sleeps (issue 23),
//! on real processes of every JDK present: seeds of `new Random()`, `ThreadLocalRandom` and
//! `SplittableRandom()` taken by threads at the same moment come back per thread; sleeps
//! complete at their recorded turn without waiting; threads racing to a class initializer
//! that reads the clock replay or report, and never hang; executor tasks run on their
//! recorded workers and complete in their recorded order.
//!
//! Needs `cargo build --release -p replay-jvm` first.

use replay_tests::jvm::{java, jdks, log_kinds, name, ok, Jdk};
use std::path::Path;
use std::time::{Duration, Instant};

fn record(jdk: &Jdk, dir: &Path, main: &str, args: &[&str]) -> (std::path::PathBuf, String) {
    let log = dir.join(format!("{main}-{}.replay", args.join("-")));
    let o = java(
        jdk,
        dir,
        &[],
        Some(&format!("record,log={}", log.display())),
        main,
        args,
    );
    let out = ok(&o, &format!("{}: record {main} {args:?}", name(jdk)));
    assert!(o.stderr.trim().is_empty(), "{}: {}", name(jdk), o.stderr);
    (log, out)
}

fn replay(
    jdk: &Jdk,
    dir: &Path,
    log: &Path,
    opts: &str,
    main: &str,
    args: &[&str],
) -> replay_tests::Finished {
    java(
        jdk,
        dir,
        &[],
        Some(&format!("replay,log={}{opts}", log.display())),
        main,
        args,
    )
}

/// Replays `log` twice: each time the recorded output, exit 0 and nothing on stderr.
fn replays_twice(jdk: &Jdk, dir: &Path, log: &Path, main: &str, args: &[&str], recorded: &str) {
    let n = name(jdk);
    for _ in 0..2 {
        let o = replay(jdk, dir, log, "", main, args);
        assert_eq!(
            ok(&o, &format!("{n}: replay")),
            recorded,
            "{n}: {}",
            o.stderr
        );
        assert!(o.stderr.trim().is_empty(), "{n}: {}", o.stderr);
    }
}

#[test]
fn seeds_threads_take_from_shared_generators_come_back_per_thread() {
    for jdk in jdks() {
        let n = name(jdk);
        let d = tempfile::tempdir().unwrap();
        for (what, threads, kind) in [
            ("random", "4", "seed.java.util.Random"),
            ("tlr", "6", "seed.java.util.concurrent.ThreadLocalRandom"),
            ("split", "4", "seed.java.util.SplittableRandom"),
        ] {
            let args = [what, threads];
            let (log, recorded) = record(jdk, d.path(), "Seeds", &args);
            let kinds = log_kinds(&log);
            assert!(
                kinds.get(kind).copied().unwrap_or(0) >= threads.parse::<u64>().unwrap(),
                "{n} {what}: {kinds:?}"
            );
            for _ in 0..2 {
                let o = replay(jdk, d.path(), &log, "", "Seeds", &args);
                assert_eq!(
                    ok(&o, &format!("{n}: replay {what}")),
                    recorded,
                    "{n} {what}"
                );
                assert!(o.stderr.trim().is_empty(), "{n} {what}: {}", o.stderr);
            }
            // The values are the recording's, not ones any run would get.
            let live = java(jdk, d.path(), &[], None, "Seeds", &args);
            assert_ne!(ok(&live, "live"), recorded, "{n} {what}");
        }
    }
}

/// `Sleeper N MS` sleeps N times MS on main (and MS more), N times MS/2 on another thread
/// (both print clock-derived values), and interrupts a 10-minute sleep.
#[test]
fn sleeps_complete_at_their_recorded_turn_without_waiting() {
    let (n_sleeps, ms) = (8, 1000u64);
    for jdk in jdks() {
        let n = name(jdk);
        let d = tempfile::tempdir().unwrap();
        let args = [&n_sleeps.to_string()[..], &ms.to_string()[..]];
        let started = Instant::now();
        let (log, recorded) = record(jdk, d.path(), "Sleeper", &args);
        let recording = started.elapsed();
        // main slept n_sleeps * ms and then ms more; the other thread slept in parallel.
        assert!(
            recording >= Duration::from_millis(ms * (n_sleeps + 1)),
            "{n}: {recording:?}"
        );
        let kinds = log_kinds(&log);
        // main's 9 sleeps, the other thread's 8, and the interrupted one.
        assert_eq!(
            kinds.get("java.lang.Thread.sleep"),
            Some(&(2 * n_sleeps + 2)),
            "{n}: {kinds:?}"
        );
        assert!(recorded.contains("interrupted at"), "{n}: {recorded}");
        let started = Instant::now();
        let o = replay(jdk, d.path(), &log, "", "Sleeper", &args);
        let replaying = started.elapsed();
        assert_eq!(ok(&o, &format!("{n}: replay")), recorded, "{n}");
        assert!(o.stderr.trim().is_empty(), "{n}: {}", o.stderr);
        // 9 s of sleeping on main: a replay that slept would take that long.
        assert!(
            replaying < Duration::from_secs(5),
            "{n}: replay took {replaying:?}"
        );
    }
}

/// `Ticker FILE MS`: threads count their timed `Object.wait`s (on a lock, and `this.wait`)
/// while main sleeps, and write the counts to a file only. Each timed wait's return is an
/// event (the last of one woken by main's notifyAll, of the other by main's interrupt): the
/// replayed counts are the recorded ones (before, the sleep returned at once in replay and
/// the counts were 0 and 1, exit 0, silently), and replay takes no real time.
#[test]
fn timed_waits_return_at_their_recorded_turn() {
    let ms = 600u64;
    for jdk in jdks() {
        let n = name(jdk);
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("ticks.txt");
        let args = ["ticks.txt", &ms.to_string()[..]];
        for _ in 0..2 {
            let (log, recorded) = record(jdk, d.path(), "Ticker", &args);
            let counts = std::fs::read_to_string(&file).unwrap();
            let kinds = log_kinds(&log);
            let waits = kinds.get("java.lang.Object.wait").copied().unwrap_or(0);
            // About 60 waits of 10 ms and 60 of 15 ms: at least a few dozen on a slow machine.
            assert!(waits >= 20, "{n}: {kinds:?}");
            std::fs::remove_file(&file).unwrap();
            let started = Instant::now();
            let o = replay(jdk, d.path(), &log, "", "Ticker", &args);
            let replaying = started.elapsed();
            assert_eq!(ok(&o, &format!("{n}: replay")), recorded, "{n}");
            assert!(o.stderr.trim().is_empty(), "{n}: {}", o.stderr);
            assert_eq!(std::fs::read_to_string(&file).unwrap(), counts, "{n}");
            assert!(
                replaying < Duration::from_millis(ms * 3 / 2),
                "{n}: replay took {replaying:?}"
            );
        }
    }
}

/// `Stopper 300`: a thread's timed waits end with one woken by main's notifyAll after main
/// notified another monitor and computed past the wait's timeout. Replay gives the same
/// rounds (before, the replayed wait returned on the unrelated notify, or at its timeout
/// while main still computed, and the thread ran a round more: a divergence every replay).
#[test]
fn a_wait_woken_by_a_notify_waits_for_that_monitors_notify() {
    for jdk in jdks() {
        let n = name(jdk);
        let d = tempfile::tempdir().unwrap();
        let args = ["300"];
        let (log, recorded) = record(jdk, d.path(), "Stopper", &args);
        assert!(recorded.ends_with("done\n"), "{n}: {recorded}");
        replays_twice(jdk, d.path(), &log, "Stopper", &args, &recorded);
    }
}

/// `PoolInit`: main's first use of the common ForkJoinPool after a pool worker went idle
/// replays (before: a divergence every replay, the pool's initializer reading
/// availableProcessors in another thread than recorded).
#[test]
fn the_common_pools_initializer_replays_whoever_needs_it_first() {
    for jdk in jdks() {
        let n = name(jdk);
        let d = tempfile::tempdir().unwrap();
        let (log, recorded) = record(jdk, d.path(), "PoolInit", &[]);
        assert!(recorded.starts_with("supplied 42 "), "{n}: {recorded}");
        replays_twice(jdk, d.path(), &log, "PoolInit", &[], &recorded);
    }
}

/// Pool threads whose first clock read is `Instant.now` (JDK 17 and 25 read the clock in
/// `java.time.Clock`'s initializer), and threads racing to a class of the program whose
/// initializer reads the clock: replay reproduces the run or reports a divergence naming
/// the threads; it never hangs and never exits 0 with other output. The JDK's own clock
/// class no longer stalls replay (it is initialized by main before the program runs).
#[test]
fn class_initializer_races_replay_or_report_never_hang() {
    for jdk in jdks() {
        let n = name(jdk);
        let d = tempfile::tempdir().unwrap();
        for main in ["PoolClock", "ClinitRace"] {
            for _ in 0..3 {
                let (log, recorded) = record(jdk, d.path(), main, &[]);
                let o = replay(jdk, d.path(), &log, ",timeout=3s", main, &[]);
                match o.code() {
                    0 => {
                        assert_eq!(o.stdout_text(), recorded, "{n} {main}");
                    }
                    86 => {
                        assert!(o.stderr.contains("DIVERGENCE"), "{n} {main}: {}", o.stderr);
                        if main == "PoolClock" {
                            assert!(
                                !o.stderr.contains("no progress"),
                                "{n} {main}: {}",
                                o.stderr
                            );
                        }
                    }
                    c => panic!("{n} {main}: exit {c}: {}", o.stderr),
                }
            }
        }
    }
}

/// `Pools`: a fixed pool, a cached pool (SynchronousQueue), invokeAll and an
/// ExecutorCompletionService; every task sleeps a Math.random() time. Which worker runs which
/// task and the order tasks complete come back in every replay (before, a task landed on
/// another worker in replay and diverged every time).
#[test]
fn executor_tasks_run_on_their_recorded_workers_in_their_recorded_order() {
    for jdk in jdks() {
        let n = name(jdk);
        let d = tempfile::tempdir().unwrap();
        for round in 0..2 {
            let (log, recorded) = record(jdk, d.path(), "Pools", &[]);
            assert!(recorded.ends_with("done true\n"), "{n}: {recorded}");
            let kinds = log_kinds(&log);
            assert!(
                kinds
                    .get("java.util.concurrent.ThreadPoolExecutor.take")
                    .copied()
                    .unwrap_or(0)
                    >= 10,
                "{n}: {kinds:?}"
            );
            for _ in 0..2 {
                let o = replay(jdk, d.path(), &log, "", "Pools", &[]);
                assert_eq!(ok(&o, &format!("{n}: replay {round}")), recorded, "{n}");
                assert!(o.stderr.trim().is_empty(), "{n}: {}", o.stderr);
            }
            let live = java(jdk, d.path(), &[], None, "Pools", &[]);
            assert_ne!(ok(&live, "live"), recorded, "{n}");
        }
    }
}

/// `JoinRace`: the recording's join found its thread ended (the program slept first); the
/// replay's compressed sleep reaches the join while the thread still runs. `Thread.join`'s
/// own clock reads only measure that wait: they stay live, and the replay ends the same.
#[test]
fn a_timed_join_that_waits_only_in_replay_replays() {
    for jdk in jdks() {
        let n = name(jdk);
        let d = tempfile::tempdir().unwrap();
        let (log, recorded) = record(jdk, d.path(), "JoinRace", &[]);
        assert!(recorded.starts_with("joined true at "), "{n}: {recorded}");
        let o = replay(jdk, d.path(), &log, "", "JoinRace", &[]);
        assert_eq!(ok(&o, &format!("{n}: replay")), recorded, "{n}");
        assert!(o.stderr.trim().is_empty(), "{n}: {}", o.stderr);
    }
}
