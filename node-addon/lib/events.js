'use strict';
// The event API the hook modules (lib/fs.js, lib/crypto.js, lib/net.js) are written against.
// index.js creates one `ev` per process once the native session is started, and passes it to
// each module's install(ev).
//
//   ev.mode                 'record' or 'replay'
//   ev.on                   false once the addon is disabled (hooks then call the real thing)
//   ev.kind(name)           code of an event kind, e.g. ev.kind('node.fs.readFileSync')
//   ev.record(k, input, v)  record: one event of kind k. `input` identifies the call (a path,
//                           'GET http://host/x'): its digest is checked in replay; null if none.
//                           `v` is any JSON value, and may contain Buffers/typed arrays (stored
//                           as bytes), bigints, undefined and Errors (code, errno, syscall, path
//                           and other own properties kept; they come back as Errors).
//   ev.replay(k, input)     replay: the next recorded value of kind k, checked against `input`.
//                           Returns ev.LIVE when the call is not replayed (replay went live
//                           after a divergence under policy warn-live): the caller runs the real
//                           thing. A divergence is reported by the core with the JS stack; under
//                           the default policy (abort) the process exits with status 86 inside
//                           this call (index.js `stop`).
//   ev.LIVE                 the sentinel above
//   ev.busy / ev.live(fn)   nesting guard: while a hook runs the real function (ev.live), calls
//                           the runtime makes into other hooks are not events (they happen in
//                           record only, so they must not be recorded)
//   ev.done(key, v)         record: async operation `key` completed with value v (one event of
//                           kind node.done, in completion order)
//   ev.doneTag(key, t, b)   record: ev.done(key, { t, b }) for a tag t of letters and b a
//                           Buffer or undefined (no b), without the codec's walk (hot paths)
//   ev.tagHead(key)         record: the JSON text ev.doneTag makes for `key` up to the tag, and
//   ev.doneHead(head, t, b) ev.doneTag(key, t, b) given it: a caller that notes many events of
//                           one key (a connection's stream) makes the text once
//   ev.await(key, cb)       replay: cb(v) runs (from setImmediate) when the recorded completion
//                           order reaches `key`; completions are delivered one per loop turn in
//                           recorded order. A completion the program never waits for within the
//                           session timeout is a divergence naming both. cb(ev.LIVE) when
//                           replay went live. `weak`: the wait keeps the process alive no
//                           more than an unref'd timer would (lib/timers.js)
//   ev.watch(key, cb)       replay: cb(v) runs when the recorded completion order, moved on by
//                           the program's own waits, reaches `key`; unlike ev.await it neither
//                           moves the order on by itself nor makes a stall when it does not
//                           come (a signal: it may never come, and nothing waits for it)
//   ev.hold() / release()   replay: a delivered completion whose callback runs later (a timer
//                           fired from a real zero-delay timer): nothing else is delivered
//                           until it is released
//   ev.cancel(key)          replay: drop the wait for `key` (a cleared timer)
//   ev.weak(key, w)         replay: make the wait for `key` weak (unref) or not (ref)
//   ev.ordered(identity, start)
//                           an operation that runs live in both modes (its effect or result
//                           does not depend on the world: a write to a file the program
//                           opened, a compression) but whose completion the program sees
//                           among recorded ones. start(finish) starts it; it calls
//                           finish(deliver) when it completes, deliver() handing the result to
//                           the program. Record: a completion noted, then deliver(). Replay:
//                           deliver() runs once the operation completed and the recorded order
//                           reached it (nothing else is delivered meanwhile)
//   ev.orderedCall(identity, self, args, fn) / ev.orderedPromise(identity, run)
//                           ev.ordered for fn(...args, callback), and for the promise run()
//                           returns
//   ev.opKey(identity)      'identity#n', n counting per identity: a key for ev.done/ev.await
//                           that is the same in both runs for repeated identical operations
//   ev.opCount(identity)    the counter opKey uses, { n }: a caller that keeps it makes the
//                           next key as `${identity}#${++count.n}` without the lookup
//   ev.fileWritten(p, b)    the program wrote Buffer b into file p (compared at replay's end)
//   ev.stack()              where the program made the current call (for reports)
//   ev.fail(what, e)        internal error in a hook: disables the addon (every hook restored,
//                           one line on stderr); record keeps what it has and the program runs on
//   ev.onDisable(fn)        fn runs when the addon is disabled or at exit: restore your hooks
//   ev.encode(v)/decode(x)  the value codec, exposed for tests

const path = require('path');
// The real timer functions, taken before lib/timers.js hooks the globals and `timers`:
// delivering completions must not itself become completions.
const {
  setImmediate: realImmediate,
  setTimeout: realSetTimeout,
  clearTimeout: realClearTimeout,
} = require('timers');

const PKG = path.dirname(__dirname);
const LIVE = Symbol('replay-node.live');

// Marker keys of the codec: a NUL can appear in no header name, path or JSON the hooks make.
const B = '\u0000b';
const N = '\u0000n';
const U = '\u0000u';
const E = '\u0000e';

function encode(value) {
  const bufs = [];
  // The special values are replaced in a copy before JSON.stringify: a replacer function
  // would come too late for Buffers, whose toJSON first turns them into arrays of numbers
  // (measured: ~0.9 ms for 64 KB, against microseconds this way).
  const prep = (raw) => {
    if (raw === null) return null;
    const t = typeof raw;
    if (t === 'bigint') return { [N]: raw.toString() };
    if (t === 'undefined') return { [U]: 1 };
    if (t !== 'object') return raw;
    if (raw instanceof Uint8Array || raw instanceof ArrayBuffer || ArrayBuffer.isView(raw)) {
      const b = ArrayBuffer.isView(raw)
        ? Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength)
        : Buffer.from(raw);
      bufs.push(b);
      return { [B]: bufs.length - 1 };
    }
    if (raw instanceof Error) {
      const info = { name: raw.name, message: raw.message };
      for (const k of Object.keys(raw)) {
        if (k !== 'stack') info[k] = prep(raw[k]);
      }
      return { [E]: info };
    }
    if (Array.isArray(raw)) return raw.map(prep);
    if (typeof raw.toJSON === 'function') return raw;
    const out = {};
    for (const k of Object.keys(raw)) out[k] = prep(raw[k]);
    return out;
  };
  const json = JSON.stringify({ v: prep(value) });
  return { json, bufs };
}

const NO_BUFS = Object.freeze([]);
const NULL_VALUE = Object.freeze({ json: '{"v":null}', bufs: NO_BUFS });

const ERRORS = { TypeError, RangeError, SyntaxError, ReferenceError, URIError, EvalError };

// `x` is { json, bufs }, or the JSON text alone for a value without binary parts (what
// evReplay returns for those: one object fewer per crossing).
// `top`: the replay entry point; a replayed Error's stack starts at its caller, as the real
// error's did at the hook that called the real function (frames of the codec would be files
// the recording's stack never had: a program's stack formatter reading source maps, as
// jest's does, would then read other files than recorded).
function decode(x, top) {
  const json = typeof x === 'string' ? x : x.json;
  const bufs = typeof x === 'string' ? NO_BUFS : x.bufs;
  // JSON.stringify writes a NUL as \u0000: text without one has no marker, and a reviver
  // (called for every key: most of a replayed Stats' decoding cost) has nothing to do.
  if (!json.includes('\\u0000')) return JSON.parse(json).v;
  const out = JSON.parse(json, function reviver(key, v) {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    if (B in v) return bufs[v[B]];
    if (N in v) return BigInt(v[N]);
    if (U in v) return undefined;
    if (E in v) {
      const info = v[E];
      const Ctor = ERRORS[info.name] || Error;
      const e = new Ctor(info.message);
      if (top) Error.captureStackTrace(e, top);
      for (const k of Object.keys(info)) {
        if (k !== 'message' && k !== 'name') e[k] = info[k];
      }
      if (!(info.name in ERRORS) && info.name !== 'Error') {
        Object.defineProperty(e, 'name', { value: info.name, configurable: true, writable: true });
      }
      return e;
    }
    return v;
  });
  return out.v;
}

// Frames of the program (not of this package or Node's internals) for divergence reports.
function stack() {
  // Console and stream internals can take the default 10 frames before the program's.
  // V8's own format: a program's formatter (source-map-support, jest's, babel's) may read
  // files, which would be calls of the program's own in the middle of a report.
  const limit = Error.stackTraceLimit;
  const prepare = Error.prepareStackTrace;
  let text;
  try {
    Error.stackTraceLimit = 40;
    Error.prepareStackTrace = undefined;
    text = new Error().stack;
  } finally {
    Error.stackTraceLimit = limit;
    Error.prepareStackTrace = prepare;
  }
  return String(text || '')
    .split('\n')
    .slice(1)
    .map((l) => l.trim())
    .filter((l) => l.startsWith('at ') && !l.includes(PKG + path.sep) && !l.includes('node:internal/'))
    .slice(0, 6)
    .join('\n');
}

// `native`: the addon; `host`: { mode, queue(code, input, json, bufs) (record: takes an
// event into the batch index.js hands over with the clock reads, so sequence numbers stay in
// order), disable(what, e), checkStop() (after a call not replayed: end the process if the
// core's verdict was stop), wentLive() (replay went live: drop the clock values fetched
// ahead) }.
function create(native, host) {
  const restorers = [];
  const counts = new Map();
  const ev = {
    mode: host.mode,
    on: true,
    busy: false,
    LIVE,
    encode,
    decode,
    stack,
    kind(name) {
      return native.evKind(name);
    },
    live(fn) {
      const was = ev.busy;
      ev.busy = true;
      try {
        return fn();
      } finally {
        ev.busy = was;
      }
    },
    opKey(identity) {
      return `${identity}#${++ev.opCount(identity).n}`;
    },
    opCount(identity) {
      let count = counts.get(identity);
      if (count === undefined) {
        count = { n: 0 };
        counts.set(identity, count);
      }
      return count;
    },
    onDisable(fn) {
      restorers.push(fn);
    },
    fail(what, e) {
      host.disable(what, e);
    },
    // Replay: one thing of kind `what` ran live by rule (src/lib.rs LIVE_KINDS names them);
    // the end of the replay says how many of each.
    ranLive(what) {
      if (host.mode === 'replay') native.ranLive(what);
    },
    // The program wrote `bytes` (a Buffer) into the file `path`: summed per path and compared
    // at the end of replay with the recording's (the core's file_written).
    fileWritten(path, bytes) {
      if (ev.on) native.fileWritten(path, bytes);
    },
    // Runs every module's restore function (once): the addon is off from here on.
    restoreAll() {
      ev.on = false;
      for (const fn of restorers.splice(0)) {
        try {
          fn();
        } catch (_) {
          // Restoring is best effort; the addon is off either way.
        }
      }
    },
    record() {},
    replay() {
      return LIVE;
    },
    done() {},
    doneTag() {},
    tagHead() {
      return '';
    },
    doneHead() {},
    await(key, cb) {
      realImmediate(cb, LIVE);
    },
    cancel() {},
    weak() {},
    ordered(identity, start) {
      return start((deliver) => deliver());
    },
    // ev.ordered for fn(...args, callback) and for a promise run() returns.
    orderedCall(identity, self, args, fn) {
      const at = args.length - 1;
      const cb = args[at];
      return ev.ordered(identity, (finish) => {
        args[at] = function (...results) {
          return finish(() => cb.apply(this, results));
        };
        return ev.live(() => fn.apply(self, args));
      });
    },
    orderedPromise(identity, run) {
      return ev.ordered(identity, (finish) => {
        const p = ev.live(run);
        return new Promise((resolve, reject) => {
          p.then((v) => finish(() => resolve(v)), (e) => finish(() => reject(e)));
        });
      });
    },
    deliverWatched() {
      return false;
    },
  };

  if (host.mode === 'record') {
    const doneKind = native.evKind('node.done');
    const put = host.queue;
    ev.record = (k, input, value) => {
      if (!ev.on) return;
      try {
        // null: what a write records (its input is what counts), made without the codec.
        const x = value === null ? NULL_VALUE : encode(value);
        put(k, input == null ? null : String(input), x.json, x.bufs);
      } catch (e) {
        ev.fail('recording', e);
      }
    };
    ev.done = (key, value) => ev.record(doneKind, null, { k: key, v: value });
    // The text encode({ k: key, v: { t, b: bytes } }) makes, written directly: lib/net.js
    // records every socket chunk this way, and walking a copy of the value cost more than
    // the rest of recording it.
    ev.tagHead = (key) => `{"v":{"k":${JSON.stringify(key)},"v":{"t":"`;
    ev.doneHead = (head, t, bytes) => {
      if (!ev.on) return;
      try {
        if (bytes === undefined) put(doneKind, null, head + t + '"}}}', NO_BUFS);
        else put(doneKind, null, head + t + '","b":{"\\u0000b":0}}}}', [bytes]);
      } catch (e) {
        ev.fail('recording', e);
      }
    };
    ev.doneTag = (key, t, bytes) => {
      if (ev.on) ev.doneHead(ev.tagHead(key), t, bytes);
    };
    ev.ordered = (identity, start) => {
      const key = ev.opKey(identity);
      return start((deliver) => {
        ev.done(key, 0);
        return deliver();
      });
    };
    return ev;
  }

  // Replay.
  ev.replay = (k, input) => {
    if (!ev.on) return LIVE;
    let x;
    try {
      x = native.evReplay(k, input == null ? null : String(input));
      if (x === null) {
        host.checkStop();
        if (native.isLive()) host.wentLive();
        return LIVE;
      }
      return decode(x, ev.replay);
    } catch (e) {
      ev.fail('replay', e);
      return LIVE;
    }
  };

  const doneKind = native.evKind('node.done');
  const timeoutMs = Math.max(1, native.evTimeoutMs());
  const waiters = new Map();
  const watchers = new Map(); // ev.watch: delivered when met, never waited for
  // Keys of the waits that do not keep the process alive (unref'd timers): with only those
  // left, the delivering immediate and the stall timer are unref'd too, so the program ends
  // where the recorded one did (an unref'd timer that never fired is no completion).
  const weak = new Set();
  let head = null; // the next recorded completion ({k, v}), taken but not yet delivered
  let pending = null; // the immediate that runs `run`
  let stall = null;
  // The timeout passed with no completion left in the recording: the next wait is reported.
  let ranOut = false;

  // Whether what this module holds keeps the loop alive: as long as one wait is strong.
  // `refed` is the state `pending` and `stall` were last given (new ones start ref'd).
  let refed = true;
  const liveness = () => {
    const strong = waiters.size > weak.size;
    if (strong === refed) return;
    refed = strong;
    for (const h of [pending, stall]) {
      if (h === null) continue;
      if (strong) h.ref();
      else h.unref();
    }
  };

  const goLive = () => {
    const cbs = [...waiters.values()];
    waiters.clear();
    watchers.clear();
    weak.clear();
    head = null;
    for (const cb of cbs) realImmediate(cb, LIVE);
  };

  const stalled = () => {
    stall = null;
    if (!head || waiters.size === 0) return;
    const want = [...waiters.keys()];
    const context =
      `the recorded completion order says "${head.k}" completes next, but the program ` +
      `never started it; it waits for: ${want.join(', ')}`;
    let x = null;
    try {
      x = native.evMismatch(doneKind, want[0], context);
    } catch (e) {
      ev.fail('replay', e);
      goLive();
      return;
    }
    host.checkStop();
    if (native.isLive()) host.wentLive();
    if (x === null) {
      goLive();
      return;
    }
    // warn-continue: skip the completion nobody waits for.
    head = null;
    pump();
  };

  // Deliveries whose callback has not run yet (ev.hold): nothing else is delivered first.
  let held = 0;
  ev.hold = () => {
    held++;
  };
  ev.release = () => {
    if (held > 0 && --held === 0) pump();
  };

  // Delivers at most one completion per loop turn, as the recorded run got them.
  // Timer firings run from real timers (lib/timers.js, ev.hold): the firings of the same
  // kind that follow in the recording are handed over in the same turn, so a batch of timers
  // due together fires in one timers phase as recorded, not one loop turn (and for timeouts
  // a millisecond) each. 't' for timeouts and intervals, 'm' for immediates, else null.
  const timerType = (k) => (typeof k === 'string' && (k[0] === 't' || k[0] === 'm') && k[1] >= '0' && k[1] <= '9' ? k[0] : null);

  // Delivers at most one completion per loop turn, as the recorded run got them (a chain of
  // timer firings of one kind counts as one).
  const run = () => {
    pending = null;
    if (held > 0) return;
    let chain = null;
    for (;;) {
      if (waiters.size === 0) return;
      if (!ev.on) {
        goLive();
        return;
      }
      if (head === null) {
        // The recording ended with operations still in flight (the program exited before
        // they completed): waiting for one of them is no divergence while the program may
        // still end where the recorded one did. One that goes on waiting is reported after
        // the timeout, by the ev.replay below.
        if (!native.evHasMore(doneKind)) {
          if (chain !== null || ranOut) {
            if (chain !== null) return;
          } else {
            if (stall === null) {
              // From the waits left now: a strong one delivered in a chain of timer firings
              // (which skips pump) left `refed` stale, and this timer kept a program whose
              // last wait is an unref'd timer alive until the timeout, then reported it.
              liveness();
              stall = realSetTimeout(() => {
                stall = null;
                ranOut = true;
                run();
              }, timeoutMs);
              if (!refed) stall.unref();
            }
            return;
          }
        }
        const v = ev.replay(doneKind, null);
        if (v === LIVE) {
          goLive();
          return;
        }
        head = v;
      }
      // A chain goes on only with firings of its kind; anything else waits for the release.
      if (chain !== null && timerType(head.k) !== chain) return;
      const watcher = watchers.get(head.k);
      if (watcher !== undefined && chain === null) {
        watchers.delete(head.k);
        const value = head.v;
        head = null;
        if (stall !== null) {
          realClearTimeout(stall);
          stall = null;
        }
        pump();
        watcher(value);
        return;
      }
      const cb = waiters.get(head.k);
      if (cb === undefined) {
        if (chain !== null) return;
        // The operation it belongs to has not started yet; give the program until the
        // timeout (the timer also keeps the process alive meanwhile, as the real I/O would).
        if (stall === null) {
          stall = realSetTimeout(stalled, timeoutMs);
          if (!refed) stall.unref();
        }
        return;
      }
      if (stall !== null) {
        realClearTimeout(stall);
        stall = null;
      }
      waiters.delete(head.k);
      weak.delete(head.k);
      liveness();
      const key = head.k;
      const value = head.v;
      head = null;
      if (chain === null) pump();
      cb(value);
      // Not held: its callback ran (one completion this turn). Held: a timer firing whose
      // callback runs from a real timer; the same kind's next firings may follow it.
      if (held === 0) return;
      chain = timerType(key);
      if (chain === null) return;
    }
  };

  function pump() {
    if (pending !== null || waiters.size === 0) return;
    pending = realImmediate(run);
    if (!refed) pending.unref();
    liveness();
  }

  ev.await = (key, cb, isWeak) => {
    if (!ev.on) {
      realImmediate(cb, LIVE);
      return;
    }
    if (waiters.has(key)) {
      ev.fail('replay', new Error(`two operations wait for the same completion key ${key}`));
      realImmediate(cb, LIVE);
      return;
    }
    waiters.set(key, cb);
    if (isWeak) weak.add(key);
    if (pending === null) pump();
    else if (refed === Boolean(isWeak)) liveness();
  };
  ev.watch = (key, cb) => {
    if (ev.on) watchers.set(key, cb);
  };
  ev.ordered = (identity, start) => {
    const key = ev.opKey(identity);
    let ready = null; // the live completion, come before its turn
    let turn = false; // the turn, come before the live completion (held)
    let through = false; // replay went live: completions pass as they come
    const result = start((deliver) => {
      if (through || !ev.on) return deliver();
      if (!turn) {
        ready = deliver;
        return undefined;
      }
      turn = false;
      try {
        return deliver();
      } finally {
        ev.release();
      }
    });
    ev.await(key, (r) => {
      if (r === LIVE) through = true;
      if (ready !== null) {
        const deliver = ready;
        ready = null;
        deliver();
      } else if (!through) {
        turn = true;
        ev.hold();
      }
    });
    return result;
  };
  // The next recorded completion, delivered now if a watcher waits for it and pred(key) holds:
  // for a program past its recorded end whose recording ended by a signal that struck
  // in the middle of its code (lib/output.js). True when delivered.
  ev.deliverWatched = (pred) => {
    if (!ev.on) return false;
    if (head === null) {
      if (!native.evHasMore(doneKind)) return false;
      const v = ev.replay(doneKind, null);
      if (v === LIVE) {
        goLive();
        return false;
      }
      head = v;
    }
    const w = watchers.get(head.k);
    if (w === undefined || !pred(head.k)) return false;
    watchers.delete(head.k);
    const value = head.v;
    head = null;
    w(value);
    return true;
  };
  ev.cancel = (key) => {
    if (!waiters.delete(key)) return;
    weak.delete(key);
    liveness();
  };
  ev.weak = (key, isWeak) => {
    if (!waiters.has(key)) return;
    if (isWeak) weak.add(key);
    else weak.delete(key);
    liveness();
  };
  // The loop ran dry while the next recorded completion is one a weak wait holds (an unref'd
  // timer, as lru-cache's under npx): the recorded run was kept alive a moment longer by
  // something a replay does not wait for (its stdout pipe draining) and that timer fired
  // then. It fires here too, where the process would otherwise end short of its recording;
  // a completion nobody waits for is still reported at exit.
  process.on('beforeExit', () => {
    if (!ev.on || held > 0 || waiters.size === 0 || weak.size === 0) return;
    try {
      if (head === null) {
        if (!native.evHasMore(doneKind)) return;
        const v = ev.replay(doneKind, null);
        if (v === LIVE) {
          goLive();
          return;
        }
        head = v;
      }
      if (waiters.has(head.k)) run();
    } catch (e) {
      ev.fail('replay', e);
    }
  });
  ev.onDisable(goLive);
  return ev;
}

module.exports = { create, encode, decode, stack, LIVE };
