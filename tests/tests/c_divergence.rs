//! Divergence in C programs: a replayed program that makes a different call, fewer calls, or
//! reads a value as a different C type gets the report and exit status 86 (abort), or goes
//! live (warn-live).

use replay_tests::{compile_c, replay_command, run};

/// The line of `tests/c/diverge.c` that holds `needle` (1-based), so the assertions name the
/// exact call sites.
fn line_of(needle: &str) -> usize {
    let src = std::fs::read_to_string(replay_tests::repo().join("tests/c/diverge.c")).unwrap();
    src.lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{needle} not in diverge.c"))
        + 1
}

#[test]
fn a_different_call_is_reported_and_exits_86_or_goes_live_with_warn_live() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile_c("diverge", "diverge", dir.path(), &[]);
    let log = dir.path().join("div.replay");
    let rec = run(&mut replay_command(&exe, "record", &log));
    assert_eq!(rec.code(), 0, "{}", rec.stderr);

    // Unchanged, replay is clean.
    let same = run(&mut replay_command(&exe, "replay", &log));
    assert_eq!(same.code(), 0, "{}", same.stderr);
    assert_eq!(same.stdout, rec.stdout);
    assert_eq!(same.stderr, "");

    let rand_line = line_of("REPLAY_VALUE(rand())");
    let clock_line = line_of("REPLAY_CALL_OUT(&ts");
    let d = run(replay_command(&exe, "replay", &log).env("DIVERGE", "1"));
    assert_eq!(d.code(), 86, "stderr:\n{}", d.stderr);
    let e = &d.stderr;
    assert!(
        e.contains("replay: DIVERGENCE: event #1 in thread 0 \"main\""),
        "{e}"
    );
    let line = |prefix: &str| {
        e.lines()
            .find(|l| l.trim_start().starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix} line in:\n{e}"))
    };
    let src = replay_tests::repo().join("tests/c/diverge.c");
    let expected = line("expected:");
    assert!(
        expected.contains(&format!("c.value at {}:{rand_line} ", src.display())),
        "{expected}"
    );
    let actual = line("actual:");
    assert!(
        actual.contains(&format!(
            "c.clock_gettime at {}:{clock_line} ",
            src.display()
        )),
        "{actual}"
    );
    assert!(e.contains("in function main()"), "{e}");
    assert!(
        e.contains(&format!("next: replay dump {} --around 1", log.display())),
        "{e}"
    );
    assert!(e.contains("(policy abort: exiting with status 86)"), "{e}");
    // Reported once: the exit handler stays quiet after the abort.
    assert_eq!(e.matches("DIVERGENCE").count(), 1, "{e}");
    // The diverging call never ran: its line was not printed.
    assert!(
        !d.stdout_text().contains("clock read"),
        "{}",
        d.stdout_text()
    );

    let live = run(replay_command(&exe, "replay", &log)
        .env("DIVERGE", "1")
        .env("REPLAY_POLICY", "warn-live"));
    assert_eq!(live.code(), 0, "stderr:\n{}", live.stderr);
    let out = live.stdout_text();
    assert!(out.contains("clock read") && out.contains("rand "), "{out}");
    // replay_shutdown reports that the run diverged.
    assert!(out.contains("shutdown 1"), "{out}");
    assert!(
        live.stderr.contains("event #1")
            && live
                .stderr
                .contains("(policy warn-live: the program now runs live)"),
        "{}",
        live.stderr
    );
    assert!(
        live.stderr.contains("replay: replay diverged 1 time(s)"),
        "{}",
        live.stderr
    );
}

#[test]
fn events_left_over_at_exit_are_a_divergence_from_the_exit_handler() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile_c("diverge", "diverge", dir.path(), &[]);
    let log = dir.path().join("left.replay");
    assert_eq!(run(&mut replay_command(&exe, "record", &log)).code(), 0);

    // The program returns from main after one of its three events, without replay_shutdown.
    let d = run(replay_command(&exe, "replay", &log).env("FEWER", "1"));
    assert_eq!(d.code(), 86, "stderr:\n{}", d.stderr);
    assert!(
        d.stderr
            .contains("the program ended with 2 of 3 recorded events not replayed (first: #1)"),
        "{}",
        d.stderr
    );
    assert!(d.stderr.contains("--around 1"), "{}", d.stderr);
    // What the program printed before exiting is not lost to the _exit.
    assert!(
        d.stdout_text().contains("stopping early"),
        "{}",
        d.stdout_text()
    );

    let cont = run(replay_command(&exe, "replay", &log)
        .env("FEWER", "1")
        .env("REPLAY_POLICY", "warn-continue"));
    assert_eq!(cont.code(), 0, "{}", cont.stderr);
    assert!(cont.stderr.contains("not replayed"), "{}", cont.stderr);
}

#[test]
fn a_recorded_value_of_another_c_type_is_a_divergence() {
    let dir = tempfile::tempdir().unwrap();
    // Same source, same call site; the second build reads the last value as a double.
    // Both named `diverge` (another executable name is another program: refused at start).
    let double_dir = dir.path().join("double");
    std::fs::create_dir(&double_dir).unwrap();
    let as_int = compile_c("diverge", "diverge", dir.path(), &[]);
    let as_double = compile_c("diverge", "diverge", &double_dir, &["-DVALUE_T=double"]);
    let log = dir.path().join("type.replay");
    assert_eq!(run(&mut replay_command(&as_int, "record", &log)).code(), 0);

    let d = run(&mut replay_command(&as_double, "replay", &log));
    assert_eq!(d.code(), 86, "stderr:\n{}", d.stderr);
    assert!(d.stderr.contains("event #2"), "{}", d.stderr);
    assert!(
        d.stderr
            .contains("does not fit the floating-point value of 8 bytes"),
        "{}",
        d.stderr
    );

    // warn-live: the value is computed live and the program finishes.
    let live = run(replay_command(&as_double, "replay", &log).env("REPLAY_POLICY", "warn-live"));
    assert_eq!(live.code(), 0, "{}", live.stderr);
    assert!(
        live.stdout_text().contains("value "),
        "{}",
        live.stdout_text()
    );
}

/// Regression: under `abort`, threads other than the one whose call diverged went on
/// running live while the process exited (live values, real reads: 19 of 560 replays of cut
/// logs). Now the first report stops every thread's next call. Replays of the log cut at
/// many points: each either runs to the end with recorded values or stops with 86, and no
/// printed value is a live one.
#[test]
fn after_a_report_under_abort_no_thread_runs_live() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile_c("abort_threads", "abort_threads", dir.path(), &[]);
    let log = dir.path().join("threads.replay");
    let rec = run(replay_command(&exe, "record", &log).env("REPLAY_FLUSH", "1ms"));
    assert_eq!(rec.code(), 0, "{}", rec.stderr);
    let bytes = std::fs::read(&log).unwrap();
    let cuts = 80;
    let mut stopped = 0;
    // Cuts after the header (a log cut inside it cannot be replayed at all).
    let header_end = 13 + 24 + u32::from_le_bytes(bytes[21..25].try_into().unwrap()) as usize;
    for i in 1..=cuts {
        let at = header_end + (bytes.len() - header_end) * i / (cuts + 1);
        let cut = dir.path().join(format!("cut{i}.replay"));
        std::fs::write(&cut, &bytes[..at]).unwrap();
        // Relaxed order lets the other threads run on while the report is written (strict
        // order would hold them at their turns), which is where live calls slipped in.
        let order = if i % 2 == 0 { "relaxed" } else { "strict" };
        let r = run(replay_command(&exe, "replay", &cut)
            .env("LIVE_MARK", "1")
            .env("REPLAY_ORDER", order));
        let out = r.stdout_text();
        let live: Vec<&str> = out
            .lines()
            .filter(|l| {
                l.split(' ')
                    .nth(1)
                    .and_then(|v| v.parse::<i64>().ok())
                    .is_none_or(|v| v >= 1_000_000)
            })
            .collect();
        assert!(
            live.is_empty(),
            "cut at {at}: live values {live:?}\n{}",
            r.stderr
        );
        match r.code() {
            86 => {
                stopped += 1;
                assert!(
                    r.stderr.contains("the recorder was killed or cut"),
                    "cut at {at}: {}",
                    r.stderr
                );
            }
            0 => {}
            c => panic!("cut at {at}: exit {c}: {}", r.stderr),
        }
    }
    assert!(stopped > cuts / 2, "{stopped} of {cuts} cut logs stopped");
}
