//! The C front end, end to end: programs built with `cc` against target/release/libreplay_c.a
//! are recorded, then replayed with their inputs changed or gone.

use replay_core::{LogReader, Ordered, Payload};
use replay_tests::{compile_c, replay_command, run};
use std::path::Path;

/// Kinds of every event of a log, in sequence order.
fn kinds(log: &Path) -> Vec<String> {
    let mut it = Ordered::new(LogReader::open(log).expect("log opens"));
    let mut v = Vec::new();
    while let Some(e) = it.next() {
        v.push(it.reader.strings().name(e.kind).to_string());
    }
    assert!(it.error().is_none(), "log read error: {:?}", it.error());
    v
}

#[test]
fn replay_reproduces_output_after_the_input_file_changed_and_was_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile_c("record_io", "record_io", dir.path(), &[]);
    let input = dir.path().join("input.txt");
    std::fs::write(
        &input,
        "The quick brown fox jumps over the lazy dog.\nSecond line.\n",
    )
    .unwrap();
    let log = dir.path().join("io.replay");

    let rec = run(replay_command(&exe, "record", &log).arg(&input));
    assert_eq!(rec.code(), 0, "record failed: {}", rec.stderr);
    let out = rec.stdout_text();
    assert!(out.contains("The quick brown fox"), "{out}");
    assert!(out.contains("getrandom 16:"), "{out}");

    // Every macro kind made it into the log, in program order.
    let k = kinds(&log);
    assert_eq!(
        k.first().map(String::as_str),
        Some("c.clock_gettime"),
        "{k:?}"
    );
    for want in ["c.open", "c.read", "c.close", "c.getrandom", "c.value"] {
        assert!(k.iter().any(|x| x == want), "no {want} event in {k:?}");
    }
    // 58 bytes in reads of at most 7 bytes: 9 reads with data, then the 0 of end of file.
    assert_eq!(k.iter().filter(|x| *x == "c.read").count(), 10, "{k:?}");

    std::fs::write(&input, "something else entirely").unwrap();
    let changed = run(replay_command(&exe, "replay", &log).arg(&input));
    assert_eq!(changed.code(), 0, "replay failed: {}", changed.stderr);
    assert_eq!(
        changed.stdout_text(),
        out,
        "replay after the file changed differs"
    );

    std::fs::remove_file(&input).unwrap();
    for round in 0..2 {
        let gone = run(replay_command(&exe, "replay", &log).arg(&input));
        assert_eq!(gone.code(), 0, "replay {round} failed: {}", gone.stderr);
        assert_eq!(
            gone.stdout, rec.stdout,
            "replay {round} after the file was deleted differs"
        );
        assert!(gone.stderr.contains("mode 2"), "{}", gone.stderr);
    }

    // Live, the program now fails to open the file: replay really did not call open.
    let live = run(replay_tests::command(&exe).arg(&input));
    assert_eq!(live.code(), 4, "{}", live.stderr);
}

#[test]
fn replay_does_not_evaluate_values_and_nested_uses_are_not_events() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile_c("semantics", "semantics", dir.path(), &[]);
    let missing = dir.path().join("missing");
    let log = dir.path().join("sem.replay");

    let rec = run(replay_command(&exe, "record", &log).arg(&missing));
    assert_eq!(rec.code(), 0, "{}", rec.stderr);
    assert!(
        rec.stderr.contains("evaluations 5 mode 1"),
        "{}",
        rec.stderr
    );
    let out = rec.stdout_text();
    assert!(
        out.contains("open -1 errno No such file or directory"),
        "{out}"
    );

    // The clock read inside bump() ran inside REPLAY_VALUE: not an event. So the log holds
    // 5 values, the open, and the 8 typed values.
    let k = kinds(&log);
    assert_eq!(k.len(), 14, "{k:?}");
    assert!(
        !k.iter().any(|x| x == "c.clock_gettime"),
        "nested use was recorded: {k:?}"
    );

    // In replay the expression is not evaluated (the side-effect counter stays 0), open is
    // not called (the file exists now, yet the recorded ENOENT comes back), and every typed
    // value comes back bit for bit.
    std::fs::write(&missing, "now it exists").unwrap();
    let rep = run(replay_command(&exe, "replay", &log).arg(&missing));
    assert_eq!(rep.code(), 0, "{}", rep.stderr);
    assert!(
        rep.stderr.contains("evaluations 0 mode 2"),
        "{}",
        rep.stderr
    );
    assert_eq!(rep.stdout_text(), out);
}

#[test]
fn recorded_payloads_have_the_c_types() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile_c("semantics", "semantics", dir.path(), &[]);
    let log = dir.path().join("types.replay");
    let rec = run(replay_command(&exe, "record", &log).arg(dir.path().join("missing")));
    assert_eq!(rec.code(), 0, "{}", rec.stderr);

    let payloads: Vec<Payload> = Ordered::new(LogReader::open(&log).unwrap())
        .map(|e| e.payload)
        .collect();
    let types: Vec<&str> = payloads
        .iter()
        .map(|p| match p {
            Payload::Int { .. } => "int",
            Payload::Uint { .. } => "uint",
            Payload::Float { .. } => "float",
            Payload::Ret { .. } => "ret",
            _ => "other",
        })
        .collect();
    // 5 x long; open; uint8_t, int16_t, uint64_t, int64_t, float, double, _Bool, enum.
    let want = [
        "int", "int", "int", "int", "int", "ret", "uint", "int", "uint", "int", "float", "float",
        "uint", "int",
    ];
    assert_eq!(types, want);
    // open(2) failed with ENOENT: a Ret payload carrying errno 2 and no bytes.
    assert_eq!(
        payloads[5],
        Payload::Ret {
            ret: -1,
            errno: 2,
            data: None
        }
    );
    // The int16_t was negative and is stored sign-extended; the _Bool is 0 or 1.
    assert!(
        matches!(payloads[7], Payload::Int { value } if (-32767..=0).contains(&value)),
        "{:?}",
        payloads[7]
    );
    assert!(
        matches!(payloads[12], Payload::Uint { value } if value <= 1),
        "{:?}",
        payloads[12]
    );
}

#[test]
fn a_forked_child_runs_live_and_leaves_the_session_alone() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile_c("forks", "forks", dir.path(), &[]);
    let log = dir.path().join("fork.replay");
    let rec = run(&mut replay_command(&exe, "record", &log));
    assert_eq!(rec.code(), 0, "{}", rec.stderr);
    assert!(
        rec.stdout_text().starts_with("child ran live"),
        "{}",
        rec.stdout_text()
    );
    // Only the parent's two values are events.
    assert_eq!(kinds(&log), ["c.value", "c.value"]);
    let rep = run(&mut replay_command(&exe, "replay", &log));
    assert_eq!(rep.code(), 0, "{}", rep.stderr);
    assert_eq!(rep.stdout, rec.stdout);
}
