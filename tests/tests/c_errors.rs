//! Bad configuration and bad logs: one clear line from init, a non-zero return, and the
//! program keeps running (its own exit code, never a crash).

use replay_tests::{command, compile_c, replay_command, run, Finished};
use std::path::{Path, PathBuf};

fn program(dir: &Path) -> PathBuf {
    compile_c("init_errors", "init_errors", dir, &[])
}

/// The program ran to its end with replay off, after exactly one line on stderr.
fn assert_one_line_and_runs_live(f: &Finished, want: &str) {
    assert_eq!(f.code(), 0, "stderr:\n{}", f.stderr);
    let lines = f.stderr_lines();
    assert_eq!(lines.len(), 1, "want one line, got:\n{}", f.stderr);
    assert!(
        lines[0].starts_with("replay: ") && lines[0].contains(want),
        "{:?} lacks {want:?}",
        lines[0]
    );
    assert_eq!(f.stdout_text(), "init failed\nsum 60 mode 0\n");
}

#[test]
fn an_unwritable_log_path_is_one_line_and_the_program_runs_on() {
    let dir = tempfile::tempdir().unwrap();
    let exe = program(dir.path());
    let f = run(&mut replay_command(
        &exe,
        "record",
        Path::new("/nonexistent/dir/x.replay"),
    ));
    assert_one_line_and_runs_live(&f, "cannot create log /nonexistent/dir/x.replay");
    assert!(
        f.stderr.contains("the program runs without recording"),
        "{}",
        f.stderr
    );
}

#[test]
fn bad_option_values_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let exe = program(dir.path());
    let log = dir.path().join("x.replay");
    let f = run(replay_command(&exe, "record", &log).env("REPLAY_POLICY", "bogus"));
    assert_one_line_and_runs_live(&f, "bad value 'bogus' for option 'REPLAY_POLICY'");
    assert!(!log.exists(), "a log was created despite the bad option");

    let f = run(command(&exe).env("REPLAY_MODE", "recrod"));
    assert_one_line_and_runs_live(
        &f,
        "bad value 'recrod' for option 'REPLAY_MODE': expected record, replay or off",
    );

    let f = run(replay_command(&exe, "record", &log).env("REPLAY_FLUSH", "1h"));
    assert_one_line_and_runs_live(&f, "REPLAY_FLUSH");
}

#[test]
fn unknown_variables_warn_once_each_and_recording_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let exe = program(dir.path());
    let log = dir.path().join("x.replay");
    let f = run(replay_command(&exe, "record", &log)
        .env("REPLAY_COLOUR", "1")
        .env("REPLAY_SPEED", "fast"));
    assert_eq!(f.code(), 0, "{}", f.stderr);
    assert_eq!(f.stdout_text(), "init ok\nsum 60 mode 1\n");
    let lines = f.stderr_lines();
    assert_eq!(lines.len(), 2, "{}", f.stderr);
    assert!(
        lines[0].contains("ignoring unknown variable REPLAY_COLOUR"),
        "{}",
        f.stderr
    );
    assert!(
        lines[1].contains("ignoring unknown variable REPLAY_SPEED"),
        "{}",
        f.stderr
    );
    assert!(log.is_file());
}

#[test]
fn replay_without_a_log_option_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let exe = program(dir.path());
    let f = run(command(&exe).env("REPLAY_MODE", "replay"));
    assert_one_line_and_runs_live(&f, "replay mode needs a log");
}

#[test]
fn replay_of_missing_empty_random_or_cut_logs_is_one_line_never_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let exe = program(dir.path());
    let good = dir.path().join("good.replay");
    let rec = run(&mut replay_command(&exe, "record", &good));
    assert_eq!(rec.code(), 0, "{}", rec.stderr);
    assert_eq!(rec.stdout_text(), "init ok\nsum 60 mode 1\n");
    let bytes = std::fs::read(&good).unwrap();

    let missing = dir.path().join("missing.replay");
    let f = run(&mut replay_command(&exe, "replay", &missing));
    assert_one_line_and_runs_live(&f, "cannot open");

    let empty = dir.path().join("empty.replay");
    std::fs::write(&empty, b"").unwrap();
    assert_one_line_and_runs_live(
        &run(&mut replay_command(&exe, "replay", &empty)),
        "empty file",
    );

    // Deterministic "random" bytes (an xorshift), so a failure can be reproduced.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let noise: Vec<u8> = (0..4096)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let random = dir.path().join("random.replay");
    std::fs::write(&random, &noise).unwrap();
    assert_one_line_and_runs_live(
        &run(&mut replay_command(&exe, "replay", &random)),
        "not a replay log",
    );

    // The magic line with garbage after it.
    let mut fake = b"REPLAY-LOG 1\n".to_vec();
    fake.extend_from_slice(&noise);
    let fake_path = dir.path().join("fake.replay");
    std::fs::write(&fake_path, &fake).unwrap();
    let f = run(&mut replay_command(&exe, "replay", &fake_path));
    assert_eq!(f.code(), 0, "{}", f.stderr);
    assert_eq!(f.stderr_lines().len(), 1, "{}", f.stderr);

    // Cut inside the magic line and inside the header: nothing to replay, one line.
    for cut in [5, 20, 40] {
        let p = dir.path().join(format!("cut{cut}.replay"));
        std::fs::write(&p, &bytes[..cut.min(bytes.len() - 1)]).unwrap();
        let f = run(&mut replay_command(&exe, "replay", &p));
        assert_eq!(f.code(), 0, "cut at {cut}: {}", f.stderr);
        let lines = f.stderr_lines();
        assert_eq!(lines.len(), 1, "cut at {cut}: {}", f.stderr);
        assert!(
            lines[0].contains("cannot replay") && lines[0].contains("cut"),
            "cut at {cut}: {}",
            lines[0]
        );
    }

    // Cut inside the events: the header is fine, so replay starts, and the program's first
    // call finds no recorded event: the recording ends there, said in one line, status 86
    // (not a crash).
    // Frames: "REPLAY-LOG 1\n", then each a 24-byte header whose bytes 8..12 hold the length
    // that follows. The first frame is the header, the second the chunk of events.
    let frame_len =
        |at: usize| 24 + u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
    let chunk_at = 13 + frame_len(13);
    assert_eq!(
        &bytes[chunk_at..chunk_at + 4],
        b"RPLC",
        "the second frame is a chunk"
    );
    let cut = dir.path().join("cut-events.replay");
    std::fs::write(&cut, &bytes[..chunk_at + frame_len(chunk_at) / 2]).unwrap();
    let f = run(&mut replay_command(&exe, "replay", &cut));
    assert_eq!(f.code(), 86, "{}", f.stderr);
    assert_eq!(f.stderr_lines().len(), 1, "{}", f.stderr);
    assert!(
        f.stderr
            .contains("the recording ends at event #0 (thread \"main\" went on): the recorder was killed or cut"),
        "{}",
        f.stderr
    );
}

#[test]
fn a_forgotten_init_is_said_once_when_replay_mode_is_set() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile_c("no_init", "no_init", dir.path(), &[]);
    let log = dir.path().join("x.replay");
    let f = run(&mut replay_command(&exe, "record", &log));
    assert_eq!(f.code(), 0, "stderr:\n{}", f.stderr);
    assert_eq!(f.stdout_text(), "sum 60 mode 0\n");
    let lines = f.stderr_lines();
    assert_eq!(lines.len(), 1, "want one line, got:\n{}", f.stderr);
    assert!(
        lines[0].starts_with("replay: ")
            && lines[0].contains("never called replay_init_from_env()"),
        "{:?}",
        lines[0]
    );
    assert!(!log.exists(), "a log was created without init");

    // Without REPLAY_MODE nothing is said.
    let f = run(&mut command(&exe));
    assert_eq!(f.code(), 0);
    assert_eq!(f.stderr, "", "stderr:\n{}", f.stderr);
}
