//! `replay verify`: exit 0 only for a complete, intact log; 1 for cut or corrupt; 3 for
//! files that are not logs at all.

mod common;
use common::*;

#[test]
fn complete_log_is_ok() {
    let d = tempfile::tempdir().unwrap();
    let log = standard(&d.path().join("a.replay"), None);
    let chunks = frames(&std::fs::read(&log).unwrap())
        .iter()
        .filter(|f| f.1 == b'C')
        .count();
    let r = replay(&["verify", p(&log)]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(
        r.stdout,
        format!(
            "{}: ok: 510 events, {chunks} chunks, 3 threads, complete\n",
            p(&log)
        )
    );
}

#[test]
fn truncated_anywhere_is_cut_exit_1() {
    let d = tempfile::tempdir().unwrap();
    let log = standard(&d.path().join("a.replay"), None);
    let bytes = std::fs::read(&log).unwrap();
    let f = frames(&bytes);
    let chunk_frames: Vec<_> = f.iter().filter(|x| x.1 == b'C').collect();
    let mut cases = Vec::new();
    // Between chunks (no trailer), after every whole chunk.
    for (at, _, len) in &chunk_frames {
        cases.push((at + len, *at + len, "no trailer"));
    }
    // Inside a chunk's frame header and inside its payload.
    for (at, _, len) in &chunk_frames {
        cases.push((at + 10, *at, "frame header cut"));
        cases.push((at + len - 1, *at, "last frame is incomplete"));
    }
    // Inside the trailer.
    let (t, _, tl) = *f.last().unwrap();
    cases.push((t + tl - 3, t, "last frame is incomplete"));
    for (len, offset, why) in cases {
        let cut = write(d.path(), &format!("cut{len}.replay"), &bytes[..len]);
        let r = replay(&["verify", p(&cut)]);
        assert_eq!(r.code, 1, "cut at {len}: {}{}", r.stdout, r.stderr);
        let want = format!("{}: cut at offset {offset}: ", p(&cut));
        assert!(
            r.stdout.starts_with(&want) && r.stdout.contains(why),
            "cut at {len}: {}",
            r.stdout
        );
        assert!(
            r.stdout.trim_end().ends_with("events readable)"),
            "{}",
            r.stdout
        );
    }
}

#[test]
fn flipped_byte_is_corrupt_exit_1() {
    let d = tempfile::tempdir().unwrap();
    let log = standard(&d.path().join("a.replay"), None);
    let bytes = std::fs::read(&log).unwrap();
    let f = frames(&bytes);
    for (i, &(at, ty, len)) in f.iter().enumerate().skip(1) {
        let mut b = bytes.clone();
        b[at + len - 2] ^= 0x01;
        let bad = write(d.path(), &format!("bad{i}.replay"), &b);
        let r = replay(&["verify", p(&bad)]);
        assert_eq!(
            r.code, 1,
            "frame {i} ({}): {}{}",
            ty as char, r.stdout, r.stderr
        );
        assert!(
            r.stdout
                .starts_with(&format!("{}: corrupt at offset {at}: ", p(&bad))),
            "{}",
            r.stdout
        );
    }
    // One flipped bit anywhere after the header never passes.
    let header_end = f[0].0 + f[0].2;
    for pos in (header_end..bytes.len()).step_by(97) {
        let mut b = bytes.clone();
        b[pos] ^= 0x10;
        let bad = write(d.path(), "flip.replay", &b);
        let r = replay(&["verify", p(&bad)]);
        assert_eq!(r.code, 1, "flip at {pos}: {}{}", r.stdout, r.stderr);
    }
}

#[test]
fn not_a_log_exits_3() {
    let d = tempfile::tempdir().unwrap();
    let log = standard(&d.path().join("a.replay"), None);
    let bytes = std::fs::read(&log).unwrap();
    let mut random = Vec::new();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..4096 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        random.push(x as u8);
    }
    let mut wrong = b"REPLAY-LOG 9\n".to_vec();
    wrong.extend_from_slice(&bytes[13..]);
    let cases = [
        (write(d.path(), "empty.replay", b""), "empty file"),
        (
            write(d.path(), "random.replay", &random),
            "not a replay log",
        ),
        (
            write(d.path(), "text.replay", b"hello world, this is not a log\n"),
            "not a replay log",
        ),
        (write(d.path(), "v9.replay", &wrong), "generation 9"),
        (
            write(d.path(), "magic.replay", b"REPLAY-LOG 1\n"),
            "before the header",
        ),
        (d.path().join("missing.replay"), "cannot open"),
    ];
    for (path, why) in cases {
        let r = replay(&["verify", p(&path)]);
        assert_eq!(r.code, 3, "{}: {}{}", p(&path), r.stdout, r.stderr);
        assert!(r.stdout.is_empty());
        assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
        assert!(
            r.stderr.starts_with(&format!("replay: {}: ", p(&path))) && r.stderr.contains(why),
            "{}",
            r.stderr
        );
    }
}

#[test]
fn sequence_gaps_and_duplicates_are_reported() {
    let d = tempfile::tempdir().unwrap();
    let gap = bad_numbers(&d.path().join("gap.replay"), Some(42), None);
    let r = replay(&["verify", p(&gap)]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert_eq!(
        r.stdout,
        format!(
            "{}: bad sequence: event #42 is missing (1 numbers missing)\n",
            p(&gap)
        )
    );

    let dup = bad_numbers(&d.path().join("dup.replay"), None, Some(70));
    let r = replay(&["verify", p(&dup)]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        r.stdout.starts_with(&format!(
            "{}: bad sequence: event #70 appears twice (chunk at offset ",
            p(&dup)
        )),
        "{}",
        r.stdout
    );

    let fine = bad_numbers(&d.path().join("fine.replay"), None, None);
    assert_eq!(replay(&["verify", p(&fine)]).code, 0);
}

#[test]
fn damaged_logs_never_crash_any_command() {
    let d = tempfile::tempdir().unwrap();
    let log = standard(&d.path().join("a.replay"), None);
    let bytes = std::fs::read(&log).unwrap();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for i in 0..12 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let mut b = bytes.clone();
        let pos = (x % b.len() as u64) as usize;
        if i % 3 == 0 {
            b.truncate(pos);
        } else {
            b[pos] ^= 1 << (x % 8);
        }
        let bad = write(d.path(), "damaged.replay", &b);
        let out = d.path().join("t.json");
        for args in [
            vec!["verify", p(&bad)],
            vec!["info", p(&bad)],
            vec!["info", "--json", p(&bad)],
            vec!["dump", "--json", p(&bad)],
            vec!["timeline", p(&bad), "-o", p(&out)],
            vec!["diff", p(&log), p(&bad)],
        ] {
            let r = replay(&args);
            assert!(
                r.code == 1 || r.code == 3,
                "{args:?} after damage at {pos}: exit {}\n{}",
                r.code,
                r.stderr
            );
            assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
        }
    }
}
