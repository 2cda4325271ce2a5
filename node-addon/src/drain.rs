//! Recording: the JS side's event buffer lives in native memory, so its events reach the
//! log within the flush interval without the JS thread's cooperation (a program busy in a
//! synchronous loop, or blocked in `Atomics.wait`, runs no timer), and a SIGTERM/SIGINT that
//! would kill the process writes everything first.
//!
//! `index.js` writes each event into the shared region ([`region`]) and then publishes the
//! number of events written (a plain store into `ctl[C_PUB]`: the stores before it are
//! ordered on the platforms Node runs on, and V8 keeps typed-array stores in program order).
//! Events are consumed from two places, one at a time under [`STATE`]'s lock: the JS thread
//! when its batch is full or at a flush (`record_batch`, which then resets the buffer), and
//! the core's flusher before every round that writes everything ([`Recorder::on_round`]),
//! which takes what was published so far. Both record through one [`Appender`], the JS
//! thread's logical thread, taking sequence numbers in the events' order; nothing else
//! records in this process (see the crate comment), so numbers follow the program's order.
//!
//! A queued event (`lib/events.js`: file reads, socket chunks, the program's output) is
//! described in `lens` and its bytes lie in the staging block JS writes ([`crate::stage`]):
//! `lens` holds its input's byte length plus one (0: none), its JSON text's byte length, its
//! number of binary parts and their lengths; the block holds the input, the JSON text and
//! the parts, one after another. A write to stdout/stderr is one part and no text.
//!
//! The last output event may still grow (consecutive writes to one stream are one event):
//! its index and length are one word, `ctl[C_OPEN]` = index << 17 | length, which JS grows
//! by compare-and-swap and a consumer seals by swapping in -1 (JS then starts a new event).

use crate::events;
use crate::stage;
use replay_core::{Appender, Bytes, PayloadRef};
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// Events per batch (index.js `BATCH`), plus the Math.random checkpoint added at a flush.
pub(crate) const SLOTS: usize = 4096 + 1;
/// `lens` entries.
pub(crate) const LENS: usize = 1 << 16;
const VALUES_OFF: usize = 0;
const CODES_OFF: usize = VALUES_OFF + 8 * SLOTS;
const LENS_OFF: usize = (CODES_OFF + SLOTS + 7) & !7;
const CTL_OFF: usize = LENS_OFF + 4 * LENS;
const CTL: usize = 8;
/// Math.random calls so far (a double: index.js stores it at each call once seeded).
const RCOUNT_OFF: usize = CTL_OFF + 4 * CTL;
/// The region's size in bytes.
pub(crate) const REGION_BYTES: usize = RCOUNT_OFF + 8;

/// `ctl` words (index.js knows them by these numbers).
const C_PUB: usize = 0;
const C_OPEN: usize = 1;
const C_BLOCK: usize = 2;
/// Bits of the open output event's length in `ctl[C_OPEN]`.
const OPEN_BITS: u32 = 17;

/// A batch entry that is the next queued event (its value is the event kind's code).
pub(crate) const K_QUEUED: u8 = 255;

/// The shared memory, allocated once and never freed (a JS Buffer over it lives as long as
/// the process).
struct Region(*mut u8);
// SAFETY: the pointer is only read; the memory's use follows the protocol above.
unsafe impl Send for Region {}
unsafe impl Sync for Region {}

static REGION: OnceLock<Region> = OnceLock::new();

/// The region's memory (allocated at the first call, 8-byte aligned, zeroed).
pub(crate) fn region() -> *mut u8 {
    REGION
        .get_or_init(|| {
            let mem: &'static mut [u64] =
                Box::leak(vec![0u64; REGION_BYTES.div_ceil(8)].into_boxed_slice());
            Region(mem.as_mut_ptr() as *mut u8)
        })
        .0
}

fn ctl(i: usize) -> &'static AtomicI32 {
    // SAFETY: within the region, 4-byte aligned; JS accesses the word as an Int32Array
    // element (plain stores or Atomics), the same memory as an atomic.
    unsafe { &*(region().add(CTL_OFF + 4 * i) as *const AtomicI32) }
}

fn value(i: usize) -> f64 {
    // SAFETY: i < SLOTS; read as an atomic since the JS thread writes later slots nearby.
    f64::from_bits(
        unsafe { &*(region().add(VALUES_OFF + 8 * i) as *const AtomicU64) }.load(Ordering::Relaxed),
    )
}

fn random_calls() -> f64 {
    // SAFETY: within the region, 8-byte aligned.
    f64::from_bits(
        unsafe { &*(region().add(RCOUNT_OFF) as *const AtomicU64) }.load(Ordering::Relaxed),
    )
}

fn code(i: usize) -> u8 {
    // SAFETY: as in `value`.
    unsafe { &*(region().add(CODES_OFF + i) as *const AtomicU8) }.load(Ordering::Relaxed)
}

fn len_at(i: usize) -> Option<u32> {
    // SAFETY: as in `value`, bounds checked.
    (i < LENS).then(|| {
        unsafe { &*(region().add(LENS_OFF + 4 * i) as *const AtomicU32) }.load(Ordering::Relaxed)
    })
}

/// What has been consumed of the current batch.
pub(crate) struct State {
    /// Events, `lens` entries and block bytes consumed.
    n: usize,
    lens: usize,
    data: usize,
    pub(crate) appender: Option<Appender>,
    /// Kind ids of the clock hooks and of the two output streams.
    kinds: Vec<(u32, crate::Num)>,
    out_kinds: [u32; 2],
    /// The last Math.random checkpoint recorded (see [`State::checkpoint`]).
    random: f64,
    /// The last consume stopped before what it was asked to take ([`State::drained`]).
    stopped_short: bool,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

pub(crate) fn lock() -> MutexGuard<'static, Option<State>> {
    STATE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Starts draining: `appender` records as the JS thread.
pub(crate) fn start(appender: Appender, kinds: Vec<(u32, crate::Num)>, out_kinds: [u32; 2]) {
    ctl(C_OPEN).store(-1, Ordering::Relaxed);
    ctl(C_BLOCK).store(-1, Ordering::Relaxed);
    // Nothing is published yet: the log's time marks are this drain's and the later ones.
    appender.drained(appender.clock_ns());
    *lock() = Some(State {
        n: 0,
        lens: 0,
        data: 0,
        appender: Some(appender),
        kinds,
        out_kinds,
        random: 0.0,
        stopped_short: false,
    });
}

/// The flusher's drain: takes what JS published, unless the JS thread is consuming right
/// now (it holds the lock only while it hands a batch over, which writes it anyway).
pub(crate) fn on_round() {
    let Ok(mut g) = STATE.try_lock() else { return };
    if let Some(st) = g.as_mut() {
        let read_at = st.clock_ns();
        let upto = ctl(C_PUB).load(Ordering::Acquire).max(0) as usize;
        match st.consume(upto.min(SLOTS), None) {
            Ok(()) => {
                st.drained(read_at);
                st.checkpoint()
            }
            Err(e) => eprintln!("replay: internal error in replay-node (draining: {e})"),
        }
    }
}

impl State {
    /// Records the published events `[self.n, upto)`. `own`: JS's own Buffer, when its
    /// bytes are not in a staging block (only the JS thread can read it: the flusher then
    /// stops at the first queued event).
    pub(crate) fn consume(&mut self, upto: usize, own: Option<&[u8]>) -> Result<(), String> {
        let Some(app) = self.appender.as_ref() else {
            return Ok(());
        };
        self.stopped_short = false;
        if self.n >= upto {
            return Ok(());
        }
        let mut app = app.hold();
        let block = ctl(C_BLOCK).load(Ordering::Relaxed);
        let view: Option<Bytes> = if block >= 0 {
            stage::held(block as usize)
        } else {
            None
        };
        let bytes: &[u8] = match (&view, own) {
            (Some(v), _) => v,
            (None, Some(o)) => o,
            (None, None) => &[],
        };
        while self.n < upto {
            let i = self.n;
            let c = code(i);
            if c != K_QUEUED {
                let Some(&(kind, num)) = self.kinds.get(c as usize) else {
                    return Err(format!("unknown hook code {c} in a batch"));
                };
                let v = value(i);
                if c as usize == crate::K_RANDOM {
                    // The flusher may have written this count already (`checkpoint`): one
                    // checkpoint per count (replay takes an equal one as calls left over).
                    if v <= self.random {
                        self.n += 1;
                        continue;
                    }
                    self.random = v;
                }
                let payload = match num {
                    crate::Num::Int => PayloadRef::Int(v as i64),
                    crate::Num::Float => PayloadRef::Float(v),
                    crate::Num::Uint => PayloadRef::Uint(v as u64),
                };
                app.record(kind, 0, None, payload);
                self.n += 1;
                continue;
            }
            if view.is_none() && own.is_none() {
                // Bytes only the JS thread can read: it hands them over itself.
                self.stopped_short = true;
                return Ok(());
            }
            let code = value(i) as u32;
            let kind = events::kind_of(code)?;
            let at = self.lens;
            let head = |k: usize| len_at(at + k).ok_or("queued parts end early");
            let (input, json, nparts) = (head(0)? as usize, head(1)? as usize, head(2)? as usize);
            let mut parts: Vec<usize> = (0..nparts)
                .map(|k| head(3 + k).map(|l| l as usize))
                .collect::<Result<_, _>>()?;
            if i + 1 == upto && nparts == 1 {
                // Possibly the open output event: seal it, and take its length from the
                // word JS grows it by.
                let w = ctl(C_OPEN);
                let mut cur = w.load(Ordering::Acquire);
                while cur >= 0 && (cur >> OPEN_BITS) as usize == i {
                    match w.compare_exchange(cur, -1, Ordering::AcqRel, Ordering::Acquire) {
                        Ok(_) => {
                            parts[0] = (cur & ((1 << OPEN_BITS) - 1)) as usize;
                            break;
                        }
                        Err(now) => cur = now,
                    }
                }
            }
            let input_len = input.saturating_sub(1);
            let total = input_len + json + parts.iter().sum::<usize>();
            let mut off = self.data;
            if off + total > bytes.len() {
                return Err(format!(
                    "queued event needs bytes {off}..{}, the queue holds {}",
                    off + total,
                    bytes.len()
                ));
            }
            let digest = (input > 0).then(|| replay_core::digest(&[&bytes[off..off + input_len]]));
            off += input_len;
            let text = String::from_utf8_lossy(&bytes[off..off + json]).into_owned();
            off += json;
            let mut bufs = Vec::with_capacity(nparts);
            for &l in &parts {
                bufs.push(match &view {
                    Some(v) => v.slice(off..off + l),
                    None => Bytes::copy_from_slice(&bytes[off..off + l]),
                });
                off += l;
            }
            if self.out_kinds.contains(&kind) && bufs.len() == 1 {
                app.record(kind, 0, None, PayloadRef::Bytes(&bufs[0]));
            } else {
                app.record_owned(
                    kind,
                    0,
                    digest,
                    events::value_record(text, bufs.into_iter()),
                );
            }
            self.data = off;
            self.lens = at + 3 + nparts;
            self.n += 1;
        }
        Ok(())
    }

    /// The time marks' clock now, for [`Self::drained`] (0 when not recording).
    pub(crate) fn clock_ns(&self) -> u64 {
        self.appender.as_ref().map_or(0, Appender::clock_ns)
    }

    /// After a consume: if it numbered everything published up to its read (taken at
    /// `read_at`), the log's next time mark is this drain's ([`Appender::drained`]). One
    /// that stopped short (bytes only the JS thread can read) leaves earlier events for a
    /// later drain, and says nothing.
    pub(crate) fn drained(&self, read_at: u64) {
        if self.stopped_short {
            return;
        }
        if let Some(app) = self.appender.as_ref() {
            app.drained(read_at);
        }
    }

    /// Off the JS thread: a Math.random checkpoint with the calls made so far, if more than
    /// the last one says (the JS side adds them only at its crossings: a program that never
    /// hands a batch over would replay none of its calls). Read after the events consumed,
    /// so it is at least any checkpoint among them.
    pub(crate) fn checkpoint(&mut self) {
        let Some(app) = self.appender.as_ref() else {
            return;
        };
        let calls = random_calls();
        if calls > self.random {
            self.random = calls;
            let kind = self.kinds[crate::K_RANDOM].0;
            app.record(kind, 0, None, PayloadRef::Uint(calls as u64));
        }
    }

    /// After the JS thread's crossing consumed the whole batch: JS starts over at 0.
    pub(crate) fn reset(&mut self) {
        self.n = 0;
        self.lens = 0;
        self.data = 0;
        ctl(C_PUB).store(0, Ordering::Release);
        ctl(C_OPEN).store(-1, Ordering::Release);
    }
}

impl State {
    /// Records what JS published so far (the signal path: the JS thread does not run).
    pub(crate) fn consume_published(&mut self) -> Result<(), String> {
        let upto = ctl(C_PUB).load(Ordering::Acquire).max(0) as usize;
        self.consume(upto.min(SLOTS), None)?;
        self.checkpoint();
        Ok(())
    }
}
