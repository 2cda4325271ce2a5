//! `Recorder::record_batch`: the same log as one `record_at` per event.

use replay_core::*;
use std::time::Duration;

fn rec(path: &std::path::Path) -> Recorder {
    Recorder::open(RecordConfig {
        path: path.to_path_buf(),
        header: HeaderInfo::for_this_process("test", "1", vec![]),
        sync: false,
        flush: Duration::from_millis(20),
        main_thread: "main".into(),
        compress: 1,
    })
    .unwrap()
}

fn replayer(p: &std::path::Path) -> Replayer {
    Replayer::open(ReplayConfig {
        path: p.to_path_buf(),
        order: Order::Strict,
        timeout: Duration::from_secs(2),
        unordered: Vec::new(),
    })
    .unwrap()
}

#[test]
fn batches_replay_like_single_events_across_chunks_and_threads() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("b.replay");
    let r = rec(&p);
    let nano = r.intern("clock.nano");
    let millis = r.intern("clock.millis");
    let read = r.intern("file.read");
    let n = 100_000u64; // many chunks' worth: the batch swaps chunks as it goes
    let seqs: Vec<u64> = (0..n)
        .map(|_| {
            r.seq_counter()
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        })
        .collect();
    r.record_batch(seqs.iter().map(|&s| {
        let k = if s % 3 == 0 { millis } else { nano };
        (s, k, s as i64 * 7 - 5)
    }));
    // An event with a digest and data after the batch, then another thread's batch.
    r.record(read, 0, Some(9), PayloadRef::Bytes(b"abc"));
    std::thread::scope(|sc| {
        sc.spawn(|| {
            r.name_thread("worker");
            let s = r
                .seq_counter()
                .fetch_add(2, std::sync::atomic::Ordering::Relaxed);
            r.record_batch([(s, nano, -1), (s + 1, nano, i64::MIN)]);
            r.record_batch(std::iter::empty());
        });
    });
    let t = r.finish().unwrap();
    assert_eq!(t.events, n + 3);

    let rp = replayer(&p);
    let (nano, millis, read) = (
        rp.intern("clock.nano"),
        rp.intern("clock.millis"),
        rp.intern("file.read"),
    );
    for s in 0..n {
        let k = if s % 3 == 0 { millis } else { nano };
        let e = rp.next(k, 0, None).unwrap();
        assert_eq!(e.seq, s);
        assert_eq!(
            e.payload,
            Payload::Int {
                value: s as i64 * 7 - 5
            }
        );
    }
    let e = rp.next(read, 0, Some(9)).unwrap();
    assert_eq!(
        e.payload,
        Payload::Bytes {
            data: b"abc".to_vec().into()
        }
    );
    std::thread::scope(|sc| {
        sc.spawn(|| {
            rp.name_thread("worker");
            assert_eq!(
                rp.next(nano, 0, None).unwrap().payload,
                Payload::Int { value: -1 }
            );
            assert_eq!(
                rp.next(nano, 0, None).unwrap().payload,
                Payload::Int { value: i64::MIN }
            );
        });
    });
    rp.finish().unwrap();
}

#[test]
fn a_batch_after_finish_is_counted_as_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("c.replay");
    let r = rec(&p);
    let k = r.intern("clock.nano");
    r.record_batch([(
        r.seq_counter()
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        k,
        1,
    )]);
    r.finish().unwrap();
    r.record_batch([(1, k, 2), (2, k, 3)]);
    assert_eq!(r.dropped(), 2);
}
