//! Many large `Record` payloads (http bodies) in a row: every batch must stay within the
//! format's frame bound. Records used to count as 64 bytes each towards the batch's byte
//! bound (and not at all towards a chunk's), so a few thousand incompressible 64 KB records
//! made frames over the format's 64 MiB stored bound and the recording stopped with "chunk
//! over the format's size bound".

use replay_core::*;
use std::time::Duration;

fn body(i: usize) -> Record {
    // Incompressible (xorshift), like a compressed or encrypted body: the stored size
    // bound (64 MiB) is reached by about 1000 of them.
    let mut s = 0x9e37_79b9_7f4a_7c15u64 ^ (i as u64).wrapping_mul(0x2545_f491_4f6c_dd1d);
    let mut b = vec![0u8; 64 << 10];
    for x in b.chunks_mut(8) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        x.copy_from_slice(&s.to_le_bytes()[..x.len()]);
    }
    Record {
        fields: vec![
            Field {
                name: "json".into(),
                value: FieldValue::Text(format!("{{\"chunk\":{i}}}")),
            },
            Field {
                name: "b0".into(),
                value: FieldValue::Bytes(b.into()),
            },
        ],
    }
}

#[test]
fn thousands_of_64_kb_records_are_all_written_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("big.replay");
    let r = Recorder::open(RecordConfig {
        path: p.clone(),
        header: HeaderInfo::for_this_process("test", "1", vec![]),
        sync: false,
        // A long interval: the flusher sees the records only in big rounds.
        flush: Duration::from_secs(5),
        main_thread: "main".into(),
        compress: 1,
    })
    .unwrap();
    let k = r.intern("node.done");
    let n = 4000; // 4000 x 64 KB = 250 MiB: the old accounting made frames over the 64 MiB bound
    for i in 0..n {
        if i % 2 == 0 {
            r.record_owned(k, 0, None, body(i));
        } else {
            r.record(k, 0, None, PayloadRef::Record(&body(i)));
        }
    }
    let t = r.finish().expect("the recording must not stop");
    assert_eq!(t.events, n as u64);

    let rp = Replayer::open(ReplayConfig {
        path: p,
        order: Order::Strict,
        timeout: Duration::from_secs(2),
        unordered: Vec::new(),
    })
    .unwrap();
    let k = rp.intern("node.done");
    for i in 0..n {
        let e = rp.next(k, 0, None).unwrap();
        match e.payload {
            Payload::Record { record } => assert_eq!(record, body(i), "record {i}"),
            other => panic!("record {i}: {other:?}"),
        }
    }
    rp.finish().unwrap();
}
