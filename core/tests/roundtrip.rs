//! Record → read → replay through the public API, in one process.

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

#[test]
fn record_read_replay_single_thread() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.replay");
    let r = rec(&p);
    let k = r.intern("test.clock");
    let k2 = r.intern("test.read");
    for i in 0..10_000u64 {
        r.record(k, 0, None, PayloadRef::Uint(1_000_000 + i * 37));
    }
    r.record(
        k2,
        0,
        Some(42),
        PayloadRef::Ret {
            ret: 5,
            errno: 0,
            data: Some(b"hello"),
        },
    );
    let t = r.finish().unwrap();
    assert_eq!(t.events, 10_001);

    let mut rd = LogReader::open(&p).unwrap();
    let mut n = 0;
    while let Some(b) = rd.next_batch().unwrap() {
        n += b.runs.iter().map(|r| r.events.len()).sum::<usize>();
    }
    assert_eq!(n, 10_001);
    assert!(matches!(rd.end(), Some(End::Complete(_))));

    let rp = Replayer::open(ReplayConfig {
        path: p.clone(),
        order: Order::Strict,
        timeout: Duration::from_secs(2),
        unordered: Vec::new(),
    })
    .unwrap();
    let k = rp.intern("test.clock");
    let k2 = rp.intern("test.read");
    for i in 0..10_000u64 {
        let e = rp.next(k, 0, None).unwrap();
        assert_eq!(
            e.payload,
            Payload::Uint {
                value: 1_000_000 + i * 37
            }
        );
    }
    let e = rp.next(k2, 0, Some(42)).unwrap();
    assert_eq!(
        e.payload,
        Payload::Ret {
            ret: 5,
            errno: 0,
            data: Some(b"hello".to_vec().into())
        }
    );
    rp.finish().unwrap();
}

#[test]
fn log_is_private_and_idle_threads_reach_disk_within_the_flush_interval() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("idle.replay");
    let r = rec(&p); // flush interval 20 ms
    assert_eq!(
        std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let k = r.intern("v");
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 0..5u64 {
                r.record(k, 0, None, PayloadRef::Uint(i));
            }
            // This thread now idles: its five events sit in a partly filled chunk.
            std::thread::sleep(Duration::from_millis(400));
        });
        std::thread::sleep(Duration::from_millis(300));
        // Read the file as a crashed recorder would leave it: no trailer yet.
        let mut rd = LogReader::open(&p).unwrap();
        let mut n = 0;
        while let Some(b) = rd.next_batch().unwrap() {
            n += b.runs.iter().map(|r| r.events.len()).sum::<usize>();
        }
        assert_eq!(n, 5, "events of an idle thread were not flushed by time");
        assert!(matches!(rd.end(), Some(End::Cut { .. })));
    });
    r.finish().unwrap();
}
