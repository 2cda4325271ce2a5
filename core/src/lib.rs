//! The replay core: the one implementation of the log format, event sequencing, replay
//! cursors and verification that every front end (the JVM agent, the Node addon, the C
//! header) goes through.
//!
//! Why the split: front ends only intercept and translate. Everything that decides what a
//! log means (its format, the order of events, whether a replayed run diverged) lives here,
//! so every runtime behaves the same and one set of tests covers all of them.
//!
//! - [`format`], [`writer`], [`reader`]: the on-disk format (schema in `schema/replay.capnp`).
//! - [`recorder`]: lock-free per-thread appends, one global sequence, background flushing.
//! - [`replayer`]: per-thread cursors, strict or relaxed order, verification.
//! - [`report`]: divergence reports; [`options`]: the shared option vocabulary;
//!   [`guard`]: the nested-call guard; [`session`]: one process-wide record/replay session.

#[allow(clippy::all, unused, missing_docs)]
#[rustfmt::skip]
#[path = "generated/replay_capnp.rs"]
pub mod replay_capnp;

pub mod chaos;
pub mod error;
pub mod event;
pub mod format;
pub mod guard;
mod idle;
pub mod logfile;
pub mod options;
pub mod reader;
pub mod recorder;
pub mod replayer;
pub mod report;
pub mod session;
pub mod tree;
pub mod varint;
pub mod writer;

/// The byte type of [`FieldValue::Bytes`]: a front end can hand the recorder views of one
/// shared buffer (the Node addon's staging block) instead of a copy per field.
pub use bytes::Bytes;
pub use error::LogError;
pub use event::{digest, Event, Field, FieldValue, Payload, Record};
pub use format::{HeaderInfo, PayloadRef, TrailerInfo};
pub use idle::IdleStats;
pub use options::{Mode, Options, Order, Policy};
pub use reader::{End, LogReader, Ordered, SeqProblem};
pub use recorder::{Appender, Held, RecordConfig, Recorder};
pub use replayer::{ReplayConfig, Replayer};
pub use report::Divergence;
pub use session::{Core, Frontend, Stream, Verdict};

/// Exit status of a replayed program stopped by a divergence under the `abort` policy.
pub const EXIT_DIVERGENCE: i32 = 86;
