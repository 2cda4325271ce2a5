//! Replay cursors: strict and relaxed order, verification, and every kind of divergence.

mod common;
use replay_core::report::DivergenceKind;
use replay_core::*;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Records `threads` named threads that each make `per` calls, and returns the global order
/// (thread, i) in which the calls were recorded.
fn record_threads(path: &std::path::Path, threads: u32, per: u64) -> Vec<(u32, u64)> {
    let r = common::recorder(path);
    let k = r.intern("t.value");
    let order = Arc::new(Mutex::new(Vec::new()));
    std::thread::scope(|s| {
        for t in 0..threads {
            let (r, order) = (&r, order.clone());
            s.spawn(move || {
                r.name_thread(&format!("worker-{t}"));
                for i in 0..per {
                    // The lock makes "record order" observable: seq order == push order.
                    let mut o = order.lock().unwrap();
                    r.record(k, 0, None, PayloadRef::Uint(u64::from(t) << 32 | i));
                    o.push((t, i));
                }
            });
        }
    });
    r.finish().unwrap();
    Arc::try_unwrap(order).unwrap().into_inner().unwrap()
}

#[test]
fn strict_replay_reproduces_the_recorded_interleaving() {
    // Record two threads in strict alternation A, B, A, B, ... (seq 2i is A's, 2i+1 B's).
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.replay");
    let r = common::recorder(&p);
    let k = r.intern("t.value");
    let turn = Arc::new((Mutex::new(0u64), std::sync::Condvar::new()));
    std::thread::scope(|s| {
        for t in 0..2u64 {
            let (r, turn) = (&r, turn.clone());
            s.spawn(move || {
                r.name_thread(&format!("worker-{t}"));
                for i in 0..200u64 {
                    let (m, cv) = &*turn;
                    let mut g = cv.wait_while(m.lock().unwrap(), |n| *n % 2 != t).unwrap();
                    r.record(k, 0, None, PayloadRef::Uint(i));
                    *g += 1;
                    cv.notify_all();
                }
            });
        }
    });
    r.finish().unwrap();
    // Replay with B eager and A slow: B's event 2i+1 may only be handed out after A has
    // asked for (and been given) event 2i. Relaxed order would let B run ahead.
    let rp = common::replayer(&p, Order::Strict, Duration::from_secs(10));
    let k = rp.intern("t.value");
    let asked: Arc<Vec<std::sync::atomic::AtomicBool>> =
        Arc::new((0..400).map(|_| Default::default()).collect());
    std::thread::scope(|s| {
        let (rp2, asked2) = (&rp, asked.clone());
        s.spawn(move || {
            rp2.name_thread("worker-0");
            for i in 0..200u64 {
                std::thread::sleep(Duration::from_micros(300));
                asked2[2 * i as usize].store(true, std::sync::atomic::Ordering::SeqCst);
                assert_eq!(rp2.next(k, 0, None).unwrap().seq, 2 * i);
            }
        });
        let (rp3, asked3) = (&rp, asked.clone());
        s.spawn(move || {
            rp3.name_thread("worker-1");
            for i in 0..200u64 {
                let e = rp3.next(k, 0, None).unwrap();
                assert_eq!(e.seq, 2 * i + 1);
                assert!(
                    asked3[2 * i as usize].load(std::sync::atomic::Ordering::SeqCst),
                    "B ran ahead of A at #{}",
                    e.seq
                );
            }
        });
    });
    rp.finish().unwrap();
}

#[test]
fn strict_order_is_exact_when_observed_under_the_turn() {
    // Each replay thread records what it got *while holding its turn*: the value comes from
    // the event, and the event is only handed out at the thread's turn. The concatenation of
    // the values by seq must equal the recorded order.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s2.replay");
    let recorded = record_threads(&p, 4, 5_000);
    let rp = common::replayer(&p, Order::Strict, Duration::from_secs(10));
    let k = rp.intern("t.value");
    let got = Arc::new(Mutex::new(Vec::new()));
    std::thread::scope(|s| {
        for t in 0..4u32 {
            let (rp, got) = (&rp, got.clone());
            s.spawn(move || {
                rp.name_thread(&format!("worker-{t}"));
                for _ in 0..5_000u64 {
                    let e = rp.next(k, 0, None).unwrap();
                    got.lock().unwrap().push(e.seq);
                }
            });
        }
    });
    let mut seqs = Arc::try_unwrap(got).unwrap().into_inner().unwrap();
    let n = seqs.len();
    seqs.sort();
    assert_eq!(seqs, (0..n as u64).collect::<Vec<_>>());
    assert_eq!(recorded.len(), n);
}

#[test]
fn a_thread_that_never_gets_its_turn_is_a_stall_divergence_not_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("st.replay");
    // worker-0 records all its events before worker-1 starts, so worker-1's first event waits
    // for worker-0's.
    let r = common::recorder(&p);
    let k = r.intern("t.value");
    for t in 0..2u64 {
        std::thread::scope(|s| {
            s.spawn(|| {
                r.name_thread(&format!("worker-{t}"));
                for i in 0..25 {
                    r.record(k, 0, None, PayloadRef::Uint(i));
                }
            });
        });
    }
    r.finish().unwrap();
    let rp = common::replayer(&p, Order::Strict, Duration::from_millis(300));
    let k = rp.intern("t.value");
    // Only worker-1 runs in replay: it can never get its turn.
    let start = Instant::now();
    let err = std::thread::scope(|s| {
        s.spawn(|| {
            rp.name_thread("worker-1");
            for _ in 0..25 {
                if let Err(d) = rp.next(k, 0, None) {
                    return Some(d);
                }
            }
            None
        })
        .join()
        .unwrap()
    });
    let d = err.expect("replay of a missing thread must stall");
    assert!(start.elapsed() < Duration::from_secs(5));
    assert!(
        matches!(d.kind, DivergenceKind::Stalled { .. }),
        "{:?}",
        d.kind
    );
    let text = d.render();
    assert!(text.contains("no progress for 0.3s"), "{text}");
    assert!(
        text.contains("worker-0") && text.contains("never started in this run"),
        "{text}"
    );
    assert!(
        text.contains("worker-1") && text.contains("waits for its turn"),
        "{text}"
    );
    assert!(text.contains("next: replay dump"), "{text}");
}

#[test]
fn mismatch_exhaustion_and_leftovers_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.replay");
    let r = common::recorder(&p);
    let read = r.intern("c.read");
    let clock = r.intern("c.clock_gettime");
    let site = r.intern("app.c:42");
    for i in 0..3 {
        r.record(clock, 0, None, PayloadRef::Int(i));
    }
    r.record(
        read,
        site,
        Some(7),
        PayloadRef::Ret {
            ret: 3,
            errno: 0,
            data: Some(b"abc"),
        },
    );
    r.record(clock, 0, None, PayloadRef::Int(9));
    r.finish().unwrap();

    // Mismatch: the program reads with other inputs.
    let rp = common::replayer(&p, Order::Strict, Duration::from_secs(1));
    let (clock, read, site) = (
        rp.intern("c.clock_gettime"),
        rp.intern("c.read"),
        rp.intern("app.c:42"),
    );
    for _ in 0..3 {
        rp.next(clock, 0, None).unwrap();
    }
    let d = rp.next(read, site, Some(8)).unwrap_err();
    assert_eq!(d.kind, DivergenceKind::Mismatch);
    assert_eq!(d.seq, 3);
    let text = d.render();
    assert!(text.contains("event #3 in thread 0 \"main\""), "{text}");
    assert!(
        text.contains(
            "expected: c.read at app.c:42 [inputs 0000000000000007] -> ret=3 bytes[3] \"abc\""
        ),
        "{text}"
    );
    assert!(
        text.contains("actual:   c.read at app.c:42 [inputs 0000000000000008]"),
        "{text}"
    );
    assert!(text.contains("#2 "), "last events before: {text}");
    assert!(text.contains("--around 3"), "{text}");
    drop(rp);

    // Exhausted: more calls than recorded.
    let rp = common::replayer(&p, Order::Relaxed, Duration::from_secs(1));
    let (clock, read, site) = (
        rp.intern("c.clock_gettime"),
        rp.intern("c.read"),
        rp.intern("app.c:42"),
    );
    for _ in 0..3 {
        rp.next(clock, 0, None).unwrap();
    }
    rp.next(read, site, Some(7)).unwrap();
    rp.next(clock, 0, None).unwrap();
    let d = rp.next(clock, 0, None).unwrap_err();
    assert!(
        matches!(d.kind, DivergenceKind::Exhausted { recorded: 5, .. }),
        "{:?}",
        d.kind
    );
    assert!(d.render().contains("after its 5 recorded events ran out"));
    rp.finish().unwrap();
    drop(rp);

    // Leftover: the program stops early.
    let rp = common::replayer(&p, Order::Strict, Duration::from_secs(1));
    let clock = rp.intern("c.clock_gettime");
    rp.next(clock, 0, None).unwrap();
    let d = rp.finish().unwrap_err();
    assert!(
        matches!(d.kind, DivergenceKind::Leftover { left: 4, total: 5 }),
        "{:?}",
        d.kind
    );
    assert!(
        d.render()
            .contains("ended with 4 of 5 recorded events not replayed (first: #1)"),
        "{}",
        d.render()
    );
}

#[test]
fn relaxed_mode_lets_threads_run_in_any_order() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("r.replay");
    record_threads(&p, 3, 1000);
    let rp = common::replayer(&p, Order::Relaxed, Duration::from_millis(200));
    let k = rp.intern("t.value");
    // One thread at a time, last first: strict mode would stall here.
    for t in (0..3u32).rev() {
        std::thread::scope(|s| {
            s.spawn(|| {
                rp.name_thread(&format!("worker-{t}"));
                for i in 0..1000u64 {
                    assert_eq!(
                        rp.next(k, 0, None).unwrap().payload,
                        Payload::Uint {
                            value: u64::from(t) << 32 | i
                        }
                    );
                }
            });
        });
    }
    rp.finish().unwrap();
}

#[test]
fn unnamed_threads_bind_in_order_of_first_appearance_and_unknown_threads_diverge() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("u.replay");
    let r = common::recorder(&p);
    let k = r.intern("v");
    for t in 0..2u64 {
        std::thread::scope(|s| {
            s.spawn(|| r.record(k, 0, None, PayloadRef::Uint(t)));
        });
    }
    r.finish().unwrap();
    let rp = common::replayer(&p, Order::Strict, Duration::from_millis(200));
    let k = rp.intern("v");
    for t in 0..2u64 {
        std::thread::scope(|s| {
            s.spawn(|| {
                assert_eq!(
                    rp.next(k, 0, None).unwrap().payload,
                    Payload::Uint { value: t }
                )
            });
        });
    }
    let d = std::thread::scope(|s| s.spawn(|| rp.next(k, 0, None).unwrap_err()).join().unwrap());
    assert!(
        d.render().contains("the recording has no such thread"),
        "{}",
        d.render()
    );
}

#[test]
fn cut_log_replays_up_to_its_last_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("c.replay");
    let r = common::recorder(&p);
    let k = r.intern("v");
    for i in 0..100u64 {
        r.record(k, 0, None, PayloadRef::Uint(i));
    }
    r.flush();
    let len = std::fs::metadata(&p).unwrap().len();
    for i in 100..200u64 {
        r.record(k, 0, None, PayloadRef::Uint(i));
    }
    r.finish().unwrap();
    // Simulate a crash after the first flush: keep the bytes written by then, plus half a frame.
    let bytes = std::fs::read(&p).unwrap();
    std::fs::write(&p, &bytes[..len as usize + 30]).unwrap();
    let rp = common::replayer(&p, Order::Strict, Duration::from_millis(200));
    let k = rp.intern("v");
    for i in 0..100u64 {
        assert_eq!(
            rp.next(k, 0, None).unwrap().payload,
            Payload::Uint { value: i }
        );
    }
    assert!(rp.next(k, 0, None).is_err());
    assert!(matches!(rp.end(), Some(End::Cut { .. })));
}

#[test]
fn next_run_takes_a_threads_consecutive_events_without_waiting() {
    // Recorded: A×5, B×1, A×5 (seq 0-4 A, 5 B, 6-10 A).
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("run.replay");
    let r = common::recorder(&p);
    let k = r.intern("v");
    let other = r.intern("w");
    std::thread::scope(|s| {
        s.spawn(|| {
            r.name_thread("a");
            for i in 0..10u64 {
                r.record(k, 0, None, PayloadRef::Uint(i));
                if i == 4 {
                    // B records its one event between A's two halves.
                    std::thread::scope(|s2| {
                        s2.spawn(|| {
                            r.name_thread("b");
                            r.record(other, 0, None, PayloadRef::Uint(99));
                        });
                    });
                }
            }
        });
    });
    r.finish().unwrap();

    let rp = common::replayer(&p, Order::Strict, Duration::from_secs(2));
    let (k, other) = (rp.intern("v"), rp.intern("w"));
    std::thread::scope(|s| {
        s.spawn(|| {
            rp.name_thread("a");
            let mut buf = Vec::new();
            rp.next_run(k, 100, &mut buf).unwrap();
            assert_eq!(
                buf.iter().map(|e| e.seq).collect::<Vec<_>>(),
                vec![0, 1, 2, 3, 4]
            );
            buf.clear();
            // Waits for B's #5, then takes the rest in one go, capped by max.
            rp.next_run(k, 3, &mut buf).unwrap();
            assert_eq!(buf.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![6, 7, 8]);
            buf.clear();
            rp.next_run(k, 100, &mut buf).unwrap();
            assert_eq!(buf.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![9, 10]);
            let d = rp.mismatch(buf[1].clone(), other, 0, None);
            assert!(d.render().contains("event #10"), "{}", d.render());
        });
        s.spawn(|| {
            rp.name_thread("b");
            assert_eq!(rp.next(other, 0, None).unwrap().seq, 5);
        });
    });
    rp.finish().unwrap();
}

#[test]
fn next_of_serves_each_kind_in_order_whatever_the_order_between_kinds() {
    // Recorded on one thread: a0 b0 a1 b1 c0(digest 7).
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("kinds.replay");
    let r = common::recorder(&p);
    let (a, b, c) = (r.intern("a"), r.intern("b"), r.intern("c"));
    for i in 0..2u64 {
        r.record(a, 0, None, PayloadRef::Uint(i));
        r.record(b, 0, None, PayloadRef::Uint(10 + i));
    }
    r.record(c, 0, Some(7), PayloadRef::Uint(20));
    r.finish().unwrap();

    let rp = common::replayer(&p, Order::Strict, Duration::from_secs(2));
    let (a, b, c) = (rp.intern("a"), rp.intern("b"), rp.intern("c"));
    // The program asks in another order between kinds: c first, then all b, then all a.
    let val = |e: Event| match e.payload {
        Payload::Uint { value } => value,
        p => panic!("{p:?}"),
    };
    assert_eq!(val(rp.next_of(c, 0, Some(7)).unwrap()), 20);
    assert_eq!(val(rp.next_of(b, 0, None).unwrap()), 10);
    assert_eq!(val(rp.next_of(b, 0, None).unwrap()), 11);
    // A third b was never recorded.
    let d = rp.next_of(b, 0, None).unwrap_err();
    assert!(
        matches!(d.kind, DivergenceKind::Exhausted { recorded: 2, .. }),
        "{}",
        d.render()
    );
    assert_eq!(val(rp.next_of(a, 0, None).unwrap()), 0);
    // One a left unused: finish reports it, naming the stashed event (#2).
    let d = rp.finish().unwrap_err();
    assert!(
        matches!(d.kind, DivergenceKind::Leftover { left: 1, .. }),
        "{}",
        d.render()
    );
    assert_eq!(d.seq, 2);
}

#[test]
fn next_of_checks_the_input_digest() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("digest.replay");
    let r = common::recorder(&p);
    let k = r.intern("file.read");
    r.record(k, 0, Some(1), PayloadRef::Bytes(b"one"));
    r.finish().unwrap();
    let rp = common::replayer(&p, Order::Strict, Duration::from_secs(2));
    let k = rp.intern("file.read");
    let d = rp.next_of(k, 0, Some(2)).unwrap_err();
    assert!(matches!(d.kind, DivergenceKind::Mismatch), "{}", d.render());
    assert_eq!(d.expected.as_ref().unwrap().seq, 0);
    // The mismatched event was consumed, so nothing is left over.
    rp.finish().unwrap();
}
