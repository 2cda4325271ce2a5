'use strict';
// fs.watch: what a watcher reports ('change' with the event type and file name, 'error') is
// a completion of the watcher's key (`watch PATH#n`, n counting watchers of that path in
// the order the program makes them). Replay watches nothing real: the watcher it returns
// gets the recorded reports at their turn. Before, a replayed watcher waited for changes
// that no one made any more, and the program (chokidar, a build tool's watch mode) hung.
//
// 'close' is not recorded: it follows the program's own close() (emitted on the next tick,
// as Node does) or an error. Not hooked: fs.promises.watch.
//
// fs.watchFile (stat polling: chokidar's usePolling, nodemon's legacy watch): what the
// listener gets (the file's Stats now and before) is a completion of the StatWatcher's key
// (`watchFile PATH#n`, n counting the watchers Node makes for that path: one per path while
// it has listeners). Replay polls nothing: the listeners get the recorded Stats at their
// turn. Before, replay polled the live file: a program waiting for someone to change it
// hung, and one that saw a change got the live sizes (exit 0, another file written).

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

  // Node's own calls (a recursive watch on Linux watches each directory below with fs.watch)
  // belong to the program's watcher, which replay feeds: not events of their own.
  const fromNode = typeof ev.fromNode === 'function' ? ev.fromNode : () => false;
  const watch = {
    watch(filename, options, listener) {
      if (!ev.on || ev.busy || fromNode(watch)) return Reflect.apply(realWatch, this, arguments);
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
  if (typeof fs.watchFile === 'function' && typeof fs.unwatchFile === 'function' && ev.stats) {
    installWatchFile(ev, replaying);
  }
}

function installWatchFile(ev, replaying) {
  const path = require('path');
  const realWatchFile = fs.watchFile;
  const realUnwatchFile = fs.unwatchFile;
  const kWatchFile = ev.kind('node.fs.watchFile');
  const HOOKED = Symbol('replay-node.statWatcher');
  const { encode, decode } = ev.stats;
  // Replay: the watchers made, by resolved path (Node shares one per path).
  const watchers = new Map();

  const watchFile = {
    watchFile(filename, options, listener) {
      if (!ev.on || ev.busy) return Reflect.apply(realWatchFile, this, arguments);
      const where = pathOf(filename);
      if (where === null) return Reflect.apply(realWatchFile, this, arguments);
      const args = arguments;
      if (!replaying) {
        const w = ev.live(() => Reflect.apply(realWatchFile, this, args));
        ev.record(kWatchFile, where, null);
        if (w && typeof w.emit === 'function' && !w[HOOKED]) {
          Object.defineProperty(w, HOOKED, { value: true });
          const key = ev.opKey(`watchFile ${where}`);
          const realEmit = w.emit;
          w.emit = function emit(name, cur, prev) {
            if (name === 'change' && ev.on) {
              try {
                ev.done(key, { c: encode(cur), p: encode(prev) });
              } catch (e) {
                ev.fail('recording a stat watcher', e);
              }
            }
            return Reflect.apply(realEmit, this, arguments);
          };
        }
        return w;
      }
      const r = ev.replay(kWatchFile, where);
      if (r === ev.LIVE) return Reflect.apply(realWatchFile, this, args);
      const opts = typeof options === 'object' && options !== null ? options : {};
      const cb = typeof options === 'function' ? options : listener;
      const resolved = path.resolve(where);
      let w = watchers.get(resolved);
      if (w === undefined) {
        w = replayedStat(ev.opKey(`watchFile ${where}`), opts.persistent === false);
        watchers.set(resolved, w);
      }
      if (typeof cb === 'function') w.addListener('change', cb);
      return w;
    },
  }.watchFile;
  Object.defineProperty(watchFile, 'length', { value: realWatchFile.length });

  // A StatWatcher fed from the log.
  function replayedStat(key, weak) {
    const w = new EventEmitter();
    let stopped = false;
    const follow = () => {
      ev.await(
        key,
        (v) => {
          if (stopped || v === ev.LIVE || v === null || typeof v !== 'object') return;
          follow();
          w.emit('change', decode(v.c), decode(v.p));
        },
        weak,
      );
    };
    follow();
    w.stop = function stop() {
      if (stopped) return;
      stopped = true;
      ev.cancel(key);
      process.nextTick(() => w.emit('stop'));
    };
    w.ref = function ref() {
      if (!stopped) ev.weak(key, false);
      return this;
    };
    w.unref = function unref() {
      if (!stopped) ev.weak(key, true);
      return this;
    };
    return w;
  }

  const unwatchFile = {
    unwatchFile(filename, listener) {
      const where = pathOf(filename);
      const w = where === null || !replaying ? undefined : watchers.get(path.resolve(where));
      if (w === undefined) return Reflect.apply(realUnwatchFile, this, arguments);
      if (typeof listener === 'function') w.removeListener('change', listener);
      else w.removeAllListeners('change');
      if (w.listenerCount('change') === 0) {
        w.stop();
        watchers.delete(path.resolve(where));
      }
      return undefined;
    },
  }.unwatchFile;
  Object.defineProperty(unwatchFile, 'length', { value: realUnwatchFile.length });

  fs.watchFile = watchFile;
  fs.unwatchFile = unwatchFile;
  ev.onDisable(() => {
    if (fs.watchFile === watchFile) fs.watchFile = realWatchFile;
    if (fs.unwatchFile === unwatchFile) fs.unwatchFile = realUnwatchFile;
  });
}

module.exports = { install };
