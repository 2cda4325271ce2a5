//! File-level writer: the magic line, frames, the trailer. Used by the recorder's
//! background flusher (and by tests that craft logs); never on a hot path.

use crate::format::frame::{FrameHeader, FrameType, CODEC_NONE, CODEC_ZSTD, FRAME_HEADER_LEN};
use crate::format::*;
use crate::idle::{IdleCompressor, IdleStats, HELP_FROM};
use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

pub struct LogWriter {
    file: File,
    crc: u32,
    offset: u64,
    chunks: u64,
    events: u64,
    sync: bool,
    /// None: chunks are stored uncompressed (the `compress=off` option).
    zstd: Option<zstd::bulk::Compressor<'static>>,
    buf: Vec<u8>,
    /// Large frames left to store without trying zstd (see `SKIP_FROM`).
    skip: u32,
    /// Compresses large frames on idle CPU time (see `idle.rs`); None with `zstd`.
    idle: Option<IdleCompressor>,
}

/// Frames at least this large that zstd could not shrink by 3% make the next `SKIP_AFTER`
/// ones of that size be stored uncompressed without trying (random or already compressed
/// bodies); then one is compressed again, so a stream that turns compressible is noticed.
/// Judging by a sample instead misjudged bodies repeated across a batch (each one random,
/// the batch very compressible).
const SKIP_FROM: usize = 256 << 10;
const SKIP_AFTER: u32 = 15;

impl LogWriter {
    /// Creates the log (a new file of mode 0600, see [`crate::logfile::create`]) and writes
    /// the magic line and header; chunks are compressed at zstd level 1.
    pub fn create(path: &Path, header: &HeaderInfo, sync: bool) -> io::Result<Self> {
        Self::create_with(path, header, sync, 1)
    }

    /// [`Self::create`] with chunks compressed at zstd level `level`, or stored as they are
    /// for 0.
    pub fn create_with(
        path: &Path,
        header: &HeaderInfo,
        sync: bool,
        level: u8,
    ) -> io::Result<Self> {
        // The header is written before the file is at `path`: a log found there always
        // starts with one.
        crate::logfile::create(path, |file| Self::from_file(file, header, sync, level))
    }

    /// The writer over an open file, compressing at `level` (0: none).
    pub fn from_file(file: File, header: &HeaderInfo, sync: bool, level: u8) -> io::Result<Self> {
        // Level 1 by default: rr's measurements (and ours on clock streams) show it about as
        // compact as higher levels on this kind of data, at a fraction of the cost.
        let zstd = match level {
            0 => None,
            l => Some(zstd::bulk::Compressor::new(i32::from(l))?),
        };
        let idle = zstd.as_ref().map(|_| IdleCompressor::new(i32::from(level)));
        let mut w = LogWriter {
            file,
            crc: 0,
            offset: 0,
            chunks: 0,
            events: 0,
            sync,
            zstd,
            buf: Vec::new(),
            skip: 0,
            idle,
        };
        w.write_raw(MAGIC)?;
        w.write_frame(FrameType::Header, &header.encode(), false)?;
        w.flush_sync()?;
        Ok(w)
    }

    fn write_raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.file.write_all(bytes)?;
        self.crc = crc32c::crc32c_append(self.crc, bytes);
        self.offset += bytes.len() as u64;
        Ok(())
    }

    fn write_frame(&mut self, ty: FrameType, raw: &[u8], compress: bool) -> io::Result<()> {
        if raw.len() > MAX_RAW as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "chunk over the format's size bound",
            ));
        }
        // The frame is assembled in `buf`, header first: compressing straight into it saves
        // an allocation and a copy of the stored bytes per frame. `buf` keeps its length (only
        // growth is zero-filled); `end` is where this frame ends.
        let bound = zstd::zstd_safe::compress_bound(raw.len()).max(raw.len());
        if self.buf.len() < FRAME_HEADER_LEN + bound {
            self.buf.resize(FRAME_HEADER_LEN + bound, 0);
        }
        let mut codec = CODEC_NONE;
        let mut stored_len = raw.len();
        let large = raw.len() >= SKIP_FROM;
        if compress && large && self.skip > 0 {
            self.skip -= 1;
        } else if let (true, Some(zstd)) = (compress, self.zstd.as_mut()) {
            let dst = &mut self.buf[FRAME_HEADER_LEN..FRAME_HEADER_LEN + bound];
            let helped = match self.idle.as_mut() {
                Some(idle) if raw.len() >= HELP_FROM => idle.compress_into(raw, dst),
                _ => None,
            };
            let n = match helped {
                Some(n) => n,
                None => zstd.compress_to_buffer(raw, dst)?,
            };
            // Incompressible data is stored as it is (smaller, and cheaper to read).
            if n < raw.len() {
                codec = CODEC_ZSTD;
                stored_len = n;
            }
            if large && n >= raw.len() / 100 * 97 {
                self.skip = SKIP_AFTER;
            }
        }
        if codec == CODEC_NONE {
            self.buf[FRAME_HEADER_LEN..FRAME_HEADER_LEN + raw.len()].copy_from_slice(raw);
        }
        if stored_len > MAX_STORED as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "chunk over the format's size bound",
            ));
        }
        let end = FRAME_HEADER_LEN + stored_len;
        let fh = FrameHeader {
            ty,
            codec,
            stored_len: stored_len as u32,
            raw_len: raw.len() as u32,
            payload_crc: crc32c::crc32c(&self.buf[FRAME_HEADER_LEN..end]),
        };
        self.buf[..FRAME_HEADER_LEN].copy_from_slice(&fh.encode());
        // One write per frame, so a killed process leaves whole frames plus at most one
        // partial one, which the reader reports as the cut.
        self.file.write_all(&self.buf[..end])?;
        self.crc = crc32c::crc32c_append(self.crc, &self.buf[..end]);
        self.offset += end as u64;
        Ok(())
    }

    fn flush_sync(&mut self) -> io::Result<()> {
        if self.sync {
            self.file.sync_data()?;
        }
        Ok(())
    }

    /// Writes one chunk.
    pub fn write_batch(&mut self, batch: &BatchBuilder) -> io::Result<()> {
        batch.encode_with(|raw| self.write_frame(FrameType::Chunk, raw, true))?;
        self.chunks += 1;
        self.events += batch.event_count();
        self.flush_sync()
    }

    pub fn events(&self) -> u64 {
        self.events
    }

    pub fn bytes(&self) -> u64 {
        self.offset
    }

    /// How many frames the idle helper compressed, and how many the writer took over.
    pub fn idle_stats(&self) -> IdleStats {
        self.idle.as_ref().map(|i| i.stats).unwrap_or_default()
    }

    /// Writes the trailer and syncs: the log is complete.
    pub fn finish(
        mut self,
        threads: u32,
        exit_status: Option<i32>,
        files: Vec<FileWritten>,
    ) -> io::Result<TrailerInfo> {
        let t = TrailerInfo {
            exit_status,
            files,
            events: self.events,
            chunks: self.chunks,
            end_time_unix_ns: header::unix_now_ns(),
            file_crc32c: self.crc,
            threads,
        };
        self.write_frame(FrameType::Trailer, &t.encode(), false)?;
        self.file.sync_all()?;
        Ok(t)
    }
}
