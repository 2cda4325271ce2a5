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

pub use batch::{
    record_size, BatchBuilder, Chunk, DecodedBatch, DecodedRun, PayloadRef, RunBuilder, RunCursor,
};
pub use frame::{FrameHeader, FrameType};
pub use header::{FileWritten, HeaderInfo, TrailerInfo};

/// The magic line. Its number is the format generation, checked before anything else.
pub const MAGIC_PREFIX: &[u8] = b"REPLAY-LOG ";
pub const MAGIC: &[u8] = b"REPLAY-LOG 1\n";

/// Version of the structures this build writes and the newest it understands.
pub const FORMAT_VERSION: u32 = 1;
/// The oldest reader version able to read what this build writes.
pub const MIN_READER_VERSION: u32 = 1;

/// A single payload larger than this is cut by the recorder, with a message.
pub const MAX_PAYLOAD: usize = 32 << 20;
/// The recorder writes a batch once its encoded columns reach this many bytes...
pub const BATCH_BYTES: usize = 8 << 20;
/// ... or this many events, so a reader decodes at most a few MiB of events at a time (a clock
/// stream compresses so well that the byte bound alone let chunks hold a million events).
pub const BATCH_EVENTS: u64 = 65536;
/// Events of one thread the recorder hands to its writer at a time (a thread's chunk).
pub const THREAD_CHUNK_EVENTS: usize = 8192;

/// Bounds the reader enforces on untrusted input, before it allocates: what the writer can
/// produce, so memory stays bounded (well under 64 MiB) on any input, crafted or not. A
/// batch below `BATCH_BYTES` takes one more thread chunk, whose payloads stay below
/// `MAX_PAYLOAD` (a chunk holding a larger arena is written on its own, see the recorder).
pub const MAX_RAW: u32 = (MAX_PAYLOAD + BATCH_BYTES) as u32;
pub const MAX_STORED: u32 = MAX_RAW + (1 << 20);
/// Events in one chunk at most: a batch under `BATCH_EVENTS` plus one thread chunk.
pub const MAX_CHUNK_EVENTS: usize = BATCH_EVENTS as usize + THREAD_CHUNK_EVENTS;
/// Record fields in one chunk at most: the recorder estimates a field at 24 bytes or more and
/// cuts a batch at `BATCH_BYTES` (plus a thread chunk's 256 KiB of records).
/// What one decoded chunk may occupy at most: its bytes, its events and its record fields.
/// The largest chunks the recorder writes take about 50 MiB (8 MiB of small records).
pub const MAX_DECODED: usize = 56 << 20;
pub const MAX_CHUNK_FIELDS: usize = (BATCH_BYTES + (256 << 10)) / 24 + 1024;
/// Nesting bound for structured records.
pub const MAX_RECORD_DEPTH: u32 = 16;
