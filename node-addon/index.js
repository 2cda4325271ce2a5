'use strict';
// replay-node: records and replays Date.now, Date, Math.random, performance.now,
// performance.timeOrigin and process.hrtime (and hrtime.bigint).
// Loaded with `node --require /path/to/node-addon app.js`; configured by REPLAY_* variables.
//
// The hooks must be installed before any user code runs (a reference to the real function
// taken earlier bypasses them), which is what --require does. Only the main JS thread is
// hooked: worker_threads also run --require modules, and there this file does nothing, so
// calls made in workers run live and are not recorded.

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

// Hook codes, as the native side knows them (KINDS in src/lib.rs).
const K_NOW = 0;
const K_DATE = 1;
const K_RANDOM = 2;
const K_PERF = 3;
// Integer nanoseconds: exact while below 2^53 ns (about 104 days since boot).
const K_HRTIME = 4;
const K_HRTIME_BIG = 5;
const K_ORIGIN = 6;

// Hook modules under lib/, installed in this order when present.
const MODULES = ['fs', 'crypto', 'net'];

// Events buffered before they are handed to the native side: a crossing costs about as much
// as a hundred hooked calls, so it is paid once per batch.
const BATCH = 4096;
// A program that stops calling the hooks still gets its events to the log within this.
const FLUSH_MS = 100;

function fail(what, e) {
  const msg = e && e.message ? e.message : String(e);
  process.stderr.write(`replay: internal error in replay-node (${what}: ${msg}); replay is off, the program runs on\n`);
}

if (isMainThread && !globalThis[LOADED]) {
  Object.defineProperty(globalThis, LOADED, { value: api });
  install();
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
    started = native.start(process.version);
  } catch (e) {
    fail('start', e);
    return;
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

  let on = true;
  const host = { mode: started, beforeRecord() {}, leave() {}, disable: (what, e) => disable(what, e) };
  let clock; // (code, liveFn) -> value, set per mode below
  let finish; // called once at exit

  function restore() {
    on = false;
    globalThis.Date = RealDate;
    RealDate.prototype.constructor = realCtor;
    Math.random = realRandom;
    if (realPerfNowOwn) Object.defineProperty(perf, 'now', realPerfNowOwn);
    else delete perf.now;
    process.hrtime = realHrtime;
    delete perf.timeOrigin;
  }

  let ev = null;

  function disable(what, e) {
    restore();
    if (ev) ev.restoreAll();
    fail(what, e);
    try {
      native.disable();
    } catch (_) {
      // Already reported; nothing more to do.
    }
  }

  // Where the program made a call, for divergence reports.
  const callSite = events.stack;

  const liveNow = () => realNow();
  const livePerf = () => realPerfNow.call(perf);

  if (started === 'record') {
    const values = new Float64Array(BATCH);
    const codes = new Uint8Array(BATCH);
    let n = 0;
    const flushBatch = () => {
      if (n === 0) return;
      const count = n;
      n = 0;
      try {
        native.recordBatch(values, codes, count);
      } catch (e) {
        disable('recording', e);
      }
    };
    clock = (code, live) => {
      const v = live();
      if (on) {
        values[n] = v;
        codes[n] = code;
        if (++n === BATCH) flushBatch();
      }
      return v;
    };
    const timer = setInterval(flushBatch, FLUSH_MS);
    timer.unref();
    api.flush = () => {
      flushBatch();
      try {
        native.flush();
      } catch (e) {
        disable('flush', e);
      }
    };
    host.beforeRecord = flushBatch;
    finish = () => {
      clearInterval(timer);
      flushBatch();
      return native.shutdown();
    };
  } else {
    const leave = () => {
      restore();
      if (ev) ev.restoreAll();
      process.exit(native.exitCode());
    };
    host.leave = leave;
    clock = (code, live) => {
      if (!on) return live();
      let v;
      try {
        v = native.replayNext(code);
      } catch (e) {
        disable('replay', e);
        return live();
      }
      // NaN: not replayed (none of these calls ever returns NaN for real).
      if (v !== v) {
        try {
          v = native.diverged(code, callSite());
        } catch (e) {
          disable('replay', e);
          return live();
        }
        if (native.exitCode() !== 0) leave();
        if (v !== v) return live();
      }
      return v;
    };
    finish = () => native.shutdown();
  }

  const liveRandom = () => realRandom();
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
    const t = clock(K_HRTIME, liveHrtime);
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
    const v = clock(K_HRTIME_BIG, () => Number((live = realHrtimeBig())));
    return live !== undefined && Number(live) === v ? live : BigInt(v);
  };
  Object.defineProperty(hrtime.bigint, 'name', { value: realHrtimeBig.name });

  // Date: a plain function named Date around the real one (a subclass would break Date()
  // without new, util.inspect and instanceof for dates made elsewhere). The prototype stays
  // the real one, so every date, wherever made, is `instanceof Date`.
  const ReplayDate = function Date(...args) {
    if (new.target === undefined) {
      // Date() called as a function: the current time as a string.
      return new RealDate(clock(K_DATE, liveNow)).toString();
    }
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
    value: function now() {
      return clock(K_NOW, liveNow);
    },
    writable: true,
    configurable: true,
  });

  try {
    RealDate.prototype.constructor = ReplayDate;
    globalThis.Date = ReplayDate;
    Math.random = function random() {
      return clock(K_RANDOM, liveRandom);
    };
    Object.defineProperty(perf, 'now', {
      value: function now() {
        return clock(K_PERF, livePerf);
      },
      writable: true,
      configurable: true,
    });
    process.hrtime = hrtime;
    // A constant of the process: one event at the first read (none for programs that never
    // read it), the same value after. An own property shadows the prototype's getter.
    let origin;
    const getOrigin = () => {
      if (origin === undefined || !on) {
        const v = clock(K_ORIGIN, () => Reflect.get(Object.getPrototypeOf(perf), 'timeOrigin', perf));
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

  // The hooks beyond the clocks, one module each over the event API (lib/events.js).
  try {
    ev = events.create(native, host);
    // For the package's own tests and tools; not part of the documented API.
    Object.defineProperty(api, Symbol.for('replay-node.events'), { value: ev });
  } catch (e) {
    disable('starting the event hooks', e);
    return;
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
  // ES modules importing node:fs / node:crypto by name get the hooked functions even if
  // their builtin wrappers were made before the hooks.
  try {
    require('module').syncBuiltinESMExports();
  } catch (e) {
    disable('installing the hooks for ES modules', e);
    return;
  }

  let finished = false;
  process.on('exit', () => {
    if (finished) return;
    finished = true;
    let status = 0;
    try {
      status = finish();
    } catch (e) {
      fail('shutdown', e);
    }
    restore();
    if (ev) ev.restoreAll();
    if (status !== 0) process.exitCode = status;
  });
}
