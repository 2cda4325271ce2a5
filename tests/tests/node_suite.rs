//! Runs the `node --test` suites under tests/node/ (`*.test.js`, `*.test.mjs`): each drives
//! real node processes under record and replay through tests/node/harness.js. The package
//! is assembled as `npm install` leaves it and passed in `REPLAY_NODE_PKG`.

use replay_tests::{command, node_package, repo, run_with_timeout};
use std::path::Path;
use std::time::Duration;

#[test]
fn node_test_suites_pass() {
    if command(Path::new("node"))
        .arg("--version")
        .output()
        .map(|o| !o.status.success())
        .unwrap_or(true)
    {
        eprintln!("node not found: skipping the node --test suites");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pkg = node_package(dir.path());
    let mut files: Vec<_> = std::fs::read_dir(repo().join("tests/node"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            n.ends_with(".test.js") || n.ends_with(".test.mjs")
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no tests/node/*.test.js");
    let mut c = command(Path::new("node"));
    c.arg("--test")
        .arg("--test-reporter=spec")
        .args(&files)
        .env("REPLAY_NODE_PKG", &pkg)
        .env("REPLAY_TEST_TMP", dir.path())
        .current_dir(repo());
    let r = run_with_timeout(&mut c, Duration::from_secs(600));
    let out = r.stdout_text();
    println!("{out}");
    assert_eq!(r.code(), 0, "node --test failed:\n{out}\n{}", r.stderr);
    // The spec reporter prints a summary; a file that loaded no test at all must not pass.
    assert!(!out.contains("ℹ tests 0"), "{out}");
}
