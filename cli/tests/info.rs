//! `replay info`: header, totals per kind and thread, status and exit codes.

mod common;
use common::*;

#[test]
fn text_shows_header_counts_and_status() {
    let d = tempfile::tempdir().unwrap();
    let log = standard(&d.path().join("a.replay"), None);
    let r = replay(&["info", p(&log)]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let o = &r.stdout;
    for want in [
        "status:    complete",
        "runtime:   test 1.2",
        "argv:      ./app --flag",
        "started:   2024-05-01T12:00:00.000Z",
        "options:   mode=record",
        "events:    510",
        "kinds:     4",
        "         200  c.random",
        "         150  c.read",
        "         150  node.Date.now",
        "          10  c.time",
        "threads:   3",
        "          10  t0 main",
        "         300  t1 w0",
        "         200  t2 w1",
    ] {
        assert!(
            o.lines().any(|l| l == want),
            "missing line {want:?} in\n{o}"
        );
    }
    // The kinds are listed most frequent first.
    let pos = |s: &str| o.find(s).unwrap();
    assert!(
        pos("c.random") < pos("c.read")
            && pos("c.read") < pos("node.Date.now")
            && pos("node.Date.now") < pos("c.time\n")
    );
    let size = std::fs::metadata(&log).unwrap().len();
    assert!(o.contains(&format!("size:      {size} bytes (")), "{o}");
    let chunks: u64 = o
        .lines()
        .find_map(|l| l.strip_prefix("chunks:    "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(chunks >= 3, "several flushes make several chunks: {chunks}");
}

#[test]
fn json_has_the_same_numbers() {
    let d = tempfile::tempdir().unwrap();
    let log = standard(&d.path().join("a.replay"), None);
    let r = replay(&["info", "--json", p(&log)]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let j: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(j["status"]["state"], "complete");
    assert_eq!(j["events"], 510);
    assert_eq!(j["header"]["runtime"], "test");
    assert_eq!(j["header"]["argv"][1], "--flag");
    assert_eq!(j["header"]["start_time"], "2024-05-01T12:00:00.000Z");
    assert_eq!(
        j["header"]["options"][0],
        serde_json::json!(["mode", "record"])
    );
    assert_eq!(j["file_size"], std::fs::metadata(&log).unwrap().len());
    let kinds: Vec<(String, u64)> = j["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["kind"].as_str().unwrap().to_string(),
                k["events"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("c.random".to_string(), 200),
            ("c.read".into(), 150),
            ("node.Date.now".into(), 150),
            ("c.time".into(), 10)
        ]
    );
    let threads: Vec<(u64, String, u64)> = j["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["id"].as_u64().unwrap(),
                t["name"].as_str().unwrap().to_string(),
                t["events"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        threads,
        [
            (0, "main".to_string(), 10),
            (1, "w0".into(), 300),
            (2, "w1".into(), 200)
        ]
    );
}

#[test]
fn cut_log_is_summarised_and_exits_1() {
    let d = tempfile::tempdir().unwrap();
    let log = standard(&d.path().join("a.replay"), None);
    let bytes = std::fs::read(&log).unwrap();
    let f = frames(&bytes);
    let (trailer, ty, _) = *f.last().unwrap();
    assert_eq!(ty, b'T');
    let cut = write(d.path(), "cut.replay", &bytes[..trailer]);
    let r = replay(&["info", p(&cut)]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout
            .contains(&format!("status:    cut at offset {trailer}: no trailer")),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("events:    510"),
        "all chunks are still readable: {}",
        r.stdout
    );

    let mut flipped = bytes.clone();
    let (c, _, len) = f[2];
    flipped[c + len / 2] ^= 0x40;
    let bad = write(d.path(), "bad.replay", &flipped);
    let r = replay(&["info", "--json", p(&bad)]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let j: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(j["status"]["state"], "corrupt");
    assert_eq!(j["status"]["offset"], c as u64);
}

#[test]
fn unreadable_logs_exit_3_with_one_line() {
    let d = tempfile::tempdir().unwrap();
    let missing = d.path().join("nope.replay");
    let r = replay(&["info", p(&missing)]);
    assert_eq!(r.code, 3);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(
        r.stderr
            .starts_with(&format!("replay: {}: cannot open: ", p(&missing))),
        "{}",
        r.stderr
    );
    let r = replay(&["info"]);
    assert_eq!(r.code, 2, "missing argument is a usage error");
}
