'use strict';
// Timers and immediates as completions (docs/design.md, "Timers in the completion order").
//
// Record: every firing of a callback the program gave setTimeout, setInterval or
// setImmediate (globals, `timers`, `timers/promises`, util.promisify(setTimeout)) is a
// completion (ev.doneTag, kind node.done) noted just before the callback runs, so it takes
// its place among socket, fs and other completions in the order they happened.
// Replay: no real timer is armed. A timer waits (ev.await) for its firing's place in the
// recorded order and fires there: time compresses (a 2 s sleep fires as soon as what came
// before it in the recording has been delivered), and a timer racing I/O fires on the same
// side of it as recorded.
//
// Keys: 't<n>' for the n-th timer the program made (timeouts and intervals share the
// counter), 'm<n>' for the n-th immediate; a timer's later firings (an interval, a refreshed
// timeout) are 't<n>.<k>'. A program making its timers in the same order in both runs gets
// the same keys.
//
// What stays live: timers Node makes internally (socket and http timeouts, keep-alive: they
// do not go through these functions; AbortSignal.timeout is rebuilt over a hooked timeout),
// timers made while a hook runs a real function (ev.busy),
// and every timer after replay went live (they run on real time from there). Replay counts
// those and socket timeouts as ranLive('timer').

const timers = require('timers');
const util = require('util');

const TIMEOUT_MAX = 2 ** 31 - 1;

// The one function that calls a program's timer or immediate callback, in record (Node's
// timer calls it when it fires) and in replay (a real zero-delay timer, or a real immediate,
// calls it once the recorded order reaches the firing): a stack trace taken in the callback
// shows the same frames in both runs (the callback, this function, then Node's
// listOnTimeout/processTimers or processImmediate), as a program printing an error's stack
// from a timer (mocha's failing tests) compares them.
function firing(before, cb) {
  return function fire() {
    before();
    return Reflect.apply(cb, this, arguments);
  };
}

function install(ev, native) {
  const real = {
    setTimeout: timers.setTimeout,
    setInterval: timers.setInterval,
    setImmediate: timers.setImmediate,
    clearTimeout: timers.clearTimeout,
    clearInterval: timers.clearInterval,
    clearImmediate: timers.clearImmediate,
  };
  let tp = null;
  try {
    tp = require('timers/promises');
  } catch (_) {
    // Older runtimes: only the callback API.
  }
  const realP = tp && {
    setTimeout: tp.setTimeout,
    setImmediate: tp.setImmediate,
    setInterval: tp.setInterval,
    scheduler: tp.scheduler,
    wait: tp.scheduler && tp.scheduler.wait,
    yield: tp.scheduler && tp.scheduler.yield,
  };
  const globalsWere = {};
  for (const k of Object.keys(real)) globalsWere[k] = Object.getOwnPropertyDescriptor(globalThis, k);

  let nt = 0; // timers made (keys t<n>)
  let nm = 0; // immediates made (keys m<n>)
  const hooks = ev.mode === 'record' ? recordHooks() : replayHooks();

  // Record: the real timer, its callback noting the firing first.
  function recordHooks() {
    // The event's text made here (keys are letters, digits and dots: nothing to escape),
    // as ev.doneTag(key, 't') would make it: recording costs a string and a queue entry.
    const note = (key, fires) => ev.doneHead(`{"v":{"k":"${fires === 1 ? key : `${key}.${fires}`}","v":{"t":"`, 't');
    const arm = (realFn, cb, ms, args) => {
      if (typeof cb !== 'function' || ev.busy || !ev.on) return Reflect.apply(realFn, undefined, [cb, ms, ...args]);
      const key = `t${++nt}`;
      let fires = 0;
      const fire = firing(() => note(key, ++fires), cb);
      return args.length === 0 ? realFn(fire, ms) : Reflect.apply(realFn, undefined, [fire, ms, ...args]);
    };
    const promised = (realFn, prefix) =>
      function (...a) {
        if (ev.busy || !ev.on) return Reflect.apply(realFn, this, a);
        const key = prefix === 't' ? `t${++nt}` : `m${++nm}`;
        return Reflect.apply(realFn, this, a).then((v) => {
          note(key, 1);
          return v;
        });
      };
    const h = {
      setTimeout: named('setTimeout', function (cb, ms, ...args) {
        return arm(real.setTimeout, cb, ms, args);
      }),
      setInterval: named('setInterval', function (cb, ms, ...args) {
        return arm(real.setInterval, cb, ms, args);
      }),
      setImmediate: named('setImmediate', function (cb, ...args) {
        if (typeof cb !== 'function' || ev.busy || !ev.on) return Reflect.apply(real.setImmediate, undefined, [cb, ...args]);
        const key = `m${++nm}`;
        const fire = firing(() => note(key, 1), cb);
        return args.length === 0 ? real.setImmediate(fire) : Reflect.apply(real.setImmediate, undefined, [fire, ...args]);
      }),
    };
    if (realP) {
      h.pTimeout = named('setTimeout', promised(realP.setTimeout, 't'));
      h.pImmediate = named('setImmediate', promised(realP.setImmediate, 'm'));
      if (realP.wait) h.wait = named('wait', promised(realP.wait, 't'));
      if (realP.yield) h.yield = named('yield', promised(realP.yield, 'm'));
    }
    return h;
  }

  function replayHooks() {
    const counted = () => {
      try {
        native.ranLive('timer');
      } catch (_) {
        // Only a report's detail is lost.
      }
    };
    // Socket and request timeouts (socket.setTimeout, req.setTimeout, http's `timeout`
    // option) run Node's internal timer on real time: counted, so that a report where one
    // fired in the recording (its place in replay then differs) says a timer ran live.
    const Socket = require('net').Socket;
    const realSockTimeout = Socket.prototype.setTimeout;
    if (typeof realSockTimeout === 'function') {
      const sockTimeout = {
        setTimeout(msecs, cb) {
          if (msecs > 0) counted();
          return Reflect.apply(realSockTimeout, this, arguments);
        },
      }.setTimeout;
      Socket.prototype.setTimeout = sockTimeout;
      ev.onDisable(() => {
        if (Socket.prototype.setTimeout === sockTimeout) Socket.prototype.setTimeout = realSockTimeout;
      });
    }
    // What clearTimeout(n) finds for a number a program kept (Timeout[Symbol.toPrimitive]).
    const byId = new Map();
    let ids = 0;

    // A replayed Timeout: the methods of Node's (ref, unref, hasRef, refresh, close,
    // toPrimitive), over a wait in the completion order instead of a libuv timer.
    class Timeout {
      constructor(cb, args, ms, repeat) {
        // The warning Node's own setTimeout writes (the program's stderr is compared).
        if (ms > TIMEOUT_MAX) {
          process.emitWarning(`${ms} does not fit into a 32-bit signed integer.\nTimeout duration was set to 1.`, 'TimeoutOverflowWarning');
        }
        this._onTimeout = cb;
        this._timerArgs = args;
        this._idleTimeout = ms;
        this._repeat = repeat ? ms : null;
        this._destroyed = false;
        this._key = `t${++nt}`;
        this._fires = 0;
        this._waiting = false;
        this._refed = true;
        this._real = null; // the real timer, once replay went live
        this._id = 0;
        this._arm();
      }
      _arm() {
        const fires = this._fires + 1;
        const key = fires === 1 ? this._key : `${this._key}.${fires}`;
        this._waiting = true;
        ev.await(key, (v) => this._fire(v), !this._refed);
      }
      _cur() {
        const fires = this._fires + 1;
        return fires === 1 ? this._key : `${this._key}.${fires}`;
      }
      _fire(v) {
        this._waiting = false;
        if (this._destroyed) return;
        if (v === ev.LIVE) {
          this._goLive();
          return;
        }
        this._fires++;
        if (this._repeat === null) this._destroyed = true;
        // The callback runs from a real zero-delay timer (the frames Node's timers give it,
        // see `firing`); no other completion is delivered before it has run.
        ev.hold();
        const fire = firing(() => {
          // An interval is armed for its next firing (a callback that clears it cancels
          // that), as Node's listOnTimeout re-arms it.
          if (this._repeat !== null && !this._destroyed && !this._waiting) this._arm();
          ev.release();
        }, this._onTimeout);
        const args = this._timerArgs;
        const rt = args.length === 0 ? real.setTimeout(fire, 0) : Reflect.apply(real.setTimeout, undefined, [fire, 0, ...args]);
        standIn(rt, this);
      }
      _goLive() {
        counted();
        const fn = this._repeat !== null ? real.setInterval : real.setTimeout;
        const self = this;
        this._real = Reflect.apply(fn, undefined, [
          function () {
            if (self._repeat === null) self._destroyed = true;
            return Reflect.apply(self._onTimeout, self, self._timerArgs);
          },
          this._idleTimeout,
        ]);
        if (!this._refed) this._real.unref();
      }
      _clear() {
        this._destroyed = true;
        if (this._waiting) {
          this._waiting = false;
          ev.cancel(this._cur());
        }
        if (this._real !== null) real.clearTimeout(this._real);
        if (this._id !== 0) byId.delete(this._id);
      }
      ref() {
        this._refed = true;
        if (this._waiting) ev.weak(this._cur(), false);
        if (this._real !== null) this._real.ref();
        return this;
      }
      unref() {
        this._refed = false;
        if (this._waiting) ev.weak(this._cur(), true);
        if (this._real !== null) this._real.unref();
        return this;
      }
      hasRef() {
        return this._refed;
      }
      // Re-arms a timer that fired (its next firing is a completion of its own); an armed
      // one keeps its place (when it fires is the recording's business); a cleared one
      // stays cleared, as in Node.
      refresh() {
        if (this._real !== null) this._real.refresh();
        else if (this._destroyed && this._fires > 0 && !this._cleared && !this._waiting) {
          this._destroyed = false;
          this._arm();
        }
        return this;
      }
      close() {
        this._cleared = true;
        this._clear();
        return this;
      }
      [Symbol.toPrimitive]() {
        if (this._id === 0) {
          this._id = ++ids;
          byId.set(this._id, this);
        }
        return this._id;
      }
    }
    if (Symbol.dispose) {
      Timeout.prototype[Symbol.dispose] = function dispose() {
        this.close();
      };
    }

    class Immediate {
      constructor(cb, args) {
        this._onImmediate = cb;
        this._argv = args;
        this._key = `m${++nm}`;
        this._refed = true;
        this._waiting = true;
        this._destroyed = false;
        ev.await(this._key, (v) => this._fire(v));
      }
      _fire(v) {
        this._waiting = false;
        if (this._destroyed) return;
        this._destroyed = true;
        // From a real immediate, as recorded (see `firing`); nothing else is delivered first.
        ev.hold();
        const fire = firing(() => ev.release(), this._onImmediate);
        const args = this._argv;
        if (args.length === 0) real.setImmediate(fire);
        else Reflect.apply(real.setImmediate, undefined, [fire, ...args]);
      }
      ref() {
        this._refed = true;
        if (this._waiting) ev.weak(this._key, false);
        return this;
      }
      unref() {
        this._refed = false;
        if (this._waiting) ev.weak(this._key, true);
        return this;
      }
      hasRef() {
        return this._refed;
      }
    }

    const replaying = () => ev.on && !ev.busy;
    // The real timer that runs a replayed firing is the callback's `this`, as Node's timer
    // is in the recording: what the callback does with it (clearInterval(this), this.refresh(),
    // this.unref()) goes to the replayed Timeout it stands for.
    const standsFor = new WeakMap();
    function standIn(rt, t) {
      standsFor.set(rt, t);
      for (const m of ['refresh', 'close', 'ref', 'unref', 'hasRef']) {
        Object.defineProperty(rt, m, {
          value: function () {
            const r = t[m]();
            return r === t ? rt : r;
          },
          configurable: true,
          writable: true,
        });
      }
      Object.defineProperty(rt, Symbol.toPrimitive, { value: () => t[Symbol.toPrimitive](), configurable: true });
    }
    const clear = (realClear) =>
      function (t) {
        if (standsFor.has(t)) t = standsFor.get(t);
        if (t instanceof Timeout) {
          t._cleared = true;
          t._clear();
          return;
        }
        if (t instanceof Immediate) {
          t._destroyed = true;
          if (t._waiting) {
            t._waiting = false;
            ev.cancel(t._key);
          }
          return;
        }
        if ((typeof t === 'number' || typeof t === 'string') && byId.has(Number(t))) {
          const timer = byId.get(Number(t));
          timer._cleared = true;
          timer._clear();
          return;
        }
        return Reflect.apply(realClear, undefined, [t]);
      };
    // A promise settled by a wait: timers/promises' functions, same arguments and errors.
    const promised = (realFn, isTimeout) =>
      function (...a) {
        if (!replaying()) return Reflect.apply(realFn, this, a);
        const value = isTimeout ? a[1] : a[0];
        const options = (isTimeout ? a[2] : a[1]) || {};
        const signal = options.signal;
        // Argument errors and an already aborted signal: Node's own promise says it.
        if (
          (isTimeout && a[0] !== undefined && typeof a[0] !== 'number') ||
          typeof options !== 'object' ||
          (signal !== undefined && (signal === null || typeof signal !== 'object' || !('aborted' in signal))) ||
          (options.ref !== undefined && typeof options.ref !== 'boolean') ||
          (signal && signal.aborted)
        ) {
          // Recording took a key for this call too.
          if (isTimeout) nt++;
          else nm++;
          return Reflect.apply(realFn, this, a);
        }
        return new Promise((resolve) => {
          let onAbort = null;
          // (After replay went live the Timeout runs a real timer that calls this.)
          const done = () => {
            if (onAbort !== null) signal.removeEventListener('abort', onAbort);
            resolve(value);
          };
          let t;
          if (isTimeout) {
            t = new Timeout(done, [], a[0], false);
          } else {
            t = new Immediate(done, []);
          }
          if (options.ref === false) t.unref();
          if (signal) {
            onAbort = () => {
              h.clearTimeout(t);
              // The AbortError Node makes, with the signal's reason as its cause.
              const args = isTimeout ? [0, undefined, { signal }] : [undefined, { signal }];
              resolve(Reflect.apply(realFn, undefined, args));
            };
            signal.addEventListener('abort', onAbort, { once: true });
          }
        });
      };

    const h = {
      setTimeout: named('setTimeout', function (cb, ms, ...args) {
        if (typeof cb !== 'function' || !replaying()) return Reflect.apply(real.setTimeout, undefined, [cb, ms, ...args]);
        return new Timeout(cb, args, ms, false);
      }),
      setInterval: named('setInterval', function (cb, ms, ...args) {
        if (typeof cb !== 'function' || !replaying()) return Reflect.apply(real.setInterval, undefined, [cb, ms, ...args]);
        return new Timeout(cb, args, ms, true);
      }),
      setImmediate: named('setImmediate', function (cb, ...args) {
        if (typeof cb !== 'function' || !replaying()) return Reflect.apply(real.setImmediate, undefined, [cb, ...args]);
        return new Immediate(cb, args);
      }),
      clearTimeout: named('clearTimeout', clear(real.clearTimeout)),
      clearInterval: named('clearInterval', clear(real.clearInterval)),
      clearImmediate: named('clearImmediate', clear(real.clearImmediate)),
    };
    if (realP) {
      h.pTimeout = named('setTimeout', promised(realP.setTimeout, true));
      h.pImmediate = named('setImmediate', promised(realP.setImmediate, false));
      if (realP.wait) {
        h.wait = named('wait', function (delay, options) {
          return h.pTimeout(delay, undefined, options);
        });
      }
      if (realP.yield) {
        h.yield = named('yield', function () {
          return h.pImmediate();
        });
      }
    }
    return h;
  }

  // timers/promises' setInterval: an async iterator over a hooked setInterval (Node's own
  // runs an internal timer no hook sees), so each tick is a firing in the completion order
  // in both modes. Ticks that came while the consumer was busy are yielded at once, as in
  // Node; an aborted signal ends it with the AbortError Node's own makes.
  if (realP && realP.setInterval) {
    hooks.pInterval = named('setInterval', function (...a) {
      const [ms, value, options = {}] = a;
      const signal = options && options.signal;
      if (
        ev.busy ||
        !ev.on ||
        (ms !== undefined && typeof ms !== 'number') ||
        options === null ||
        typeof options !== 'object' ||
        (signal !== undefined && (signal === null || typeof signal !== 'object' || !('aborted' in signal))) ||
        (options.ref !== undefined && typeof options.ref !== 'boolean')
      ) {
        return Reflect.apply(realP.setInterval, this, a);
      }
      return (async function* setInterval() {
        let ticks = 0;
        let wake = null;
        const onTick = () => {
          ticks++;
          if (wake !== null) {
            const w = wake;
            wake = null;
            w();
          }
        };
        const onAbort = () => onTick();
        let t = null;
        if (!(signal && signal.aborted)) {
          t = hooks.setInterval(onTick, ms);
          if (options.ref === false) t.unref();
          if (signal) signal.addEventListener('abort', onAbort, { once: true });
        }
        try {
          while (!(signal && signal.aborted)) {
            if (ticks === 0) await new Promise((resolve) => (wake = resolve));
            if (signal && signal.aborted) break;
            for (; ticks > 0; ticks--) yield value;
          }
          // Node's AbortError, with the signal's reason as its cause.
          await realP.setTimeout(0, undefined, { signal });
        } finally {
          if (t !== null) (hooks.clearInterval || real.clearInterval)(t);
          if (signal) signal.removeEventListener('abort', onAbort);
        }
      })();
    });
  }

  // AbortSignal.timeout: Node's runs an internal unref'd timer; this one is a hooked unref'd
  // timeout, so the abort is a firing in the completion order (a fetch timing out in the
  // recording times out at the same place in replay, not after real time or never).
  const realAbortTimeout = typeof AbortSignal === 'function' ? AbortSignal.timeout : undefined;
  if (typeof realAbortTimeout === 'function' && typeof DOMException === 'function') {
    hooks.abortTimeout = named('timeout', function (...a) {
      const ms = a[0];
      // Argument errors from Node's own (a non-integer or out-of-range delay).
      if (ev.busy || !ev.on || !Number.isInteger(ms) || ms < 0 || ms > 0xffffffff) {
        return Reflect.apply(realAbortTimeout, this, a);
      }
      const ac = new AbortController();
      hooks
        .setTimeout(() => ac.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), ms)
        .unref();
      return ac.signal;
    });
  }

  // util.promisify(setTimeout) uses this symbol of the function it is given.
  if (hooks.pTimeout) hooks.setTimeout[util.promisify.custom] = hooks.pTimeout;
  if (hooks.pImmediate) hooks.setImmediate[util.promisify.custom] = hooks.pImmediate;

  const names = Object.keys(real).filter((k) => hooks[k]);
  for (const k of names) {
    timers[k] = hooks[k];
    const d = globalsWere[k];
    if (d) Object.defineProperty(globalThis, k, { ...d, value: hooks[k] });
  }
  if (hooks.abortTimeout) {
    Object.defineProperty(AbortSignal, 'timeout', { ...Object.getOwnPropertyDescriptor(AbortSignal, 'timeout'), value: hooks.abortTimeout });
  }
  if (tp) {
    if (hooks.pTimeout) tp.setTimeout = hooks.pTimeout;
    if (hooks.pImmediate) tp.setImmediate = hooks.pImmediate;
    if (hooks.pInterval) tp.setInterval = hooks.pInterval;
    if (realP.scheduler) {
      if (hooks.wait) realP.scheduler.wait = hooks.wait;
      if (hooks.yield) realP.scheduler.yield = hooks.yield;
    }
  }
  ev.onDisable(() => {
    if (hooks.abortTimeout) {
      Object.defineProperty(AbortSignal, 'timeout', { ...Object.getOwnPropertyDescriptor(AbortSignal, 'timeout'), value: realAbortTimeout });
    }
    for (const k of names) {
      timers[k] = real[k];
      const d = globalsWere[k];
      if (d) Object.defineProperty(globalThis, k, d);
    }
    if (tp) {
      tp.setTimeout = realP.setTimeout;
      tp.setImmediate = realP.setImmediate;
      if (realP.setInterval) tp.setInterval = realP.setInterval;
      if (realP.scheduler) {
        if (realP.wait) realP.scheduler.wait = realP.wait;
        if (realP.yield) realP.scheduler.yield = realP.yield;
      }
    }
  });
}

// Named as the function it replaces (stack traces, util.inspect, libraries checking names).
function named(name, fn) {
  Object.defineProperty(fn, 'name', { value: name });
  return fn;
}

module.exports = { install };
