'use strict';
// The events worker threads send the main thread ('online', 'message', 'messageerror',
// 'error', 'exit' on a Worker) come in their recorded order among every other completion.
//
// Why: workers run in parallel, so which one's message the main thread gets first is a race
// (ava's two test workers report in either order), and a message races the main thread's own
// timers and I/O. The workers themselves replay as logical threads of the process (index.js,
// installWorker); what they send is the same, only its arrival order is not.
//
// The same for messages reaching a port of a MessageChannel the program made on the main
// thread (tinypool, which vitest runs its test files on, and birpc hand results back over
// such ports, not the Worker's own): key `port N.1` or `port N.2`, N counting the channels the
// program made.
//
// Record: each such event is a completion (ev.done) of the worker's key `worker N` (N: its
// threadId, the order the process created workers in), in the order the main thread got them.
// Replay: an event that arrives is held, with the listeners it would have reached then, and
// delivered when the recorded completion order reaches it (ev.await); a worker's events keep
// their own order. The listeners are taken on arrival because Node removes a Worker's
// listeners as it exits (`removeAllListeners('message')` before 'exit', all after it), which a
// held event must still reach, as it did when recorded.

const workerThreads = require('worker_threads');

const { Worker, MessagePort } = workerThreads;
const ORDERED = new Set(['online', 'message', 'messageerror', 'error', 'exit']);
// A port's 'close' too: held messages must reach the program before it hears the port closed.
const PORT_ORDERED = new Set(['message', 'messageerror', 'close']);
const STATE = Symbol('replay-node.worker');
// How a message reaches a port's listeners (lib/internal/per_context/messageport.js calls
// `this[kHybridDispatch](data, type)` with the transferred ports in
// `this[kCurrentlyReceivingPorts]`); both symbols are registered ones.
const kHybridDispatch = Symbol.for('nodejs.internal.kHybridDispatch');
const kCurrentlyReceivingPorts = Symbol.for('nodejs.internal.kCurrentlyReceivingPorts');

function install(ev) {
  const proto = Worker.prototype;
  const own = Object.prototype.hasOwnProperty.call(proto, 'emit');
  const realEmit = proto.emit;
  const realRef = proto.ref;
  const realUnref = proto.unref;

  // A worker's key, made at its first event of any kind: the program's first `on(...)`
  // ('newListener'), before it can have exited (Node sets threadId to -1 then).
  const state = (w) => {
    let st = w[STATE];
    if (st === undefined) {
      st = { key: `worker ${w.threadId}`, queue: [], waiting: false, weak: false };
      Object.defineProperty(w, STATE, { value: st });
    }
    return st;
  };

  // What EventEmitter.emit does with the listeners taken when the event arrived.
  const deliver = (w, type, args, fns) => () => {
    if (type === 'error' && fns.length === 0) throw args[0];
    for (const fn of fns) fn.apply(w, args);
  };

  // Replay: `st.queue` holds each arrived event's delivery, in arrival order; one wait at a
  // time for the key's next recorded completion.
  const arm = (st) => {
    st.waiting = true;
    ev.await(
      st.key,
      (v) => {
        st.waiting = false;
        if (v === ev.LIVE) {
          // Replay went live: what is held goes out now, in arrival order.
          for (const go of st.queue.splice(0)) go();
          return;
        }
        const go = st.queue.shift();
        if (st.queue.length > 0) arm(st);
        if (go) go();
      },
      st.weak,
    );
  };
  const hold = (st, go) => {
    st.queue.push(go);
    if (!st.waiting) arm(st);
  };

  proto.emit = function emit(type, ...args) {
    if (!ev.on || ev.busy) return realEmit.call(this, type, ...args);
    let st;
    try {
      st = state(this);
    } catch (e) {
      ev.fail('ordering a worker thread event', e);
      return realEmit.call(this, type, ...args);
    }
    if (!ORDERED.has(type)) return realEmit.call(this, type, ...args);
    if (ev.mode === 'record') {
      try {
        ev.done(st.key, { t: type });
      } catch (e) {
        ev.fail('recording a worker thread event', e);
      }
      return realEmit.call(this, type, ...args);
    }
    const fns = this.rawListeners(type).slice();
    hold(st, deliver(this, type, args, fns));
    return fns.length > 0;
  };

  // Program-made channels: their ports get keys in the order the program made them.
  const RealChannel = workerThreads.MessageChannel;
  let channels = 0;
  const Channel = function MessageChannel(...a) {
    if (new.target === undefined) return new RealChannel(...a); // throws as the real one does
    const c = new RealChannel(...a);
    if (ev.on && !ev.busy) {
      const n = ++channels;
      for (const [p, side] of [[c.port1, 1], [c.port2, 2]]) {
        Object.defineProperty(p, STATE, {
          value: { key: `port ${n}.${side}`, queue: [], waiting: false, weak: false },
        });
      }
    }
    return c;
  };
  Channel.prototype = RealChannel.prototype;
  Object.defineProperty(Channel, 'length', { value: RealChannel.length });
  workerThreads.MessageChannel = Channel;
  const globalChannel = Object.getOwnPropertyDescriptor(globalThis, 'MessageChannel');
  Object.defineProperty(globalThis, 'MessageChannel', {
    value: Channel,
    writable: true,
    configurable: true,
    enumerable: false,
  });

  // In a worker: what the parent sends (parentPort), ordered as the worker got it among its
  // other completions. A worker that answers its parent's message through a child process
  // (esbuild's service: the main thread blocks in Atomics.wait for the answer) got the child's
  // replayed output before the message that made it ask: the child was written to later, its
  // answer went unheard, and the main thread waited forever (tsx hung in replay).
  const parent = workerThreads.parentPort;
  if (!workerThreads.isMainThread && parent && parent[STATE] === undefined) {
    Object.defineProperty(parent, STATE, { value: { key: 'parent port', queue: [], waiting: false, weak: false } });
  }

  const portProto = MessagePort.prototype;
  const ownDispatch = Object.prototype.hasOwnProperty.call(portProto, kHybridDispatch);
  const realDispatch = portProto[kHybridDispatch];
  const portRef = portProto.ref;
  const portUnref = portProto.unref;
  if (typeof realDispatch === 'function') {
    portProto[kHybridDispatch] = function dispatch(value, type, event) {
      const st = this[STATE];
      if (st === undefined || !ev.on || ev.busy || !PORT_ORDERED.has(type)) {
        return realDispatch.call(this, value, type, event);
      }
      if (ev.mode === 'record') {
        try {
          ev.done(st.key, { t: type });
        } catch (e) {
          ev.fail('recording a message port event', e);
        }
        return realDispatch.call(this, value, type, event);
      }
      const ports = this[kCurrentlyReceivingPorts];
      hold(st, () => {
        this[kCurrentlyReceivingPorts] = ports;
        try {
          realDispatch.call(this, value, type, event);
        } finally {
          this[kCurrentlyReceivingPorts] = undefined;
        }
      });
      return undefined;
    };
    const weakPort = (isWeak) =>
      function (...a) {
        const st = this[STATE];
        if (st !== undefined) {
          st.weak = isWeak;
          if (st.waiting) ev.weak(st.key, isWeak);
        }
        return (isWeak ? portUnref : portRef).apply(this, a);
      };
    if (typeof portRef === 'function') portProto.ref = weakPort(false);
    if (typeof portUnref === 'function') portProto.unref = weakPort(true);
  }
  // An unref'd worker does not keep the process alive; neither do its held events.
  proto.unref = function unref(...a) {
    if (this[STATE] !== undefined || ev.mode === 'replay') {
      const st = state(this);
      st.weak = true;
      if (st.waiting) ev.weak(st.key, true);
    }
    return realUnref.apply(this, a);
  };
  proto.ref = function ref(...a) {
    if (this[STATE] !== undefined) {
      const st = this[STATE];
      st.weak = false;
      if (st.waiting) ev.weak(st.key, false);
    }
    return realRef.apply(this, a);
  };

  ev.onDisable(() => {
    if (own) proto.emit = realEmit;
    else delete proto.emit;
    proto.ref = realRef;
    proto.unref = realUnref;
    workerThreads.MessageChannel = RealChannel;
    if (globalChannel) Object.defineProperty(globalThis, 'MessageChannel', globalChannel);
    if (typeof realDispatch === 'function') {
      if (ownDispatch) portProto[kHybridDispatch] = realDispatch;
      else delete portProto[kHybridDispatch];
      portProto.ref = portRef;
      portProto.unref = portUnref;
    }
  });
}

module.exports = { install };
