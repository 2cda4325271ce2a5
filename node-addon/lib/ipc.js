'use strict';
// A child started with an IPC channel (child_process.fork: vitest's, jest's and tinypool's
// workers) takes input from its parent as 'message' events, and 'disconnect' when the parent
// lets go. When those arrive decides what the child does before its parent stops it: vitest's
// worker replayed with its parent's message arriving after the stopping signal's turn, ended
// 21 calls early and failed its run. Each message and the disconnect are completions of the
// key `ipc parent`, recorded before the program's listeners run (the message in V8's
// serialization, which holds what 'advanced' serialization sends). Replay delivers the
// recorded ones at their turn and swallows the live ones the replayed parent sends (the same
// messages, at other times). What the child sends stays live.

const v8 = require('v8');

const KEY = 'ipc parent';

function install(ev) {
  if (typeof process.send !== 'function' || !process.channel) return;
  const realEmit = process.emit;
  if (ev.mode !== 'replay') {
    const emit = function emit(name, message) {
      if (ev.on && !ev.busy && (name === 'message' || name === 'disconnect')) {
        try {
          ev.done(KEY, name === 'message' ? { m: v8.serialize(message) } : { d: 1 });
        } catch (e) {
          ev.fail('recording an IPC message', e);
        }
      }
      return realEmit.apply(this, arguments);
    };
    process.emit = emit;
    ev.onDisable(() => {
      if (process.emit === emit) process.emit = realEmit;
    });
    return;
  }
  let live = false;
  let delivering = false;
  const emit = function emit(name) {
    // The replayed parent's own sends: the recorded copies come at their turn.
    if ((name === 'message' || name === 'disconnect') && ev.on && !live && !delivering) return false;
    return realEmit.apply(this, arguments);
  };
  process.emit = emit;
  ev.onDisable(() => {
    if (process.emit === emit) process.emit = realEmit;
  });
  const next = () =>
    ev.await(
      KEY,
      (r) => {
        if (r === ev.LIVE || r === null || typeof r !== 'object') {
          live = true;
          return;
        }
        delivering = true;
        try {
          if (r.d) realEmit.call(process, 'disconnect');
          else realEmit.call(process, 'message', v8.deserialize(r.m));
        } finally {
          delivering = false;
        }
        if (!r.d) next();
      },
      false,
    );
  next();
}

// The parent's side: a child it forked with an IPC channel (`child`, just spawned). Its
// messages and its disconnect are completions of `ipc child#n` (n counting the process's IPC
// children in the order it started them), delivered at their turn in replay, the live ones
// from the replayed child swallowed. The parent's reaction to a worker's message (vitest
// stops its worker when the run's results come) is then where it was recorded.
let children = 0;

function watchChild(ev, child) {
  if (typeof child.send !== 'function' || !child.channel) return;
  const key = `ipc child#${++children}`;
  const realEmit = child.emit;
  if (ev.mode !== 'replay') {
    child.emit = function emit(name, message) {
      if (ev.on && !ev.busy && (name === 'message' || name === 'disconnect')) {
        try {
          ev.done(key, name === 'message' ? { m: v8.serialize(message) } : { d: 1 });
        } catch (e) {
          ev.fail('recording an IPC message', e);
        }
      }
      return realEmit.apply(this, arguments);
    };
    return;
  }
  let live = false;
  let delivering = false;
  child.emit = function emit(name) {
    if ((name === 'message' || name === 'disconnect') && ev.on && !live && !delivering) return false;
    return realEmit.apply(this, arguments);
  };
  const next = () =>
    ev.await(
      key,
      (r) => {
        if (r === ev.LIVE || r === null || typeof r !== 'object') {
          live = true;
          return;
        }
        delivering = true;
        try {
          if (r.d) realEmit.call(child, 'disconnect');
          else realEmit.call(child, 'message', v8.deserialize(r.m));
        } finally {
          delivering = false;
        }
        if (!r.d) next();
      },
      false,
    );
  next();
}

module.exports = { install, watchChild };
