//! The schedule comes back (C): lock acquisitions replay in their recorded order, a race
//! caught under chaos fails the same way on every replay, sleeps and timed waits do not
//! wait in replay, and a program changed to lock otherwise diverges instead of hanging.

use replay_core::LogReader;
use replay_tests::{compile_c, release_artifact, replay_command, run, run_with_timeout};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// Records `exe` with `env` until `want(exit status)`, at most `tries` times; the attempt
/// that matched.
fn record_until(
    exe: &Path,
    log: &Path,
    tries: u32,
    chaos: bool,
    want: impl Fn(i32) -> bool,
) -> Option<(u32, String)> {
    for i in 1..=tries {
        let mut cmd = replay_command(exe, "record", log);
        if chaos {
            cmd.env("REPLAY_CHAOS", (1000 + i).to_string());
        }
        let out = run(&mut cmd);
        if want(out.code()) {
            assert!(out.stderr.is_empty(), "{}", out.stderr);
            return Some((i, out.stdout_text()));
        }
    }
    None
}

#[test]
fn a_race_caught_under_chaos_replays_failing_ten_times() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile_c("bank", "bank", dir.path(), &[]);
    let log = dir.path().join("bank.replay");
    let (tries, recorded) =
        record_until(&exe, &log, 200, true, |c| c == 1).expect("no overdraft in 200 chaos runs");
    assert!(
        recorded.contains("FAILED: the account is overdrawn"),
        "{recorded}"
    );
    // The seed is in the log's header.
    let header = LogReader::open(&log).unwrap().header().clone();
    assert!(
        header
            .options
            .contains(&("chaos".to_string(), (1000 + tries).to_string())),
        "{:?}",
        header.options
    );
    for k in 0..10 {
        let out = run(&mut replay_command(&exe, "replay", &log));
        assert_eq!(out.code(), 1, "replay {k}: {}", out.stderr);
        assert_eq!(out.stdout_text(), recorded, "replay {k}");
        assert!(out.stderr.is_empty(), "replay {k}: {}", out.stderr);
    }
}

#[test]
fn a_passing_recording_replays_passing_ten_times() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile_c("bank", "bank", dir.path(), &[]);
    let log = dir.path().join("bank.replay");
    let (_, recorded) =
        record_until(&exe, &log, 50, false, |c| c == 0).expect("no passing run in 50");
    assert!(recorded.contains("OK: balance 10"), "{recorded}");
    for k in 0..10 {
        let out = run(&mut replay_command(&exe, "replay", &log));
        assert_eq!(out.code(), 0, "replay {k}: {}", out.stderr);
        assert_eq!(out.stdout_text(), recorded, "replay {k}");
    }
}

#[test]
fn a_program_that_locks_in_another_order_diverges_instead_of_hanging() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile_c("bank", "bank", dir.path(), &[]);
    let log = dir.path().join("bank.replay");
    let rec = run(&mut replay_command(&exe, "record", &log));
    assert!(matches!(rec.code(), 0 | 1), "{}", rec.stderr);
    // Replayed with the locks taken the other way round: the same call site, another mutex
    // first. A long timeout, so that a hang would show as one (the run is bounded anyway).
    let out = run_with_timeout(
        replay_command(&exe, "replay", &log)
            .env("REPLAY_TIMEOUT", "60s")
            .arg("reversed"),
        Duration::from_secs(50),
    );
    assert_eq!(out.code(), 86, "{}", out.stderr);
    assert!(
        out.stderr.contains("DIVERGENCE")
            && out.stderr.contains("lock #0 \"account\"")
            // Whichever teller reached the lock first in the recording is named.
            && (out.stderr.contains("\"main/1\"") || out.stderr.contains("\"main/2\"")),
        "{}",
        out.stderr
    );
}

#[test]
fn sleeps_and_timed_waits_do_not_wait_in_replay() {
    const NAPS: u32 = 6;
    let dir = tempfile::tempdir().unwrap();
    let exe = compile_c("sleeper", "sleeper", dir.path(), &[]);
    let log = dir.path().join("sleeper.replay");
    let t = Instant::now();
    let rec = run(replay_command(&exe, "record", &log).arg(NAPS.to_string()));
    let recorded_for = t.elapsed();
    assert_eq!(rec.code(), 0, "{}", rec.stderr);
    let out = rec.stdout_text();
    assert!(
        out.contains(&format!("slept {NAPS} times, {NAPS} s in all")),
        "{out}"
    );
    assert!(recorded_for >= Duration::from_secs(NAPS.into()));
    let t = Instant::now();
    let rep = run(replay_command(&exe, "replay", &log).arg(NAPS.to_string()));
    let replayed_for = t.elapsed();
    assert_eq!(rep.code(), 0, "{}", rep.stderr);
    assert_eq!(rep.stdout_text(), out);
    // Not a timing measurement: a replay that slept would take NAPS seconds or more.
    assert!(
        replayed_for < recorded_for / 3,
        "replay took {replayed_for:?}, the recording {recorded_for:?}"
    );
}

#[test]
fn hunt_with_chaos_keeps_a_failing_run_that_replays_failing() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile_c("bank", "bank", dir.path(), &[]);
    let recs = dir.path().join("recordings");
    let replay = |args: &[&str]| {
        let mut c = Command::new(release_artifact("replay"));
        c.env("REPLAY_DIR", &recs).args(args).arg("--").arg(&exe);
        run(&mut c)
    };
    let hunt = replay(&["hunt", "--chaos", "7", "-n", "200"]);
    assert_eq!(hunt.code(), 0, "{}", hunt.stderr);
    assert!(
        hunt.stderr.contains("failed on run") && hunt.stderr.contains(", chaos seed "),
        "{}",
        hunt.stderr
    );
    let recorded = hunt.stdout_text();
    let failing = recorded
        .rsplit_once("teller 0")
        .map(|(_, tail)| format!("teller 0{tail}"))
        .unwrap();
    assert!(failing.contains("FAILED"), "{recorded}");
    for k in 0..3 {
        let out = replay(&["replay"]);
        assert_eq!(out.code(), 1, "replay {k}: {}", out.stderr);
        assert_eq!(out.stdout_text(), failing, "replay {k}");
    }
}

#[test]
fn a_holder_waiting_for_a_later_turn_is_reported_not_waited_for() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile_c("lockwait", "lockwait", dir.path(), &[]);
    let log = dir.path().join("lockwait.replay");
    let rec = run(&mut replay_command(&exe, "record", &log));
    assert_eq!(rec.code(), 0, "{}", rec.stderr);
    let same = run(&mut replay_command(&exe, "replay", &log));
    assert_eq!(
        (same.code(), same.stdout),
        (0, rec.stdout),
        "{}",
        same.stderr
    );
    // Changed: main keeps the lock across a call the recording has after the worker's
    // acquisition. A timeout far beyond the test's bound: only the holder check can end it.
    let out = run_with_timeout(
        replay_command(&exe, "replay", &log)
            .env("REPLAY_TIMEOUT", "600s")
            .arg("late"),
        Duration::from_secs(60),
    );
    assert_eq!(out.code(), 86, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("thread 1 \"main/1\" cannot take lock #0 \"m\" (first locked at ")
            && out.stderr.contains(
                "it is held by thread 0 \"main\", which waits for its own turn at event #5"
            ),
        "{}",
        out.stderr
    );
}
