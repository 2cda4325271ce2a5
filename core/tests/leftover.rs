//! Leftover reports: events unused at the end of a replay are reported by the sequence number
//! and thread of the first of them, wherever it waits (a thread's tape, the per-kind stash of
//! `next_of`/`next_of_run`, events given back by `unread_of`), in strict and relaxed order,
//! and when the thread that held them has ended.

mod common;
use replay_core::report::DivergenceKind;
use replay_core::*;
use std::path::Path;
use std::time::Duration;

fn val(e: &Event) -> u64 {
    match e.payload {
        Payload::Uint { value } => value,
        ref p => panic!("{p:?}"),
    }
}

/// Recorded on one thread `thread` ("main" when that is the main thread): a0 b0 a1 b1 a2
/// c(digest 5) a3 a4, after `before` events of kind "x" on the main thread.
fn log(path: &Path, thread: &str, before: u64) {
    let r = common::recorder(path);
    let (a, b, c, x) = (r.intern("a"), r.intern("b"), r.intern("c"), r.intern("x"));
    for i in 0..before {
        r.record(x, 0, None, PayloadRef::Uint(100 + i));
    }
    let body = |r: &Recorder| {
        for i in 0..2u64 {
            r.record(a, 0, None, PayloadRef::Uint(i));
            r.record(b, 0, None, PayloadRef::Uint(10 + i));
        }
        r.record(a, 0, None, PayloadRef::Uint(2));
        r.record(c, 0, Some(5), PayloadRef::Uint(20));
        r.record(a, 0, None, PayloadRef::Uint(3));
        r.record(a, 0, None, PayloadRef::Uint(4));
    };
    if thread == "main" {
        body(&r);
    } else {
        std::thread::scope(|s| {
            s.spawn(|| {
                r.name_thread(thread);
                body(&r);
            });
        });
    }
    r.finish().unwrap();
}

fn leftover(d: &report::Divergence) -> (u64, u64) {
    match d.kind {
        DivergenceKind::Leftover { left, total } => (left, total),
        ref k => panic!("{k:?}: {}", d.render()),
    }
}

fn both_orders() -> [Order; 2] {
    [Order::Strict, Order::Relaxed]
}

#[test]
fn events_stashed_by_next_of_run_are_reported_by_their_own_number() {
    for order in both_orders() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("stash.replay");
        log(&p, "main", 0);
        let rp = common::replayer(&p, order, Duration::from_secs(2));
        let (a, b) = (rp.intern("a"), rp.intern("b"));
        let mut run = Vec::new();
        // Every a (#0 #2 #4 #6 #7); b0 (#1), b1 (#3) and c (#5) go to their stashes.
        rp.next_of_run(a, 10, &mut run).unwrap();
        assert_eq!(run.iter().map(val).collect::<Vec<_>>(), vec![0, 1, 2, 3, 4]);
        assert_eq!(val(&rp.next_of(b, 0, None).unwrap()), 10);
        // b1 and c never asked for: the first of them is #3, on thread 0.
        let d = rp.finish().unwrap_err();
        assert_eq!(leftover(&d), (2, 8), "{order:?}");
        assert_eq!(
            (d.seq, d.thread, d.thread_name.as_str()),
            (3, 0, "main"),
            "{order:?}"
        );
        let text = d.render();
        assert!(text.contains("(first: #3)"), "{text}");
        assert!(text.contains("first not replayed: #3"), "{text}");
        assert!(
            text.contains("t0 main") && text.contains(" b = 11u"),
            "{text}"
        );
    }
}

#[test]
fn events_given_back_by_unread_of_are_reported_by_their_own_number() {
    for order in both_orders() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("unread.replay");
        log(&p, "main", 0);
        let rp = common::replayer(&p, order, Duration::from_secs(2));
        let (a, b, c) = (rp.intern("a"), rp.intern("b"), rp.intern("c"));
        let mut run = Vec::new();
        rp.next_of_run(a, 10, &mut run).unwrap();
        // a3 (#6) and a4 (#7) unused by the front end: back they go.
        rp.unread_of(a, run.split_off(3));
        for _ in 0..2 {
            rp.next_of(b, 0, None).unwrap();
        }
        rp.next_of(c, 0, Some(5)).unwrap();
        let d = rp.finish().unwrap_err();
        assert_eq!(leftover(&d), (2, 8), "{order:?}");
        assert_eq!((d.seq, d.thread), (6, 0), "{order:?}");
    }
}

#[test]
fn relaxed_next_leftover_names_the_first_unused_event_of_the_tape() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("tape.replay");
    log(&p, "main", 0);
    let rp = common::replayer(&p, Order::Relaxed, Duration::from_secs(2));
    let (a, b) = (rp.intern("a"), rp.intern("b"));
    rp.next(a, 0, None).unwrap();
    rp.next(b, 0, None).unwrap();
    let d = rp.finish().unwrap_err();
    assert_eq!(leftover(&d), (6, 8));
    assert_eq!((d.seq, d.thread), (2, 0));
}

/// The thread that held the unused events has ended (its thread-local cursor and stash are
/// gone) when the main thread finishes: the report still names them and that thread.
#[test]
fn leftover_of_an_ended_thread_names_that_thread() {
    for order in both_orders() {
        for stash in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let p = dir.path().join("ended.replay");
            // x0 x1 on main (#0 #1), then the worker's a0 b0 a1 b1 a2 c a3 a4 (#2..#9).
            log(&p, "worker", 2);
            let rp = common::replayer(&p, order, Duration::from_secs(2));
            let (a, x) = (rp.intern("a"), rp.intern("x"));
            rp.next(x, 0, None).unwrap();
            rp.next(x, 0, None).unwrap();
            std::thread::scope(|s| {
                s.spawn(|| {
                    rp.name_thread("worker");
                    if stash {
                        // a0 a1 a2 taken, b0 (#3) and b1 (#5) stashed: #3 comes first.
                        let mut run = Vec::new();
                        rp.next_of_run(a, 3, &mut run).unwrap();
                        assert_eq!(run.len(), 3);
                    } else {
                        // a0 taken: b0 (#3) is the next on the worker's tape.
                        rp.next(a, 0, None).unwrap();
                    }
                });
            });
            let d = rp.finish().unwrap_err();
            let left = if stash { 5 } else { 7 };
            assert_eq!(leftover(&d), (left, 10), "{order:?} stash {stash}");
            assert_eq!(d.seq, 3, "{order:?} stash {stash}: {}", d.render());
            assert_eq!(d.thread_name, "worker", "{order:?} stash {stash}");
            assert_ne!(d.thread, 0, "{order:?} stash {stash}");
        }
    }
}

#[test]
fn no_leftover_when_everything_was_used() {
    for order in both_orders() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("all.replay");
        log(&p, "main", 0);
        let rp = common::replayer(&p, order, Duration::from_secs(2));
        let (a, b, c) = (rp.intern("a"), rp.intern("b"), rp.intern("c"));
        let mut run = Vec::new();
        rp.next_of_run(b, 10, &mut run).unwrap();
        rp.next_of(c, 0, Some(5)).unwrap();
        run.clear();
        rp.next_of_run(a, 10, &mut run).unwrap();
        assert_eq!(run.len(), 5);
        rp.finish().unwrap();
    }
}
