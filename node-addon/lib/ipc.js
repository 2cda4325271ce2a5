'use strict';
// IPC channels (child_process.fork: vitest's, jest's, mocha's and tinypool's workers). What
// comes over one is input: when a message arrives, relative to the process's timers and I/O,
// decides what it does (a worker replayed with its parent's message arriving after the
// stopping signal's turn ended 21 calls early; vitest's parent stopped its worker at another
// point). Both ends are hooked the same way: each 'message' and the 'disconnect' are
// completions of the channel's key, recorded before the program's listeners run (the message
// in V8's serialization, which holds what 'advanced' serialization sends). Replay delivers
// the recorded ones at their turn and swallows the live ones (the other end, replayed or
// live, sends the same messages at other times). What the process sends stays live.
//   - a child's end, `process`: key `ipc parent` (install);
//   - a parent's end, each ChildProcess with a channel: key `ipc child#n`, n counting the
//     process's IPC children in the order it started them (watchChild).

const v8 = require('v8');

const isChannelEvent = (name) => name === 'message' || name === 'disconnect';

// Hooks `target.emit` for the channel's events under `key`; returns the hook (for restoring).
function channel(ev, target, key) {
  const realEmit = target.emit;
  if (ev.mode !== 'replay') {
    const emit = function emit(name, message) {
      if (ev.on && !ev.busy && isChannelEvent(name)) {
        try {
          ev.done(key, name === 'message' ? { m: v8.serialize(message) } : { d: 1 });
        } catch (e) {
          ev.fail('recording an IPC message', e);
        }
      }
      return realEmit.apply(this, arguments);
    };
    target.emit = emit;
    return { emit, realEmit };
  }
  let live = false;
  let delivering = false;
  const emit = function emit(name) {
    if (isChannelEvent(name) && ev.on && !live && !delivering) return false;
    return realEmit.apply(this, arguments);
  };
  target.emit = emit;
  // The wait keeps the process alive as the real channel does. A child's channel is ref'd
  // while the process has a 'message' or 'disconnect' listener (jest's worker ends by
  // removing its listener: the recorded child then exited, a replayed one waited for more);
  // a parent's while it is open; either as channel.ref()/unref() last set it.
  let explicit = null;
  const strong = () => {
    if (explicit !== null) return explicit;
    if (target !== process) return true;
    return target.listenerCount('message') > 0 || target.listenerCount('disconnect') > 0;
  };
  const update = () => ev.weak(key, !strong());
  try {
    const control = target.channel;
    for (const [name, state] of [['ref', true], ['unref', false]]) {
      const real = control[name];
      if (typeof real !== 'function') continue;
      control[name] = function () {
        explicit = state;
        update();
        return real.apply(this, arguments);
      };
    }
    if (target === process) {
      target.on('newListener', (name) => {
        if (isChannelEvent(name)) Promise.resolve().then(update);
      });
      target.on('removeListener', (name) => {
        if (isChannelEvent(name)) update();
      });
    }
  } catch (e) {
    ev.fail('following an IPC channel', e);
  }
  // The other end, replayed or live, may close the channel before its recorded time (a
  // replayed child got its recorded 'bye' at once and exited while its parent was still to
  // send it): what this end sends on a channel the other end closed early is dropped as if
  // sent (it raised ERR_IPC_CHANNEL_CLOSED, uncaught, where the recorded send went through).
  // Until the recorded 'disconnect' comes: the live one tells nothing (Node calls disconnect()
  // itself when the other end goes). Left: a send after this end's own disconnect() is
  // dropped too, where the recording's raised ERR_IPC_CHANNEL_CLOSED.
  let recordedConnected = true;
  try {
    const realSend = target.send;
    if (typeof realSend === 'function') {
      target.send = function send(...args) {
        if (!ev.on || live || this.connected || !recordedConnected) return realSend.apply(this, args);
        const cb = args.length > 1 && typeof args[args.length - 1] === 'function' ? args[args.length - 1] : null;
        if (cb) process.nextTick(cb, null);
        return true;
      };
    }
  } catch (e) {
    ev.fail('following an IPC channel', e);
  }
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
          if (r.d) recordedConnected = false;
          if (r.d) realEmit.call(target, 'disconnect');
          else realEmit.call(target, 'message', v8.deserialize(r.m));
        } finally {
          delivering = false;
        }
        if (!r.d) next();
      },
      // As strong as the channel: the recorded messages are what this end waits for,
      // whether or not the other end still holds the channel open.
      !strong(),
    );
  next();
  return { emit, realEmit };
}

function install(ev) {
  if (typeof process.send !== 'function' || !process.channel) return;
  const { emit, realEmit } = channel(ev, process, 'ipc parent');
  ev.onDisable(() => {
    if (process.emit === emit) process.emit = realEmit;
  });
}

let children = 0;

// `child` was just spawned; a channel of its own makes it one more IPC child.
function watchChild(ev, child) {
  if (typeof child.send !== 'function' || !child.channel) return;
  channel(ev, child, `ipc child#${++children}`);
}

module.exports = { install, watchChild };
