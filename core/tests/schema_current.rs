//! The generated Cap'n Proto code is committed so that a fresh machine builds without the
//! schema compiler. This test regenerates it and fails when the committed copy is stale.
//! Set `REPLAY_UPDATE_SCHEMA=1` to rewrite the committed file instead.

use std::path::Path;

#[test]
fn generated_capnp_code_is_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let committed = root.join("src/generated/replay_capnp.rs");
    let out = tempfile::tempdir().unwrap();
    let status = capnpc::CompilerCommand::new()
        .src_prefix(root.join("schema"))
        .file(root.join("schema/replay.capnp"))
        .output_path(out.path())
        .run();
    if let Err(e) = status {
        panic!(
            "could not run the Cap'n Proto compiler ({e}); install it (Debian: apt-get install capnproto) \
             to check that core/src/generated/replay_capnp.rs matches core/schema/replay.capnp"
        );
    }
    let fresh = std::fs::read_to_string(out.path().join("replay_capnp.rs")).unwrap();
    if std::env::var_os("REPLAY_UPDATE_SCHEMA").is_some() {
        std::fs::write(&committed, &fresh).unwrap();
        return;
    }
    let old = std::fs::read_to_string(&committed).unwrap_or_default();
    assert!(
        old == fresh,
        "core/src/generated/replay_capnp.rs is stale: run `REPLAY_UPDATE_SCHEMA=1 cargo test -p replay-core --test schema_current`"
    );
}
