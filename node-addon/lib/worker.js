'use strict';
// The events worker threads send the main thread ('online', 'message', 'messageerror',
// 'error', 'exit' on a Worker) come in their recorded order among every other completion.
//
// Why: workers run in parallel, so which one's message the main thread gets first is a race
// (ava's two test workers report in either order), and a message races the main thread's own
// timers and I/O. The workers themselves replay as logical threads of the process (index.js,
// installWorker); what they send is the same, only its arrival order is not.
//
// Record: each such event is a completion (ev.done) of the worker's key `worker N` (N: its
// threadId, the order the process created workers in), in the order the main thread got them.
// Replay: an event that arrives is held, with the listeners it would have reached then, and
// delivered when the recorded completion order reaches it (ev.await); a worker's events keep
// their own order. The listeners are taken on arrival because Node removes a Worker's
// listeners as it exits (`removeAllListeners('message')` before 'exit', all after it), which a
// held event must still reach, as it did when recorded.

const { Worker } = require('worker_threads');

const ORDERED = new Set(['online', 'message', 'messageerror', 'error', 'exit']);
const STATE = Symbol('replay-node.worker');

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
  const deliver = (w, type, args, fns) => {
    if (type === 'error' && fns.length === 0) throw args[0];
    for (const fn of fns) fn.apply(w, args);
  };

  const arm = (w, st) => {
    st.waiting = true;
    ev.await(
      st.key,
      (v) => {
        st.waiting = false;
        if (v === ev.LIVE) {
          // Replay went live: what is held goes out now, in arrival order.
          const rest = st.queue.splice(0);
          for (const e of rest) deliver(w, e.type, e.args, e.fns);
          return;
        }
        const e = st.queue.shift();
        if (st.queue.length > 0) arm(w, st);
        if (e) deliver(w, e.type, e.args, e.fns);
      },
      st.weak,
    );
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
    st.queue.push({ type, args, fns });
    if (!st.waiting) arm(this, st);
    return fns.length > 0;
  };
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
  });
}

module.exports = { install };
