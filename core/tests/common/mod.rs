//! Helpers shared by the core's integration tests.
#![allow(dead_code)]

use replay_core::*;
use std::io::Cursor;
use std::path::Path;
use std::time::Duration;

pub fn recorder(path: &Path) -> Recorder {
    Recorder::open(RecordConfig {
        path: path.to_path_buf(),
        header: HeaderInfo::for_this_process("test", "1", vec![("k".into(), "v".into())]),
        sync: false,
        flush: Duration::from_millis(20),
        main_thread: "main".into(),
        compress: 1,
    })
    .unwrap()
}

pub fn replayer(path: &Path, order: Order, timeout: Duration) -> Replayer {
    Replayer::open(ReplayConfig {
        path: path.to_path_buf(),
        order,
        timeout,
        unordered: Vec::new(),
    })
    .unwrap()
}

/// A log with several chunks, three threads and every payload type.
pub fn varied_log(path: &Path) {
    let r = recorder(path);
    let kinds: Vec<u32> = ["a.int", "a.float", "a.bytes", "a.ret", "a.rec", "a.none"]
        .iter()
        .map(|k| r.intern(k))
        .collect();
    let site = r.intern("file.c:10");
    std::thread::scope(|s| {
        for t in 0..3u32 {
            let r = &r;
            let kinds = &kinds;
            s.spawn(move || {
                r.name_thread(&format!("w{t}"));
                for i in 0..3000u64 {
                    let k = kinds[(i % 6) as usize];
                    let rec = Record {
                        fields: vec![Field {
                            name: "status".into(),
                            value: FieldValue::Int(i as i64),
                        }],
                    };
                    let data = vec![(i % 251) as u8; (i % 40) as usize];
                    let p = match i % 6 {
                        0 => PayloadRef::Int(i as i64 * -3),
                        1 => PayloadRef::Float(i as f64 / 7.0),
                        2 => PayloadRef::Bytes(&data),
                        3 => PayloadRef::Ret {
                            ret: i as i64,
                            errno: (i % 3) as i32,
                            data: Some(&data),
                        },
                        4 => PayloadRef::Record(&rec),
                        _ => PayloadRef::None,
                    };
                    r.record(
                        k,
                        if i % 2 == 0 { site } else { 0 },
                        (i % 3 == 0).then_some(i),
                        p,
                    );
                    if i % 1000 == 999 {
                        r.flush();
                    }
                }
            });
        }
    });
    r.finish().unwrap();
}

/// Reads a whole log from bytes, as a reader in place does; returns (events, end, error).
pub fn read_all(bytes: &[u8]) -> (u64, Option<End>, Option<String>) {
    let mut r = match LogReader::new(Cursor::new(bytes)) {
        Ok(r) => r,
        Err(e) => return (0, None, Some(e.to_string())),
    };
    let mut n = 0;
    loop {
        match r.next_batch() {
            Ok(Some(b)) => n += b.runs.iter().map(|r| r.events.len() as u64).sum::<u64>(),
            Ok(None) => return (n, r.end().cloned(), None),
            Err(e) => return (n, None, Some(e.to_string())),
        }
    }
}
