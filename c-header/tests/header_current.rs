//! The committed include/replay.h must be what build.rs generates from the sources.
//! `REPLAY_UPDATE_HEADER=1 cargo test -p replay-c --test header_current` rewrites it.

use std::path::Path;

const GENERATED: &str = include_str!(concat!(env!("OUT_DIR"), "/replay.h"));

#[test]
fn committed_header_is_current() {
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("include/replay.h");
    if std::env::var_os("REPLAY_UPDATE_HEADER").is_some_and(|v| v == "1") {
        std::fs::write(&committed, GENERATED).expect("cannot write include/replay.h");
        return;
    }
    let current = std::fs::read_to_string(&committed).unwrap_or_default();
    assert!(
        current == GENERATED,
        "c-header/include/replay.h is stale: run REPLAY_UPDATE_HEADER=1 cargo test -p replay-c --test header_current"
    );
}
