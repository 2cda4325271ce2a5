//! The on-disk format: framing, the header, batches of events and the trailer.
//!
//! Layout of a log file (the schema, `core/schema/replay.capnp`, defines what is inside
//! the frames; this module is the one place that defines the frames themselves):
//!
//! ```text
//! "REPLAY-LOG 1\n"                    magic line; the number is the format generation
//! frame 'H'  Header  (codec none)
//! frame 'C'  Batch   (codec zstd)     zero or more
//! frame 'T'  Trailer (codec none)     present only when the recorder closed cleanly
//! ```
//!
//! Each frame is a 24-byte header followed by `stored_len` payload bytes:
//!
//! ```text
//! offset size field
//!  0     3    b"RPL"          sync marker
//!  3     1    frame type      b'H' | b'C' | b'T'
//!  4     1    codec           0 = none, 1 = zstd
//!  5     3    reserved        must be 0
//!  8     4    stored_len      u32 LE, bytes that follow the header (<= MAX_STORED)
//! 12     4    raw_len         u32 LE, bytes after decompression (<= MAX_RAW)
//! 16     4    payload_crc     CRC-32C of the stored payload bytes
//! 20     4    header_crc      CRC-32C of bytes 0..20 of this header
//! ```
//!
//! The trailer holds a CRC-32C of every byte before it, so every byte of a complete file
//! is covered by a checksum; a cut file is covered frame by frame.

pub mod batch;
pub mod frame;
pub mod header;

pub use batch::{record_size, BatchBuilder, DecodedBatch, DecodedRun, PayloadRef, RunBuilder};
pub use frame::{FrameHeader, FrameType};
pub use header::{HeaderInfo, TrailerInfo};

/// The magic line. Its number is the format generation, checked before anything else.
pub const MAGIC_PREFIX: &[u8] = b"REPLAY-LOG ";
pub const MAGIC: &[u8] = b"REPLAY-LOG 1\n";

/// Version of the structures this build writes and the newest it understands.
pub const FORMAT_VERSION: u32 = 1;
/// The oldest reader version able to read what this build writes.
pub const MIN_READER_VERSION: u32 = 1;

/// Bounds the reader enforces on untrusted input (the writer stays well inside them).
pub const MAX_STORED: u32 = 64 << 20;
pub const MAX_RAW: u32 = 256 << 20;
/// A single payload larger than this is refused by the recorder with a message.
pub const MAX_PAYLOAD: usize = 32 << 20;
/// Nesting bound for structured records.
pub const MAX_RECORD_DEPTH: u32 = 16;
