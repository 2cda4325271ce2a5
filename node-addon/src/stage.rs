//! Staging blocks: memory that `index.js` copies queued event bytes into (its `data`) and
//! that the recorded events then share, so the bytes are copied once on the JS thread
//! instead of twice (into the staging buffer, then out of it into a `Vec` per field: for a
//! recorded 64 KB http body the second copy, into fresh memory, cost as much as the first).
//!
//! The protocol: JS writes into the block [`next`] handed it, and only into that one, past
//! what it published; the drain (src/drain.rs, on the JS thread at a crossing or on the
//! flusher) turns published bytes into [`Bytes`] views ([`held`]), and each crossing hands
//! JS the next free block. A block is free when no view of it is left (the flusher drops
//! the views once the events are encoded). So JS never writes bytes that a view covers.
//!
//! Blocks are allocated once and never freed: a JS Buffer over one may live until the
//! process ends, and there is no finalizer to wait for. At most [`MAX_BLOCKS`] exist; when
//! all are held JS falls back to a Buffer of its own, whose bytes are copied as before.

use replay_core::Bytes;
use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A block's size: `index.js`'s queue holds at most this many bytes per crossing.
pub(crate) const BLOCK_BYTES: usize = 1 << 20;

/// Blocks in flight at most: the flusher encodes a batch within its flush interval, so a
/// few blocks cover even a program that fills one per millisecond; past this (a stalled
/// disk) the copying path costs more but holds no more memory.
const MAX_BLOCKS: usize = 8;

/// A block's memory. Leaked on purpose (see the module comment).
struct Block {
    ptr: *mut u8,
    /// A JS Buffer over it was made (at most one may be).
    exposed: AtomicBool,
}

// SAFETY: the memory is never freed, and the protocol above keeps JS's writes and the
// views' reads apart; the pointer itself is only read.
unsafe impl Send for Block {}
unsafe impl Sync for Block {}

/// The first `len` bytes of a block, as the owner of the events' views of them: the block
/// is held while one exists.
struct Held {
    block: Arc<Block>,
    len: usize,
}

impl AsRef<[u8]> for Held {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: within the block; JS does not write a held block (module comment).
        unsafe { std::slice::from_raw_parts(self.block.ptr, self.len) }
    }
}

static BLOCKS: Mutex<Vec<Arc<Block>>> = Mutex::new(Vec::new());

/// The index of a block no view holds, allocating one while fewer than [`MAX_BLOCKS`]
/// exist; `None` when all are held.
pub(crate) fn next() -> Option<usize> {
    let mut blocks = BLOCKS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(i) = blocks.iter().position(|b| Arc::strong_count(b) == 1) {
        // The views were dropped on the flusher thread (a release decrement): their reads
        // happen before JS writes the block again.
        fence(Ordering::Acquire);
        return Some(i);
    }
    if blocks.len() == MAX_BLOCKS {
        return None;
    }
    // Zeroed, so JS never sees another allocation's leftovers (and calloc maps it lazily).
    let mem: &'static mut [u8] = Box::leak(vec![0u8; BLOCK_BYTES].into_boxed_slice());
    blocks.push(Arc::new(Block {
        ptr: mem.as_mut_ptr(),
        exposed: AtomicBool::new(false),
    }));
    Some(blocks.len() - 1)
}

/// Block `i`'s memory, for the JS Buffer over it: the first time only (V8 aborts the
/// process on a second Buffer over the same memory).
pub(crate) fn expose(i: usize) -> Option<*mut u8> {
    let blocks = BLOCKS.lock().unwrap_or_else(|p| p.into_inner());
    let b = blocks.get(i)?;
    (!b.exposed.swap(true, Ordering::Relaxed)).then_some(b.ptr)
}

/// A view of all of block `i` (the drain reads the published part of the block JS is
/// writing: JS writes only past what it published, see `drain`).
pub(crate) fn held(i: usize) -> Option<Bytes> {
    let blocks = BLOCKS.lock().unwrap_or_else(|p| p.into_inner());
    let b = blocks.get(i)?;
    Some(Bytes::from_owner(Held {
        block: b.clone(),
        len: BLOCK_BYTES,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_is_handed_out_again_only_when_no_view_holds_it() {
        let i = next().unwrap();
        let mem = expose(i).unwrap();
        assert!(expose(i).is_none(), "a block's memory was exposed twice");
        // SAFETY: block i is free and this test is its only user.
        let data = unsafe { std::slice::from_raw_parts_mut(mem, BLOCK_BYTES) };
        data[..3].copy_from_slice(b"abc");
        let view = held(i).unwrap();
        let part = view.slice(1..3);
        drop(view);
        assert_eq!(&part[..], b"bc");
        let j = next().unwrap();
        assert_ne!(i, j, "a block with a live view was handed out");
        drop(part);
        assert_eq!(next(), Some(i.min(j)));
    }
}
