//! Many threads recording at once lose no event, and strict replay reproduces the recorded
//! interleaving of threads that share state.

use replay_core::{End, LogReader, Payload};
use replay_tests::{compile_c, replay_command, run};
use std::collections::BTreeMap;

#[test]
fn eight_threads_record_a_million_events_each_without_losing_one() {
    const THREADS: usize = 8;
    const EVENTS: u64 = 1_000_000;
    let dir = tempfile::tempdir().unwrap();
    let exe = compile_c("threads_many", "threads_many", dir.path(), &[]);
    let log = dir.path().join("many.replay");
    let rec =
        run(replay_command(&exe, "record", &log).args([THREADS.to_string(), EVENTS.to_string()]));
    assert_eq!(rec.code(), 0, "{}", rec.stderr);
    let n = THREADS as u64 * EVENTS;
    assert_eq!(
        rec.stdout_text().trim(),
        format!("sum {}", THREADS as u64 * EVENTS * (EVENTS - 1) / 2)
    );

    let mut r = LogReader::open(&log).unwrap();
    let mut seen = vec![false; n as usize];
    // Per recorded thread: events so far (each thread's values are 0, 1, 2, ... in order).
    let mut per_thread: BTreeMap<u32, u64> = BTreeMap::new();
    while let Some(b) = r.next_batch().expect("log reads back") {
        for run in b.runs {
            let count = per_thread.entry(run.thread).or_default();
            for e in run.events {
                assert!(e.seq < n, "seq {} beyond {n}", e.seq);
                assert!(!seen[e.seq as usize], "seq {} twice", e.seq);
                seen[e.seq as usize] = true;
                assert_eq!(
                    e.payload,
                    Payload::Int {
                        value: *count as i64
                    },
                    "thread {} event {count}",
                    run.thread
                );
                *count += 1;
            }
        }
    }
    assert!(
        matches!(r.end(), Some(End::Complete(t)) if t.events == n),
        "{:?}",
        r.end()
    );
    assert_eq!(r.events_read(), n);
    assert!(seen.iter().all(|s| *s), "sequence numbers are not dense");
    // Thread 0 is main (no events); the workers each have exactly their million, by name.
    let mut names: Vec<String> = Vec::new();
    for (&t, &count) in &per_thread {
        assert_eq!(count, EVENTS, "thread {t} ({})", r.thread_name(t));
        names.push(r.thread_name(t));
    }
    names.sort();
    let want: Vec<String> = (0..THREADS).map(|i| format!("worker-{i}")).collect();
    assert_eq!(names, want);
}

#[test]
fn strict_replay_reproduces_the_interleaving_of_eight_threads() {
    const THREADS: usize = 8;
    // Three events per step (lock, value, unlock): about 10,000 events per thread.
    const STEPS: usize = 3334;
    let dir = tempfile::tempdir().unwrap();
    let exe = compile_c("threads_order", "threads_order", dir.path(), &[]);
    let log = dir.path().join("order.replay");
    let args = [THREADS.to_string(), STEPS.to_string()];
    let rec = run(replay_command(&exe, "record", &log).args(&args));
    assert_eq!(rec.code(), 0, "{}", rec.stderr);
    let out = rec.stdout_text();
    assert!(
        out.starts_with(&format!("appended {}, ", THREADS * STEPS)),
        "{out}"
    );
    assert!(out.contains("position mismatches 0"), "{out}");

    let events = replay_core::Ordered::new(LogReader::open(&log).unwrap()).count();
    assert_eq!(events, THREADS * STEPS * 3);

    for round in 0..2 {
        let rep = run(replay_command(&exe, "replay", &log).args(&args));
        assert_eq!(rep.code(), 0, "replay {round}: {}", rep.stderr);
        assert_eq!(
            rep.stdout_text(),
            out,
            "replay {round} produced another interleaving"
        );
        assert_eq!(rep.stderr, "", "replay {round}");
    }
}
