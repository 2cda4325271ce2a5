//! The schedule: mutexes, condition variables and thread creation (`REPLAY_MUTEX_LOCK`,
//! `REPLAY_MUTEX_UNLOCK`, `REPLAY_COND_WAIT`, `REPLAY_COND_TIMEDWAIT`,
//! `REPLAY_THREAD_CREATE`).
//!
//! # What is recorded
//!
//! Every acquisition of a mutex through the macros (uncontended ones too: they can race in
//! replay) is an event `c.mutex_lock` taken while the mutex is held, so the events of one
//! mutex are in its order of acquisition. Its payload names the lock and the acquisition:
//! `lock id << 40 | n` (the n-th acquisition of that lock, from 0). A condition wait is an
//! event `c.cond_wait`/`c.cond_timedwait` after it returns (the mutex held again: that is an
//! acquisition too), with its return value and the same 8 bytes.
//!
//! Lock identity is the lock's order of first use in the recording (lock #0 is the first
//! mutex the program locked), never its address: ids are handed out under a table lock
//! together with the first use's sequence number, so their order is the events' order, and
//! replay takes the id from the log. `replay_lock_name` gives a lock a name for reports.
//!
//! # Replay
//!
//! A lock macro takes its recorded event in its thread's turn (the core's strict order),
//! then waits until the lock's previous recorded acquisition was made in this run (the
//! lock's own ticket, LEAP-style), then locks the real mutex: acquisitions of each lock come
//! in their recorded order, and the critical sections with them. A condition wait does not
//! wait on the condition at all: it releases the mutex, takes its recorded return (its turn
//! comes once whatever woke it in the recording was replayed) and acquires the mutex in its
//! recorded turn, as a spurious wake-up would; a timed wait returns `ETIMEDOUT` when the
//! recording's did, without waiting.
//!
//! # Never a silent deadlock
//!
//! A thread waiting for a lock watches who holds it. If the holder waits for its own turn in
//! the core (so it will not release the lock before an event the recording has after this
//! acquisition), the recorded order cannot be followed: that is a divergence naming the
//! lock, its holder and every thread's state, reported at once. Any other wait longer than
//! the `timeout` option is one too.

use crate::{active, apply, caller_context, site_ids, Active, NAME};
use replay_core::report::{Divergence, DivergenceKind};
use replay_core::session::Session;
use replay_core::{Event, Payload, PayloadRef, Replayer};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::replay_site;

/// Bits of the acquisition number in a lock event's payload (the lock id is above them).
const N_BITS: u32 = 40;

fn pack(id: u32, n: u64) -> u64 {
    (u64::from(id) << N_BITS) | (n & ((1 << N_BITS) - 1))
}

fn unpack(v: u64) -> (u32, u64) {
    ((v >> N_BITS) as u32, v & ((1 << N_BITS) - 1))
}

/// One mutex the program locked through the macros. Leaked: a thread's cache may hold a
/// pointer to it after the mutex is forgotten.
struct Lock {
    id: u32,
    /// Where it was first locked, for reports.
    first_site: String,
    name: Mutex<Option<String>>,
    /// Record: acquisitions so far (written only while the mutex is held). Replay:
    /// acquisitions made in this run, in recorded order.
    acquired: AtomicU64,
    /// Replay: logical thread + 1 holding it (0: none).
    holder: AtomicU32,
}

impl Lock {
    fn describe(&self) -> String {
        match &*self.name.lock().unwrap_or_else(|p| p.into_inner()) {
            Some(n) => format!(
                "lock #{} \"{n}\" (first locked at {})",
                self.id, self.first_site
            ),
            None => format!("lock #{} (first locked at {})", self.id, self.first_site),
        }
    }
}

#[derive(Default)]
struct Table {
    /// The session these ids belong to.
    gen: u32,
    by_addr: HashMap<usize, &'static Lock>,
    /// By id: the address it is bound to (None once forgotten).
    by_id: Vec<Option<usize>>,
    /// Names given before the lock's first use.
    names: HashMap<usize, String>,
}

static TABLE: Mutex<Option<Table>> = Mutex::new(None);
/// Bumped when an address is forgotten or a session starts: threads' caches check it.
static EPOCH: AtomicU64 = AtomicU64::new(1);
/// Replay: threads waiting for a lock's turn park here.
static PARK: Mutex<()> = Mutex::new(());
static WAKE: Condvar = Condvar::new();
static PARKED: AtomicU32 = AtomicU32::new(0);

const CACHE: usize = 8;

thread_local! {
    /// Direct-mapped cache address -> lock, valid for one epoch: the hot path takes no lock.
    static LOCKS: Cell<[(usize, u64, usize); CACHE]> = const { Cell::new([(0, 0, 0); CACHE]) };
    /// A thread started by `REPLAY_THREAD_CREATE`: the name it takes at its first macro
    /// unless the program names it first.
    static PENDING: RefCell<Option<String>> = const { RefCell::new(None) };
    static HAS_PENDING: Cell<bool> = const { Cell::new(false) };
    /// The thread's stable name (its own, its creator's derived one, or "main"), and how many
    /// threads it created so far: a created thread is named `<creator>/<n>`.
    static STABLE: RefCell<Option<String>> = const { RefCell::new(None) };
    static CREATED: Cell<u32> = const { Cell::new(0) };
}

fn with_table<T>(a: &Active, f: impl FnOnce(&mut Table) -> T) -> T {
    let mut t = TABLE.lock().unwrap_or_else(|p| p.into_inner());
    if t.as_ref().is_none_or(|t| t.gen != a.gen) {
        *t = Some(Table {
            gen: a.gen,
            ..Table::default()
        });
        EPOCH.fetch_add(1, Ordering::AcqRel);
    }
    f(t.as_mut().expect("set above"))
}

fn slot(addr: usize) -> usize {
    (addr >> 6 ^ addr >> 3) % CACHE
}

/// The lock at `addr`, if this thread's cache knows it in the current epoch.
#[inline]
fn cached(addr: usize) -> Option<&'static Lock> {
    let epoch = EPOCH.load(Ordering::Acquire);
    LOCKS
        .try_with(|c| {
            let (a, e, p) = c.get()[slot(addr)];
            // SAFETY: p came from a leaked &'static Lock.
            (a == addr && e == epoch).then(|| unsafe { &*(p as *const Lock) })
        })
        .ok()
        .flatten()
}

fn remember(addr: usize, l: &'static Lock) {
    let epoch = EPOCH.load(Ordering::Acquire);
    let _ = LOCKS.try_with(|c| {
        let mut v = c.get();
        v[slot(addr)] = (addr, epoch, l as *const Lock as usize);
        c.set(v);
    });
}

fn new_lock(t: &mut Table, addr: usize, id: u32, site: &str) -> &'static Lock {
    let l: &'static Lock = Box::leak(Box::new(Lock {
        id,
        first_site: site.to_string(),
        name: Mutex::new(t.names.remove(&addr)),
        acquired: AtomicU64::new(0),
        holder: AtomicU32::new(0),
    }));
    t.by_addr.insert(addr, l);
    if t.by_id.len() <= id as usize {
        t.by_id.resize(id as usize + 1, None);
    }
    t.by_id[id as usize] = Some(addr);
    l
}

/// The text of a site's `site_name` (for a lock's first use).
unsafe fn site_text(site: *mut replay_site) -> String {
    crate::text((*site).site_name, "?").into_owned()
}

/// A created thread's name, taken at its first macro use unless it was named meanwhile.
#[inline]
pub(crate) fn take_pending_name(a: &Active) {
    if !HAS_PENDING.try_with(|h| h.get()).unwrap_or(false) {
        return;
    }
    let _ = HAS_PENDING.try_with(|h| h.set(false));
    if let Ok(Some(name)) = PENDING.try_with(|p| p.borrow_mut().take()) {
        a.core.name_thread(&name);
    }
}

/// The program named this thread: its name wins over a pending derived one.
pub(crate) fn named(name: &str) {
    let _ = HAS_PENDING.try_with(|h| h.set(false));
    let _ = PENDING.try_with(|p| p.borrow_mut().take());
    let _ = STABLE.try_with(|s| *s.borrow_mut() = Some(name.to_string()));
}

/// A session started: the thread that started it is "main", and no thread's cached lock
/// (ids and counts of an earlier session) is used again.
pub(crate) fn init_thread() {
    EPOCH.fetch_add(1, Ordering::AcqRel);
    let _ = STABLE.try_with(|s| {
        let mut s = s.borrow_mut();
        if s.is_none() {
            *s = Some("main".into());
        }
    });
}

// ---------------------------------------------------------------------------------------
// Record

/// Record: the mutex at `addr` was just acquired at `site`: one event, in lock order.
unsafe fn record_acquired(
    a: &Active,
    site: *mut replay_site,
    addr: usize,
    event: impl Fn(u64) -> PayloadRefOwned,
) {
    let Session::Record(rec) = &a.core.session else {
        return;
    };
    let (kind, s, digest) = site_ids(site, a);
    if let Some(l) = cached(addr) {
        // The mutex is held: no other thread writes its count meanwhile.
        let n = l.acquired.load(Ordering::Relaxed);
        l.acquired.store(n + 1, Ordering::Relaxed);
        event(pack(l.id, n)).record(rec, kind, s, digest);
        return;
    }
    // A first use in this thread: under the table lock, so that a new lock's id and its
    // event's sequence number are taken in the same order as other new locks'.
    let l = with_table(a, |t| {
        let l = match t.by_addr.get(&addr) {
            Some(l) => *l,
            None => {
                let id = t.by_id.len() as u32;
                new_lock(t, addr, id, &site_text(site))
            }
        };
        let n = l.acquired.load(Ordering::Relaxed);
        l.acquired.store(n + 1, Ordering::Relaxed);
        event(pack(l.id, n)).record(rec, kind, s, digest);
        l
    });
    remember(addr, l);
}

/// A lock event's payload, built after the acquisition number is known.
enum PayloadRefOwned {
    Lock(u64),
    Wait { ret: i64, packed: [u8; 8] },
}

impl PayloadRefOwned {
    fn record(&self, rec: &replay_core::Recorder, kind: u32, site: u32, digest: u64) {
        let p = match self {
            PayloadRefOwned::Lock(v) => PayloadRef::Uint(*v),
            PayloadRefOwned::Wait { ret, packed } => PayloadRef::Ret {
                ret: *ret,
                errno: 0,
                data: Some(&packed[..]),
            },
        };
        rec.record(kind, site, Some(digest), p);
    }
}

// ---------------------------------------------------------------------------------------
// Replay

/// The lock the recording's event names, bound to the mutex at `addr`; a divergence if the
/// program locks another mutex than the recording did there.
unsafe fn bind(
    a: &Active,
    r: &Replayer,
    site: *mut replay_site,
    addr: usize,
    id: u32,
    ev: &Event,
) -> Option<&'static Lock> {
    if let Some(l) = cached(addr) {
        if l.id == id {
            return Some(l);
        }
    }
    let found = with_table(a, |t| {
        if let Some(l) = t.by_addr.get(&addr) {
            return if l.id == id {
                Ok(*l)
            } else {
                Err(format!(
                    "the recording locked lock #{id} here, but this mutex is {}",
                    l.describe()
                ))
            };
        }
        match t.by_id.get(id as usize) {
            // Bound to another mutex that is still in use.
            Some(Some(other)) => {
                let other = t.by_addr.get(other).map(|l| l.describe());
                Err(format!(
                    "the recording locked {} here, but this is a mutex the program had not locked before",
                    other.unwrap_or_else(|| format!("lock #{id}"))
                ))
            }
            // New here, or the mutex it was bound to was destroyed.
            Some(None) | None => Ok(new_lock(t, addr, id, &site_text(site))),
        }
    });
    match found {
        Ok(l) => {
            remember(addr, l);
            Some(l)
        }
        Err(why) => {
            let (me, my_name) = r.caller();
            let mut d = Divergence::at(
                DivergenceKind::Mismatch,
                ev.seq,
                me,
                my_name,
                a.core.log.clone(),
            );
            let (kind, s, digest) = site_ids(site, a);
            d.expected_kind = Some(r.text(ev.kind));
            d.expected_site = Some(r.text(ev.site));
            d.expected = Some(ev.clone());
            d.actual.kind = kind;
            d.actual.site = s;
            d.actual.digest = Some(digest);
            d.actual_kind = r.text(kind);
            d.actual_site = r.text(s);
            let ctx = caller_context(site).map_or(why.clone(), |c| format!("{c}: {why}"));
            d.actual.context = Some(ctx);
            let _ = apply(a.core.diverged(Box::new(d)));
            None
        }
    }
}

/// How often a waiting thread looks at who holds the lock.
const LOOK: Duration = Duration::from_millis(20);

/// Replay: takes the mutex at `m` as acquisition `n` of lock `l` (recorded event `seq`):
/// after acquisition `n - 1` was made, never before. Returns false after a divergence that
/// left replay live (the caller locks live).
unsafe fn acquire_in_turn(
    a: &Active,
    r: &Replayer,
    l: &'static Lock,
    n: u64,
    m: *mut libc::pthread_mutex_t,
    seq: u64,
) -> bool {
    let me = r.caller_id();
    let start = Instant::now();
    let timeout = a.core.options.timeout;
    let mut suspect: Option<(u32, u64)> = None;
    let mut last_look = Instant::now();
    // The lock's turn.
    let mut spins = 0u32;
    loop {
        let done = l.acquired.load(Ordering::Acquire);
        if done == n {
            break;
        }
        if done > n || r.is_live() {
            // Acquisition n was made by another thread (only after a divergence that let
            // replay go on), or replay went live: the caller locks live.
            return false;
        }
        spins += 1;
        if spins < 200 {
            std::hint::spin_loop();
            continue;
        }
        if spins < 400 {
            std::thread::yield_now();
            continue;
        }
        if last_look.elapsed() >= LOOK {
            last_look = Instant::now();
            if let Some(why) = blocked(a, r, l, me, n, start, timeout, &mut suspect) {
                return lock_divergence(a, r, l, seq, why);
            }
        }
        PARKED.fetch_add(1, Ordering::AcqRel);
        let g = PARK.lock().unwrap_or_else(|p| p.into_inner());
        if l.acquired.load(Ordering::Acquire) < n {
            let _ = WAKE.wait_timeout(g, Duration::from_millis(2));
        }
        PARKED.fetch_sub(1, Ordering::AcqRel);
    }
    // The mutex: its holder releases it without needing a turn (everything it did while
    // holding it came before this acquisition in the recording).
    if libc::pthread_mutex_trylock(m) != 0 {
        loop {
            let mut ts: libc::timespec = std::mem::zeroed();
            libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts);
            ts.tv_nsec += 5_000_000;
            if ts.tv_nsec >= 1_000_000_000 {
                ts.tv_sec += 1;
                ts.tv_nsec -= 1_000_000_000;
            }
            match libc::pthread_mutex_timedlock(m, &ts) {
                0 => break,
                libc::ETIMEDOUT if r.is_live() => {
                    libc::pthread_mutex_lock(m);
                    break;
                }
                libc::ETIMEDOUT => {}
                // Not a lock that can be waited on with a bound (or a broken one): wait.
                _ => {
                    libc::pthread_mutex_lock(m);
                    break;
                }
            }
            if last_look.elapsed() >= LOOK {
                last_look = Instant::now();
                if let Some(why) = blocked(a, r, l, me, n, start, timeout, &mut suspect) {
                    return lock_divergence(a, r, l, seq, why);
                }
            }
        }
    }
    l.holder.store(me.wrapping_add(1), Ordering::Relaxed);
    l.acquired.store(n + 1, Ordering::Release);
    if PARKED.load(Ordering::Acquire) > 0 {
        let _g = PARK.lock().unwrap_or_else(|p| p.into_inner());
        WAKE.notify_all();
    }
    true
}

/// Why thread `me`, waiting for acquisition `n` of `l`, can never get it, if it can tell:
/// the holder waits for a turn of its own in the core (seen twice in a row with the lock
/// unchanged, so not a holder that just released it), or the wait outlasted `timeout`.
#[allow(clippy::too_many_arguments)]
fn blocked(
    a: &Active,
    r: &Replayer,
    l: &Lock,
    me: u32,
    n: u64,
    start: Instant,
    timeout: Duration,
    suspect: &mut Option<(u32, u64)>,
) -> Option<String> {
    let done = l.acquired.load(Ordering::Acquire);
    let holder = l.holder.load(Ordering::Relaxed);
    if holder != 0 && holder - 1 != me {
        let h = holder - 1;
        if let Some(turn) = r.waiting_for(h) {
            let now = (h, done);
            if *suspect == Some(now) {
                return Some(format!(
                    "it is held by thread {h} \"{}\", which waits for its own turn at event #{turn}; in the recording it released the lock before this acquisition (#{n} of the lock)",
                    r.recorded_thread_name(h)
                ));
            }
            *suspect = Some(now);
            return None;
        }
    }
    *suspect = None;
    if start.elapsed() >= timeout {
        let who = if done < n {
            format!(
                "the lock's acquisition #{} before it was never made in this run",
                n - 1
            )
        } else if holder != 0 {
            format!(
                "it is held by thread {} \"{}\", which did not release it",
                holder - 1,
                r.recorded_thread_name(holder - 1)
            )
        } else {
            "the mutex was not released (locked outside the macros?)".to_string()
        };
        let _ = a;
        return Some(format!(
            "waited {:.1}s (the timeout option): {who}",
            timeout.as_secs_f64()
        ));
    }
    None
}

/// Reports that `l` cannot be taken in its recorded turn; false when replay goes on live.
fn lock_divergence(a: &Active, r: &Replayer, l: &Lock, seq: u64, why: String) -> bool {
    let (me, my_name) = r.caller();
    let mut d = Divergence::at(
        DivergenceKind::Lock {
            lock: l.describe(),
            why,
        },
        seq,
        me,
        my_name,
        a.core.log.clone(),
    );
    d.threads = r.thread_states();
    let _ = apply(a.core.diverged(Box::new(d)));
    false
}

/// Replay: the recorded event of a lock macro at `site`, or `None` to run live.
unsafe fn replayed(a: &Active, site: *mut replay_site) -> Option<Event> {
    let (kind, s, digest) = site_ids(site, a);
    apply(
        a.core
            .replay(kind, s, Some(digest), &|| caller_context(site)),
    )
}

/// A recorded payload the macro cannot use: a divergence; the call runs live.
unsafe fn misfit(a: &Active, site: *mut replay_site, e: &Event, why: &str) {
    crate::misfit(a, site, site_ids(site, a), e, why.to_string());
}

// ---------------------------------------------------------------------------------------
// The C ABI

/// `REPLAY_MUTEX_LOCK(m)`: `pthread_mutex_lock(m)`, recorded as an acquisition of `m`; in
/// replay the acquisition comes in its recorded turn (see the header's notes). Returns what
/// `pthread_mutex_lock` returns. `mutex` is a `pthread_mutex_t *`.
///
/// # Safety
/// `site` points at a valid `replay_site`; `mutex` at an initialized `pthread_mutex_t`.
#[no_mangle]
pub unsafe extern "C" fn replay_mutex_lock(site: *mut replay_site, mutex: *mut c_void) -> c_int {
    let m = mutex as *mut libc::pthread_mutex_t;
    let Some(a) = active().filter(|_| !site.is_null() && !m.is_null()) else {
        return libc::pthread_mutex_lock(m);
    };
    take_pending_name(a);
    match &a.core.session {
        Session::Record(_) => {
            a.core.chaos_point();
            let rc = libc::pthread_mutex_lock(m);
            crate::guarded((), || {
                if rc == 0 {
                    record_acquired(a, site, m as usize, PayloadRefOwned::Lock);
                } else {
                    // A failed lock (an error-checking mutex): its status, no acquisition.
                    let (kind, s, digest) = site_ids(site, a);
                    a.core.record(
                        kind,
                        s,
                        Some(digest),
                        PayloadRef::Ret {
                            ret: i64::from(rc),
                            errno: 0,
                            data: None,
                        },
                    );
                }
            });
            rc
        }
        Session::Replay(r) if !r.is_live() => {
            let got = crate::guarded(None, || {
                let ev = replayed(a, site)?;
                match ev.payload {
                    Payload::Uint { value } => {
                        let (id, n) = unpack(value);
                        let l = bind(a, r, site, m as usize, id, &ev)?;
                        acquire_in_turn(a, r, l, n, m, ev.seq).then_some(0)
                    }
                    Payload::Ret { ret, .. } => Some(ret as c_int),
                    _ => {
                        misfit(a, site, &ev, "the recording has no lock acquisition here");
                        None
                    }
                }
            });
            match got {
                Some(rc) => rc,
                None => libc::pthread_mutex_lock(m),
            }
        }
        Session::Replay(_) => libc::pthread_mutex_lock(m),
    }
}

/// `REPLAY_MUTEX_UNLOCK(m)`: `pthread_mutex_unlock(m)` (not an event: only acquisitions
/// are ordered); under chaos a scheduling point right after the release.
///
/// # Safety
/// `mutex` points at a `pthread_mutex_t` the calling thread holds.
#[no_mangle]
pub unsafe extern "C" fn replay_mutex_unlock(mutex: *mut c_void) -> c_int {
    let m = mutex as *mut libc::pthread_mutex_t;
    let Some(a) = active() else {
        return libc::pthread_mutex_unlock(m);
    };
    match &a.core.session {
        Session::Record(_) => {
            let rc = libc::pthread_mutex_unlock(m);
            a.core.chaos_point();
            rc
        }
        Session::Replay(_) => {
            if let Some(l) = cached(m as usize) {
                l.holder.store(0, Ordering::Relaxed);
            }
            libc::pthread_mutex_unlock(m)
        }
    }
}

/// `REPLAY_COND_WAIT(c, m)` (`abstime` NULL) and `REPLAY_COND_TIMEDWAIT(c, m, abstime)`:
/// `pthread_cond_wait`/`pthread_cond_timedwait`, recorded with their return value and the
/// re-acquisition of `m`. In replay the condition is not waited on: the mutex is released,
/// the recorded return comes in its turn and the mutex is taken again in its recorded turn
/// (a timed wait that timed out returns `ETIMEDOUT` at once: time compresses). The program
/// must re-check its predicate after a wait, as POSIX requires anyway.
///
/// # Safety
/// `site` points at a valid `replay_site`; `cond` at a `pthread_cond_t`, `mutex` at a
/// `pthread_mutex_t` the calling thread holds; `abstime` is NULL or a valid `timespec`.
#[no_mangle]
pub unsafe extern "C" fn replay_cond_wait(
    site: *mut replay_site,
    cond: *mut c_void,
    mutex: *mut c_void,
    abstime: *const c_void,
) -> c_int {
    let c = cond as *mut libc::pthread_cond_t;
    let m = mutex as *mut libc::pthread_mutex_t;
    let ts = abstime as *const libc::timespec;
    let live = || {
        if ts.is_null() {
            libc::pthread_cond_wait(c, m)
        } else {
            libc::pthread_cond_timedwait(c, m, ts)
        }
    };
    let Some(a) = active().filter(|_| !site.is_null() && !m.is_null()) else {
        return live();
    };
    take_pending_name(a);
    match &a.core.session {
        Session::Record(_) => {
            a.core.chaos_point();
            let rc = live();
            crate::guarded((), || {
                record_acquired(a, site, m as usize, |v| PayloadRefOwned::Wait {
                    ret: i64::from(rc),
                    packed: v.to_le_bytes(),
                });
            });
            rc
        }
        Session::Replay(r) if !r.is_live() => {
            // Released first: the threads whose acquisitions come before this one's
            // recorded return need the mutex to get there.
            if let Some(l) = cached(m as usize) {
                l.holder.store(0, Ordering::Relaxed);
            }
            libc::pthread_mutex_unlock(m);
            let got = crate::guarded(None, || {
                let ev = replayed(a, site)?;
                let (ret, packed) = match &ev.payload {
                    Payload::Ret {
                        ret,
                        data: Some(data),
                        ..
                    } if data.len() == 8 => {
                        let mut b = [0u8; 8];
                        b.copy_from_slice(data);
                        (*ret, u64::from_le_bytes(b))
                    }
                    _ => {
                        misfit(a, site, &ev, "the recording has no condition wait here");
                        return None;
                    }
                };
                let (id, n) = unpack(packed);
                let l = bind(a, r, site, m as usize, id, &ev)?;
                acquire_in_turn(a, r, l, n, m, ev.seq).then_some(ret as c_int)
            });
            match got {
                Some(rc) => rc,
                // Live from here: take the mutex back, as the wait would have.
                None => {
                    libc::pthread_mutex_lock(m);
                    0
                }
            }
        }
        Session::Replay(_) => live(),
    }
}

/// Forgets the mutex at `mutex` (`REPLAY_MUTEX_DESTROY` calls it before
/// `pthread_mutex_destroy`): a new mutex later made at the same address is a new lock.
///
/// # Safety
/// Any pointer; it is only used as a number.
#[no_mangle]
pub unsafe extern "C" fn replay_mutex_forget(mutex: *const c_void) {
    let Some(a) = active() else { return };
    crate::guarded((), || {
        with_table(a, |t| {
            if let Some(l) = t.by_addr.remove(&(mutex as usize)) {
                if let Some(x) = t.by_id.get_mut(l.id as usize) {
                    *x = None;
                }
            }
            t.names.remove(&(mutex as usize));
        });
        EPOCH.fetch_add(1, Ordering::AcqRel);
    });
}

/// Names the lock at `mutex` in divergence reports (identity stays its order of first use).
/// NULL is ignored.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn replay_lock_name(mutex: *const c_void, name: *const c_char) {
    if name.is_null() {
        return;
    }
    let Some(a) = active() else { return };
    let name = crate::text(name, "").into_owned();
    crate::guarded((), || {
        with_table(a, |t| match t.by_addr.get(&(mutex as usize)) {
            Some(l) => *l.name.lock().unwrap_or_else(|p| p.into_inner()) = Some(name),
            None => {
                t.names.insert(mutex as usize, name);
            }
        });
    });
}

/// What a created thread runs first: takes its derived name, then the program's function.
struct Start {
    func: unsafe extern "C" fn(*mut c_void) -> *mut c_void,
    arg: *mut c_void,
    name: Option<String>,
}

extern "C" fn thread_start(p: *mut c_void) -> *mut c_void {
    // SAFETY: p is the Box<Start> replay_thread_create made for this thread.
    let Start { func, arg, name } = *unsafe { Box::from_raw(p as *mut Start) };
    if let Some(name) = name {
        let _ = STABLE.try_with(|st| *st.borrow_mut() = Some(name.clone()));
        let _ = PENDING.try_with(|pn| *pn.borrow_mut() = Some(name));
        let _ = HAS_PENDING.try_with(|h| h.set(true));
    }
    // SAFETY: the program's start routine with its own argument.
    unsafe { func(arg) }
}

/// `REPLAY_THREAD_CREATE(thread, attr, func, arg)`: `pthread_create`, recorded with its
/// return value; the new thread gets a stable logical name, `<creator>/<n>` for the creator's
/// n-th created thread (from 1; the thread that started the session is `main`), unless it
/// calls `replay_thread_name` before its first macro use. Threads are thereby matched
/// between record and replay by program order, not by the race of their first calls. In
/// replay a creation that failed in the recording fails again with its status (no thread).
///
/// # Safety
/// As `pthread_create`; `site` points at a valid `replay_site`.
#[no_mangle]
pub unsafe extern "C" fn replay_thread_create(
    site: *mut replay_site,
    thread: *mut c_void,
    attr: *const c_void,
    func: Option<unsafe extern "C" fn(*mut c_void) -> *mut c_void>,
    arg: *mut c_void,
) -> c_int {
    let t = thread as *mut libc::pthread_t;
    let at = attr as *const libc::pthread_attr_t;
    let Some(func) = func else {
        return libc::EINVAL;
    };
    let Some(a) = active().filter(|_| !site.is_null()) else {
        // No session: the trampoline only runs the function (no name to give).
        let start = Box::into_raw(Box::new(Start {
            func,
            arg,
            name: None,
        }));
        let rc = libc::pthread_create(t, at, thread_start, start as *mut c_void);
        if rc != 0 {
            drop(Box::from_raw(start));
        }
        return rc;
    };
    take_pending_name(a);
    let n = CREATED
        .try_with(|c| {
            c.set(c.get() + 1);
            c.get()
        })
        .unwrap_or(0);
    let parent = STABLE
        .try_with(|s| s.borrow().clone())
        .ok()
        .flatten()
        .or_else(|| NAME.try_with(|n| n.borrow().clone()).ok().flatten())
        .unwrap_or_else(|| "unnamed".into());
    let start = Box::into_raw(Box::new(Start {
        func,
        arg,
        name: Some(format!("{parent}/{n}")),
    }));
    let create = || {
        let rc = libc::pthread_create(t, at, thread_start, start as *mut c_void);
        if rc != 0 {
            drop(Box::from_raw(start));
        }
        rc
    };
    match &a.core.session {
        Session::Record(rec) => {
            a.core.chaos_point();
            // The creation's number is taken before the thread exists: the new thread's
            // events come after it, so replay creates the thread before they are due.
            let seq = rec.seq_counter().fetch_add(1, Ordering::Relaxed);
            let rc = create();
            crate::guarded((), || {
                let (kind, s, digest) = site_ids(site, a);
                rec.record_at(
                    seq,
                    kind,
                    s,
                    Some(digest),
                    PayloadRef::Ret {
                        ret: i64::from(rc),
                        errno: 0,
                        data: None,
                    },
                );
            });
            rc
        }
        Session::Replay(r) if !r.is_live() => {
            let ev = crate::guarded(None, || replayed(a, site));
            match ev.map(|e| e.payload) {
                Some(Payload::Ret { ret, .. }) if ret != 0 => {
                    drop(Box::from_raw(start));
                    ret as c_int
                }
                _ => create(),
            }
        }
        Session::Replay(_) => create(),
    }
}
