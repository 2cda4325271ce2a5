//! `replay diff`: identical streams exit 0; the first difference is named, exit 1.

mod common;
use common::*;

#[test]
fn identical_recordings() {
    let d = tempfile::tempdir().unwrap();
    let a = standard(&d.path().join("a.replay"), None);
    let b = standard(&d.path().join("b.replay"), None);
    let r = replay(&["diff", p(&a), p(&b)]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.ends_with("identical: 510 events\n"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("note: header argv"), "{}", r.stdout);
}

#[test]
fn one_changed_value_is_named_with_context() {
    let d = tempfile::tempdir().unwrap();
    let a = standard(&d.path().join("a.replay"), None);
    let b = standard_argv(&d.path().join("b.replay"), Some(3), "./other");
    let r = replay(&["diff", p(&a), p(&b)]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let o = &r.stdout;
    assert!(
        o.contains("note: header argv differs: A: ./app --flag  B: ./other --flag"),
        "{o}"
    );
    assert!(
        o.contains("first difference at event #308:\n  payload  A: 21u\n           B: 999999u\n"),
        "{o}"
    );
    assert!(o.contains("  A: #308      t2 w1         c.random = 21u\n  B: #308      t2 w1         c.random = 999999u\n"), "{o}");
    // The common events just before it (default 5), in order.
    let before: Vec<&str> = o
        .lines()
        .skip_while(|l| !l.starts_with("common events before it (308 in all)"))
        .skip(1)
        .take(5)
        .collect();
    assert_eq!(
        before.iter().map(|l| &l[2..6]).collect::<Vec<_>>(),
        ["#303", "#304", "#305", "#306", "#307"],
        "{o}"
    );
    // Symmetric: swapping the arguments swaps the sides.
    let r = replay(&["diff", "--context", "0", p(&b), p(&a)]);
    assert_eq!(r.code, 1);
    assert!(
        r.stdout
            .contains("  payload  A: 999999u\n           B: 21u\n"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("common events"), "{}", r.stdout);
}

#[test]
fn a_shorter_log_differs_where_it_ends() {
    let d = tempfile::tempdir().unwrap();
    let a = standard(&d.path().join("a.replay"), None);
    let bytes = std::fs::read(&a).unwrap();
    let f = frames(&bytes);
    // Keep the header and the first chunk (main's first 5 events): a cut recording.
    let cut = write(d.path(), "cut.replay", &bytes[..f[1].0 + f[1].2]);
    let r = replay(&["diff", p(&a), p(&cut)]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        r.stdout
            .contains("first difference at event #5: B ends after 5 events, A goes on"),
        "{}",
        r.stdout
    );
    // A cut log equal to itself is identical, with a note that it was cut.
    let r = replay(&["diff", p(&cut), p(&cut)]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert!(
        r.stdout
            .contains(&format!("note: {}: cut at offset", p(&cut))),
        "{}",
        r.stdout
    );
}

#[test]
fn kind_and_digest_differences_and_unreadable_input() {
    let d = tempfile::tempdir().unwrap();
    let a = standard(&d.path().join("a.replay"), None);
    let other = big(&d.path().join("big.replay"), 10);
    let r = replay(&["diff", p(&a), p(&other)]);
    assert_eq!(r.code, 1);
    assert!(r.stdout.contains("first difference at event #0:\n  kind     A: c.time\n           B: c.counter\n  site     A: main.c:10\n           B: -\n"), "{}", r.stdout);
    let r = replay(&["diff", p(&a), p(&d.path().join("missing.replay"))]);
    assert_eq!(r.code, 3);
    assert!(
        r.stderr.starts_with("replay: ") && r.stderr.contains("missing.replay: cannot open"),
        "{}",
        r.stderr
    );
}
