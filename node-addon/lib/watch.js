'use strict';
// fs.watch: what a watcher reports ('change' with the event type and file name, 'error') is
// a completion of the watcher's key (`watch PATH#n`, n counting watchers of that path in
// the order the program makes them). Replay watches nothing real: the watcher it returns
// gets the recorded reports at their turn. Before, a replayed watcher waited for changes
// that no one made any more, and the program (chokidar, a build tool's watch mode) hung.
//
// 'close' is not recorded: it follows the program's own close() (emitted on the next tick,
// as Node does) or an error. Not hooked: fs.watchFile (stat polling) and fs.promises.watch.

const fs = require('fs');
const EventEmitter = require('events');

function pathOf(p) {
  if (typeof p === 'string') return p;
  if (Buffer.isBuffer(p)) return p.toString();
  if (p instanceof URL) return p.href;
  return null;
}

function install(ev) {
  const replaying = ev.mode === 'replay';
  const realWatch = fs.watch;
  // The watch call itself: its outcome (a watcher, or the error it threw: ENOENT) is an
  // event whose input is the path.
  const kWatch = ev.kind('node.fs.watch');

  const watch = {
    watch(filename, options, listener) {
      if (!ev.on || ev.busy) return Reflect.apply(realWatch, this, arguments);
      const where = pathOf(filename);
      if (where === null) return Reflect.apply(realWatch, this, arguments);
      const args = arguments;
      if (!replaying) {
        let w;
        try {
          w = ev.live(() => Reflect.apply(realWatch, this, args));
        } catch (e) {
          ev.record(kWatch, where, { e });
          throw e;
        }
        ev.record(kWatch, where, { e: null });
        const key = ev.opKey(`watch ${where}`);
        const realEmit = w.emit;
        w.emit = function emit(name, a, b) {
          if (ev.on) {
            try {
              if (name === 'change') ev.done(key, { t: 'c', e: a, f: b === undefined ? null : b });
              else if (name === 'error') ev.done(key, { t: 'x', e: a });
            } catch (e) {
              ev.fail('recording a file watcher', e);
            }
          }
          return Reflect.apply(realEmit, this, arguments);
        };
        return w;
      }
      const r = ev.replay(kWatch, where);
      if (r === ev.LIVE) return Reflect.apply(realWatch, this, args);
      if (r !== null && typeof r === 'object' && r.e) throw r.e;
      const key = ev.opKey(`watch ${where}`);
      const opts = typeof options === 'object' && options !== null ? options : {};
      const cb = typeof options === 'function' ? options : listener;
      return replayed(key, opts, cb);
    },
  }.watch;
  Object.defineProperty(watch, 'length', { value: realWatch.length });

  // A watcher fed from the log: an EventEmitter with FSWatcher's methods.
  function replayed(key, opts, cb) {
    const w = new EventEmitter();
    let closed = false;
    if (typeof cb === 'function') w.on('change', cb);
    const follow = () => {
      ev.await(
        key,
        (v) => {
          if (closed || v === ev.LIVE || v === null || typeof v !== 'object') return;
          if (v.t === 'c') {
            follow();
            w.emit('change', v.e, v.f === null ? undefined : v.f);
          } else if (v.t === 'x') {
            closed = true;
            w.emit('error', v.e);
            process.nextTick(() => w.emit('close'));
          }
        },
        opts.persistent === false,
      );
    };
    follow();
    w.close = function close() {
      if (closed) return;
      closed = true;
      ev.cancel(key);
      process.nextTick(() => w.emit('close'));
    };
    w.ref = function ref() {
      if (!closed) ev.weak(key, false);
      return this;
    };
    w.unref = function unref() {
      if (!closed) ev.weak(key, true);
      return this;
    };
    return w;
  }

  fs.watch = watch;
  ev.onDisable(() => {
    if (fs.watch === watch) fs.watch = realWatch;
  });
}

module.exports = { install };
