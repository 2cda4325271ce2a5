//! The reader never trusts the file: every truncation, bit flip and random file gives an
//! error naming what is wrong (or a cut, with what was readable), and never a panic.

mod common;
use replay_core::*;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*: deterministic, so a failure names a reproducible case.
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn good_log() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("v.replay");
    common::varied_log(&p);
    std::fs::read(p).unwrap()
}

#[test]
fn intact_log_reads_completely() {
    let bytes = good_log();
    let (n, end, err) = common::read_all(&bytes);
    assert_eq!(err, None);
    assert_eq!(n, 9000);
    assert!(matches!(end, Some(End::Complete(t)) if t.events == 9000 && t.threads == 4));
}

#[test]
fn every_truncation_is_a_cut_or_error_never_a_panic() {
    let bytes = good_log();
    let total = common::read_all(&bytes).0;
    // Before the header frame is whole, opening fails (a log without a header is unusable).
    let header_end =
        13 + 24 + u32::from_le_bytes(bytes[13 + 8..13 + 12].try_into().unwrap()) as usize;
    let mut last_events = 0;
    // Every prefix length near frame boundaries and a stride through the rest.
    for len in (0..bytes.len())
        .step_by(7)
        .chain(bytes.len() - 64..bytes.len())
    {
        let (n, end, err) = std::panic::catch_unwind(|| common::read_all(&bytes[..len]))
            .unwrap_or_else(|_| panic!("panic on prefix of {len} bytes"));
        assert!(n <= total);
        match (end, err) {
            (Some(End::Cut { offset, why }), None) => {
                assert!(
                    offset <= len as u64,
                    "cut offset {offset} beyond length {len}"
                );
                assert!(!why.is_empty());
            }
            (None, Some(e)) => assert!(len < header_end, "prefix {len}: unexpected error {e}"),
            (end, err) => panic!("prefix {len}: {end:?} {err:?}"),
        }
        assert!(n >= last_events, "a longer prefix returned fewer events");
        last_events = last_events.max(n);
    }
    assert_eq!(
        common::read_all(&[]).2.unwrap(),
        "empty file: not a replay log (0 bytes)"
    );
}

#[test]
fn thousands_of_random_mutations_never_panic() {
    let bytes = good_log();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut detected = 0;
    for case in 0..3000 {
        let mut m = bytes.clone();
        match case % 4 {
            0 => {
                let i = rng.below(m.len());
                m[i] ^= 1 << rng.below(8);
            }
            1 => {
                for _ in 0..1 + rng.below(8) {
                    let i = rng.below(m.len());
                    m[i] = rng.next() as u8;
                }
            }
            2 => {
                let i = rng.below(m.len());
                let n = rng.below(64);
                m.splice(i..i, (0..n).map(|_| rng.next() as u8));
            }
            _ => {
                let i = rng.below(m.len());
                let n = rng.below(64).min(m.len() - i);
                m.drain(i..i + n);
            }
        }
        let r = std::panic::catch_unwind(|| common::read_all(&m))
            .unwrap_or_else(|_| panic!("panic on mutation case {case}"));
        if m == bytes || r.2.is_some() || matches!(r.1, Some(End::Cut { .. })) {
            detected += 1;
        } else {
            eprintln!(
                "undetected case {case}: {:?} len {} vs {}",
                r.1,
                m.len(),
                bytes.len()
            );
        }
    }
    // Every mutation of a complete log is covered by a checksum; all must be detected.
    assert_eq!(detected, 3000);
}

#[test]
fn random_files_are_rejected_with_a_reason() {
    let mut rng = Rng(42);
    for len in [1usize, 5, 13, 100, 5000] {
        let junk: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        let e = common::read_all(&junk).2.expect("random bytes accepted");
        assert!(e.contains("not a replay log") || e.contains("cut"), "{e}");
    }
    // Right magic, random body.
    let mut junk = b"REPLAY-LOG 1\n".to_vec();
    junk.extend((0..500).map(|_| rng.next() as u8));
    let e = common::read_all(&junk).2.unwrap();
    assert!(e.starts_with("corrupt log at offset 13"), "{e}");
}

#[test]
fn wrong_generation_and_future_reader_version() {
    let e = common::read_all(b"REPLAY-LOG 9\nwhatever").2.unwrap();
    assert!(e.contains("generation 9"), "{e}");
    // A header that demands a newer reader.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("new.replay");
    let mut h = HeaderInfo::for_this_process("test", "1", vec![]);
    h.min_reader_version = 7;
    let w = replay_core::writer::LogWriter::create(&p, &h, false).unwrap();
    w.finish(0, None, Vec::new()).unwrap();
    let e = LogReader::open(&p).err().unwrap().to_string();
    assert_eq!(
        e,
        "log needs reader version 7 or newer (this reader is version 1); upgrade replay"
    );
}

#[test]
fn corrupt_middle_chunk_names_its_offset_and_keeps_earlier_events() {
    let bytes = good_log();
    // Find the second chunk frame and damage its payload.
    let mut frames = Vec::new();
    let mut i = 13;
    while i + 24 <= bytes.len() {
        frames.push(i);
        let stored = u32::from_le_bytes(bytes[i + 8..i + 12].try_into().unwrap()) as usize;
        i += 24 + stored;
    }
    assert!(
        frames.len() >= 4,
        "want several chunks, got {}",
        frames.len()
    );
    let target = frames[2];
    let mut m = bytes.clone();
    m[target + 30] ^= 0xff;
    let (n, _, err) = common::read_all(&m);
    let err = err.unwrap();
    assert_eq!(
        err,
        format!("corrupt log at offset {target}: frame payload checksum mismatch")
    );
    assert!(n > 0);
}
