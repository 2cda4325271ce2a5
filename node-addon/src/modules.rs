//! The program's own source files, by digest. Code is not an input: Node's module loaders
//! read it live, and a replay runs the code in hand. When that code is not the recorded one
//! (a config module such as `webpack.config.js` edited between record and replay, or the
//! program changed to debug it), what the replay does may differ in ways no check sees (the
//! files it writes), so replay says so: record keeps each own source file's digest as a side
//! record (`side.node.module`, out of the event order), replay compares and warns once per
//! file that differs or was not in the recording.

use crate::{active, guarded, Res};
use napi_derive::napi;
use replay_core::session::SIDE_KINDS;
use replay_core::{Appender, Field, FieldValue, Payload, Record};
use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, OnceLock};

const KIND: &str = SIDE_KINDS[4];

/// Record: the side records' logical thread.
static SIDE: OnceLock<Option<Appender>> = OnceLock::new();
/// Replay: the recorded digest of each file, read once.
static RECORDED: OnceLock<HashMap<String, String>> = OnceLock::new();
/// Replay: files already warned about.
static WARNED: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// `file` (a source file of the program, not an installed package's) was compiled with the
/// content digest `digest`.
#[napi]
pub fn module_loaded(file: String, digest: String) -> Res<()> {
    guarded(|| {
        let Some(a) = active()? else { return Ok(()) };
        let core = &a.core;
        match core.mode() {
            replay_core::Mode::Record => {
                let Some(app) = SIDE
                    .get_or_init(|| core.side_appender("[modules]"))
                    .as_ref()
                else {
                    return Ok(());
                };
                let k = core.intern(KIND);
                let fields = vec![
                    Field {
                        name: "file".into(),
                        value: FieldValue::Text(file),
                    },
                    Field {
                        name: "digest".into(),
                        value: FieldValue::Text(digest),
                    },
                ];
                app.record_owned(k, 0, None, Record { fields });
            }
            replay_core::Mode::Replay => {
                let recorded = RECORDED.get_or_init(|| {
                    let mut m = HashMap::new();
                    for e in core.side_events(&[KIND]).unwrap_or_default() {
                        let Payload::Record { record } = e.payload else {
                            continue;
                        };
                        if let (Some(FieldValue::Text(f)), Some(FieldValue::Text(d))) =
                            (record.get("file"), record.get("digest"))
                        {
                            m.insert(f.clone(), d.clone());
                        }
                    }
                    m
                });
                // A log written before these records existed says nothing either way.
                if recorded.is_empty() || recorded.get(&file) == Some(&digest) {
                    return Ok(());
                }
                let mut w = WARNED.lock().unwrap_or_else(|p| p.into_inner());
                if w.get_or_insert_with(HashSet::new).insert(file.clone()) {
                    let how = if recorded.contains_key(&file) {
                        "differs from the recorded one"
                    } else {
                        "was not loaded in the recording"
                    };
                    eprintln!(
                        "replay: warning: the program's source file {file} {how}: this replay runs other code than was recorded"
                    );
                }
            }
            _ => {}
        }
        Ok(())
    })
}
