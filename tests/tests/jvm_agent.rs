//! The JVM agent against real JVMs: every JDK present (17 and 25 here) runs the programs of
//! tests/java under `-agentpath:target/release/libreplay.so=...`.
//!
//! Needs `cargo build --release -p replay-jvm` (the workspace build) first: the agent is a
//! cdylib that tests cannot depend on.

use replay_tests::jvm::{java, jdks, log_summary, name, ok, text, Jdk};
use replay_tests::Finished;
use std::path::{Path, PathBuf};

#[test]
fn clocks_randomness_and_a_hot_loop_replay_identically_after_the_clock_moved() {
    for jdk in jdks() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("clocks.replay");
        let opts = format!("record,log={}", log.display());
        let recorded = ok(
            &java(jdk, dir.path(), &[], Some(&opts), "Clocks", &[]),
            "record",
        );
        let (kinds, _) = log_summary(&log);
        let nano = kinds.get("java.lang.System.nanoTime").copied().unwrap_or(0);
        // Every call of the JIT-compiled loop went through the hook, plus the others.
        assert!(
            nano >= 2_000_003,
            "{}: only {nano} nanoTime events: {kinds:?}",
            name(jdk)
        );
        assert!(
            kinds
                .get("java.lang.System.currentTimeMillis")
                .copied()
                .unwrap_or(0)
                >= 2,
            "{kinds:?}"
        );
        assert!(
            kinds.contains_key("jdk.internal.misc.VM.getNanoTimeAdjustment"),
            "Instant.now is hooked: {kinds:?}"
        );

        std::thread::sleep(std::time::Duration::from_millis(30));
        let replayed = ok(
            &java(
                jdk,
                dir.path(),
                &[],
                Some(&format!("replay,log={}", log.display())),
                "Clocks",
                &[],
            ),
            "replay",
        );
        assert_eq!(
            recorded,
            replayed,
            "{}: replay printed something else",
            name(jdk)
        );
        // The values are the recorded ones, not what the clock says now.
        let live = ok(
            &java(jdk, dir.path(), &[], None, "Clocks", &["short"]),
            "bare",
        );
        let line = |s: &str, key: &str| s.lines().find(|l| l.starts_with(key)).map(str::to_string);
        for key in [
            "millis ",
            "instant ",
            "random ",
            "math.random ",
            "tlr ",
            "splittable ",
            "shuffle ",
            "end ",
        ] {
            assert!(
                line(&recorded, key).is_some(),
                "{key} missing in {recorded}"
            );
            assert_ne!(
                line(&recorded, key),
                line(&live, key),
                "{}: '{key}' is the same live, so the test proves nothing",
                name(jdk)
            );
        }
    }
}

#[test]
fn a_changed_program_gets_the_divergence_report_and_exit_86() {
    for jdk in jdks() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("c.replay");
        ok(
            &java(
                jdk,
                dir.path(),
                &[],
                Some(&format!("record,log={}", log.display())),
                "Clocks",
                &["short"],
            ),
            "record",
        );
        let o = java(
            jdk,
            dir.path(),
            &[],
            Some(&format!("replay,log={}", log.display())),
            "Clocks",
            &["changed"],
        );
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(86), "{}: {err}", name(jdk));
        assert!(err.contains("DIVERGENCE"), "{err}");
        assert!(
            err.contains("expected: java.lang.System.currentTimeMillis"),
            "{err}"
        );
        assert!(err.contains("actual:   java.lang.System.nanoTime"), "{err}");
        assert!(
            err.contains("at Clocks.main(Clocks.java"),
            "the report has the Java stack: {err}"
        );
        // The program stopped at the diverging call: nothing after it was printed.
        assert!(!text(&o.stdout).contains("instant "), "{}", text(&o.stdout));

        // Fewer calls than recorded: the events left over are a divergence at exit.
        let full = dir.path().join("full.replay");
        ok(
            &java(
                jdk,
                dir.path(),
                &[],
                Some(&format!("record,log={}", full.display())),
                "Clocks",
                &[],
            ),
            "record",
        );
        let o = java(
            jdk,
            dir.path(),
            &[],
            Some(&format!("replay,log={}", full.display())),
            "Clocks",
            &["short"],
        );
        assert_eq!(
            o.status.code(),
            Some(86),
            "{}: {}",
            name(jdk),
            text(&o.stderr)
        );
        assert!(
            text(&o.stderr).contains("DIVERGENCE"),
            "{}",
            text(&o.stderr)
        );
    }
}

#[test]
fn threads_replay_their_own_values_in_recorded_order() {
    for jdk in jdks() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("t.replay");
        let recorded = ok(
            &java(
                jdk,
                dir.path(),
                &[],
                Some(&format!("record,log={}", log.display())),
                "Threads",
                &[],
            ),
            "record",
        );
        let (kinds, threads) = log_summary(&log);
        assert_eq!(
            kinds.get("java.lang.System.nanoTime").copied(),
            Some(4 * 20000),
            "{}: {kinds:?}",
            name(jdk)
        );
        for i in 0..4 {
            assert!(threads.contains(&format!("worker-{i}")), "{threads:?}");
        }
        assert!(
            !threads.iter().any(|t| t == "Reference Handler"
                || t == "Common-Cleaner"
                || t == "Signal Dispatcher"),
            "{threads:?}"
        );
        for order in ["strict", "relaxed"] {
            let o = java(
                jdk,
                dir.path(),
                &[],
                Some(&format!("replay,{order},log={}", log.display())),
                "Threads",
                &[],
            );
            assert_eq!(recorded, ok(&o, order), "{}: {order}", name(jdk));
        }
    }
}

#[test]
fn xcheck_jni_runs_clean_in_record_and_replay() {
    for jdk in jdks() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("x.replay");
        for mode in ["record", "replay"] {
            let o = java(
                jdk,
                dir.path(),
                &["-Xcheck:jni"],
                Some(&format!("{mode},log={}", log.display())),
                "Threads",
                &[],
            );
            let out = ok(&o, mode);
            let err = text(&o.stderr);
            assert!(
                err.trim().is_empty(),
                "{} {mode}: -Xcheck:jni said:\n{err}",
                name(jdk)
            );
            // Some of its warnings ("JNI local refs: N, exceeds capacity") go to stdout.
            assert!(
                !out.contains("WARNING"),
                "{} {mode}: -Xcheck:jni said:\n{out}",
                name(jdk)
            );
        }
    }
}

#[test]
fn exit_status_of_system_exit_is_replayed() {
    for jdk in jdks() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("e.replay");
        let r = java(
            jdk,
            dir.path(),
            &[],
            Some(&format!("record,log={}", log.display())),
            "Exit",
            &[],
        );
        let p = java(
            jdk,
            dir.path(),
            &[],
            Some(&format!("replay,log={}", log.display())),
            "Exit",
            &[],
        );
        assert!(
            r.status.code().unwrap_or(0) > 0,
            "{:?} {}",
            r.status,
            text(&r.stderr)
        );
        assert_eq!(
            (r.status.code(), text(&r.stdout)),
            (p.status.code(), text(&p.stdout)),
            "{}: {}",
            name(jdk),
            text(&p.stderr)
        );
    }
}

#[test]
fn bad_options_and_unreadable_logs_stop_the_jvm_with_one_clear_line() {
    for jdk in jdks() {
        let dir = tempfile::tempdir().unwrap();
        for (opts, want) in [
            (
                "record,timeout=soon",
                "replay: bad value 'soon' for option 'timeout'",
            ),
            (
                "replay,policy=explode",
                "replay: bad value 'explode' for option 'policy'",
            ),
            ("replay", "replay: replay mode needs a log to replay"),
            (
                "replay,log=/nonexistent/none.replay",
                "replay: cannot replay /nonexistent/none.replay",
            ),
        ] {
            let o = java(jdk, dir.path(), &[], Some(opts), "Clocks", &["short"]);
            let err = text(&o.stderr);
            assert!(!o.status.success(), "{opts}: the JVM started");
            // (The JVM itself prints "Error occurred during initialization of VM" on stdout.)
            assert!(
                !text(&o.stdout).contains("slept ns"),
                "{opts}: the program ran"
            );
            let ours: Vec<&str> = err.lines().filter(|l| l.starts_with("replay:")).collect();
            assert_eq!(ours.len(), 1, "{opts}: {err}");
            assert!(ours[0].starts_with(want), "{opts}: {err}");
        }
        // A log that is not a replay log.
        let junk = dir.path().join("junk.replay");
        std::fs::write(&junk, b"this is not a log\n").unwrap();
        let o = java(
            jdk,
            dir.path(),
            &[],
            Some(&format!("replay,log={}", junk.display())),
            "Clocks",
            &["short"],
        );
        assert!(
            !o.status.success() && !text(&o.stdout).contains("slept ns"),
            "{}",
            text(&o.stderr)
        );
        assert!(
            text(&o.stderr).contains("replay: cannot replay"),
            "{}",
            text(&o.stderr)
        );
    }
}

#[test]
fn unknown_keys_warn_unwritable_logs_warn_and_the_program_runs_on() {
    for jdk in jdks() {
        let dir = tempfile::tempdir().unwrap();
        let o = java(
            jdk,
            dir.path(),
            &[],
            Some("record,log=/nonexistent/dir/x.replay"),
            "Clocks",
            &["short"],
        );
        let out = ok(&o, "unwritable log");
        assert!(out.contains("end "), "{out}");
        let err = text(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with("replay: cannot create log /nonexistent/dir/x.replay"),
            "{err}"
        );

        let log = dir.path().join("u.replay");
        let o = java(
            jdk,
            dir.path(),
            &[],
            Some(&format!("record,colour=red,log={}", log.display())),
            "Clocks",
            &["short"],
        );
        ok(&o, "unknown key");
        assert!(
            text(&o.stderr).starts_with("replay: unknown option 'colour' ignored"),
            "{}",
            text(&o.stderr)
        );
        assert!(log.is_file());
    }
}

#[test]
fn default_log_is_announced_and_off_mode_records_nothing() {
    for jdk in jdks() {
        let dir = tempfile::tempdir().unwrap();
        let o = java(jdk, dir.path(), &[], Some("record"), "Exit", &[]);
        let err = text(&o.stderr);
        let logs: Vec<PathBuf> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(logs.len(), 1, "{logs:?}");
        let file = logs[0].file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            file.starts_with("java-") && file.ends_with(".replay"),
            "{file}"
        );
        assert!(
            err.contains("replay: recording to java-") && err.contains(".replay"),
            "{err}"
        );
        let (kinds, _) = log_summary(&logs[0]);
        assert_eq!(
            kinds.get("java.lang.System.nanoTime"),
            Some(&1),
            "{kinds:?}"
        );

        let off = tempfile::tempdir().unwrap();
        let o = java(jdk, off.path(), &[], Some("off"), "Clocks", &["short"]);
        ok(&o, "off");
        assert!(text(&o.stderr).is_empty(), "{}", text(&o.stderr));
        assert_eq!(std::fs::read_dir(off.path()).unwrap().count(), 0);
    }
}

#[test]
fn a_daemon_thread_blocked_at_exit_keeps_its_events() {
    for jdk in jdks() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("d.replay");
        let recorded = ok(
            &java(
                jdk,
                dir.path(),
                &[],
                Some(&format!("record,log={}", log.display())),
                "Daemon",
                &[],
            ),
            "record",
        );
        let (kinds, threads) = log_summary(&log);
        assert_eq!(
            kinds.get("java.lang.System.nanoTime"),
            Some(&11),
            "{}: {kinds:?}",
            name(jdk)
        );
        assert!(threads.iter().any(|t| t == "sleeper"), "{threads:?}");
        let replayed = ok(
            &java(
                jdk,
                dir.path(),
                &[],
                Some(&format!("replay,log={}", log.display())),
                "Daemon",
                &[],
            ),
            "replay",
        );
        assert_eq!(recorded, replayed, "{}", name(jdk));
    }
}

#[test]
fn file_reads_replay_after_the_file_was_edited_and_deleted() {
    for jdk in jdks() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("files.replay");
        let input = dir.path().join("input.txt");
        std::fs::write(&input, "hello world\nsecond line here\nthird 3 4 5\n").unwrap();
        let args = ["input.txt", "missing.txt"];
        let record = format!("record,log={}", log.display());
        let replay = format!("replay,log={}", log.display());
        let o = java(
            jdk,
            dir.path(),
            &["-Xcheck:jni"],
            Some(&record),
            "FileRead",
            &args,
        );
        let recorded = ok(&o, "record");
        assert!(!recorded.contains("WARNING"), "{}: {recorded}", name(jdk));
        assert!(
            text(&o.stderr).trim().is_empty(),
            "{}: -Xcheck:jni said:\n{}",
            name(jdk),
            text(&o.stderr)
        );
        for want in [
            "line 2: second line here",
            "chunk 7 [o world]",
            "eof -1 total 37",
            "readAllBytes 41",
            "words 9",
            "scanner first line: hello world",
            "channel size 41 pread [world]",
            "channel position 0",
            "after close: Stream Closed",
            "missing: missing.txt (No such file or directory)",
        ] {
            assert!(
                recorded.contains(want),
                "{}: {want}:\n{recorded}",
                name(jdk)
            );
        }
        let (kinds, _) = log_summary(&log);
        let opens = kinds.get("java.io.FileInputStream.open").copied();
        // Seven opens of input.txt and one of missing.txt: class files and the JDK's own
        // start-up reads are not events.
        assert_eq!(opens, Some(8), "{}: {kinds:?}", name(jdk));
        for k in [
            "java.io.FileInputStream.readBytes",
            "java.io.FileInputStream.read",
            "java.io.FileInputStream.available",
            "java.io.FileInputStream.skip",
            "sun.nio.ch.FileDispatcher.read",
            "sun.nio.ch.FileDispatcher.pread",
            "sun.nio.ch.FileDispatcher.size",
            "sun.nio.ch.FileDispatcher.seek",
        ] {
            assert!(kinds.contains_key(k), "{}: no {k}: {kinds:?}", name(jdk));
        }

        // Edited: replay still reads what was recorded, and a live run shows the edit.
        std::fs::write(&input, "changed\n").unwrap();
        let live = ok(&java(jdk, dir.path(), &[], None, "FileRead", &args), "live");
        assert_ne!(live, recorded, "the edit is visible to a live run");
        let o = java(
            jdk,
            dir.path(),
            &["-Xcheck:jni"],
            Some(&replay),
            "FileRead",
            &args,
        );
        assert_eq!(ok(&o, "replay after edit"), recorded, "{}", name(jdk));
        assert!(text(&o.stderr).trim().is_empty(), "{}", text(&o.stderr));
        // Deleted: the open still succeeds; and a file created under the missing name is
        // still missing.
        std::fs::remove_file(&input).unwrap();
        std::fs::write(dir.path().join("missing.txt"), "now here\n").unwrap();
        let o = java(jdk, dir.path(), &[], Some(&replay), "FileRead", &args);
        assert_eq!(ok(&o, "replay after delete"), recorded, "{}", name(jdk));

        // Opening another path than recorded is a divergence with the Java stack.
        let o = java(
            jdk,
            dir.path(),
            &[],
            Some(&replay),
            "FileRead",
            &["input.txt", "other.txt"],
        );
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(86), "{}: {err}", name(jdk));
        assert!(
            err.contains("expected: java.io.FileInputStream.open"),
            "{err}"
        );
        assert!(err.contains("at FileRead.main(FileRead.java"), "{err}");
    }
}

#[test]
fn uuid_and_secure_random_replay_through_their_dev_urandom_reads() {
    for jdk in jdks() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("uuid.replay");
        let recorded = ok(
            &java(
                jdk,
                dir.path(),
                &[],
                Some(&format!("record,log={}", log.display())),
                "Uuid",
                &[],
            ),
            "record",
        );
        let (kinds, _) = log_summary(&log);
        assert!(
            kinds.contains_key("java.security.SecureRandom.nextBytes"),
            "{}: NativePRNG's bytes are events: {kinds:?}",
            name(jdk)
        );
        let live = ok(&java(jdk, dir.path(), &[], None, "Uuid", &[]), "live");
        assert_ne!(live, recorded, "two live runs differ");
        let replayed = ok(
            &java(
                jdk,
                dir.path(),
                &["-Xcheck:jni"],
                Some(&format!("replay,log={}", log.display())),
                "Uuid",
                &[],
            ),
            "replay",
        );
        assert_eq!(replayed, recorded, "{}", name(jdk));
    }
}

/// UUIDs made by four threads at once, the first ones racing to initialize UUID's
/// SecureRandom: every replay gives each thread its recorded UUIDs. Before, a replayed thread
/// waited for its /dev/urandom read's turn while holding NativePRNG's lock, which the thread
/// whose turn it was needed: no progress, every time.
#[test]
fn uuids_from_racing_threads_replay() {
    for jdk in jdks() {
        let dir = tempfile::tempdir().unwrap();
        for run in 0..2 {
            let log = dir.path().join(format!("uuids-{run}.replay"));
            let recorded = ok(
                &java(
                    jdk,
                    dir.path(),
                    &[],
                    Some(&format!("record,log={}", log.display())),
                    "UuidThreads",
                    &[],
                ),
                "record",
            );
            let replayed = java(
                jdk,
                dir.path(),
                &[],
                Some(&format!("replay,log={}", log.display())),
                "UuidThreads",
                &[],
            );
            assert_eq!(ok(&replayed, "replay"), recorded, "{}", name(jdk));
            assert!(replayed.stderr.trim().is_empty(), "{}", replayed.stderr);
        }
    }
}

/// Records `Buffered <rec_arg>` and replays `Buffered <rep_arg>` (with `extra` replay
/// options): (recorded stdout, replay).
fn buffered_with(
    jdk: &Jdk,
    dir: &Path,
    rec_arg: &[&str],
    rep_arg: &[&str],
    extra: &str,
) -> (String, Finished) {
    let log = dir.join(format!("b-{}.replay", rec_arg.join("-")));
    let recorded = ok(
        &java(
            jdk,
            dir,
            &[],
            Some(&format!("record,log={}", log.display())),
            "Buffered",
            rec_arg,
        ),
        "record",
    );
    let o = java(
        jdk,
        dir,
        &[],
        Some(&format!("replay,log={}{extra}", log.display())),
        "Buffered",
        rep_arg,
    );
    (recorded, o)
}

fn buffered(jdk: &Jdk, dir: &Path, rec_arg: &[&str], rep_arg: &[&str]) -> (String, Finished) {
    buffered_with(jdk, dir, rec_arg, rep_arg, "")
}

#[test]
fn buffered_replay_matches_and_a_mid_run_change_is_reported_at_that_call() {
    for jdk in jdks() {
        let dir = tempfile::tempdir().unwrap();
        // Same program: identical output although the clock moved since the recording.
        let (recorded, o) = buffered(jdk, dir.path(), &[], &[]);
        assert_eq!(recorded, ok(&o, "replay"), "{}", name(jdk));

        // At call 3000 of a run of nanoTime events the program prints "at 3000": with the
        // output compared (per thread), that write is the first divergence: the recording's
        // main thread wrote "after nanos" first.
        let (_, o) = buffered(jdk, dir.path(), &[], &["changed"]);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(86), "{}: {err}", name(jdk));
        assert!(
            err.contains("stdout differs from the recording at byte 1 (line 1)"),
            "{err}"
        );
        assert!(err.contains(r#"recorded: "after nanos "#), "{err}");
        assert!(err.contains(r#"replayed: "at 3000""#), "{err}");
        assert!(err.contains("at Buffered.main(Buffered.java"), "{err}");
        assert!(
            !text(&o.stdout).contains("at 3000"),
            "stopped before the write"
        );

        // Without output verification the print passes and the clock call that follows is
        // the divergence: it reads currentTimeMillis.
        let off = ",verify-output=off";
        let (_, o) = buffered_with(jdk, dir.path(), &[], &["changed"], off);
        let err = text(&o.stderr);
        let out = text(&o.stdout);
        assert_eq!(o.status.code(), Some(86), "{}: {err}", name(jdk));
        assert!(err.contains("expected: java.lang.System.nanoTime"), "{err}");
        assert!(
            err.contains("actual:   java.lang.System.currentTimeMillis"),
            "{err}"
        );
        assert!(err.contains("at Buffered.other(Buffered.java"), "{err}");
        assert!(out.contains("at 3000"), "{out}");
        assert!(!out.contains("after nanos"), "stopped at the call: {out}");

        // There it opens a file: a divergence, never the file event served out of order.
        let (_, o) = buffered_with(jdk, dir.path(), &[], &["file"], off);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(86), "{}: {err}", name(jdk));
        assert!(err.contains("expected: java.lang.System.nanoTime"), "{err}");
        assert!(err.contains("actual:   java.io file call"), "{err}");
        assert!(err.contains("at Buffered.other(Buffered.java"), "{err}");
        assert!(!text(&o.stdout).contains("after nanos"));
    }
}

#[test]
fn buffered_threads_taking_turns_replay_in_strict_order() {
    for jdk in jdks() {
        let dir = tempfile::tempdir().unwrap();
        let (recorded, o) = buffered(jdk, dir.path(), &["pingpong"], &["pingpong"]);
        assert_eq!(recorded, ok(&o, "replay"), "{}", name(jdk));
        assert!(recorded.contains("pp-1 "), "{recorded}");
    }
}

#[test]
fn fetched_values_a_thread_leaves_unused_are_a_divergence_at_its_end() {
    for jdk in jdks() {
        let dir = tempfile::tempdir().unwrap();
        let (recorded, o) = buffered(jdk, dir.path(), &["worker"], &["worker"]);
        assert_eq!(recorded, ok(&o, "replay"), "{}", name(jdk));
        let (_, o) = buffered(jdk, dir.path(), &["worker"], &["worker-short"]);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(86), "{}: {err}", name(jdk));
        assert!(err.contains("expected: java.lang.System.nanoTime"), "{err}");
        assert!(err.contains("end of the thread"), "{err}");
    }
}

/// `RuntimeMXBean.getUptime()`/`getStartTime()` (servers log them at start: Jetty's "Started
/// @359ms") come back as recorded: two live runs differ, the replay prints the recorded ones.
/// Memory-mapped reads of a file the program reads: the mapped bytes come from the
/// recording after the file was edited (a replayed channel's descriptor is /dev/null, which
/// cannot be mapped: map threw, or a program that caught it wrote nothing).
#[test]
fn memory_mapped_reads_replay_after_the_file_changed() {
    for jdk in jdks() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.txt");
        let out = dir.path().join("out.txt");
        std::fs::write(&input, "hello mapped world\n").unwrap();
        let log = dir.path().join("map.replay");
        let args = [input.to_str().unwrap(), out.to_str().unwrap()];
        let rec = Some(format!("record,log={}", log.display()));
        let recorded = ok(
            &java(jdk, dir.path(), &[], rec.as_deref(), "MapRead", &args),
            "record",
        );
        assert_eq!(
            recorded,
            "nio hello mapped world\noffset mappe\ncopied 19\n",
            "{}",
            name(jdk)
        );
        let copied = std::fs::read(&out).unwrap();
        std::fs::write(&input, "EDITED, and longer than it was\n").unwrap();
        std::fs::remove_file(&out).unwrap();
        let rep = Some(format!("replay,log={}", log.display()));
        let replayed = java(jdk, dir.path(), &[], rep.as_deref(), "MapRead", &args);
        assert_eq!(ok(&replayed, "replay"), recorded, "{}", name(jdk));
        assert!(replayed.stderr.trim().is_empty(), "{}", replayed.stderr);
        assert_eq!(std::fs::read(&out).unwrap(), copied, "{}", name(jdk));
    }
}

/// The heap sizes and the processor count come back from the recording, on a JVM given
/// another heap limit and another processor count than the recorded one.
#[test]
fn heap_sizes_and_processor_count_replay_on_another_machine_shape() {
    for jdk in jdks() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("machine.replay");
        let rec = Some(format!("record,log={}", log.display()));
        let recorded = ok(
            &java(
                jdk,
                dir.path(),
                &["-Xmx200m", "-XX:ActiveProcessorCount=2"],
                rec.as_deref(),
                "Machine",
                &[],
            ),
            "record",
        );
        let other = ["-Xmx300m", "-XX:ActiveProcessorCount=1"];
        let live = ok(&java(jdk, dir.path(), &other, None, "Machine", &[]), "live");
        assert_ne!(
            live.lines().next(),
            recorded.lines().next(),
            "the other shape shows live"
        );
        let rep = Some(format!("replay,log={}", log.display()));
        let replayed = java(jdk, dir.path(), &other, rep.as_deref(), "Machine", &[]);
        assert_eq!(ok(&replayed, "replay"), recorded, "{}", name(jdk));
        assert!(replayed.stderr.trim().is_empty(), "{}", replayed.stderr);
    }
}

/// `File.deleteOnExit`: the delete runs at shutdown, on main's OS thread as another Java
/// thread. Replay ends as recorded (it reported main's first clock value as left unused).
#[test]
fn a_delete_at_exit_replays() {
    for jdk in jdks() {
        let r = replay_tests::jvm::record(jdk, "ExitDelete", &["x.tmp"], |_| {});
        assert!(!r.dir.path().join("x.tmp").exists(), "{}", name(jdk));
        assert!(
            r.kinds.contains_key("java.io.UnixFileSystem.delete"),
            "{:?}",
            r.kinds
        );
        replay_tests::jvm::assert_replays(jdk, &r, &[], "ExitDelete", &["x.tmp"]);
        assert!(!r.dir.path().join("x.tmp").exists(), "{}", name(jdk));
    }
}

/// The process id (`ProcessHandle`, `RuntimeMXBean`) is the recorded process's in replay,
/// and the JDK's questions about that id (alive, found, its command) are answered about the
/// replaying process, as they were about the recorded one.
#[test]
fn the_process_id_is_the_recorded_one() {
    for jdk in jdks() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("pid.replay");
        let rec = Some(format!("record,log={}", log.display()));
        let recorded = ok(
            &java(jdk, dir.path(), &[], rec.as_deref(), "Pid", &[]),
            "record",
        );
        let pid = recorded
            .lines()
            .next()
            .unwrap()
            .strip_prefix("pid ")
            .unwrap()
            .to_string();
        assert!(
            recorded.contains(&format!(
                "jmx {pid}\njmx pid {pid}\nalive true\nfound true\ncommand true\n"
            )),
            "{recorded}"
        );
        let rep = Some(format!("replay,log={}", log.display()));
        let replayed = java(jdk, dir.path(), &[], rep.as_deref(), "Pid", &[]);
        assert_eq!(ok(&replayed, "replay"), recorded, "{}", name(jdk));
        assert!(replayed.stderr.trim().is_empty(), "{}", replayed.stderr);
    }
}

/// Script engines call the clocks through reflection and method handles: no call site names
/// `System.nanoTime`, so those reads reach the JVM's natives. Their values come back in replay.
#[test]
fn clock_reads_through_reflection_and_method_handles_replay() {
    for jdk in jdks() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("reflect.replay");
        let rec = Some(format!("record,log={}", log.display()));
        let recorded = ok(
            &java(jdk, dir.path(), &[], rec.as_deref(), "ReflectClock", &[]),
            "record",
        );
        assert_eq!(recorded.lines().count(), 43, "{recorded}");
        let live = ok(
            &java(jdk, dir.path(), &[], None, "ReflectClock", &[]),
            "live",
        );
        assert_ne!(live, recorded, "two live runs differ");
        let rep = Some(format!("replay,log={}", log.display()));
        let replayed = java(jdk, dir.path(), &[], rep.as_deref(), "ReflectClock", &[]);
        assert_eq!(ok(&replayed, "replay"), recorded, "{}", name(jdk));
        assert!(replayed.stderr.trim().is_empty(), "{}", replayed.stderr);
    }
}

#[test]
fn jvm_uptime_and_start_time_replay() {
    for jdk in jdks() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("uptime.replay");
        let rec = Some(format!("record,log={}", log.display()));
        let recorded = ok(
            &java(jdk, dir.path(), &[], rec.as_deref(), "Uptime", &[]),
            "record",
        );
        let live = ok(&java(jdk, dir.path(), &[], None, "Uptime", &[]), "live");
        assert_ne!(live, recorded, "two live runs differ");
        let rep = Some(format!("replay,log={}", log.display()));
        let replayed = java(jdk, dir.path(), &[], rep.as_deref(), "Uptime", &[]);
        assert_eq!(ok(&replayed, "replay"), recorded, "{}", name(jdk));
        assert!(replayed.stderr.trim().is_empty(), "{}", replayed.stderr);
    }
}

/// CPU times and memory figures from the management beans (thread and process CPU time, free
/// memory, committed virtual memory) differ from run to run: read live, a program reporting
/// them printed or wrote other numbers in every replay.
#[test]
fn cpu_times_and_memory_figures_replay_as_recorded() {
    for jdk in jdks() {
        let r = replay_tests::jvm::record(jdk, "CpuTimes", &[], |_| {});
        for k in [
            "java.lang.management.ThreadMXBean.getThreadCpuTime",
            "com.sun.management.OperatingSystemMXBean.getProcessCpuTime",
            "com.sun.management.OperatingSystemMXBean.getFreeMemorySize",
            "java.lang.management.GarbageCollectorMXBean.getCollectionTime",
            "java.lang.management.CompilationMXBean.getTotalCompilationTime",
        ] {
            assert!(r.kinds.contains_key(k), "{}: {k}: {:?}", name(jdk), r.kinds);
        }
        let live = ok(&java(jdk, r.dir.path(), &[], None, "CpuTimes", &[]), "live");
        assert_ne!(live, r.out, "{}: live runs differ", name(jdk));
        replay_tests::jvm::assert_replays(jdk, &r, &[], "CpuTimes", &[]);
    }
}
