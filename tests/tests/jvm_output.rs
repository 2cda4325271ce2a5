//! Output verification of the JVM agent (issue 21): what the program writes to stdout and
//! stderr from Java, and its exit status, are recorded and compared in replay, on every JDK
//! present (17 and 25 here). The program (tests/java/PrintEnv.java) prints the environment
//! variable X, which no hook covers: recorded with X=one, replayed with X=two, the replay must
//! not print the other value silently.
//!
//! Needs `cargo build --release -p replay-jvm` first: the agent is a cdylib that tests cannot
//! depend on.

use replay_tests::jvm::{java_command, jdks, log_kinds, name, ok, text, Jdk};
use replay_tests::{run, Finished};
use std::path::Path;

/// `java -agentpath:...=<mode>,log=<log><extra> PrintEnv <args>` in `dir` with X=`x`.
fn print_env(jdk: &Jdk, dir: &Path, opts: &str, args: &[&str], x: &str) -> Finished {
    run(java_command(jdk, dir, &[], Some(opts))
        .arg("PrintEnv")
        .args(args)
        .env("X", x))
}

/// Records `PrintEnv <args>` with X=one, then replays it with X=`x` and `extra` options.
fn record_then_replay(jdk: &Jdk, args: &[&str], x: &str, extra: &str) -> (Finished, Finished) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("out.replay");
    let rec = print_env(
        jdk,
        dir.path(),
        &format!("record,log={}", log.display()),
        args,
        "one",
    );
    let rep = print_env(
        jdk,
        dir.path(),
        &format!("replay,log={}{extra}", log.display()),
        args,
        x,
    );
    (rec, rep)
}

#[test]
fn stdout_that_depends_on_an_unhooked_input_is_a_divergence_at_the_first_differing_byte() {
    for jdk in jdks() {
        let (rec, rep) = record_then_replay(jdk, &[], "two", "");
        assert_eq!(ok(&rec, "record"), "start\nX=one\nend\n");
        let err = &rep.stderr;
        assert_eq!(rep.code(), 86, "{}: {err}", name(jdk));
        assert!(err.contains("DIVERGENCE"), "{err}");
        assert!(
            err.contains("stdout differs from the recording at byte 8 (line 2)"),
            "{err}"
        );
        assert!(err.contains(r#"recorded: "X=one""#), "{err}");
        assert!(err.contains(r#"replayed: "X=two""#), "{err}");
        assert!(
            err.contains("at PrintEnv.main(PrintEnv.java:14)"),
            "the report has the Java stack of the write: {err}"
        );
        // Stopped before the differing write: what came before it was written, nothing after.
        assert_eq!(rep.stdout_text(), "start\n", "{}", name(jdk));

        // The same value replays quietly.
        let (_, rep) = record_then_replay(jdk, &[], "one", "");
        assert_eq!(ok(&rep, "replay"), "start\nX=one\nend\n");
        assert!(rep.stderr.is_empty(), "{}: {}", name(jdk), rep.stderr);
    }
}

#[test]
fn verify_output_off_replays_to_the_end_with_the_new_output() {
    for jdk in jdks() {
        let (_, rep) = record_then_replay(jdk, &[], "two", ",verify-output=off");
        assert_eq!(ok(&rep, "replay"), "start\nX=two\nend\n", "{}", name(jdk));
        assert!(rep.stderr.is_empty(), "{}: {}", name(jdk), rep.stderr);

        // Recorded without output: nothing to compare, and replay says so once.
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("off.replay");
        let rec = print_env(
            jdk,
            dir.path(),
            &format!("record,verify-output=off,log={}", log.display()),
            &[],
            "one",
        );
        ok(&rec, "record");
        assert!(
            !log_kinds(&log).keys().any(|k| k.starts_with("output.")),
            "{:?}",
            log_kinds(&log)
        );
        let rep = print_env(
            jdk,
            dir.path(),
            &format!("replay,log={}", log.display()),
            &[],
            "two",
        );
        assert_eq!(ok(&rep, "replay"), "start\nX=two\nend\n");
        assert!(rep.stderr.contains("holds no output"), "{}", rep.stderr);
    }
}

#[test]
fn stderr_single_byte_writes_and_the_uncaught_exception_trace_are_compared() {
    for jdk in jdks() {
        // System.err.println.
        let (rec, rep) = record_then_replay(jdk, &["err"], "two", "");
        assert_eq!(text(&rec.stderr), "X=one\n");
        let err = &rep.stderr;
        assert_eq!(rep.code(), 86, "{}: {err}", name(jdk));
        assert!(
            err.contains("stderr differs from the recording at byte 2 (line 1)"),
            "{err}"
        );
        assert!(err.contains(r#"recorded: "X=one""#), "{err}");
        assert!(err.contains(r#"replayed: "X=two""#), "{err}");
        assert!(err.contains("at PrintEnv.main(PrintEnv.java:18)"), "{err}");
        assert_eq!(rep.stdout_text(), "on stdout\n");

        // A FileOutputStream on FileDescriptor.out, the value written one byte at a time.
        let (rec, rep) = record_then_replay(jdk, &["bytes"], "two", "");
        assert_eq!(ok(&rec, "record"), "fixed\nX=one\n");
        assert_eq!(rep.code(), 86, "{}: {}", name(jdk), rep.stderr);
        assert!(
            rep.stderr
                .contains("stdout differs from the recording at byte 8 (line 2)"),
            "{}",
            rep.stderr
        );
        assert_eq!(rep.stdout_text(), "fixed\nX=");

        // The trace of an uncaught exception, which the JVM prints through System.err.
        let (rec, rep) = record_then_replay(jdk, &["throw"], "two", "");
        assert_eq!(rec.code(), 1);
        assert!(
            rec.stderr.contains("IllegalStateException: X=one"),
            "{}",
            rec.stderr
        );
        assert_eq!(rep.code(), 86, "{}: {}", name(jdk), rep.stderr);
        assert!(
            rep.stderr.contains("stderr differs from the recording"),
            "{}",
            rep.stderr
        );
        assert!(rep.stderr.contains("X=two"), "{}", rep.stderr);
        let (_, rep) = record_then_replay(jdk, &["throw"], "one", "");
        assert_eq!(rep.code(), 1, "{}: {}", name(jdk), rep.stderr);
        assert!(!rep.stderr.contains("DIVERGENCE"), "{}", rep.stderr);
    }
}

#[test]
fn another_exit_status_is_a_divergence_and_the_same_one_is_kept() {
    for jdk in jdks() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("exit.replay");
        let rec = print_env(
            jdk,
            dir.path(),
            &format!("record,log={}", log.display()),
            &["exit"],
            "5",
        );
        assert_eq!(rec.code(), 5, "{}", rec.stderr);
        let rep = print_env(
            jdk,
            dir.path(),
            &format!("replay,log={}", log.display()),
            &["exit"],
            "5",
        );
        assert_eq!(rep.code(), 5, "{}: {}", name(jdk), rep.stderr);
        assert!(rep.stderr.is_empty(), "{}", rep.stderr);
        let rep = print_env(
            jdk,
            dir.path(),
            &format!("replay,log={}", log.display()),
            &["exit"],
            "6",
        );
        assert_eq!(rep.code(), 86, "{}: {}", name(jdk), rep.stderr);
        assert!(
            rep.stderr.contains("exited with status 6")
                && rep.stderr.contains("recording exited with 5"),
            "{}",
            rep.stderr
        );
    }
}

#[test]
fn a_log_of_another_main_class_is_refused_in_one_line_with_status_3() {
    for jdk in jdks() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("p.replay");
        let rec = print_env(
            jdk,
            dir.path(),
            &format!("record,log={}", log.display()),
            &[],
            "one",
        );
        ok(&rec, "record");
        let o = run(java_command(
            jdk,
            dir.path(),
            &[],
            Some(&format!("replay,log={}", log.display())),
        )
        .arg("Clocks")
        .arg("short"));
        assert_eq!(o.code(), 3, "{}: {}", name(jdk), o.stderr);
        assert_eq!(o.stderr.lines().count(), 1, "{}", o.stderr);
        assert!(
            o.stderr.starts_with("replay: ")
                && o.stderr.contains("PrintEnv")
                && o.stderr.contains("Clocks"),
            "{}",
            o.stderr
        );
        assert!(o.stdout.is_empty(), "the program did not run");
    }
}

#[test]
fn a_child_printing_to_the_inherited_stdout_is_replayed_from_the_recording() {
    for jdk in jdks() {
        let (rec, rep) = record_then_replay(jdk, &["child"], "two", "");
        assert_eq!(ok(&rec, "record"), "child X=one\nparent done\n");
        let err = &rep.stderr;
        assert_eq!(rep.code(), 0, "{}: {err}", name(jdk));
        // The child does not run: the stand-in prints what it printed, with X=one, before
        // the parent's next line.
        assert_eq!(text(&rep.stdout), "child X=one\nparent done\n");
        assert!(!err.contains("could not check"), "{}: {err}", name(jdk));
    }
}

#[test]
fn what_the_program_writes_into_files_is_compared_at_exit() {
    // X goes only into files: replay printed the same and exited 0 with other file contents.
    // What the program writes into each file (FileOutputStream by name, NIO channels) is
    // summed in the log's trailer and compared at exit.
    for jdk in jdks() {
        let (rec, same) = record_then_replay(jdk, &["files"], "one", "");
        assert_eq!(ok(&rec, "record"), "written\n", "{}", name(jdk));
        assert_eq!(ok(&same, "replay"), "written\n", "{}", name(jdk));
        assert!(same.stderr.is_empty(), "{}: {}", name(jdk), same.stderr);

        let (_, rep) = record_then_replay(jdk, &["files"], "two", "");
        assert_eq!(rep.code(), 86, "{}: {}", name(jdk), rep.stderr);
        assert!(
            rep.stderr.contains(
                "the program wrote other bytes into io.txt than the recording (9 bytes, as recorded, with another checksum)"
            ),
            "{}: {}",
            name(jdk),
            rep.stderr
        );
        let (_, longer) = record_then_replay(jdk, &["files"], "three", "");
        assert_eq!(longer.code(), 86, "{}: {}", name(jdk), longer.stderr);
        assert!(
            longer
                .stderr
                .contains("the program wrote 11 bytes into io.txt; the recording wrote 9"),
            "{}: {}",
            name(jdk),
            longer.stderr
        );
        // A RandomAccessFile's writes are summed too (ImageIO writes through one).
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("raf.replay");
        let rec = print_env(
            jdk,
            dir.path(),
            &format!("record,log={}", log.display()),
            &["files"],
            "one",
        );
        ok(&rec, "record");
        let info = replay_tests::run(
            std::process::Command::new(replay_tests::repo().join("target/release/replay"))
                .arg("info")
                .arg(&log),
        );
        assert!(
            text(&info.stdout).contains(" raf.bin (crc32c "),
            "{}: {}",
            name(jdk),
            text(&info.stdout)
        );
        let (_, off) = record_then_replay(jdk, &["files"], "two", ",verify-output=off");
        assert_eq!(ok(&off, "replay"), "written\n", "{}", name(jdk));
    }
}
