//! The session's verdict protocol and output verification, through `Core` as front ends
//! use it: what each replayed call or write gets, what is reported, and that nothing runs
//! live after a stop.

use replay_core::session::{Frontend, StartError, EXIT_WRONG_LOG};
use replay_core::{Core, Options, PayloadRef, Stream, Verdict, EXIT_DIVERGENCE};
use std::path::Path;

fn fe(program: &str) -> Frontend<'_> {
    Frontend {
        runtime: "test",
        runtime_version: "1",
        program,
        default_log: "unused.replay",
        output: true,
        per_kind: false,
        argv: None,
    }
}

fn opts(mode: &str, log: &Path, extra: &[(&str, &str)]) -> Options {
    let mut o = Options::default();
    o.set("mode", Some(mode)).unwrap();
    o.set("log", Some(log.to_str().unwrap())).unwrap();
    o.set("flush", Some("10ms")).unwrap();
    for (k, v) in extra {
        o.set(k, Some(v)).unwrap();
    }
    o
}

fn start(mode: &str, log: &Path, extra: &[(&str, &str)]) -> Core {
    Core::start(opts(mode, log, extra), &fe("app"))
        .unwrap()
        .unwrap()
}

fn no_stack() -> Option<String> {
    None
}

fn live(v: Verdict) {
    assert!(matches!(v, Verdict::Live), "{v:?}");
}

/// Records `writes` to stdout around one clock event and exits with `status`.
fn record(log: &Path, writes: &[&str], status: i32) {
    let c = start("record", log, &[]);
    let clock = c.intern("t.clock");
    c.record(clock, 0, None, PayloadRef::Int(7));
    c.output(Stream::Stderr, b"warning\n", &no_stack);
    for w in writes {
        live(c.output(Stream::Stdout, w.as_bytes(), &no_stack));
    }
    c.exit_status(status);
    live(c.shutdown().unwrap());
}

/// Replays: the clock, then `writes`, the same stderr line and exit `status`. Returns the
/// verdict of the first write that is not `Live`, else of the shutdown, and the core.
fn replay(log: &Path, writes: &[&str], status: i32, extra: &[(&str, &str)]) -> (Verdict, Core) {
    let c = start("replay", log, extra);
    let clock = c.intern("t.clock");
    assert!(matches!(
        c.replay(clock, 0, None, &no_stack),
        Verdict::Serve(_)
    ));
    live(c.output(Stream::Stderr, b"warning\n", &no_stack));
    for w in writes {
        match c.output(Stream::Stdout, w.as_bytes(), &|| {
            Some("at Main.main".into())
        }) {
            Verdict::Live => {}
            v => return (v, c),
        }
    }
    c.exit_status(status);
    let v = c.shutdown().unwrap_or(Verdict::Live);
    (v, c)
}

#[test]
fn output_is_compared_as_a_stream_whatever_the_writes_split() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.replay");
    record(&log, &["hello\nwor", "ld\n", "bye\n"], 0);
    let (v, c) = replay(&log, &["hel", "lo\nworld\nb", "ye\n"], 0, &[]);
    live(v);
    assert_eq!(c.divergences(), 0);
}

#[test]
fn the_first_difference_names_stream_byte_line_and_both_lines() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.replay");
    record(&log, &["start\n", "X=one\n", "end\n"], 0);
    let (v, c) = replay(&log, &["start\n", "X=two\n", "end\n"], 0, &[]);
    assert!(matches!(v, Verdict::Stop(EXIT_DIVERGENCE)), "{v:?}");
    let r = c.last_report().unwrap();
    assert!(
        r.contains("the program's stdout differs from the recording at byte 8 (line 2)"),
        "{r}"
    );
    assert!(r.contains("recorded: \"X=one\""), "{r}");
    assert!(r.contains("replayed: \"X=two\""), "{r}");
    assert!(r.contains("at Main.main"), "{r}");
    assert!(r.contains("(policy abort: exiting with status 86)"), "{r}");
    // Stopped: every later call of any thread gets the stop, none runs live.
    let clock = c.intern("t.clock");
    std::thread::scope(|s| {
        s.spawn(|| {
            assert!(matches!(
                c.replay(clock, 0, None, &no_stack),
                Verdict::Stop(86)
            ));
            assert!(matches!(
                c.output(Stream::Stdout, b"x", &no_stack),
                Verdict::Stop(86)
            ));
        });
    });
    assert!(matches!(c.shutdown(), Ok(Verdict::Stop(86))));
    assert_eq!(c.divergences(), 1);
}

#[test]
fn writing_more_or_less_than_the_recording_is_a_divergence() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.replay");
    record(&log, &["one\n", "two\n"], 0);
    // More: past the recorded stream's end.
    let (v, c) = replay(&log, &["one\n", "two\n", "three\n"], 0, &[]);
    assert!(matches!(v, Verdict::Stop(86)), "{v:?}");
    let r = c.last_report().unwrap();
    assert!(r.contains("at byte 8 (line 3)"), "{r}");
    assert!(
        r.contains("recorded: (nothing: the recorded stdout ends here)"),
        "{r}"
    );
    assert!(r.contains("replayed: \"three\""), "{r}");
    // Less, by a whole write: the program ended before it.
    let (v, c) = replay(&log, &["one\n"], 0, &[]);
    assert!(matches!(v, Verdict::Stop(86)), "{v:?}");
    let r = c.last_report().unwrap();
    assert!(r.contains("at byte 4 (line 2)"), "{r}");
    assert!(r.contains("recorded: \"two\""), "{r}");
    assert!(r.contains("replayed: (nothing: the program ended)"), "{r}");
    // Less, by part of a write.
    let (v, c) = replay(&log, &["one\n", "tw"], 0, &[]);
    assert!(matches!(v, Verdict::Stop(86)), "{v:?}");
    let r = c.last_report().unwrap();
    assert!(r.contains("at byte 6 (line 2)"), "{r}");
    assert!(r.contains("recorded: \"two\""), "{r}");
}

#[test]
fn another_exit_status_is_a_divergence() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.replay");
    record(&log, &["x\n"], 3);
    let (v, _) = replay(&log, &["x\n"], 3, &[]);
    live(v);
    let (v, c) = replay(&log, &["x\n"], 0, &[]);
    assert!(matches!(v, Verdict::Stop(86)), "{v:?}");
    let r = c.last_report().unwrap();
    assert!(
        r.contains("the program exited with status 0; the recording exited with 3"),
        "{r}"
    );
}

#[test]
fn with_verify_output_off_the_recorded_output_is_not_compared_and_holds_up_no_turn() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.replay");
    // Output between two clock reads, on two threads, in strict order.
    {
        let c = start("record", &log, &[]);
        let clock = c.intern("t.clock");
        c.record(clock, 0, None, PayloadRef::Int(1));
        c.output(Stream::Stdout, b"main says hi\n", &no_stack);
        std::thread::scope(|s| {
            s.spawn(|| {
                c.output(Stream::Stdout, b"worker\n", &no_stack);
                c.record(clock, 0, None, PayloadRef::Int(2));
            })
            .join()
            .unwrap();
        });
        c.record(clock, 0, None, PayloadRef::Int(3));
        c.exit_status(0);
        c.shutdown().unwrap();
    }
    // Replayed with no writes at all and another exit status: not compared, and the
    // recorded writes hold up no thread's turn (the worker's clock read comes after the main
    // thread's write in the recorded order).
    let c = start("replay", &log, &[("verify-output", "off")]);
    assert!(!c.wants_output());
    let clock = c.intern("t.clock");
    let val = |v: Verdict| match v {
        Verdict::Serve(e) => e.payload,
        v => panic!("{v:?}"),
    };
    assert_eq!(
        val(c.replay(clock, 0, None, &no_stack)),
        replay_core::Payload::Int { value: 1 }
    );
    std::thread::scope(|s| {
        s.spawn(|| {
            assert_eq!(
                val(c.replay(clock, 0, None, &no_stack)),
                replay_core::Payload::Int { value: 2 }
            );
        });
    });
    assert_eq!(
        val(c.replay(clock, 0, None, &no_stack)),
        replay_core::Payload::Int { value: 3 }
    );
    c.exit_status(1);
    live(c.shutdown().unwrap());
    assert_eq!(c.divergences(), 0);
}

#[test]
fn a_log_of_another_runtime_or_program_is_refused_with_exit_3() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.replay");
    record(&log, &["x\n"], 0);
    let refused = |e: Result<Option<Core>, StartError>| match e {
        Err(e) => {
            assert_eq!(e.exit, Some(EXIT_WRONG_LOG));
            assert!(!e.message.contains('\n'), "{}", e.message);
            e.message
        }
        Ok(_) => panic!("started"),
    };
    let mut other = fe("app");
    other.runtime = "jvm";
    let m = refused(Core::start(opts("replay", &log, &[]), &other));
    assert!(
        m.contains("was recorded by test running app, but this is jvm running app"),
        "{m}"
    );
    let m = refused(Core::start(opts("replay", &log, &[]), &fe("other")));
    assert!(m.contains("this is test running other"), "{m}");
    // The same program from another directory is the same program.
    let c = Core::start(opts("replay", &log, &[]), &fe("/opt/bin/app"));
    assert!(c.unwrap().is_some());
}

#[test]
fn warn_continue_serves_the_recorded_event_and_warn_live_goes_live() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.replay");
    record(&log, &["x\n"], 0);
    let c = start("replay", &log, &[("policy", "warn-continue")]);
    let other = c.intern("t.other");
    assert!(matches!(
        c.replay(other, 0, None, &no_stack),
        Verdict::Serve(_)
    ));
    assert!(c
        .last_report()
        .unwrap()
        .contains("(policy warn-continue: replay goes on)"));
    let c = start("replay", &log, &[("policy", "warn-live")]);
    live(c.replay(other, 0, None, &no_stack));
    // Live from then on: nothing more is compared or reported.
    live(c.output(Stream::Stdout, b"anything", &no_stack));
    assert!(matches!(c.shutdown(), Err(m) if m == "replay diverged 1 time(s)"));
}

#[test]
fn past_the_end_of_a_cut_log_replay_says_so_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.replay");
    {
        let c = start("record", &log, &[]);
        let clock = c.intern("t.clock");
        for i in 0..3 {
            c.record(clock, 0, None, PayloadRef::Int(i));
        }
        c.shutdown().unwrap();
    }
    // Cut the trailer off, as a killed recorder leaves it.
    let bytes = std::fs::read(&log).unwrap();
    let trailer = bytes.len() - 24 - trailer_len(&bytes);
    std::fs::write(&log, &bytes[..trailer]).unwrap();
    let c = start("replay", &log, &[]);
    let clock = c.intern("t.clock");
    for _ in 0..3 {
        assert!(matches!(
            c.replay(clock, 0, None, &no_stack),
            Verdict::Serve(_)
        ));
    }
    assert!(matches!(
        c.replay(clock, 0, None, &no_stack),
        Verdict::Stop(86)
    ));
    let r = c.last_report().unwrap();
    assert_eq!(r.lines().count(), 1, "{r}");
    assert!(r.contains("the recording ends at event #3"), "{r}");
    assert!(r.contains("the recorder was killed or cut"), "{r}");
}

/// Payload length of the last frame (the trailer) of a whole log.
fn trailer_len(bytes: &[u8]) -> usize {
    let mut at = 13;
    let mut last = 0;
    while at < bytes.len() {
        last = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        at += 24 + last;
    }
    last
}

#[test]
fn threads_writes_wait_for_no_turn_and_another_interleaving_is_a_divergence() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.replay");
    let one = |c: &Core, name: &str, text: &'static [u8]| {
        c.name_thread(name);
        live(c.output(Stream::Stdout, text, &no_stack));
    };
    {
        let c = start("record", &log, &[]);
        let clock = c.intern("t.clock");
        c.record(clock, 0, None, PayloadRef::Int(1));
        std::thread::scope(|s| {
            s.spawn(|| one(&c, "a", b"from a\n")).join().unwrap();
            s.spawn(|| one(&c, "b", b"from b\n")).join().unwrap();
        });
        c.record(clock, 0, None, PayloadRef::Int(2));
        c.shutdown().unwrap();
    }
    // Replayed in the recorded order: faithful.
    let c = start("replay", &log, &[("timeout", "2s")]);
    let clock = c.intern("t.clock");
    assert!(matches!(
        c.replay(clock, 0, None, &no_stack),
        Verdict::Serve(_)
    ));
    std::thread::scope(|s| {
        s.spawn(|| one(&c, "a", b"from a\n")).join().unwrap();
        s.spawn(|| one(&c, "b", b"from b\n")).join().unwrap();
    });
    assert!(matches!(
        c.replay(clock, 0, None, &no_stack),
        Verdict::Serve(_)
    ));
    live(c.shutdown().unwrap());
    // Replayed in the other order, b holding a lock that a then waits for (as two threads
    // printing through one stream do): the stream's bytes differ, which is said at b's write
    // at once. (Had writes waited for their turns, this would have stalled.)
    let c = start("replay", &log, &[("timeout", "2s")]);
    c.replay(clock, 0, None, &no_stack);
    let lock = std::sync::Mutex::new(());
    let t = std::time::Instant::now();
    let (va, vb) = std::thread::scope(|s| {
        let g = lock.lock().unwrap();
        let a = s.spawn(|| {
            let _g = lock.lock().unwrap();
            c.name_thread("a");
            c.output(Stream::Stdout, b"from a\n", &no_stack)
        });
        let vb = s
            .spawn(|| {
                c.name_thread("b");
                c.output(Stream::Stdout, b"from b\n", &no_stack)
            })
            .join()
            .unwrap();
        drop(g);
        (a.join().unwrap(), vb)
    });
    assert!(t.elapsed() < std::time::Duration::from_secs(1));
    assert!(matches!(vb, Verdict::Stop(86)), "{vb:?}");
    assert!(matches!(va, Verdict::Stop(86)), "{va:?}");
    let r = c.last_report().unwrap();
    assert!(
        r.contains("the program's stdout interleaves differently from the recording: thread 2 \"b\" wrote before thread 1 \"a\" did"),
        "{r}"
    );
    assert!(r.contains("recorded: \"from a\""), "{r}");
    assert!(r.contains("replayed: \"from b\""), "{r}");
    // What a thread writes is still compared: b writing a's text differs.
    let c = start("replay", &log, &[("timeout", "2s")]);
    c.replay(clock, 0, None, &no_stack);
    let v = std::thread::scope(|s| {
        s.spawn(|| one(&c, "a", b"from a\n")).join().unwrap();
        s.spawn(|| {
            c.name_thread("b");
            c.output(Stream::Stdout, b"from a\n", &no_stack)
        })
        .join()
        .unwrap()
    });
    assert!(matches!(v, Verdict::Stop(86)), "{v:?}");
    let r = c.last_report().unwrap();
    assert!(
        r.contains("the program's stdout as thread 2 \"b\" wrote it differs from the recording at byte 5 (line 1)"),
        "{r}"
    );
}

#[test]
fn a_front_end_can_compare_ahead_and_say_what_matched() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.replay");
    record(&log, &["one\n", "two\n", "three\n"], 0);
    let c = start("replay", &log, &[]);
    let clock = c.intern("t.clock");
    c.replay(clock, 0, None, &no_stack);
    live(c.output(Stream::Stderr, b"warning\n", &no_stack));
    // Looked at in pieces, without taking.
    assert_eq!(c.output_ahead(Stream::Stdout, 0, 6), b"one\ntw");
    assert_eq!(c.output_ahead(Stream::Stdout, 6, 100), b"o\nthree\n");
    assert_eq!(c.output_ahead(Stream::Stdout, 14, 100), b"");
    // The front end found "one\nt" equal; the core compares from there.
    c.output_verified(Stream::Stdout, 5);
    assert_eq!(c.output_ahead(Stream::Stdout, 0, 3), b"wo\n");
    let v = c.output(Stream::Stdout, b"wo\nthree!\n", &no_stack);
    assert!(matches!(v, Verdict::Stop(86)), "{v:?}");
    let r = c.last_report().unwrap();
    assert!(r.contains("at byte 13 (line 3)"), "{r}");
    assert!(r.contains("recorded: \"three\""), "{r}");
    assert!(r.contains("replayed: \"three!\""), "{r}");
}
