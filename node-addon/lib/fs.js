'use strict';
// Records and replays what the program reads from files: fs.readFileSync, fs.readFile,
// fs.promises.readFile (also require('fs/promises')), fs.openSync (read-only) + fs.readSync,
// fs.existsSync, fs.statSync and fs.createReadStream. Writes are output and run live.
//
// Node's module loaders read source files through these very functions (the CommonJS loader
// calls fs.readFileSync, the ESM loader fs.promises.readFile): those calls are not events, or
// a replay would run the recorded source instead of the program in hand. They are told apart
// by their caller (a frame inside node:internal/modules/), which costs a stack capture per
// read: small beside the read itself.

const fs = require('fs');
const { Readable } = require('stream');

// Encoding of a read's result from its options (string or object), for the event input.
function encodingOf(options) {
  if (typeof options === 'string') return options;
  if (options && typeof options === 'object' && typeof options.encoding === 'string') return options.encoding;
  return '';
}

// The path as the program gave it (string, Buffer or file: URL), or null for anything else
// (an fd, a FileHandle): those reads are not hooked by path.
function pathOf(p) {
  if (typeof p === 'string') return p;
  if (Buffer.isBuffer(p)) return p.toString();
  if (p instanceof URL) return p.href;
  return null;
}

// True when the hooked function was called by Node's module loader.
function fromLoader() {
  const prepare = Error.prepareStackTrace;
  const limit = Error.stackTraceLimit;
  let sites;
  try {
    Error.prepareStackTrace = (_, cs) => cs;
    Error.stackTraceLimit = 3;
    const holder = {};
    Error.captureStackTrace(holder, fromLoader);
    sites = holder.stack;
  } finally {
    Error.prepareStackTrace = prepare;
    Error.stackTraceLimit = limit;
  }
  // [0] is the hook, [1] its caller.
  const caller = Array.isArray(sites) && sites[1];
  const file = caller && caller.getFileName && caller.getFileName();
  return typeof file === 'string' && file.startsWith('node:internal/modules/');
}

// Keeps the real function's name and length on a hook.
function like(hook, real) {
  Object.defineProperty(hook, 'name', { value: real.name, configurable: true });
  Object.defineProperty(hook, 'length', { value: real.length, configurable: true });
  return hook;
}

const DATE_KEYS = ['atime', 'mtime', 'ctime', 'birthtime'];

function encodeStats(s) {
  if (s === undefined) return { none: true };
  const f = {};
  const d = {};
  for (const key of Object.keys(s)) {
    if (DATE_KEYS.includes(key)) d[key] = s[key].getTime();
    else f[key] = s[key];
  }
  return { big: typeof s.size === 'bigint', f, d };
}

function install(ev) {
  const replaying = ev.mode === 'replay';
  const promises = fs.promises;
  const real = {
    readFileSync: fs.readFileSync,
    readFile: fs.readFile,
    promisesReadFile: promises.readFile,
    openSync: fs.openSync,
    readSync: fs.readSync,
    closeSync: fs.closeSync,
    close: fs.close,
    existsSync: fs.existsSync,
    statSync: fs.statSync,
    createReadStream: fs.createReadStream,
  };
  const K = {
    readFileSync: ev.kind('node.fs.readFileSync'),
    readFile: ev.kind('node.fs.readFile'),
    promisesReadFile: ev.kind('node.fs.promises.readFile'),
    openSync: ev.kind('node.fs.openSync'),
    readSync: ev.kind('node.fs.readSync'),
    existsSync: ev.kind('node.fs.existsSync'),
    statSync: ev.kind('node.fs.statSync'),
    createReadStream: ev.kind('node.fs.createReadStream'),
  };
  // Prototypes of what statSync returns, to rebuild recorded stats in replay.
  const statsProto = Object.getPrototypeOf(real.statSync('/'));
  const bigStatsProto = Object.getPrototypeOf(real.statSync('/', { bigint: true }));

  function decodeStats(x) {
    if (x.none) return undefined;
    const s = Object.create(x.big ? bigStatsProto : statsProto);
    Object.assign(s, x.f);
    for (const key of Object.keys(x.d)) s[key] = new Date(x.d[key]); // with an argument: no clock read, no event
    return s;
  }

  // A synchronous call: `input` null means not hooked. `enc`/`dec` turn the result into a
  // recordable value and back.
  function syncCall(k, input, self, args, fn, enc = (v) => v, dec = (v) => v) {
    if (replaying) {
      const v = ev.replay(k, input);
      if (v === ev.LIVE) return ev.live(() => fn.apply(self, args));
      if (v.e !== undefined) throw v.e;
      return dec(v.v);
    }
    let r;
    try {
      r = ev.live(() => fn.apply(self, args));
    } catch (e) {
      ev.record(k, input, { e });
      throw e;
    }
    ev.record(k, input, { v: enc(r) });
    return r;
  }

  // Descriptors opened read-only by the hooked openSync: their reads are events, named by
  // the path they were opened with. Replay opens /dev/null instead, so the program holds a
  // real descriptor that fstat/close handle as usual (its number may differ from recorded).
  const hookedFds = new Map();

  const hooks = {};

  hooks.readFileSync = like(function readFileSync(p, options) {
    if (!ev.on || ev.busy || fromLoader()) return real.readFileSync.apply(this, arguments);
    // A descriptor from the hooked openSync is named by its path (in replay it is /dev/null).
    const where = hookedFds.has(p) ? `fd ${hookedFds.get(p)}` : pathOf(p);
    if (where === null) return real.readFileSync.apply(this, arguments);
    return syncCall(K.readFileSync, `${where} ${encodingOf(options)}`, this, arguments, real.readFileSync);
  }, real.readFileSync);

  hooks.existsSync = like(function existsSync(p) {
    if (!ev.on || ev.busy) return real.existsSync.apply(this, arguments);
    const where = pathOf(p);
    if (where === null) return real.existsSync.apply(this, arguments);
    return syncCall(K.existsSync, where, this, arguments, real.existsSync);
  }, real.existsSync);

  hooks.statSync = like(function statSync(p, options) {
    if (!ev.on || ev.busy || fromLoader()) return real.statSync.apply(this, arguments);
    const where = pathOf(p);
    if (where === null) return real.statSync.apply(this, arguments);
    const big = !!(options && options.bigint);
    const noThrow = !!(options && options.throwIfNoEntry === false);
    return syncCall(K.statSync, `${where} ${big ? 'bigint' : ''}${noThrow ? ' nothrow' : ''}`, this, arguments,
      real.statSync, encodeStats, decodeStats);
  }, real.statSync);


  const readOnly = (flags) =>
    flags === undefined || flags === null || flags === 'r' || flags === 'rs' || flags === 'sr' ||
    flags === fs.constants.O_RDONLY;

  hooks.openSync = like(function openSync(p, flags) {
    if (!ev.on || ev.busy) return real.openSync.apply(this, arguments);
    const where = pathOf(p);
    if (where === null || !readOnly(flags)) return real.openSync.apply(this, arguments);
    const input = `${where} ${flags === undefined || flags === null ? 'r' : flags}`;
    let fd;
    if (replaying) {
      const v = ev.replay(K.openSync, input);
      if (v === ev.LIVE) return ev.live(() => real.openSync.apply(this, arguments));
      if (v.e !== undefined) throw v.e;
      fd = ev.live(() => real.openSync('/dev/null', 'r'));
    } else {
      fd = syncCall(K.openSync, input, this, arguments, real.openSync);
    }
    hookedFds.set(fd, where);
    return fd;
  }, real.openSync);

  hooks.closeSync = like(function closeSync(fd) {
    hookedFds.delete(fd);
    return real.closeSync.apply(this, arguments);
  }, real.closeSync);

  hooks.close = like(function close(fd) {
    hookedFds.delete(fd);
    return real.close.apply(this, arguments);
  }, real.close);

  hooks.readSync = like(function readSync(fd, buffer, offsetOrOptions, length, position) {
    if (!ev.on || ev.busy || !hookedFds.has(fd) || !ArrayBuffer.isView(buffer)) {
      return real.readSync.apply(this, arguments);
    }
    let offset = offsetOrOptions;
    if (offset !== null && typeof offset === 'object') {
      ({ offset, length, position } = offset);
    }
    offset = offset === undefined ? 0 : offset;
    if (length === undefined) length = buffer.byteLength - offset;
    const input = `${hookedFds.get(fd)} ${offset} ${length} ${position === undefined || position === null ? '-' : position}`;
    const bytes = Buffer.from(buffer.buffer, buffer.byteOffset, buffer.byteLength);
    return syncCall(K.readSync, input, this, arguments, real.readSync,
      (n) => ({ n, data: Buffer.from(bytes.subarray(offset, offset + n)) }),
      (v) => {
        v.data.copy(bytes, offset);
        return v.n;
      });
  }, real.readSync);

  hooks.readFile = like(function readFile(p, options, callback) {
    const cb = typeof options === 'function' ? options : callback;
    const where = pathOf(p);
    if (!ev.on || ev.busy || where === null || typeof cb !== 'function' || fromLoader()) {
      return real.readFile.apply(this, arguments);
    }
    const opts = typeof options === 'function' ? undefined : options;
    const input = `${where} ${encodingOf(opts)}`;
    const key = ev.opKey(`readFile ${input}`);
    const args = [...arguments];
    if (replaying) {
      const v = ev.replay(K.readFile, input);
      if (v === ev.LIVE) return ev.live(() => real.readFile.apply(this, args));
      ev.await(key, (r) => {
        if (r === ev.LIVE) {
          real.readFile.apply(this, args);
          return;
        }
        if (r.e !== undefined) cb(r.e);
        else cb(null, r.v);
      });
      return undefined;
    }
    args[typeof options === 'function' ? 1 : 2] = function (err, data) {
      ev.done(key, err ? { e: err } : { v: data });
      return cb.apply(this, arguments);
    };
    // The call event after the real call: one that throws (bad options) is no event.
    const r = ev.live(() => real.readFile.apply(this, args));
    ev.record(K.readFile, input, null);
    return r;
  }, real.readFile);

  hooks.promisesReadFile = like(function readFile(p, options) {
    const where = pathOf(p);
    if (!ev.on || ev.busy || where === null || fromLoader()) return real.promisesReadFile.apply(this, arguments);
    const input = `${where} ${encodingOf(options)}`;
    const key = ev.opKey(`promises.readFile ${input}`);
    const args = arguments;
    if (replaying) {
      const v = ev.replay(K.promisesReadFile, input);
      if (v === ev.LIVE) return ev.live(() => real.promisesReadFile.apply(this, args));
      return new Promise((resolve, reject) => {
        ev.await(key, (r) => {
          if (r === ev.LIVE) real.promisesReadFile.apply(this, args).then(resolve, reject);
          else if (r.e !== undefined) reject(r.e);
          else resolve(r.v);
        });
      });
    }
    ev.record(K.promisesReadFile, input, null);
    return ev.live(() => real.promisesReadFile.apply(this, args)).then(
      (data) => {
        ev.done(key, { v: data });
        return data;
      },
      (e) => {
        ev.done(key, { e });
        throw e;
      },
    );
  }, real.promisesReadFile);

  // createReadStream. Record: the real stream, with its own push() and emit() watched (not
  // a 'data' or 'error' listener: those would change its flow and error behaviour): the
  // chunks and the end (or error) are one completion. Replay: a Readable that pushes the
  // recorded chunks when the recorded completion order reaches them.
  hooks.createReadStream = like(function createReadStream(p, options) {
    const where = pathOf(p);
    if (!ev.on || ev.busy || where === null || (options && typeof options === 'object' && options.fd != null)) {
      return real.createReadStream.apply(this, arguments);
    }
    const o = typeof options === 'string' ? { encoding: options } : options || {};
    const input = `${where} ${encodingOf(o)} ${o.start === undefined ? '' : o.start}-${o.end === undefined ? '' : o.end}`;
    const key = ev.opKey(`createReadStream ${input}`);
    const args = arguments;
    if (replaying) {
      const v = ev.replay(K.createReadStream, input);
      if (v === ev.LIVE) return ev.live(() => real.createReadStream.apply(this, args));
      const s = new Readable({
        encoding: o.encoding || undefined,
        highWaterMark: o.highWaterMark || 64 * 1024,
        read() {},
      });
      s.path = where;
      s.bytesRead = 0;
      s.pending = true;
      ev.await(key, (r) => {
        if (r === ev.LIVE) {
          s.destroy(new Error('replay went live: a replayed read stream cannot continue'));
          return;
        }
        s.pending = false;
        for (const c of r.chunks) {
          s.bytesRead += c.length;
          s.push(c);
        }
        if (r.e !== undefined) s.destroy(r.e);
        else if (r.ended) s.push(null);
        else s.destroy();
      });
      return s;
    }
    const s = ev.live(() => real.createReadStream.apply(this, args));
    ev.record(K.createReadStream, input, null);
    const chunks = [];
    let finished = false;
    const finish = (v) => {
      if (finished) return;
      finished = true;
      ev.done(key, v);
    };
    const push = s.push;
    s.push = function (chunk, encoding) {
      if (chunk === null) finish({ chunks, ended: true });
      else if (!finished) chunks.push(Buffer.from(chunk, encoding));
      return push.apply(this, arguments);
    };
    const emit = s.emit;
    s.emit = function (name, arg) {
      if (name === 'error') finish({ chunks, e: arg });
      else if (name === 'close') finish({ chunks, ended: false });
      return emit.apply(this, arguments);
    };
    return s;
  }, real.createReadStream);

  fs.readFileSync = hooks.readFileSync;
  fs.existsSync = hooks.existsSync;
  fs.statSync = hooks.statSync;
  fs.openSync = hooks.openSync;
  fs.closeSync = hooks.closeSync;
  fs.close = hooks.close;
  fs.readSync = hooks.readSync;
  fs.readFile = hooks.readFile;
  promises.readFile = hooks.promisesReadFile;
  fs.createReadStream = hooks.createReadStream;

  ev.onDisable(() => {
    fs.readFileSync = real.readFileSync;
    fs.existsSync = real.existsSync;
    fs.statSync = real.statSync;
    fs.openSync = real.openSync;
    fs.closeSync = real.closeSync;
    fs.close = real.close;
    fs.readSync = real.readSync;
    fs.readFile = real.readFile;
    promises.readFile = real.promisesReadFile;
    fs.createReadStream = real.createReadStream;
  });
}

module.exports = { install };
