//! Generates the public header: cbindgen over src/lib.rs, with the hand-written macros of
//! src/macros.h appended. The result goes to OUT_DIR; the committed copy in include/ is
//! checked against it by tests/header_current.rs (so a stale header fails CI rather than
//! being silently rewritten by a build).

use std::path::PathBuf;

fn main() {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    for f in [
        "src/lib.rs",
        "src/fit.rs",
        "src/sched.rs",
        "src/macros.h",
        "cbindgen.toml",
    ] {
        println!("cargo:rerun-if-changed={f}");
    }
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml"))
        .expect("c-header/cbindgen.toml is not valid");
    let macros = std::fs::read_to_string(dir.join("src/macros.h"))
        .expect("cannot read c-header/src/macros.h");
    cbindgen::Builder::new()
        .with_src(dir.join("src/lib.rs"))
        .with_config(config)
        .with_trailer(macros)
        .generate()
        .expect("cbindgen could not generate replay.h")
        .write_to_file(out.join("replay.h"));
}
