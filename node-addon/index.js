'use strict';
// replay-node: records and replays Date.now, Date, Math.random, performance.now,
// performance.timeOrigin and process.hrtime (and hrtime.bigint).
// Loaded with `node --require /path/to/node-addon app.js`; configured by REPLAY_* variables.
//
// The hooks must be installed before any user code runs (a reference to the real function
// taken earlier bypasses them), which is what --require does. worker_threads run --require
// modules too: there installWorker hooks the worker's own Date, Math.random,
// performance.now, fs, crypto randoms and child processes, recorded as a logical thread of the process (`worker N`).

const { isMainThread } = require('worker_threads');
const fs = require('fs');
const path = require('path');
const events = require('./lib/events.js');

// A second copy of this file (the package reached through another path) must not hook the
// hooks again; it hands out the first copy's exports.
const LOADED = Symbol.for('replay-node');
const api = globalThis[LOADED] || {
  mode: 'off',
  flush() {},
};
module.exports = api;

// Hook codes, as the native side knows them (KINDS in src/lib.rs). K_RANDOM's batch entries
// are checkpoints (calls so far), not values: see "Math.random" below.
const K_NOW = 0;
const K_DATE = 1;
const K_RANDOM = 2;
const K_PERF = 3;
// Integer nanoseconds: exact while below 2^53 ns (about 104 days since boot).
const K_HRTIME = 4;
const K_HRTIME_BIG = 5;
const K_ORIGIN = 6;
// A batch entry that is the next event queued by lib/events.js (K_QUEUED in src/lib.rs).
const K_QUEUED = 255;
// Bytes of queued event values held before a crossing (see host.queue).
const QUEUE_BYTES = 1 << 20;
// Bytes of consecutive writes to one stream recorded as one event at most (host.queueOut).
const OUT_MERGE = 64 << 10;

// Hook modules under lib/, installed in this order when present.
const MODULES = ['fs', 'crypto', 'net', 'dns', 'os', 'watch', 'testrun', 'ipc', 'pool', 'codecache'];

// The program as the core names it in the log (a log recorded by another program is refused):
// the script, or what runs without one.
function programName() {
  if (process.argv[1]) return process.argv[1];
  return process._eval != null ? '-e' : 'repl';
}

// The process's arguments as the log's header keeps them and replay compares them (another
// argument list is a warning), without the option that loaded this package: it may well be
// another path in replay (as the JVM agent's -agentpath, which the core leaves out).
function programArgv() {
  const ours = (v) => {
    if (v === 'replay-node' || v === 'replay-node/index.mjs') return true;
    const p = path.resolve(v);
    return p === __dirname || p === path.join(__dirname, 'index.js') || p === path.join(__dirname, 'index.mjs');
  };
  const opts = [];
  const exec = process.execArgv;
  for (let i = 0; i < exec.length; i++) {
    const a = exec[i];
    if ((a === '--require' || a === '-r' || a === '--import') && i + 1 < exec.length && ours(exec[i + 1])) {
      i++;
      continue;
    }
    const eq = a.indexOf('=');
    if (eq > 0 && ['--require', '--import'].includes(a.slice(0, eq)) && ours(a.slice(eq + 1))) continue;
    opts.push(a);
  }
  return [process.argv[0], ...opts, ...process.argv.slice(1)];
}

// Events buffered before they are handed to the native side: a crossing costs about as much
// as a hundred hooked calls, so it is paid once per batch. Replay fetches as many of a kind's
// recorded values per crossing.
const BATCH = 4096;
// The batch is also handed over this often (REPLAY_FLUSH, 100 ms by default), which adds
// the Math.random checkpoint; the events themselves reach the log within the interval
// without it (the core's flusher reads the batch: src/drain.rs).
const FLUSH_MS = 100;

function fail(what, e) {
  const msg = e && e.message ? e.message : String(e);
  process.stderr.write(`replay: internal error in replay-node (${what}: ${msg}); replay is off, the program runs on\n`);
}

if (isMainThread && !globalThis[LOADED]) {
  Object.defineProperty(globalThis, LOADED, { value: api });
  install();
} else if (!isMainThread && !globalThis[LOADED]) {
  Object.defineProperty(globalThis, LOADED, { value: api });
  installWorker();
}

// Whether `v` holds a SharedArrayBuffer (itself, a view of one, or within `depth` levels of
// arrays and plain objects).
function sharesMemory(v, depth) {
  if (typeof SharedArrayBuffer === 'undefined' || v === null || typeof v !== 'object') return false;
  if (v instanceof SharedArrayBuffer) return true;
  if (ArrayBuffer.isView(v)) return v.buffer instanceof SharedArrayBuffer;
  if (depth <= 0) return false;
  const values = Array.isArray(v) ? v : Object.getPrototypeOf(v) === Object.prototype ? Object.values(v) : [];
  return values.some((x) => sharesMemory(x, depth - 1));
}

// A worker thread: its hooks cross to the native side per call (src/lib.rs, "worker
// threads"); its output reaches the main thread's stdout/stderr, which records it there.
function installWorker() {
  const mode = (process.env.REPLAY_MODE || 'off').trim().toLowerCase();
  if (mode === 'off' || mode === '') return;
  let native;
  try {
    native = require('./replay_node.node');
  } catch (_) {
    return; // the main thread said so already
  }
  const { threadId } = require('worker_threads');
  let started;
  try {
    started = native.workerStart(`worker ${threadId}`, events.stack);
  } catch (e) {
    fail('starting a worker thread', e);
    return;
  }
  if (started !== 'record' && started !== 'replay') return;
  api.mode = started;
  // Memory shared with this thread (a SharedArrayBuffer in its workerData): what the threads
  // do to it, and in which order, is not recorded (Atomics tickets taken in another order
  // went into a file without a word). A replay counts it as unchecked.
  if (started === 'replay') {
    try {
      if (sharesMemory(require('worker_threads').workerData, 3)) native.ranLive('shared memory');
    } catch (_) {
      // Only the note is lost.
    }
  }
  const K_WORKER_RANDOM = 7;
  const RealDate = globalThis.Date;
  const realNow = RealDate.now;
  const realRandom = Math.random;
  const perf = globalThis.performance;
  const realPerfNow = perf.now;
  let ev = null;
  let on = true;
  const stopIfSaid = () => {
    if (native.stopCode() !== 0) native.workerStop();
  };
  const clock =
    started === 'record'
      ? (code, live) => {
          const v = live();
          if (on && !(ev !== null && ev.busy)) {
            try {
              native.workerRecord(code, v);
            } catch (e) {
              on = false;
              fail('recording a worker thread', e);
            }
          }
          return v;
        }
      : (code, live) => {
          if (!on || (ev !== null && ev.busy)) return live();
          let v = NaN;
          try {
            v = native.workerReplay(code);
          } catch (e) {
            on = false;
            fail('replaying a worker thread', e);
          }
          if (v !== v) {
            stopIfSaid();
            return live();
          }
          return v;
        };
  const liveNow = () => realNow();
  const ReplayDate = function Date(...args) {
    if (new.target === undefined) return new RealDate(clock(K_DATE, liveNow)).toString();
    if (args.length === 0) return Reflect.construct(RealDate, [clock(K_DATE, liveNow)], new.target);
    return Reflect.construct(RealDate, args, new.target);
  };
  Object.defineProperty(ReplayDate, 'length', { value: RealDate.length });
  ReplayDate.prototype = RealDate.prototype;
  Object.setPrototypeOf(ReplayDate, RealDate);
  for (const key of ['UTC', 'parse']) {
    Object.defineProperty(ReplayDate, key, Object.getOwnPropertyDescriptor(RealDate, key));
  }
  Object.defineProperty(ReplayDate, 'now', {
    value: {
      now() {
        return clock(K_NOW, liveNow);
      },
    }.now,
    writable: true,
    configurable: true,
  });
  const host = {
    mode: started,
    queue(code, input, json, bufs) {
      native.evRecord(code, input, json, bufs);
    },
    queueOut() {},
    flushPending() {},
    checkStop: stopIfSaid,
    wentLive() {},
    disable(what, e) {
      on = false;
      if (ev) ev.restoreAll();
      fail(what, e);
    },
  };
  try {
    RealDate.prototype.constructor = ReplayDate;
    globalThis.Date = ReplayDate;
    Math.random = {
      random() {
        return clock(K_WORKER_RANDOM, realRandom);
      },
    }.random;
    Object.defineProperty(perf, 'now', {
      value: {
        now() {
          return clock(K_PERF, () => realPerfNow.call(perf));
        },
      }.now,
      writable: true,
      configurable: true,
    });
    ev = events.create(native, host);
    // Writes fed from memory shared with another thread (pino's transports: thread-stream
    // hands the log lines over through a SharedArrayBuffer) are split by that thread's timing,
    // which replay does not reproduce: such a worker's writes to files run live, unordered,
    // as before lib/fs.js ordered them (see writeFds there).
    try {
      ev.sharedMemory = sharesMemory(require('worker_threads').workerData, 3);
    } catch (_) {
      ev.sharedMemory = false;
    }
    require('./lib/stacks.js').guard(Error);
    const file = path.join(__dirname, 'lib', 'fs.js');
    if (ev.live(() => fs.existsSync(file))) require(file).install(ev);
    // crypto's random functions, as on the main thread (a worker's randomBytes was live).
    const randoms = path.join(__dirname, 'lib', 'crypto.js');
    if (ev.live(() => fs.existsSync(randoms))) require(randoms).install(ev);
    // Children a worker starts (esbuild's buildSync runs its binary from a worker).
    require('./lib/child.js').install(ev, native);
    // Messages from the parent, and from the workers and channels it makes, in their
    // recorded order.
    require('./lib/worker.js').install(ev);
    require('./lib/os.js').install(ev);
  } catch (e) {
    host.disable('installing the hooks in a worker thread', e);
  }
}

// Whether fd 0 is another stdin than the launcher's (REPLAY_STDIN: `device:inode`; unset,
// when run without the launcher: no).
function ownStdin(fs) {
  const named = process.env.REPLAY_STDIN;
  if (!named) return false;
  try {
    const st = fs.fstatSync(0, { bigint: true });
    return named !== `${st.dev}:${st.ino}`;
  } catch (_) {
    return false;
  }
}

// process.stdin on a pipe is a socket Node reads natively, out of the fs hooks' sight: for a
// recorded fd 0 it is a file stream on the descriptor instead (what Node makes for a regular
// file), whose reads are the hooked fs.read.
function fileStdin(fs) {
  let isPipe = false;
  try {
    const st = fs.fstatSync(0);
    isPipe = st.isFIFO() || st.isSocket();
  } catch (_) {
    return;
  }
  const desc = Object.getOwnPropertyDescriptor(process, 'stdin');
  if (!isPipe || !desc || !desc.configurable || typeof desc.get !== 'function') return;
  let stream = null;
  Object.defineProperty(process, 'stdin', {
    configurable: true,
    enumerable: desc.enumerable,
    get: {
      stdin() {
        if (stream === null) {
          stream = new fs.ReadStream(null, { fd: 0, autoClose: false });
          stream.fd = 0;
        }
        return stream;
      },
    }.stdin,
  });
}

// Replay: process.pid is the recorded process's (`rec`, from the log's header). Programs put
// their pid in names (write-file-atomic's temporary files, which npm, jest and ava write
// through: a replay renamed another file than recorded) and in output. process.kill of a
// recorded pid signals the process that has it now: this one, or a child running again
// (lib/child.js adds those to `ev.livePids`, recorded pid to live pid).
function recordedPid(ev, rec) {
  const pids = new Map();
  ev.livePids = pids;
  const realKill = process.kill;
  const kill = {
    kill(pid, signal) {
      const live = typeof pid === 'number' ? pids.get(pid) : undefined;
      return realKill.call(this, live === undefined ? pid : live, signal);
    },
  }.kill;
  Object.defineProperty(kill, 'length', { value: realKill.length });
  process.kill = kill;
  ev.onDisable(() => {
    if (process.kill === kill) process.kill = realKill;
  });
  const live = process.pid;
  if (typeof rec !== 'number' || rec <= 0 || rec === live) return;
  const desc = Object.getOwnPropertyDescriptor(process, 'pid');
  if (!desc || !desc.configurable) return;
  Object.defineProperty(process, 'pid', { ...desc, value: rec });
  pids.set(rec, live);
  ev.onDisable(() => Object.defineProperty(process, 'pid', desc));
}

function install() {
  const mode = (process.env.REPLAY_MODE || 'off').trim().toLowerCase();
  if (mode === 'off' || mode === '') return;

  let native;
  try {
    native = require('./replay_node.node');
  } catch (e) {
    process.stderr.write(
      `replay: replay-node's native part is not built (${e.code || e.message}); run npm install in ${__dirname}; replay is off\n`,
    );
    return;
  }
  let started;
  try {
    started = native.start(process.version, programName(), programArgv(), events.stack);
  } catch (e) {
    fail('start', e);
    return;
  }
  if (started.startsWith('exit ')) {
    // A log of another runtime or program (the native side printed the one line): the
    // program must not run at all.
    process.exit(Number(started.slice(5)));
  }
  if (started === 'off') return;
  api.mode = started;

  // Captured before anything is replaced: the hooks call these.
  const RealDate = globalThis.Date;
  const realNow = RealDate.now;
  const realRandom = Math.random;
  const perf = globalThis.performance;
  const realPerfNow = perf.now;
  const realPerfNowOwn = Object.getOwnPropertyDescriptor(perf, 'now');
  const realCtor = RealDate.prototype.constructor;
  const realHrtime = process.hrtime;
  const realHrtimeBig = realHrtime.bigint;

  // Captured before lib/crypto.js hooks it: the generator's seed is real entropy.
  const realRandomBytes = require('crypto').randomBytes;

  let on = true;
  const host = {
    mode: started,
    queue() {},
    queueOut() {},
    flushPending() {},
    checkStop,
    wentLive() {},
    disable: (what, e) => disable(what, e),
  };
  // Ends the process after the core's stop verdict (a divergence under policy abort): the one
  // place the JS side applies it (the native side notes it: src/lib.rs `apply`). Nothing of
  // the program runs after the report: process.reallyExit leaves without 'exit' listeners
  // (a listener of the program calling process.exit(1), as jest's does, would otherwise turn
  // the status into 1), and any later exit is made to use the same status.
  function stop(code) {
    const really = process.reallyExit;
    if (typeof really !== 'function') process.exit(code);
    process.reallyExit = function reallyExit() {
      return really.call(process, code);
    };
    process.exitCode = code;
    process.reallyExit(code);
  }
  // After a native call that did not replay: ends the process if the core said stop.
  function checkStop() {
    const code = native.stopCode();
    if (code !== 0) stop(code);
  }

  let clockFor; // code -> (liveFn -> value): the clock hook of one kind, set per mode below
  let finish; // called once at exit (or at a signal the process dies of: lib/signals.js)
  let finished = false;

  // Math.random: a xorshift128+ generator run here in both modes (recording each double
  // would cost several times the call: they do not compress). The log holds its seed and,
  // per batch flush, a checkpoint with the number of calls so far (src/lib.rs, "Math.random").
  // `rcount` counts the calls the generator served; a call past `rlimit` (0 before the seed)
  // takes the mode's slow path: seeding, or in replay the next checkpoint.
  const rstate = new Int32Array(4);
  let rcount = 0;
  // Recording: rcount as the native side's drain reads it (src/drain.rs), stored at each
  // call once seeded; replay: unused.
  let rpub = new Float64Array(1);
  let rlimit = 0;
  let randomSlow; // set per mode below
  // One step of xorshift128+ as V8 runs it (shift triple 23/17/26 on two 64-bit words, here
  // as hi/lo int32 halves), returning the new first word's top 53 bits as a double in [0, 1)
  // (V8 takes 52). Int32Array state and 32-bit ops keep it free of allocations.
  const rstep = () => {
    let ah = rstate[0];
    let al = rstate[1];
    const bh = rstate[2];
    const bl = rstate[3];
    rstate[0] = bh;
    rstate[1] = bl;
    ah ^= (ah << 23) | (al >>> 9);
    al ^= al << 23;
    al ^= (al >>> 17) | (ah << 15);
    ah ^= ah >>> 17;
    ah ^= bh;
    al ^= bl;
    al ^= (bl >>> 26) | (bh << 6);
    ah ^= bh >>> 26;
    rstate[2] = ah;
    rstate[3] = al;
    return ((bh >>> 11) * 4294967296 + (bl >>> 0)) * 1.1102230246251565e-16;
  };
  // The seed is 16 bytes, read as four little-endian int32 words (the log's form).
  const seedFrom = (bytes) => {
    const dv = new DataView(bytes.buffer, bytes.byteOffset, 16);
    for (let i = 0; i < 4; i++) rstate[i] = dv.getInt32(4 * i, true);
  };

  let vmOff = null; // takes lib/vm.js's hooks out of vm
  function restore() {
    on = false;
    dropRuns();
    if (vmOff !== null) vmOff();
    globalThis.Date = RealDate;
    RealDate.prototype.constructor = realCtor;
    Math.random = realRandom;
    if (realPerfNowOwn) Object.defineProperty(perf, 'now', realPerfNowOwn);
    else delete perf.now;
    process.hrtime = realHrtime;
    delete perf.timeOrigin;
  }

  let ev = null;
  let output = null; // lib/output.js, when the output is recorded or compared

  function disable(what, e) {
    // What was queued before the error is kept (flushing again after a failed crossing
    // finds nothing queued: the batch is emptied before it crosses).
    const pending = host.flushPending;
    host.flushPending = () => {};
    try {
      pending();
    } catch (_) {
      // Reported below; the queue is lost with the session.
    }
    restore();
    if (ev) ev.restoreAll();
    fail(what, e);
    try {
      native.disable();
    } catch (_) {
      // Already reported; nothing more to do.
    }
  }

  const liveNow = () => realNow();
  const livePerf = () => realPerfNow.call(perf);

  // Replay: per kind, the run of recorded values fetched in one crossing and not served yet.
  const runs = [];
  function dropRuns() {
    rlimit = -1;
    for (const st of runs) st.pos = st.end = 0;
  }

  if (started === 'record') {
    // The batch lives in native memory (src/drain.rs): the core's flusher takes what was
    // published (ctl[C_PUB], stored after each event) within the flush interval even while
    // this thread is busy, and a SIGTERM/SIGINT records it before the process dies. One slot
    // more than a batch: the Math.random checkpoint added at a flush.
    const region = native.sharedRegion();
    if (!region) {
      disable('recording', new Error('this runtime copies external memory; the event buffer cannot be shared'));
      return;
    }
    const SLOTS = BATCH + 1;
    const LENS = 1 << 16;
    const lensOff = (8 * SLOTS + SLOTS + 7) & ~7;
    const values = new Float64Array(region.buffer, region.byteOffset, SLOTS);
    const codes = new Uint8Array(region.buffer, region.byteOffset + 8 * SLOTS, SLOTS);
    const lens = new Uint32Array(region.buffer, region.byteOffset + lensOff, LENS);
    const ctl = new Int32Array(region.buffer, region.byteOffset + lensOff + 4 * LENS, 8);
    rpub = new Float64Array(region.buffer, region.byteOffset + lensOff + 4 * LENS + 32, 1);
    const C_PUB = 0;
    const C_OPEN = 1;
    const C_BLOCK = 2;
    const OPEN_BITS = 17;
    let n = 0;
    let checked = 0; // rcount at the last checkpoint
    // The events of lib/events.js (file reads, socket chunks, completions) queue here too,
    // each marked in the batch by K_QUEUED with its kind code as the value, so one crossing
    // carries them in their place among the clock reads: crossing per event, with its
    // argument conversions, cost several microseconds each (a recorded http request is
    // three events). Per event, `lens` holds its input's byte length plus one (0: none),
    // its JSON text's byte length, its number of parts and their lengths; `data` holds the
    // input, the text and the parts. All is written when the event happens, so what the
    // program does to its buffers later is not recorded.
    let nlens = 0;
    // `data` is a staging block of the native part (its memory, which the recorded events
    // then share: no second copy of the bytes, and the flusher can read it), or when all
    // blocks are held or cannot be had a Buffer of our own (whose queued events only a
    // crossing hands over). A block must not be written after the crossing that handed it
    // over: each crossing names the next one.
    const blocks = [];
    let own = null;
    let data = null;
    let block = -1;
    const useBlock = (i) => {
      if (i >= 0 && blocks[i] === undefined) {
        let b = null;
        try {
          b = native.stageBlock(i);
        } catch (_) {
          // No block then: the own Buffer works the same, a copy dearer.
        }
        blocks[i] = b && b.length === QUEUE_BYTES ? b : null;
      }
      if (i >= 0 && blocks[i] !== null) {
        data = blocks[i];
        block = i;
      } else {
        if (own === null) own = Buffer.allocUnsafeSlow(QUEUE_BYTES);
        data = own;
        block = -1;
      }
      ctl[C_BLOCK] = block;
    };
    let first = -1;
    try {
      first = native.stageNext();
    } catch (_) {
      // As above: the own Buffer.
    }
    useBlock(first);
    let ndata = 0;
    // The output event last queued (queueOut), which later writes to the same stream may
    // extend while nothing else was queued after it: its batch index (-1: none), stream,
    // length, and where its length is in `lens`. Its index and length are also the word
    // ctl[C_OPEN], which a drain swaps to -1 when it takes the event (then a new one starts).
    let outAt = -1;
    let outKind = -1;
    let outCur = 0;
    let outLen = 0;
    const flushBatch = () => {
      outAt = -1;
      if (rcount !== checked && rlimit > 0) {
        values[n] = rcount;
        codes[n] = K_RANDOM;
        ctl[C_PUB] = ++n;
        checked = rcount;
      }
      if (n === 0) return;
      const count = n;
      n = nlens = ndata = 0;
      try {
        useBlock(native.recordBatch(count, block === -1 ? data : undefined));
      } catch (e) {
        // The block may be held by what was recorded: write no more into it.
        useBlock(-1);
        disable('recording', e);
      }
    };
    host.queue = (code, input, json, bufs) => {
      let size = 0;
      for (let i = 0; i < bufs.length; i++) size += bufs[i].length;
      // No string makes more than 3 bytes of a UTF-16 unit.
      const texts = 3 * ((input === null ? 0 : input.length) + json.length);
      if (size + texts > QUEUE_BYTES / 4 || 3 + bufs.length > LENS) {
        // A big value (a whole file) goes over by itself: copying it into the queue first
        // would cost a copy more and a flush anyway.
        flushBatch();
        native.evRecord(code, input, json, bufs);
        return;
      }
      if (ndata + size + texts > data.length || nlens + 3 + bufs.length > LENS) flushBatch();
      if (input === null) {
        lens[nlens] = 0;
      } else {
        const l = data.utf8Write(input, ndata);
        ndata += l;
        lens[nlens] = l + 1;
      }
      const jl = data.utf8Write(json, ndata);
      ndata += jl;
      lens[nlens + 1] = jl;
      lens[nlens + 2] = bufs.length;
      nlens += 3;
      for (let i = 0; i < bufs.length; i++) {
        const b = bufs[i];
        lens[nlens++] = b.length;
        data.set(b, ndata);
        ndata += b.length;
      }
      values[n] = code;
      codes[n] = K_QUEUED;
      ctl[C_PUB] = ++n;
      if (n === BATCH) flushBatch();
    };
    // A write of the program to stdout or stderr (lib/output.js): one event of output kind
    // `k` whose bytes are what was written, `chunk` a string in `encoding` or bytes, written
    // straight into `data`: a console.log line costs no allocation here. Writes to one stream
    // with nothing queued between them are one event (replay compares each stream as one run
    // of bytes, however it was split), which keeps the native side's per-event work off the
    // cost of printing.
    host.queueOut = (k, chunk, encoding) => {
      if (!on) return;
      let max;
      if (typeof chunk === 'string') {
        if (chunk.length === 0) return;
        max = chunk.length * 3;
      } else {
        max = chunk.length;
        if (max === 0) return;
      }
      if (max > QUEUE_BYTES / 4) {
        host.queue(k, null, '', [typeof chunk === 'string' ? Buffer.from(chunk, encoding) : chunk]);
        return;
      }
      if (ndata + max > data.length || nlens + 4 > LENS) flushBatch();
      let len;
      if (typeof chunk === 'string') {
        len = encoding === 'utf8' ? data.utf8Write(chunk, ndata) : data.write(chunk, ndata, encoding);
      } else {
        len = chunk.length;
        data.set(chunk, ndata);
      }
      if (len === 0) return;
      // (Not after a string that may end in half a surrogate pair: each write alone gave
      // U+FFFD for it, which the bytes already hold.)
      if (outAt >= 0 && outAt === n - 1 && outKind === k && outCur + len <= OUT_MERGE) {
        const was = (outAt << OPEN_BITS) | outCur;
        if (Atomics.compareExchange(ctl, C_OPEN, was, was + len) === was) {
          outCur += len;
          lens[outLen] = outCur;
          ndata += len;
          return;
        }
        // A drain took the event as it was: these bytes start the next one.
      }
      lens[nlens] = 0;
      lens[nlens + 1] = 0;
      lens[nlens + 2] = 1;
      lens[nlens + 3] = len;
      outLen = nlens + 3;
      nlens += 4;
      ndata += len;
      values[n] = k;
      codes[n] = K_QUEUED;
      if (len <= OUT_MERGE) {
        outAt = n;
        outKind = k;
        outCur = len;
        Atomics.store(ctl, C_OPEN, (n << OPEN_BITS) | len);
      } else {
        outAt = -1;
      }
      ctl[C_PUB] = ++n;
      if (n === BATCH) flushBatch();
    };
    clockFor = (code) => (live) => {
      const v = live();
      if (on) {
        values[n] = v;
        codes[n] = code;
        ctl[C_PUB] = ++n;
        if (n === BATCH) flushBatch();
      }
      return v;
    };
    // The first call: seed the generator and record the seed.
    randomSlow = () => {
      rcount--;
      if (!on || rlimit < 0) return realRandom();
      try {
        const seed = realRandomBytes(16);
        seedFrom(seed);
        // All-zero state would stay zero.
        if ((rstate[0] | rstate[1] | rstate[2] | rstate[3]) === 0) rstate[3] = 1;
        const bytes = Buffer.alloc(16);
        for (let i = 0; i < 4; i++) bytes.writeInt32LE(rstate[i], 4 * i);
        flushBatch();
        native.recordRandomSeed(bytes);
      } catch (e) {
        disable('recording', e);
        return realRandom();
      }
      rlimit = Infinity;
      rcount++;
      rpub[0] = rcount;
      return rstep();
    };
    let every = FLUSH_MS;
    try {
      every = native.flushMs();
    } catch (_) {
      // The default, then.
    }
    const timer = setInterval(flushBatch, every);
    timer.unref();
    api.flush = () => {
      flushBatch();
      try {
        native.flush();
      } catch (e) {
        disable('flush', e);
      }
    };
    host.flushPending = flushBatch;
    finish = (code) => {
      clearInterval(timer);
      flushBatch();
      native.exitStatus(code);
      return native.shutdown();
    };
  } else {
    host.wentLive = () => {
      dropRuns();
      if (output) output.off();
    };
    // After a call the native side did not replay (it reported a divergence through the core,
    // or replay went live): stop if the core said so, else the call runs live.
    const notReplayed = () => {
      checkStop();
      if (native.isLive()) host.wentLive();
      return NaN;
    };
    const fetchRun = (st, live) => {
      if (!on) return live();
      if (st.buf === null) st.buf = new Float64Array(st.code === K_ORIGIN ? 1 : BATCH);
      let n;
      try {
        n = native.replayRun(st.code, st.buf);
      } catch (e) {
        disable('replay', e);
        return live();
      }
      let v;
      if (n > 0) {
        st.pos = 1;
        st.end = n;
        v = st.buf[0];
      } else {
        v = notReplayed();
      }
      // NaN: not replayed (none of these calls ever returns NaN for real).
      return v === v ? v : live();
    };
    // Values come from the run buffer; a crossing only when it is used up.
    clockFor = (code) => {
      const st = { code, buf: null, pos: 0, end: 0 };
      runs.push(st);
      return (live) => {
        if (st.pos < st.end) {
          const v = st.buf[st.pos++];
          return v === v ? v : live();
        }
        return fetchRun(st, live);
      };
    };
    const seedBytes = new Uint8Array(16);
    // The first call (seed, then checkpoint) and each call past the last checkpoint taken.
    randomSlow = () => {
      rcount--;
      if (!on || rlimit < 0) return realRandom();
      try {
        if (rlimit === 0 && rcount === 0) {
          if (!native.randomSeed(seedBytes, rcount + 1)) return randomFailed();
          seedFrom(seedBytes);
        }
        while (rcount + 1 > rlimit) {
          const c = native.randomCheckpoint(rcount + 1);
          if (c !== c) return randomFailed();
          rlimit = c;
        }
      } catch (e) {
        disable('replay', e);
        return realRandom();
      }
      rcount++;
      return rstep();
    };
    // No seed or no further checkpoint recorded: a divergence at this call (the native side
    // reported it); Math.random runs live from here (no recorded values to go on with).
    const randomFailed = () => {
      notReplayed();
      rlimit = -1;
      return realRandom();
    };
    finish = (code) => {
      // The output the JS side compared goes to the core first: its end check reports what
      // the program did not write.
      if (output) output.end();
      // Values fetched but not served go back: the core reports them as left over.
      for (const st of runs) {
        if (st.pos < st.end) native.replayUnread(st.code, st.pos);
      }
      if (rlimit >= 0) native.randomEnd(rcount);
      native.exitStatus(code);
      return native.shutdown();
    };
  }

  // Calls made while a hook module runs a real function (ev.busy) are not the program's:
  // in replay that function does not run (a read served from the log), so neither do they.
  // (Node's readFileSync calls fs.closeSync, which graceful-fs patches to read Date.now.)
  const unlessBusy = (clock) => (live) => (ev !== null && ev.busy ? live() : clock(live));
  const nowClock = unlessBusy(clockFor(K_NOW));
  const dateClock = unlessBusy(clockFor(K_DATE));
  const perfClock = unlessBusy(clockFor(K_PERF));
  const hrtimeClock = clockFor(K_HRTIME);
  const hrtimeBigClock = clockFor(K_HRTIME_BIG);
  const originClock = clockFor(K_ORIGIN);

  const liveHrtime = () => {
    const t = realHrtime();
    return t[0] * 1e9 + t[1];
  };

  // process.hrtime: one integer-ns event per call. With a previous time, Node's own
  // function checks the argument first (same errors), and the difference is taken from the
  // recorded reading.
  const hrtime = function hrtime(time) {
    if (time !== undefined) realHrtime(time);
    // Calls Node makes while a hook module runs a real function are not the program's.
    if (ev && ev.busy) return time === undefined ? realHrtime() : realHrtime(time);
    const t = hrtimeClock(liveHrtime);
    const sec = Math.floor(t / 1e9);
    const ns = t - sec * 1e9;
    if (time === undefined) return [sec, ns];
    let ds = sec - time[0];
    let dn = ns - time[1];
    if (dn < 0) {
      ds -= 1;
      dn += 1e9;
    }
    return [ds, dn];
  };
  // Record returns the real bigint (exact); the log holds it as a double-sized integer.
  hrtime.bigint = function bigint() {
    if (ev && ev.busy) return realHrtimeBig();
    let live;
    const v = hrtimeBigClock(() => Number((live = realHrtimeBig())));
    return live !== undefined && Number(live) === v ? live : BigInt(v);
  };
  Object.defineProperty(hrtime.bigint, 'name', { value: realHrtimeBig.name });

  // Date: a plain function named Date around the real one (a subclass would break Date()
  // without new, util.inspect and instanceof for dates made elsewhere). The prototype stays
  // the real one, so every date, wherever made, is `instanceof Date`.
  const ReplayDate = function Date(...args) {
    if (new.target === undefined) {
      // Date() called as a function: the current time as a string.
      return new RealDate(dateClock(liveNow)).toString();
    }
    if (args.length === 0) return Reflect.construct(RealDate, [dateClock(liveNow)], new.target);
    return Reflect.construct(RealDate, args, new.target);
  };
  Object.defineProperty(ReplayDate, 'length', { value: RealDate.length });
  ReplayDate.prototype = RealDate.prototype;
  Object.setPrototypeOf(ReplayDate, RealDate);
  for (const key of ['UTC', 'parse']) {
    Object.defineProperty(ReplayDate, key, Object.getOwnPropertyDescriptor(RealDate, key));
  }
  // Methods, not function expressions: like the built-ins, no `prototype`, not constructors.
  Object.defineProperty(ReplayDate, 'now', {
    value: {
      now() {
        return nowClock(liveNow);
      },
    }.now,
    writable: true,
    configurable: true,
  });

  try {
    RealDate.prototype.constructor = ReplayDate;
    globalThis.Date = ReplayDate;
    Math.random = {
      random() {
        if (ev !== null && ev.busy) return realRandom();
        if (++rcount > rlimit) return randomSlow();
        rpub[0] = rcount;
        return rstep();
      },
    }.random;
    Object.defineProperty(perf, 'now', {
      value: {
        now() {
          return perfClock(livePerf);
        },
      }.now,
      writable: true,
      configurable: true,
    });
    process.hrtime = hrtime;
    // A constant of the process: one event at the first read (none for programs that never
    // read it), the same value after. An own property shadows the prototype's getter.
    let origin;
    const getOrigin = () => {
      if (origin === undefined || !on) {
        const v = originClock(() => Reflect.get(Object.getPrototypeOf(perf), 'timeOrigin', perf));
        if (!on) return v;
        origin = v;
      }
      return origin;
    };
    Object.defineProperty(perf, 'timeOrigin', {
      get: Object.defineProperty(getOrigin, 'name', { value: 'get timeOrigin' }),
      enumerable: true,
      configurable: true,
    });
  } catch (e) {
    disable('installing the hooks', e);
    return;
  }

  // Every new vm context gets the same clock and Math.random hooks (lib/vm.js).
  try {
    const mathRandom = Math.random;
    let warned = false;
    vmOff = require('./lib/vm.js').install(
      {
        now: () => nowClock(liveNow),
        date: () => dateClock(liveNow),
        random: () => mathRandom(),
        stacks: require('./lib/stacks.js').guard,
      },
      (e) => {
        if (warned) return;
        warned = true;
        const msg = e && e.message ? e.message : String(e);
        process.stderr.write(`replay: a vm context runs without replay's hooks (${msg})\n`);
      },
    );
  } catch (e) {
    disable('installing the vm context hooks', e);
    return;
  }

  // The hooks beyond the clocks, one module each over the event API (lib/events.js).
  try {
    ev = events.create(native, host);
    // For the package's own tests and tools; not part of the documented API.
    Object.defineProperty(api, Symbol.for('replay-node.events'), { value: ev });
    if (mode === 'replay') recordedPid(ev, native.recordedPid());
    // Stacks without this package's frames (they differ between record and replay).
    require('./lib/stacks.js').guard(Error);
  } catch (e) {
    disable('starting the event hooks', e);
    return;
  }
  // The program's own source files (not installed packages'): their digests, so that a
  // replay running other code than was recorded says so (src/modules.rs). CommonJS files come
  // through Module.prototype._compile (below), ES modules through the ESM loader's reads
  // (lib/fs.js).
  {
    const sep = path.sep;
    const ours = path.resolve(__dirname) + sep;
    ev.ownSource = (filename, content) => {
      if (!ev.on || typeof filename !== 'string' || filename.includes(`${sep}node_modules${sep}`) ||
        filename.startsWith(ours)) return;
      try {
        const digest = ev.live(() => require('crypto').createHash('sha256').update(content).digest('hex'));
        native.moduleLoaded(filename, digest);
      } catch (_) {
        // Only the warning is lost.
      }
    };
  }
  for (const name of MODULES) {
    const file = path.join(__dirname, 'lib', `${name}.js`);
    // Through ev.live: once lib/fs.js is installed, this check must not be an event.
    if (!ev.live(() => fs.existsSync(file))) continue;
    try {
      require(file).install(ev);
    } catch (e) {
      disable(`installing the ${name} hooks`, e);
      return;
    }
  }
  // fd 0, when it is not the stdin the launcher records (REPLAY_STDIN names that one): a
  // script's `node app.js < input` or `cat input | node app.js` read the edited input in
  // replay. Its reads (fs.readFileSync(0), fs.readSync, process.stdin on a file) are events
  // then; whether they are is an event too, so replay follows the recording.
  try {
    if (typeof ev.hookStdin === 'function' && ownStdin(fs)) {
      const kStdin = ev.kind('node.stdin');
      let hooked = false;
      if (ev.mode === 'record') {
        ev.record(kStdin, null, { v: 1 });
        hooked = true;
      } else {
        hooked = ev.replay(kStdin, null) !== ev.LIVE;
      }
      if (hooked) {
        ev.hookStdin();
        fileStdin(fs);
      }
    }
  } catch (e) {
    disable('installing the stdin hook', e);
    return;
  }
  // Timers and immediates as completions (last: the modules above take the real ones).
  try {
    require('./lib/timers.js').install(ev, native);
  } catch (e) {
    disable('installing the timer hooks', e);
    return;
  }
  // SIGINT, SIGTERM and SIGHUP as completions (lib/signals.js): `end` closes the session as
  // the exit listener below would, before the process dies of the signal.
  try {
    require('./lib/signals.js').install(ev, native, (status) => {
      if (finished) return 0;
      finished = true;
      const s = finish(status);
      restore();
      if (ev) ev.restoreAll();
      return s;
    });
  } catch (e) {
    disable('installing the signal hooks', e);
    return;
  }
  // Worker threads' events on the main thread, in their recorded order (lib/worker.js).
  try {
    require('./lib/worker.js').install(ev);
  } catch (e) {
    disable('installing the worker thread hooks', e);
    return;
  }
  // CommonJS sources, as they are compiled (ES modules: lib/fs.js).
  try {
    const Module = require('module');
    const realCompile = Module.prototype._compile;
    const compile = function _compile(content, filename) {
      if (typeof content === 'string') ev.ownSource(filename, content);
      return realCompile.apply(this, arguments);
    };
    Module.prototype._compile = compile;
    ev.onDisable(() => {
      if (Module.prototype._compile === compile) Module.prototype._compile = realCompile;
    });
  } catch (e) {
    disable('installing the module digests', e);
    return;
  }
  // Native addons the program loads (@swc/core, sharp, sqlite3 ...) read and write files in
  // native code, out of every hook's sight: replay counts them, and a replay that found no
  // divergence says they ran unchecked instead of passing for faithful.
  if (ev.mode === 'replay') {
    const realDlopen = process.dlopen;
    const ours = path.resolve(__dirname);
    process.dlopen = function dlopen(module, filename, ...rest) {
      try {
        if (ev.on && !path.resolve(String(filename)).startsWith(ours + path.sep)) {
          native.ranLive('native addon');
        }
      } catch (_) {
        // Counting is best effort; loading goes on.
      }
      return realDlopen.call(this, module, filename, ...rest);
    };
    ev.onDisable(() => {
      if (process.dlopen === realDlopen) return;
      process.dlopen = realDlopen;
    });
  }
  // The program's stdout/stderr writes (before the ES module exports are synced: fs.writeSync
  // is hooked there too), and child processes (lib/child.js: replayed from this side, or run
  // live by rule and counted).
  try {
    if (native.wantsOutput()) output = require('./lib/output.js').install(ev, native, host);
    require('./lib/child.js').install(ev, native);
  } catch (e) {
    disable('installing the output hooks', e);
    return;
  }
  // ES modules importing node:fs / node:crypto by name get the hooked functions even if
  // their builtin wrappers were made before the hooks.
  try {
    require('module').syncBuiltinESMExports();
  } catch (e) {
    disable('installing the hooks for ES modules', e);
    return;
  }

  process.on('exit', (code) => {
    if (finished) return;
    finished = true;
    let status = 0;
    try {
      // The status the program exits with, as far as it is known here (listeners of the
      // program run after this one).
      status = finish(typeof code === 'number' ? code : Number(process.exitCode) || 0);
    } catch (e) {
      fail('shutdown', e);
    }
    restore();
    if (ev) ev.restoreAll();
    if (status !== 0) stop(status);
  });
}
