//! `replay timeline`: valid Chrome trace JSON, one track per thread, one instant event per
//! recorded event, in order.

mod common;
use common::*;

fn load(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn trace_has_threads_and_every_event() {
    let d = tempfile::tempdir().unwrap();
    let log = standard(&d.path().join("a.replay"), None);
    let out = d.path().join("trace.json");
    let r = replay(&["timeline", p(&log), "-o", p(&out)]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let j = load(&out);
    let ev = j["traceEvents"].as_array().unwrap();
    let names: Vec<(u64, &str)> = ev
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| {
            (
                e["tid"].as_u64().unwrap(),
                e["args"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(names, [(1, "main"), (2, "w0"), (3, "w1")]);
    let inst: Vec<&serde_json::Value> = ev.iter().filter(|e| e["ph"] == "i").collect();
    assert_eq!(inst.len() as u64, EVENTS);
    for (i, e) in inst.iter().enumerate() {
        assert_eq!(e["args"]["seq"], i as u64);
        assert_eq!(e["s"], "t");
        assert_eq!(e["pid"], 1);
    }
    assert_eq!(inst[0]["name"], "c.time");
    assert_eq!(inst[0]["tid"], 1);
    assert_eq!(inst[0]["args"]["site"], "main.c:10");
    assert_eq!(inst[0]["args"]["payload"], "1000");
    assert_eq!(inst[305]["tid"], 3);
    assert_eq!(inst[305]["args"]["site"], serde_json::Value::Null);
    // Times follow the order (interpolated between marks), start at 0 and never go back.
    let ts: Vec<f64> = inst.iter().map(|e| e["ts"].as_f64().unwrap()).collect();
    assert_eq!(ts[0], 0.0);
    assert!(ts.windows(2).all(|w| w[0] <= w[1]), "{ts:?}");
    assert!(ts[ts.len() - 1] > 0.0);
    assert_eq!(j["otherData"]["status"], "complete");
}

#[test]
fn stdout_and_cut_logs() {
    let d = tempfile::tempdir().unwrap();
    let log = standard(&d.path().join("a.replay"), None);
    let r = replay(&["timeline", p(&log), "-o", "-"]);
    assert_eq!(r.code, 0);
    let j: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(
        j["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "i")
            .count() as u64,
        EVENTS
    );

    let bytes = std::fs::read(&log).unwrap();
    let f = frames(&bytes);
    let cut = write(d.path(), "cut.replay", &bytes[..f[2].0 + 30]);
    let out = d.path().join("cut.json");
    let r = replay(&["timeline", p(&cut), "-o", p(&out)]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("cut at offset"), "{}", r.stderr);
    let j = load(&out);
    let n = j["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "i")
        .count();
    assert_eq!(n, 5, "the first chunk holds main's first 5 events");

    let r = replay(&[
        "timeline",
        p(&log),
        "-o",
        p(&d.path().join("no/such/dir.json")),
    ]);
    assert_eq!(r.code, 4, "{}", r.stderr);
    assert!(r.stderr.contains("cannot create"), "{}", r.stderr);
    assert_eq!(replay(&["timeline", p(&log)]).code, 2, "-o is required");
}
