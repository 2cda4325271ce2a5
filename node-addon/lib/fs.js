'use strict';
// Records and replays what the program reads from files and directories (the table of hooked
// calls is in README.md, "Files"). Writes are output and run live.
//
// Node's own calls into these functions are not events. The module loaders read source files
// through them (the CommonJS loader calls fs.readFileSync, the ESM loader
// fs.promises.readFile): as events, a replay would run the recorded source instead of the
// program in hand. Other internals look them up on the fs object when they run (fs.exists
// calls fs.access, fs.realpath fs.lstat, a ReadStream fs.open/fs.read/fs.close, fs.rmSync's
// rimraf lstatSync/readdirSync): those are part of a call the program made, live or hooked as
// a whole. They are told apart by their caller (a frame in Node's own code), which costs a
// stack capture per call (fromNode: one frame, ~3 us measured on the test VM, about what a
// stat call itself takes; see README.md "Files" for the figures). No cheaper signal covers
// them all: the internals that destructure fs at their lazy load (rimraf, cp) hold the hooks
// themselves, and the async ones (fs.realpath's lstat, a ReadStream's reads) call them from
// callbacks, after any flag set around their entry point is gone. Calls on a descriptor the
// program opened through a hooked open (hookedFds) are events whoever makes them: a ReadStream
// over such a descriptor (graceful-fs opens its streams' files itself, then Node's ReadStream
// reads them; createReadStream({ fd })) read /dev/null in replay when its reads were live.
const fs = require('fs');
const path = require('path');
const { Readable } = require('stream');
const { ReadableStream } = require('stream/web');
const EventEmitter = require('events');
const util = require('util');
const readline = require('readline');

// Encoding of a read's result from its options (string or object), for the event input.
function encodingOf(options) {
  if (typeof options === 'string') return options;
  if (options && typeof options === 'object' && typeof options.encoding === 'string') return options.encoding;
  return '';
}

// This package's own files, and Node's built-in modules by name (`node:internal/...`), are
// no input of the program: calls on them run live in record and replay alike. They are the
// files of stack frames, which source-map tools look up (source-map-support under jest,
// ts-node, mocha: existsSync then readFileSync per frame): a callback the replay delivers has
// this package's frames below it where the recorded one had Node's, and those lookups made
// every such replay diverge.
const OWN = path.resolve(__dirname, '..') + path.sep;
const OWN_URL = require('url').pathToFileURL(OWN).href;
const notInput = (s) => s.startsWith('node:') || s.startsWith(OWN) || s.startsWith(OWN_URL);

// The path as the program gave it (string, Buffer or file: URL), or null for anything else
// (an fd, a FileHandle) and for what is no input (above): those calls are not hooked by path.
function pathOf(p) {
  let s;
  if (typeof p === 'string') s = p;
  else if (Buffer.isBuffer(p)) s = p.toString();
  else if (p instanceof URL) s = p.href;
  else return null;
  return notInput(s) ? null : s;
}

// fs.write(Sync)'s bytes: (fd, string[, position[, encoding]]) or (fd, buffer, offset
// [, length[, position]]) or (fd, buffer[, options]). null when the arguments are not
// valid (the real call then says why, and nothing is written).
function fsChunk(data, o, len) {
  if (typeof data === 'string') return data;
  if (!ArrayBuffer.isView(data)) return null;
  let offset = 0;
  let length;
  if (o !== null && typeof o === 'object') {
    if (o.offset !== undefined) offset = o.offset;
    length = o.length;
  } else {
    if (typeof o === 'number') offset = o;
    if (typeof len === 'number') length = len;
  }
  if (length === undefined) length = data.byteLength - offset;
  if (!Number.isInteger(offset) || !Number.isInteger(length) || offset < 0 || length < 0) return null;
  if (offset + length > data.byteLength) return null;
  return Buffer.from(data.buffer, data.byteOffset + offset, length);
}

// Node code that calls a function it was handed (promisify, timers, event emitters): a call
// from there is the program's own call.
const PASS_THROUGH = new Set([
  'node:internal/util',
  'node:internal/timers',
  'node:timers',
  'node:events',
  'node:internal/process/task_queues',
]);

const callSites = (_, cs) => cs;
// The raw frames, not the program's (lib/stacks.js).
callSites[Symbol.for('replay-node.rawStack')] = true;

// The synchronous changes of the file system whose outcome is recorded (install, mutateCall).
const MUTATIONS = ['mkdirSync', 'mkdtempSync', 'rmdirSync', 'rmSync', 'unlinkSync', 'renameSync', 'copyFileSync',
  'writeFileSync', 'appendFileSync', 'symlinkSync'];

// Their asynchronous forms, callback and fs.promises (see mutateLater).
const ASYNC_MUTATIONS = ['mkdir', 'mkdtemp', 'rmdir', 'rm', 'unlink', 'rename', 'symlink', 'writeFile', 'appendFile',
  'chmod', 'chown', 'utimes', 'truncate', 'link'];

// Callback calls on a descriptor opened for writing (see writeFds): live in both modes,
// completed in the recorded order.
const FD_WRITES = ['write', 'writev', 'fsync', 'fdatasync', 'ftruncate', 'fchmod', 'fchown', 'futimes'];

// Per caller file: whether it is Node's own code (a handful of files; saves the string tests).
const nodeFile = new Map();
// The caller's file that fromNode last saw.
let lastCaller;

// Node's ES module loader reads a module's source with fs.promises.readFile (a lookup per
// call) or readFileSync, by file: URL. Those reads stay live like CommonJS loading; the
// source's digest goes with the program's own source files (index.js, ev.ownSource), so that
// a replay running an edited ES module says so.
const ESM_LOADER = 'node:internal/modules/esm/load';
function esmSource(ev, p, data) {
  try {
    if (!(p instanceof URL) || p.protocol !== 'file:' || typeof ev.ownSource !== 'function') return;
    ev.ownSource(require('url').fileURLToPath(p), data);
  } catch (_) {
    // Only the warning is lost.
  }
}

// True when `hook` (the hooked function now running) was called by Node's own code (see the
// header). The stack is captured from the hook's caller on (`hook` as the constructor
// argument: V8 leaves out the frames up to it) and only one frame is taken, which saves a
// CallSite and a frame walked. The capture itself is most of the cost and does not shrink
// with the limit (measured ~2.4 us for limit 1 and for limit 40 frames deep, ~0.8 us more
// to read the CallSites).
function fromNode(hook) {
  const sites = callerSites(hook, 1);
  const caller = Array.isArray(sites) && sites[0];
  let file = caller && caller.getFileName && caller.getFileName();
  // graceful-fs's gracefulify (npm, jest, webpack) puts its wrappers in front of fs's
  // functions, so Node's own calls (fs.promises.rm's lstat and rmdir, fs.cp's) reach the
  // hook through graceful-fs: whose call it is, is the first caller below graceful-fs (Node's
  // own calls were recorded as the program's, which replay, not running rm, never made).
  if (typeof file === 'string' && GRACEFUL.test(file)) file = belowGraceful(hook);
  lastCaller = file;
  if (typeof file !== 'string') return false;
  let mine = nodeFile.get(file);
  if (mine === undefined) {
    mine = file.startsWith('node:') && !PASS_THROUGH.has(file);
    // Only Node's files are kept: the program's are not bounded (eval, vm scripts).
    if (file.startsWith('node:')) nodeFile.set(file, mine);
  }
  return mine;
}

const GRACEFUL = /[\\/]graceful-fs[\\/]/;

// The CallSites of the `depth` callers of `hook` (the function now running), raw (V8's own
// objects, not the program's formatter's); not an array if V8 gave none.
function callerSites(hook, depth) {
  const prepare = Error.prepareStackTrace;
  const limit = Error.stackTraceLimit;
  try {
    Error.prepareStackTrace = callSites;
    Error.stackTraceLimit = depth;
    const holder = {};
    Error.captureStackTrace(holder, hook);
    return holder.stack;
  } finally {
    Error.prepareStackTrace = prepare;
    Error.stackTraceLimit = limit;
  }
}

// The file of the first caller of `hook` that is not graceful-fs's (see fromNode).
function belowGraceful(hook) {
  const sites = callerSites(hook, 12);
  if (!Array.isArray(sites)) return undefined;
  for (const site of sites) {
    const file = site && site.getFileName && site.getFileName();
    if (typeof file !== 'string') continue;
    if (!GRACEFUL.test(file)) return file;
    // graceful-fs's own streams (its createReadStream, which hexo-fs hands out) open their
    // file through its fs.open from Node's stream code: the program made the stream, as
    // with fs.createReadStream, so the open and the reads are its calls (taken for Node's,
    // they ran live in both modes: hexo's hashes of its sources were the edited files', and
    // their completions came among the recorded ones in another order).
    const fn = site.getFunctionName && site.getFunctionName();
    if (fn === 'ReadStream$open' || fn === 'WriteStream$open') return file;
  }
  return undefined;
}

// Keeps the real function's name and length on a hook, and its symbol-keyed properties: the
// ones util.promisify reads (fs.read's result names, fs.exists's own promise form).
function like(hook, real) {
  Object.defineProperty(hook, 'name', { value: real.name, configurable: true });
  Object.defineProperty(hook, 'length', { value: real.length, configurable: true });
  if (typeof real === 'function') {
    for (const sym of Object.getOwnPropertySymbols(real)) {
      Object.defineProperty(hook, sym, { ...Object.getOwnPropertyDescriptor(real, sym), configurable: true });
    }
  }
  return hook;
}

// The real Date constructor: index.js puts a function of its own named Date in front of it
// (its prototype chain leads to the real one). Dates made from recorded times with it skip
// that hook's argument check (measured ~5% of a replayed statSync).
const RealDate = (() => {
  const up = Object.getPrototypeOf(Date);
  return typeof up === 'function' && up.name === 'Date' && up.prototype === Date.prototype ? up : Date;
})();

const DATE_KEYS = ['atime', 'mtime', 'ctime', 'birthtime'];

// The own keys of Node's Stats and BigIntStats, in their order (numbers or bigints, then the
// Dates), read from real results at install.
let numKeys = null;
let bigKeys = null;

// The keys before the Dates, or null when the Dates are not the last four keys (not seen; a
// future Node): then Stats are recorded field by field.
function statsLayout(s) {
  const keys = Object.keys(s);
  const n = keys.length - DATE_KEYS.length;
  if (n < 1 || DATE_KEYS.some((k, i) => keys[n + i] !== k)) return null;
  return keys.slice(0, n);
}

// Whether `own` (a Stats' keys) is `keys` followed by the Dates.
function sameLayout(own, keys) {
  if (keys === null || own.length !== keys.length + DATE_KEYS.length) return false;
  for (let i = 0; i < keys.length; i++) if (own[i] !== keys[i]) return false;
  for (let i = 0; i < DATE_KEYS.length; i++) if (own[keys.length + i] !== DATE_KEYS[i]) return false;
  return true;
}

// A Stats as recorded. The common case is one array in Node's key order: `a` holds the
// numeric fields, then the four Dates' times; `A` (BigIntStats) the bigint fields as decimal
// strings, then the Dates' times. An array and not an object of named fields: recording
// spent ~7 us of ~20 for a statSync copying and writing the 18 names; and plain JSON, not
// the bytes of a Float64Array, which were cheaper to record but costlier to replay (a Buffer
// made per replayed event). No bigint or Buffer in it: the JSON has no codec marker, so
// replay parses it without a reviver. A Stats whose keys differ from the layout of this
// Node's Stats (not seen) is recorded field by field as before; replay reads both forms.
function encodeStats(s) {
  if (s === undefined) return { none: true };
  const big = typeof s.size === 'bigint';
  const keys = big ? bigKeys : numKeys;
  const own = Object.keys(s);
  if (sameLayout(own, keys)) {
    const n = keys.length;
    const a = new Array(n + DATE_KEYS.length);
    if (big) for (let i = 0; i < n; i++) a[i] = s[keys[i]].toString();
    else for (let i = 0; i < n; i++) a[i] = s[keys[i]];
    for (let i = 0; i < DATE_KEYS.length; i++) a[n + i] = s[DATE_KEYS[i]].getTime();
    return big ? { A: a } : { a };
  }
  const f = {};
  const d = {};
  for (const key of own) {
    if (DATE_KEYS.includes(key)) d[key] = s[key].getTime();
    else f[key] = s[key];
  }
  return { big, f, d };
}

// The option parts that change a result, for the event input.
function statOpts(options) {
  const big = !!(options && options.bigint);
  const noThrow = !!(options && options.throwIfNoEntry === false);
  return `${big ? 'bigint' : ''}${noThrow ? ' nothrow' : ''}`;
}

const statfsOpts = (options) => (options && options.bigint ? 'bigint' : '');

function accessOpts(mode) {
  return mode === undefined ? '' : String(mode);
}

function dirOpts(options) {
  const o = options && typeof options === 'object' ? options : {};
  return `${encodingOf(options)}${o.withFileTypes ? ' types' : ''}${o.recursive ? ' recursive' : ''}`;
}

const C = fs.constants;

// The type code a Dirent was made with, from its methods (a DirentFromStats answers from its
// Stats: the code is the same).
function direntType(d) {
  if (d.isFile()) return C.UV_DIRENT_FILE;
  if (d.isDirectory()) return C.UV_DIRENT_DIR;
  if (d.isSymbolicLink()) return C.UV_DIRENT_LINK;
  if (d.isFIFO()) return C.UV_DIRENT_FIFO;
  if (d.isSocket()) return C.UV_DIRENT_SOCKET;
  if (d.isCharacterDevice()) return C.UV_DIRENT_CHAR;
  if (d.isBlockDevice()) return C.UV_DIRENT_BLOCK;
  return C.UV_DIRENT_UNKNOWN;
}

// readdir results: names (strings or Buffers) as they are, Dirents as [name, parentPath, type].
function encodeList(list) {
  if (Array.isArray(list) && list.some((d) => d instanceof fs.Dirent)) {
    return { d: list.map((d) => [d.name, d.parentPath === undefined ? d.path : d.parentPath, direntType(d)]) };
  }
  return { l: list };
}

function decodeList(x) {
  return x.d ? x.d.map(([name, dir, type]) => new fs.Dirent(name, type, dir)) : x.l;
}

// A Buffer over the same memory as any ArrayBufferView.
function bytesOf(view) {
  return Buffer.from(view.buffer, view.byteOffset, view.byteLength);
}

// readv: an array of ArrayBufferViews (anything else Node rejects, and the call runs real).
function viewList(buffers) {
  return Array.isArray(buffers) && buffers.every((b) => ArrayBuffer.isView(b));
}

// The event input of a readv: the buffers' sizes and the position (Node reads on from the
// descriptor's position for anything but a number or bigint).
function readvInput(buffers, position) {
  const pos = typeof position === 'number' || typeof position === 'bigint' ? position : '-';
  return `v${buffers.map((b) => b.byteLength).join(',')} ${pos}`;
}

// The first n bytes a readv spread over `buffers`, as one Buffer.
function gather(buffers, n) {
  const out = Buffer.alloc(n);
  let at = 0;
  for (const b of buffers) {
    if (at >= n) break;
    at += bytesOf(b).copy(out, at, 0, Math.min(b.byteLength, n - at));
  }
  return out;
}

// The recorded bytes of a readv back into the program's buffers, in order.
function scatter(buffers, data) {
  let at = 0;
  for (const b of buffers) {
    if (at >= data.length) break;
    at += data.copy(bytesOf(b), 0, at);
  }
}

// A Dirent from a Dir as recorded ([name, parentPath, type], as in listings; null at the
// end), and back.
function encodeDirent(d) {
  return d === null ? null : [d.name, d.parentPath === undefined ? d.path : d.parentPath, direntType(d)];
}

function decodeDirent(x) {
  return x === null ? null : new fs.Dirent(x[0], x[2], x[1]);
}

function install(ev) {
  const replaying = ev.mode === 'replay';
  const promises = fs.promises;
  // [object, property] of every hooked function: the real one is captured here, the hook put
  // in its place below, the real one put back on disable.
  const SLOTS = {
    readFileSync: [fs, 'readFileSync'],
    readFile: [fs, 'readFile'],
    promisesReadFile: [promises, 'readFile'],
    openSync: [fs, 'openSync'],
    open: [fs, 'open'],
    promisesOpen: [promises, 'open'],
    readSync: [fs, 'readSync'],
    read: [fs, 'read'],
    closeSync: [fs, 'closeSync'],
    close: [fs, 'close'],
    existsSync: [fs, 'existsSync'],
    exists: [fs, 'exists'],
    statSync: [fs, 'statSync'],
    lstatSync: [fs, 'lstatSync'],
    fstatSync: [fs, 'fstatSync'],
    stat: [fs, 'stat'],
    lstat: [fs, 'lstat'],
    fstat: [fs, 'fstat'],
    promisesStat: [promises, 'stat'],
    promisesLstat: [promises, 'lstat'],
    readdirSync: [fs, 'readdirSync'],
    readdir: [fs, 'readdir'],
    promisesReaddir: [promises, 'readdir'],
    accessSync: [fs, 'accessSync'],
    access: [fs, 'access'],
    promisesAccess: [promises, 'access'],
    createReadStream: [fs, 'createReadStream'],
    realpathSync: [fs, 'realpathSync'],
    realpath: [fs, 'realpath'],
    promisesRealpath: [promises, 'realpath'],
    readlinkSync: [fs, 'readlinkSync'],
    readlink: [fs, 'readlink'],
    promisesReadlink: [promises, 'readlink'],
    opendirSync: [fs, 'opendirSync'],
    opendir: [fs, 'opendir'],
    promisesOpendir: [promises, 'opendir'],
    readvSync: [fs, 'readvSync'],
    readv: [fs, 'readv'],
    statfsSync: [fs, 'statfsSync'],
    statfs: [fs, 'statfs'],
    promisesStatfs: [promises, 'statfs'],
    // Changes of the file system (see mutateCall).
    mkdirSync: [fs, 'mkdirSync'],
    mkdtempSync: [fs, 'mkdtempSync'],
    rmdirSync: [fs, 'rmdirSync'],
    rmSync: [fs, 'rmSync'],
    unlinkSync: [fs, 'unlinkSync'],
    renameSync: [fs, 'renameSync'],
    copyFileSync: [fs, 'copyFileSync'],
    copyFile: [fs, 'copyFile'],
    promisesCopyFile: [promises, 'copyFile'],
    writeFileSync: [fs, 'writeFileSync'],
    appendFileSync: [fs, 'appendFileSync'],
    symlinkSync: [fs, 'symlinkSync'],
    // Their asynchronous forms (see mutateLater).
    mkdir: [fs, 'mkdir'],
    promisesMkdir: [promises, 'mkdir'],
    mkdtemp: [fs, 'mkdtemp'],
    promisesMkdtemp: [promises, 'mkdtemp'],
    rmdir: [fs, 'rmdir'],
    promisesRmdir: [promises, 'rmdir'],
    rm: [fs, 'rm'],
    promisesRm: [promises, 'rm'],
    unlink: [fs, 'unlink'],
    promisesUnlink: [promises, 'unlink'],
    rename: [fs, 'rename'],
    promisesRename: [promises, 'rename'],
    symlink: [fs, 'symlink'],
    promisesSymlink: [promises, 'symlink'],
    writeFile: [fs, 'writeFile'],
    promisesWriteFile: [promises, 'writeFile'],
    appendFile: [fs, 'appendFile'],
    promisesAppendFile: [promises, 'appendFile'],
    chmod: [fs, 'chmod'],
    promisesChmod: [promises, 'chmod'],
    chown: [fs, 'chown'],
    promisesChown: [promises, 'chown'],
    utimes: [fs, 'utimes'],
    promisesUtimes: [promises, 'utimes'],
    truncate: [fs, 'truncate'],
    promisesTruncate: [promises, 'truncate'],
    link: [fs, 'link'],
    promisesLink: [promises, 'link'],
  };
  for (const name of FD_WRITES) SLOTS[name] = [fs, name];
  SLOTS.writeSync = [fs, 'writeSync'];
  SLOTS.writevSync = [fs, 'writevSync'];
  if (typeof fs.openAsBlob === 'function') SLOTS.openAsBlob = [fs, 'openAsBlob'];
  const real = {};
  for (const [name, [obj, prop]] of Object.entries(SLOTS)) real[name] = obj[prop];
  // The .native forms hang off the real functions (which keep them: putting those back
  // restores these too); the hooks get hooked ones.
  real.realpathSyncNative = fs.realpathSync.native;
  real.realpathNative = fs.realpath.native;
  // The synchronous forms replay makes the asynchronous changes with (not hooked).
  for (const name of ['chmod', 'chown', 'utimes', 'truncate', 'link']) real[`${name}Sync`] = fs[`${name}Sync`];

  const K = {};
  const kind = (name, kindName) => {
    K[name] = ev.kind(kindName);
  };
  for (const name of ['readFileSync', 'readFile', 'openSync', 'open', 'readSync', 'read', 'close', 'existsSync',
    'exists', 'statSync', 'lstatSync', 'fstatSync', 'stat', 'lstat', 'fstat', 'readdirSync', 'readdir',
    'accessSync', 'access', 'createReadStream', 'realpathSync', 'realpath', 'readlinkSync', 'readlink',
    'opendirSync', 'opendir', 'readvSync', 'readv', 'statfsSync', 'statfs', 'copyFile']) {
    kind(name, `node.fs.${name}`);
  }
  for (const name of MUTATIONS) kind(name, `node.fs.${name}`);
  for (const name of ASYNC_MUTATIONS) {
    kind(name, `node.fs.${name}`);
    kind(`promises${name[0].toUpperCase()}${name.slice(1)}`, `node.fs.promises.${name}`);
  }
  kind('realpathSyncNative', 'node.fs.realpathSync.native');
  kind('realpathNative', 'node.fs.realpath.native');
  for (const name of ['readFile', 'open', 'stat', 'lstat', 'readdir', 'access', 'realpath', 'readlink', 'opendir',
    'statfs', 'copyFile']) {
    kind(`promises${name[0].toUpperCase()}${name.slice(1)}`, `node.fs.promises.${name}`);
  }
  for (const name of ['read', 'readv', 'readFile', 'stat', 'close', 'readableWebStream']) {
    kind(`fh.${name}`, `node.fs.FileHandle.${name}`);
  }
  for (const name of ['read', 'readSync', 'close', 'closeSync']) kind(`dir.${name}`, `node.fs.Dir.${name}`);

  // Prototypes of what statSync returns, to rebuild recorded stats in replay.
  const rootStats = real.statSync('/');
  const rootBigStats = real.statSync('/', { bigint: true });
  const statsProto = Object.getPrototypeOf(rootStats);
  const bigStatsProto = Object.getPrototypeOf(rootBigStats);
  numKeys = statsLayout(rootStats);
  bigKeys = statsLayout(rootBigStats);
  // Node's StatFs class (not exported; the same for bigint results). A root that cannot be
  // asked (a sandbox) costs only the class: replayed results are plain objects then.
  let statFsProto = Object.prototype;
  try {
    statFsProto = Object.getPrototypeOf(real.statfsSync('/'));
  } catch (_) {
    // As above.
  }

  // A StatFs as recorded: its keys and their values (bigints as decimal strings: no codec
  // marker in the JSON, as for Stats), and back on Node's prototype.
  function encodeStatFs(s) {
    const keys = Object.keys(s);
    if (keys.some((key) => typeof s[key] === 'bigint')) return { k: keys, A: keys.map((key) => String(s[key])) };
    return { k: keys, a: keys.map((key) => s[key]) };
  }

  function decodeStatFs(x) {
    const s = Object.create(statFsProto);
    if (x.A !== undefined) x.k.forEach((key, i) => (s[key] = BigInt(x.A[i])));
    else x.k.forEach((key, i) => (s[key] = x.a[i]));
    return s;
  }

  // Recorded stats back on Node's prototypes, own keys in Node's order (util.inspect and
  // JSON.stringify show the same). The Dates are made with an argument: no clock read, no event.
  function decodeStats(x) {
    if (x.none) return undefined;
    const a = x.a !== undefined ? x.a : x.A;
    const big = x.A !== undefined && x.a === undefined;
    const keys = big ? bigKeys : numKeys;
    // (keys null: this Node's Stats have another layout than any recorded as an array.)
    if (a !== undefined && keys !== null) {
      const n = keys.length;
      const s = Object.create(big ? bigStatsProto : statsProto);
      if (big) for (let i = 0; i < n; i++) s[keys[i]] = BigInt(a[i]);
      else for (let i = 0; i < n; i++) s[keys[i]] = a[i];
      for (let i = 0; i < DATE_KEYS.length; i++) s[DATE_KEYS[i]] = new RealDate(a[n + i]);
      return s;
    }
    const s = Object.create(x.big ? bigStatsProto : statsProto);
    Object.assign(s, x.f);
    for (const key of Object.keys(x.d || {})) s[key] = new RealDate(x.d[key]);
    return s;
  }  // For lib/watch.js (fs.watchFile's listener gets two Stats), and lib/dns.js (whether a
  // hook's caller is Node's own code).
  ev.stats = { encode: encodeStats, decode: decodeStats };
  ev.fromNode = fromNode;


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

  // A change of the file system (mkdirSync, writeFileSync, renameSync, ...). Its effect is
  // the program's output on disk, so it runs live in both modes; its outcome is an input and
  // is recorded. Replay returns what the recording got: a directory the recording made
  // exists now, and mkdirSync (after an existsSync that replays "no") must not fail with
  // EEXIST where the recorded one succeeded; a change that failed in the recording throws
  // the recorded error and is not made. `redo(value)` replaces the live call where the
  // recorded value names what to change (mkdtempSync's random directory).
  function mutateCall(k, input, self, args, fn, redo) {
    if (replaying) {
      const v = ev.replay(k, input);
      if (v === ev.LIVE) return ev.live(() => fn.apply(self, args));
      if (v.e !== undefined) throw v.e;
      const value = v.v === null ? undefined : v.v;
      try {
        ev.live(() => (redo ? redo(value) : fn.apply(self, args)));
      } catch (_) {
        // The recorded call succeeded: so does this one (the world differs, not the program).
      }
      return value;
    }
    let r;
    try {
      r = ev.live(() => fn.apply(self, args));
    } catch (e) {
      ev.record(k, input, { e });
      throw e;
    }
    ev.record(k, input, { v: r === undefined ? null : r });
    return r;
  }

  // Record: completion `key` with the value `make()` gives (an encoding error disables the
  // addon; the program's callback runs regardless).
  function complete(key, make) {
    let v;
    try {
      v = make();
    } catch (e) {
      ev.fail('recording', e);
      return;
    }
    ev.done(key, v);
  }

  // A call whose last argument is an error-first callback: one event at the call (after the
  // real call returned: one that throws on bad arguments is no event), its result a
  // completion delivered in recorded order. `enc(...results)` is what is recorded of the
  // callback's arguments after the error, `dec(value)` gives them back in replay.
  function callbackCall(k, name, input, self, args, fn, enc, dec) {
    const at = args.length - 1;
    const cb = args[at];
    if (replaying) {
      const v = ev.replay(k, input);
      if (v === ev.LIVE) return ev.live(() => fn.apply(self, args));
      ev.await(ev.opKey(`${name} ${input}`), (r) => {
        if (r === ev.LIVE) fn.apply(self, args);
        else if (r.e !== undefined) cb(r.e);
        else cb(null, ...dec(r.v));
      });
      return undefined;
    }
    let key = null;
    args[at] = function (err, ...results) {
      if (key !== null) complete(key, () => (err ? { e: err } : { v: enc(...results) }));
      return cb.apply(this, arguments);
    };
    const r = ev.live(() => fn.apply(self, args));
    key = ev.opKey(`${name} ${input}`);
    ev.record(k, input, null);
    return r;
  }

  // A call returning a promise: one event at the call, its settlement a completion delivered
  // in recorded order. `goLive()` runs the call for real when replay went live.
  function promiseCall(k, name, input, goLive, enc, dec) {
    if (replaying) {
      const v = ev.replay(k, input);
      if (v === ev.LIVE) return ev.live(goLive);
      const key = ev.opKey(`${name} ${input}`);
      return new Promise((resolve, reject) => {
        ev.await(key, (r) => {
          if (r === ev.LIVE) goLive().then(resolve, reject);
          else if (r.e !== undefined) reject(r.e);
          else resolve(dec(r.v));
        });
      });
    }
    // The call event after the real call: one that throws at once (Dir.read() on a closed
    // Dir) is no event, and takes no key.
    const pending = ev.live(goLive);
    const key = ev.opKey(`${name} ${input}`);
    ev.record(k, input, null);
    return pending.then(
      (v) => {
        complete(key, () => ({ v: enc(v) }));
        return v;
      },
      (e) => {
        ev.done(key, { e });
        throw e;
      },
    );
  }

  const same = (v) => v;
  const none = () => null;
  const nothing = () => undefined;
  const noArgs = () => [];
  const statsArgs = (x) => [decodeStats(x)];
  const listArgs = (x) => [decodeList(x)];

  // Descriptors opened read-only by the hooked openSync/open: their reads (readSync, read,
  // readFileSync(fd)) and fstat are events, named by the path they were opened with. Replay
  // opens /dev/null in their place: the program holds a real descriptor, so closeSync/close
  // and calls not hooked on it behave as on any descriptor (they read /dev/null: empty), and
  // no replayed descriptor can alias another file the program opens. Its number may differ
  // from the recorded one.
  const hookedFds = new Map();
  // fd 0 when it is not the stdin the launcher records (index.js, ownStdin): its reads are
  // events like those of a file the program opened.
  ev.hookStdin = () => hookedFds.set(0, 'stdin');
  // Record: hooked descriptors a createReadStream of the program reads (its `fd` option). The
  // stream is one event; Node's own reads and close of the descriptor under it are not.
  const streamOwned = new Set();
  // FileHandles from the hooked fs.promises.open (record: Node's, replay: ours), to their path.
  const handleWhere = new WeakMap();

  const hooks = {};

  hooks.readFileSync = like(function readFileSync(p, options) {
    if (!ev.on || ev.busy) return real.readFileSync.apply(this, arguments);
    if (fromNode(readFileSync)) {
      const data = real.readFileSync.apply(this, arguments);
      if (lastCaller === ESM_LOADER) esmSource(ev, p, data);
      return data;
    }
    // A descriptor from the hooked openSync is named by its path (in replay it is /dev/null).
    const where = hookedFds.has(p) ? `fd ${hookedFds.get(p)}` : pathOf(p);
    if (where === null) return real.readFileSync.apply(this, arguments);
    return syncCall(K.readFileSync, `${where} ${encodingOf(options)}`, this, arguments, real.readFileSync);
  }, real.readFileSync);

  hooks.existsSync = like(function existsSync(p) {
    if (!ev.on || ev.busy || fromNode(existsSync)) return real.existsSync.apply(this, arguments);
    const where = pathOf(p);
    if (where === null) return real.existsSync.apply(this, arguments);
    return syncCall(K.existsSync, where, this, arguments, real.existsSync);
  }, real.existsSync);

  hooks.statSync = like(function statSync(p, options) {
    if (!ev.on || ev.busy || fromNode(statSync)) return real.statSync.apply(this, arguments);
    const where = pathOf(p);
    if (where === null) return real.statSync.apply(this, arguments);
    return syncCall(K.statSync, `${where} ${statOpts(options)}`, this, arguments, real.statSync, encodeStats,
      decodeStats);
  }, real.statSync);

  const readOnly = (flags) =>
    flags === undefined || flags === null || flags === 'r' || flags === 'rs' || flags === 'sr' ||
    flags === fs.constants.O_RDONLY;

  hooks.openSync = like(function openSync(p, flags) {
    if (!ev.on || ev.busy) return real.openSync.apply(this, arguments);
    const where = pathOf(p);
    if (where === null || fromNode(openSync)) return real.openSync.apply(this, arguments);
    const input = `${where} ${flags === undefined || flags === null ? 'r' : flags}`;
    let fd;
    if (!readOnly(flags)) {
      // For writing (see writeFds): the outcome is recorded; replay opens the file again
      // (reopenWrite), or throws the recorded error.
      const args = [...arguments];
      fd = syncCall(K.openSync, input, this, args, real.openSync, () => null, () => reopenWrite(args));
      writeFds.set(fd, where);
      return fd;
    }
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
    writeFds.delete(fd);
    return real.closeSync.apply(this, arguments);
  }, real.closeSync);

  // fs.close(fd, cb) of a hooked descriptor: its completion is an event (it is ordered among
  // the others). Replay closes the /dev/null descriptor at the call.
  hooks.close = like(function close(fd, callback) {
    if (closeGuarded > 0 && typeof callback === 'function') {
      // Called by a replacement of fs.close that Node's code called (see guardReplaced).
      const args = [...arguments];
      args[args.length - 1] = function (...results) {
        return ev.live(() => callback.apply(this, results));
      };
      return real.close.apply(this, args);
    }
    const written = writeFds.get(fd);
    if (written !== undefined) {
      if (!ev.on || ev.busy || typeof callback !== 'function') {
        writeFds.delete(fd);
        return real.close.apply(this, arguments);
      }
      return orderedFdCall('close', fd, written, this, [...arguments]);
    }
    const where = hookedFds.get(fd);
    hookedFds.delete(fd);
    const owned = streamOwned.delete(fd);
    if (!ev.on || ev.busy || where === undefined || typeof callback !== 'function' || (owned && fromNode(close))) {
      return real.close.apply(this, arguments);
    }
    const args = [...arguments];
    let fn = real.close;
    if (replaying) {
      let err = null;
      try {
        ev.live(() => real.closeSync(fd));
      } catch (e) {
        err = e;
      }
      // Only used when replay went live.
      fn = (_, cb) => process.nextTick(cb, err);
    }
    return callbackCall(K.close, 'close', `fd ${where}`, this, args, fn, none, noArgs);
  }, real.close);

  hooks.readSync = like(function readSync(fd, buffer, offsetOrOptions, length, position) {
    if (!ev.on || ev.busy || !hookedFds.has(fd) || !ArrayBuffer.isView(buffer) || (streamOwned.has(fd) && fromNode(readSync))) {
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
    const where = hookedFds.has(p) ? `fd ${hookedFds.get(p)}` : pathOf(p);
    if (!ev.on || ev.busy || where === null || typeof cb !== 'function' || fromNode(readFile)) {
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

  // Methods (no `prototype`, not constructors), as the async functions they replace.
  hooks.promisesReadFile = like({ readFile(p, options) {
    const where = pathOf(p);
    // fs.promises.readFile(filehandle) is filehandle.readFile(options): one event of that.
    if (ev.on && !ev.busy && handleWhere.has(p)) return p.readFile(options);
    if (!ev.on || ev.busy || where === null) return real.promisesReadFile.apply(this, arguments);
    if (fromNode(hooks.promisesReadFile)) {
      const read = real.promisesReadFile.apply(this, arguments);
      if (lastCaller !== ESM_LOADER) return read;
      return read.then((data) => {
        esmSource(ev, p, data);
        return data;
      });
    }
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
  } }.readFile, real.promisesReadFile);

  // createReadStream. Record: the real stream, with its own push() and emit() watched (not
  // a 'data' or 'error' listener: those would change its flow and error behaviour). Its open
  // ('o'), each chunk read ('c' with the bytes), the end ('E') and an error ('e') are
  // completions of the stream's key, in the order the process got them among all others (a
  // program that pauses the stream and resumes it from a timer gets the rest after that
  // timer).
  function watchStream(s, key) {
    let finished = false;
    const note = (v) => {
      if (finished) return;
      if (v.t !== 'c' && v.t !== 'o') finished = true;
      ev.done(key, v);
    };
    const push = s.push;
    s.push = function (chunk, encoding) {
      if (chunk === null) note({ t: 'E' });
      else note({ t: 'c', b: Buffer.from(chunk, encoding) });
      return push.apply(this, arguments);
    };
    const emit = s.emit;
    s.emit = function (name, arg) {
      if (name === 'open') note({ t: 'o' });
      else if (name === 'error') note({ t: 'e', e: arg });
      return emit.apply(this, arguments);
    };
    return s;
  }

  // Replay: the recorded completions of a stream's key, one at a time, each at its turn.
  function streamTurns(key) {
    let ended = false;
    return (cb) => {
      if (ended) {
        cb({ t: 'E' });
        return;
      }
      ev.await(key, (r) => {
        if (r === ev.LIVE || r === null || typeof r !== 'object') {
          ended = true;
          cb({ t: 'e', e: new Error('replay went live: a replayed read stream cannot continue') });
          return;
        }
        if (r.t === 'E' || r.t === 'e') ended = true;
        cb(r);
      });
    };
  }

  // Replay over a FileHandle: a Readable fed the recorded chunks at their turns. `release()`
  // runs when the replayed stream is done, for what its autoClose would close.
  function replayStream(key, o, props, release) {
    const turn = streamTurns(key);
    let reading = false;
    const s = new Readable({
      encoding: o.encoding || undefined,
      highWaterMark: o.highWaterMark || 64 * 1024,
      read() {
        if (reading) return;
        reading = true;
        const more = () =>
          turn((r) => {
            if (r.t === 'o') {
              more();
              return;
            }
            reading = false;
            s.pending = false;
            if (r.t === 'c') {
              s.bytesRead += r.b.length;
              s.push(r.b);
            } else if (r.t === 'e') s.destroy(r.e);
            else s.push(null);
          });
        more();
      },
    });
    Object.assign(s, props);
    s.bytesRead = 0;
    s.pending = true;
    // Before the program's 'close' listeners: the real stream has closed its fd by then.
    if (o.autoClose !== false) s.prependOnceListener('close', release);
    return s;
  }

  // Replay of a stream over a path or a hooked descriptor: a real fs.ReadStream (its 'open'
  // and 'ready' events, fd, bytesRead, close(), instanceof: form-data and exceljs use them,
  // and a pipe started from 'open' never ran on a plain Readable) whose file-system calls
  // (the `fs` option) serve the recording: open and each read wait for their recorded turn,
  // close releases what the stream stood for.
  function replayReadStream(key, p, o, props, release) {
    const turn = streamTurns(key);
    let rest = null; // what a shorter read left of a recorded chunk
    let nullFd = null;
    const recorded = {
      open(path, flags, mode, cb) {
        turn((r) => {
          if (r.t === 'e') {
            cb(r.e);
            return;
          }
          try {
            nullFd = ev.live(() => real.openSync('/dev/null', 'r'));
          } catch (e) {
            cb(e);
            return;
          }
          cb(null, nullFd);
        });
      },
      read(fd, buf, off, len, pos, cb) {
        const serve = (c) => {
          if (c.length > len) {
            rest = c.subarray(len);
            c = c.subarray(0, len);
          }
          c.copy(buf, off);
          cb(null, c.length, buf);
        };
        if (rest !== null) {
          const c = rest;
          rest = null;
          process.nextTick(serve, c);
          return;
        }
        turn((r) => {
          if (r.t === 'c') serve(r.b);
          else if (r.t === 'e') cb(r.e);
          else cb(null, 0, buf);
        });
      },
      close(fd, cb) {
        if (nullFd !== null) {
          const n = nullFd;
          nullFd = null;
          try {
            ev.live(() => real.closeSync(n));
          } catch (_) {
            // Nothing of the program's.
          }
        } else {
          release();
        }
        process.nextTick(cb, null);
      },
    };
    const opts = { ...o, fs: recorded };
    if (typeof props.fd === 'number') opts.fd = props.fd;
    const s = ev.live(() => new fs.ReadStream(p, opts));
    // A stream with an `end` ends without a last read once it is past it (ReadStream's
    // _read pushes null itself): the end the recording noted then is taken at its turn
    // here (express's sendFile: the completions after it were out of order every replay).
    // After a read that found the end, the turn answers at once.
    const push = s.push;
    s.push = function (chunk, encoding) {
      if (chunk !== null) return push.call(this, chunk, encoding);
      turn(() => push.call(s, null));
      return false;
    };
    return s;
  }

  // The stream's source: its path, or a hooked descriptor or FileHandle given as `fd`
  // (other descriptors are live).
  function streamSource(p, o) {
    if (o.fd == null) return { where: pathOf(p), props: { path: pathOf(p) }, release() {} };
    if (typeof o.fd === 'number' && hookedFds.has(o.fd)) {
      const fd = o.fd;
      return {
        where: `fd ${hookedFds.get(fd)}`,
        props: { fd },
        release() {
          // The /dev/null descriptor in the recorded one's place, closed as that was.
          if (!hookedFds.has(fd)) return;
          hookedFds.delete(fd);
          try {
            ev.live(() => real.closeSync(fd));
          } catch (_) {
            // Closed already: the program's own close then fails as it did in the recording.
          }
        },
      };
    }
    if (handleWhere.has(o.fd)) {
      const fh = o.fd;
      // Replay: our FileHandle, shut as Node's stream closes a handle (not the program's call).
      return { where: `handle ${handleWhere.get(fh)}`, props: { fd: fh }, release: () => fh[kShut]() };
    }
    return { where: null };
  }

  hooks.createReadStream = like(function createReadStream(p, options) {
    const o = typeof options === 'string' ? { encoding: options } : options || {};
    if (!ev.on || ev.busy || typeof o !== 'object' || fromNode(createReadStream)) {
      return real.createReadStream.apply(this, arguments);
    }
    const src = streamSource(p, o);
    if (src.where === null) return real.createReadStream.apply(this, arguments);
    const range = `${o.start === undefined ? '' : o.start}-${o.end === undefined ? '' : o.end}`;
    const input = `${src.where} ${encodingOf(o)} ${range}`;
    const key = ev.opKey(`createReadStream ${input}`);
    const args = arguments;
    if (replaying) {
      const v = ev.replay(K.createReadStream, input);
      if (v === ev.LIVE) return ev.live(() => real.createReadStream.apply(this, args));
      if ((o.fd == null || typeof o.fd === 'number') && o.fs === undefined) {
        try {
          return replayReadStream(key, p, o, src.props, src.release);
        } catch (_) {
          // Options Node's ReadStream takes otherwise (a `fs` of the program's own): below.
        }
      }
      return replayStream(key, o, src.props, src.release);
    }
    const s = ev.live(() => real.createReadStream.apply(this, args));
    if (typeof src.props.fd === 'number') streamOwned.add(src.props.fd);
    ev.record(K.createReadStream, input, null);
    return watchStream(s, key);
  }, real.createReadStream);

  hooks.lstatSync = like(function lstatSync(p, options) {
    if (!ev.on || ev.busy || fromNode(lstatSync)) return real.lstatSync.apply(this, arguments);
    const where = pathOf(p);
    if (where === null) return real.lstatSync.apply(this, arguments);
    return syncCall(K.lstatSync, `${where} ${statOpts(options)}`, this, arguments, real.lstatSync, encodeStats,
      decodeStats);
  }, real.lstatSync);

  hooks.readdirSync = like(function readdirSync(p, options) {
    if (!ev.on || ev.busy || fromNode(readdirSync)) return real.readdirSync.apply(this, arguments);
    const where = pathOf(p);
    if (where === null) return real.readdirSync.apply(this, arguments);
    return syncCall(K.readdirSync, `${where} ${dirOpts(options)}`, this, arguments, real.readdirSync, encodeList,
      decodeList);
  }, real.readdirSync);

  hooks.accessSync = like(function accessSync(p, mode) {
    if (!ev.on || ev.busy || fromNode(accessSync)) return real.accessSync.apply(this, arguments);
    const where = pathOf(p);
    if (where === null) return real.accessSync.apply(this, arguments);
    // Its result is undefined: recorded as null (no codec marker, see decodeStats).
    return syncCall(K.accessSync, `${where} ${accessOpts(mode)}`, this, arguments, real.accessSync, none, nothing);
  }, real.accessSync);

  hooks.statfsSync = like(function statfsSync(p, options) {
    if (!ev.on || ev.busy || fromNode(statfsSync)) return real.statfsSync.apply(this, arguments);
    const where = pathOf(p);
    if (where === null) return real.statfsSync.apply(this, arguments);
    return syncCall(K.statfsSync, `${where} ${statfsOpts(options)}`, this, arguments, real.statfsSync, encodeStatFs,
      decodeStatFs);
  }, real.statfsSync);

  hooks.fstatSync = like(function fstatSync(fd, options) {
    if (!ev.on || ev.busy || !hookedFds.has(fd) || (streamOwned.has(fd) && fromNode(fstatSync))) {
      return real.fstatSync.apply(this, arguments);
    }
    return syncCall(K.fstatSync, `fd ${hookedFds.get(fd)} ${statOpts(options)}`, this, arguments, real.fstatSync,
      encodeStats, decodeStats);
  }, real.fstatSync);

  // The callback forms of stat, lstat, readdir and access: (path, [options], callback).
  const byPath = (name, opts, enc, dec) =>
    like(function hook(p, options) {
      const args = [...arguments];
      const where = pathOf(p);
      if (!ev.on || ev.busy || where === null || typeof args[args.length - 1] !== 'function' || fromNode(hook)) {
        return real[name].apply(this, args);
      }
      const o = args.length > 2 ? options : undefined;
      return callbackCall(K[name], name, `${where} ${opts(o)}`, this, args, real[name], enc, dec);
    }, real[name]);
  hooks.stat = byPath('stat', statOpts, encodeStats, statsArgs);
  hooks.lstat = byPath('lstat', statOpts, encodeStats, statsArgs);
  hooks.readdir = byPath('readdir', dirOpts, encodeList, listArgs);
  hooks.access = byPath('access', accessOpts, none, noArgs);
  hooks.statfs = byPath('statfs', statfsOpts, encodeStatFs, (x) => [decodeStatFs(x)]);

  hooks.fstat = like(function fstat(fd, options) {
    const args = [...arguments];
    if (!ev.on || ev.busy || !hookedFds.has(fd) || typeof args[args.length - 1] !== 'function' ||
      (streamOwned.has(fd) && fromNode(fstat))) {
      return real.fstat.apply(this, args);
    }
    const o = args.length > 2 ? options : undefined;
    return callbackCall(K.fstat, 'fstat', `fd ${hookedFds.get(fd)} ${statOpts(o)}`, this, args, real.fstat,
      encodeStats, statsArgs);
  }, real.fstat);

  // fs.exists: its callback gets a boolean, not an error. Node's exists calls fs.access, which
  // then runs real (ev.busy).
  hooks.exists = like(function exists(p, callback) {
    const where = pathOf(p);
    if (!ev.on || ev.busy || where === null || typeof callback !== 'function' || fromNode(exists)) {
      return real.exists.apply(this, arguments);
    }
    const args = [...arguments];
    if (replaying) {
      const v = ev.replay(K.exists, where);
      if (v === ev.LIVE) return ev.live(() => real.exists.apply(this, args));
      ev.await(ev.opKey(`exists ${where}`), (r) => {
        if (r === ev.LIVE) real.exists.apply(this, args);
        else callback(r.v);
      });
      return undefined;
    }
    let key = null;
    args[1] = function (found) {
      if (key !== null) ev.done(key, { v: found });
      return callback.apply(this, arguments);
    };
    const r = ev.live(() => real.exists.apply(this, args));
    key = ev.opKey(`exists ${where}`);
    ev.record(K.exists, where, null);
    return r;
  }, real.exists);

  // Node's promise form of exists calls fs.exists from its own code (which would then run
  // live): this one calls the hook as the program's call.
  Object.defineProperty(hooks.exists, util.promisify.custom, {
    configurable: true,
    value: like(function exists(p) {
      return new Promise((resolve) => hooks.exists(p, resolve));
    }, real.exists[util.promisify.custom] || real.exists),
  });

  // fs.open(path, [flags, [mode]], callback), read-only: the descriptor's reads are events as
  // for openSync; replay hands the program a /dev/null descriptor when the open completes.
  // Opened for writing: see openWrite.
  hooks.open = like(function open(p, flags) {
    const args = [...arguments];
    const where = pathOf(p);
    const f = args.length > 2 ? flags : undefined;
    if (!ev.on || ev.busy || where === null || typeof args[args.length - 1] !== 'function') {
      return real.open.apply(this, args);
    }
    if (!readOnly(f)) return openWrite(this, args, where);
    if (fromNode(open)) return real.open.apply(this, args);
    return callbackCall(K.open, 'open', `${where} ${f === undefined || f === null ? 'r' : f}`, this, args, real.open,
      (fd) => {
        hookedFds.set(fd, where);
        return fd;
      },
      () => {
        const fd = ev.live(() => real.openSync('/dev/null', 'r'));
        hookedFds.set(fd, where);
        return [fd];
      });
  }, real.open);

  // fs.read on a hooked descriptor, in each of Node's argument forms (told apart by their
  // number, as Node does): the buffer and offset the bytes land at.
  function readArgs(args) {
    const n = args.length;
    let buffer = args[1];
    let params = null;
    let offset = args[2];
    let length = args[3];
    let position = args[4];
    let cb = args[5];
    if (n <= 4) {
      if (n === 4) {
        params = args[2];
        cb = args[3];
      } else if (n === 3) {
        if (!ArrayBuffer.isView(buffer)) {
          params = buffer;
          buffer = params && params.buffer !== undefined ? params.buffer : null;
        }
        cb = args[2];
      } else {
        cb = args[1];
        buffer = null;
      }
      const o = params || {};
      offset = o.offset === undefined ? 0 : o.offset;
      length = o.length;
      position = o.position;
    }
    if (typeof cb !== 'function' || (buffer !== null && !ArrayBuffer.isView(buffer))) return null;
    if (offset === undefined || offset === null) offset = 0;
    return { buffer, offset, length, position };
  }

  hooks.read = like(function read(fd) {
    const args = [...arguments];
    const a = ev.on && !ev.busy && hookedFds.has(fd) ? readArgs(args) : null;
    if (a === null || (streamOwned.has(fd) && fromNode(read))) return real.read.apply(this, args);
    const pos = a.position === undefined || a.position === null ? '-' : a.position;
    const input = `${hookedFds.get(fd)} ${a.offset} ${a.length === undefined ? '-' : a.length} ${pos}`;
    return callbackCall(K.read, 'read', input, this, args, real.read,
      (n, buffer) => ({ n, data: Buffer.from(bytesOf(buffer).subarray(a.offset, a.offset + n)) }),
      (v) => {
        // Node allocates a 16 KiB buffer when the program gives none.
        const buffer = a.buffer === null ? Buffer.alloc(16384) : a.buffer;
        v.data.copy(bytesOf(buffer), a.offset);
        return [v.n, buffer];
      });
  }, real.read);

  // fs.promises: stat, lstat, readdir, access by path.
  const promiseByPath = (name, opts, enc, dec) => {
    const fn = real[name];
    const short = name.slice('promises'.length).toLowerCase();
    // A method, not a function expression: like the async function it replaces, no
    // `prototype` and not a constructor.
    const hook = like({
      hook(p, options) {
        const where = pathOf(p);
        if (!ev.on || ev.busy || where === null || fromNode(hook)) return fn.apply(this, arguments);
        const args = arguments;
        return promiseCall(K[name], `promises.${short}`, `${where} ${opts(options)}`, () => fn.apply(this, args), enc,
          dec);
      },
    }.hook, fn);
    return hook;
  };
  hooks.promisesStat = promiseByPath('promisesStat', statOpts, encodeStats, decodeStats);
  hooks.promisesLstat = promiseByPath('promisesLstat', statOpts, encodeStats, decodeStats);
  hooks.promisesReaddir = promiseByPath('promisesReaddir', dirOpts, encodeList, decodeList);
  hooks.promisesAccess = promiseByPath('promisesAccess', accessOpts, same, same);
  hooks.promisesStatfs = promiseByPath('promisesStatfs', statfsOpts, encodeStatFs, decodeStatFs);

  // FileHandles. Record: the real handle, its read/readFile/stat/close/createReadStream
  // methods hooked on the instance (Node's own uses of them, such as the reads of the handle's
  // ReadStream, run real). Replay: a FileHandle of ours that answers the same methods from the
  // log and holds no descriptor at all (nothing to leak, to close, or to warn about on garbage
  // collection): the recorded number is its `fd`, only as a number to print.
  function handleRead(fh, where, fn, args) {
    let [buffer, offset, length, position] = args;
    if (!ArrayBuffer.isView(buffer)) {
      const o = buffer || {};
      buffer = o.buffer === undefined ? null : o.buffer;
      ({ offset, length, position } = o);
    }
    if (offset !== null && typeof offset === 'object') ({ offset, length, position } = offset);
    if (offset === undefined || offset === null) offset = 0;
    if (buffer !== null && !ArrayBuffer.isView(buffer)) return fn.apply(fh, args); // Node rejects it
    const pos = typeof position === 'number' || typeof position === 'bigint' ? position : '-';
    const input = `${where} ${offset} ${length === undefined || length === null ? '-' : length} ${pos}`;
    return promiseCall(K['fh.read'], 'FileHandle.read', input, () => fn.apply(fh, args),
      (r) => ({ n: r.bytesRead, data: Buffer.from(bytesOf(r.buffer).subarray(offset, offset + r.bytesRead)) }),
      (v) => {
        const b = buffer === null ? Buffer.alloc(16384) : buffer;
        v.data.copy(bytesOf(b), offset);
        return { __proto__: null, bytesRead: v.n, buffer: b };
      });
  }

  // fh.readableWebStream(). Node's reads the handle below its methods (its StreamBase; for
  // type 'bytes' fh.read called from Node's code), so no other hook sees them. One event at
  // the call (or its error: a closed or locked handle, a bad type), and each read of the
  // stream a completion of its own, keyed by its number (and for 'bytes' the size asked for):
  // a program that awaits other calls between two reads gets them in the recorded order, as a
  // single completion at the end (createReadStream's) would not allow. The program gets a
  // stream of ours in both runs, of Node's type and shape: ArrayBuffers, or for 'bytes' a byte
  // stream whose BYOB views are filled one read each (autoAllocateChunkSize 16384, as Node's).
  // Record reads Node's stream through a reader, so the handle is locked, kept referenced and
  // cancelled at its close as Node does it.
  function webStream(fh, where, fn, args) {
    const o = args[0];
    const type = o !== null && typeof o === 'object' && typeof o.type === 'string' ? o.type : '';
    const bytes = type === 'bytes';
    const input = `${where} ${type}`;
    const k = K['fh.readableWebStream'];
    let reader = null;
    if (replaying) {
      const v = ev.replay(k, input);
      if (v === ev.LIVE) throw new Error('replay went live: a replayed FileHandle has no file to read');
      if (v !== null) throw v.e;
    } else {
      let real;
      try {
        real = ev.live(() => fn.apply(fh, args));
      } catch (e) {
        ev.record(k, input, { e });
        throw e;
      }
      ev.record(k, input, null);
      reader = real.getReader(bytes ? { mode: 'byob' } : undefined);
    }
    const key = ev.opKey(`FileHandle.readableWebStream ${input}`);
    let n = 0;
    let over = false;
    // The next read: resolves to its bytes (an ArrayBuffer, for 'bytes' a Uint8Array), or
    // null at the end.
    const next = (size) => {
      const rk = `${key} ${n++}${bytes ? ` ${size}` : ''}`;
      if (replaying) {
        return new Promise((resolve, reject) => {
          ev.await(rk, (r) => {
            if (r === ev.LIVE) reject(new Error('replay went live: a replayed FileHandle has no file to read'));
            else if (r.e !== undefined) reject(r.e);
            else if (r.t === 'f') resolve(null);
            else resolve(bytes ? r.b : new Uint8Array(r.b).buffer);
          });
        });
      }
      const read = bytes ? reader.read(new Uint8Array(size)) : reader.read();
      return read.then(
        (r) => {
          if (r.done) {
            ev.doneTag(rk, 'f');
            return null;
          }
          // A copy: the chunk is the program's from here on (a byte stream transfers it).
          ev.doneTag(rk, 'd', Buffer.from(ArrayBuffer.isView(r.value) ? bytesOf(r.value) : new Uint8Array(r.value)));
          return r.value;
        },
        (e) => {
          ev.done(rk, { e });
          throw e;
        },
      );
    };
    // Reads that settle after the program cancelled the stream change nothing.
    const failed = (c) => (e) => {
      if (over) return;
      over = true;
      c.error(e);
    };
    const cancel = (reason) => {
      over = true;
      return reader === null ? undefined : reader.cancel(reason);
    };
    if (!bytes) {
      return new ReadableStream({
        pull(c) {
          return next().then((b) => {
            if (over) return;
            if (b === null) {
              over = true;
              c.close();
            } else {
              c.enqueue(b);
            }
          }, failed(c));
        },
        cancel,
      });
    }
    return new ReadableStream({
      type: 'bytes',
      autoAllocateChunkSize: 16384,
      pull(c) {
        const req = c.byobRequest;
        const view = req.view;
        return next(view.byteLength).then((b) => {
          if (over) return;
          if (b === null) {
            over = true;
            c.close();
            req.respond(0);
          } else {
            new Uint8Array(view.buffer, view.byteOffset, view.byteLength).set(b);
            req.respond(b.byteLength);
          }
        }, failed(c));
      },
      cancel,
    });
  }

  const handleMethods = {
    read(fh, where, fn, args) {
      return handleRead(fh, where, fn, args);
    },
    readv(fh, where, fn, args) {
      const [buffers, position] = args;
      if (!viewList(buffers)) return fn.apply(fh, args); // Node rejects it
      return promiseCall(K['fh.readv'], 'FileHandle.readv', `${where} ${readvInput(buffers, position)}`,
        () => fn.apply(fh, args),
        (r) => ({ n: r.bytesRead, data: gather(r.buffers, r.bytesRead) }),
        (v) => {
          scatter(buffers, v.data);
          return { __proto__: null, bytesRead: v.n, buffers };
        });
    },
    readFile(fh, where, fn, args) {
      return promiseCall(K['fh.readFile'], 'FileHandle.readFile', `${where} ${encodingOf(args[0])}`,
        () => fn.apply(fh, args), same, same);
    },
    stat(fh, where, fn, args) {
      return promiseCall(K['fh.stat'], 'FileHandle.stat', `${where} ${statOpts(args[0])}`, () => fn.apply(fh, args),
        encodeStats, decodeStats);
    },
    readableWebStream(fh, where, fn, args) {
      return webStream(fh, where, fn, args);
    },
    // An event too: when it settles, among the other completions, is what the program sees.
    close(fh, where, fn, args) {
      return promiseCall(K['fh.close'], 'FileHandle.close', where, () => fn.apply(fh, args), same, same);
    },
  };

  // fh.createReadStream() is a ReadStream over the handle (Node's fh.readLines() reads one):
  // the hooked createReadStream with the handle as its `fd`.
  function handleStream(fh, options) {
    return hooks.createReadStream(undefined, { ...options, fd: fh });
  }

  function hookHandle(fh, where) {
    handleWhere.set(fh, where);
    const crs = fh.createReadStream;
    Object.defineProperty(fh, 'createReadStream', {
      configurable: true,
      writable: true,
      value: like(function createReadStream(options) {
        if (!ev.on || ev.busy) return crs.apply(this, arguments);
        return handleStream(this, options);
      }, crs),
    });
    for (const [name, method] of Object.entries(handleMethods)) {
      const fn = fh[name];
      Object.defineProperty(fh, name, {
        configurable: true,
        writable: true,
        value: like(function hook() {
          if (!ev.on || ev.busy || fromNode(hook)) return fn.apply(this, arguments);
          return method(this, where, fn, [...arguments]);
        }, fn),
      });
    }
    return fh;
  }

  const wentLive = () => Promise.reject(new Error('replay went live: a replayed FileHandle has no file to read'));
  const kFd = Symbol('fd');
  const kClosed = Symbol('closed');
  const kShut = Symbol('shut');
  // Named as Node's class, so util.inspect shows the same name.
  class FileHandle extends EventEmitter {
    constructor(fd) {
      super();
      this[kFd] = fd;
      this[kClosed] = false;
      // An own property, as Node's (a class field there): Object.keys() lists it the same.
      this.close = like(() => {
        this[kShut]();
        return handleMethods.close(this, handleWhere.get(this), () => Promise.resolve(), []);
      }, { name: 'close', length: 0 });
    }

    get fd() {
      return this[kClosed] ? -1 : this[kFd];
    }

    // As Node's: the fd is -1 and 'close' emitted at the call, the promise settles later.
    [kShut]() {
      if (!this[kClosed]) {
        this[kClosed] = true;
        this.emit('close');
      }
    }

    // Node's calls close() from its own code (no event): so does this one.
    [Symbol.asyncDispose]() {
      this[kShut]();
      return Promise.resolve();
    }

    createReadStream(options = undefined) {
      return handleStream(this, options);
    }

    readLines(options = undefined) {
      return readline.createInterface({ input: this.createReadStream(options), crlfDelay: Infinity });
    }

    // A handle opened read-only flushes nothing the program wrote: Node's resolves. nedb
    // fsyncs its data directory through open(dir, 'r').sync(), which failed on the stand-in.
    sync() {
      return Promise.resolve();
    }

    datasync() {
      return Promise.resolve();
    }
  }
  // The lengths of Node's FileHandle methods.
  const HANDLE_LENGTHS = { read: 4, readv: 2, readFile: 1, stat: 1, readableWebStream: 0 };
  for (const [name, method] of Object.entries(handleMethods)) {
    if (name === 'close') continue;
    Object.defineProperty(FileHandle.prototype, name, {
      configurable: true,
      writable: true,
      value: like(function hook() {
        return method(this, handleWhere.get(this), wentLive, [...arguments]);
      }, { name, length: HANDLE_LENGTHS[name] }),
    });
  }

  hooks.promisesOpen = like({ open(p, flags) {
    const where = pathOf(p);
    if (!ev.on || ev.busy || where === null || fromNode(hooks.promisesOpen)) {
      return real.promisesOpen.apply(this, arguments);
    }
    const args = arguments;
    if (!readOnly(flags)) return openWriteHandle(this, [...args], where);
    const input = `${where} ${flags === undefined || flags === null ? 'r' : flags}`;
    return promiseCall(K.promisesOpen, 'promises.open', input, () => real.promisesOpen.apply(this, args),
      (fh) => hookHandle(fh, where).fd,
      (fd) => {
        const fh = new FileHandle(fd);
        handleWhere.set(fh, where);
        return fh;
      });
  } }.open, real.promisesOpen);

  // fs.promises.open for writing: Node's FileHandle, opened live in both modes; its opening
  // and every promise of its own methods settle in the recorded order (ev.orderedPromise), as
  // the callback calls on written descriptors do (see writeFds). A file the recording made
  // exists in replay: 'wx' opens it without O_EXCL there.
  const WRITE_HANDLE_METHODS = ['write', 'writev', 'writeFile', 'appendFile', 'sync', 'datasync', 'truncate', 'chmod',
    'chown', 'utimes', 'close', 'stat', 'read', 'readv', 'readFile'];
  function openWriteHandle(self, args, where) {
    // A worker fed through shared memory: live, as openWrite says.
    if (ev.sharedMemory) return real.promisesOpen.apply(self, args);
    const open = () => real.promisesOpen.apply(self, args).catch((e) => {
      const flags = args[1];
      if (!replaying || !e || e.code !== 'EEXIST' || typeof flags !== 'string') throw e;
      return real.promisesOpen.call(self, args[0], flags.replace('x', ''), args[2]);
    });
    return ev.orderedPromise(`promises.open ${where}`, open).then((fh) => {
      for (const name of WRITE_HANDLE_METHODS) {
        const fn = fh[name];
        if (typeof fn !== 'function') continue;
        Object.defineProperty(fh, name, {
          configurable: true,
          writable: true,
          value: like(function hook(...callArgs) {
            if (!ev.on || ev.busy || fromNode(hook)) return fn.apply(this, callArgs);
            if (name === 'write') noteFdWrite('write', where, [null, ...callArgs]);
            else if (name === 'writev') noteFdWrite('writev', where, [null, ...callArgs]);
            else if (name === 'writeFile' || name === 'appendFile') noteWrite(where, callArgs[0], writeEncoding(callArgs[1]));
            return ev.orderedPromise(`FileHandle.${name} ${where}`, () => fn.apply(this, callArgs));
          }, fn),
        });
      }
      return fh;
    });
  }

  // realpath and readlink: (path, [options]) -> a path (a string, or a Buffer for encoding
  // 'buffer'). The .native forms (libuv's realpath(3) instead of Node's walk of the path in
  // JS: their results can differ, /proc links for one) are kinds of their own. The module
  // loaders resolve every require through fs.realpathSync: Node's caller, so no event.
  const syncByPath = (name, opts, enc, dec) =>
    like(function hook(p, options) {
      if (!ev.on || ev.busy || fromNode(hook)) return real[name].apply(this, arguments);
      const where = pathOf(p);
      if (where === null) return real[name].apply(this, arguments);
      return syncCall(K[name], `${where} ${opts(options)}`, this, arguments, real[name], enc, dec);
    }, real[name]);
  const pathArgs = (v) => [v];
  hooks.realpathSync = syncByPath('realpathSync', encodingOf);
  hooks.realpathSync.native = syncByPath('realpathSyncNative', encodingOf);
  hooks.realpath = byPath('realpath', encodingOf, same, pathArgs);
  hooks.realpath.native = byPath('realpathNative', encodingOf, same, pathArgs);
  hooks.promisesRealpath = promiseByPath('promisesRealpath', encodingOf, same, same);
  hooks.readlinkSync = syncByPath('readlinkSync', encodingOf);
  hooks.readlink = byPath('readlink', encodingOf, same, pathArgs);
  hooks.promisesReadlink = promiseByPath('promisesReadlink', encodingOf, same, same);

  // fs.readvSync / fs.readv on a hooked descriptor: the bytes read, put back into the
  // program's buffers in replay.
  hooks.readvSync = like(function readvSync(fd, buffers, position) {
    if (!ev.on || ev.busy || !hookedFds.has(fd) || !viewList(buffers) || (streamOwned.has(fd) && fromNode(readvSync))) {
      return real.readvSync.apply(this, arguments);
    }
    const input = `${hookedFds.get(fd)} ${readvInput(buffers, position)}`;
    return syncCall(K.readvSync, input, this, arguments, real.readvSync,
      (n) => ({ n, data: gather(buffers, n) }),
      (v) => {
        scatter(buffers, v.data);
        return v.n;
      });
  }, real.readvSync);

  hooks.readv = like(function readv(fd, buffers, position) {
    const args = [...arguments];
    if (!ev.on || ev.busy || !hookedFds.has(fd) || !viewList(buffers) || typeof args[args.length - 1] !== 'function' ||
      (streamOwned.has(fd) && fromNode(readv))) {
      return real.readv.apply(this, args);
    }
    const input = `${hookedFds.get(fd)} ${readvInput(buffers, args.length > 3 ? position : null)}`;
    return callbackCall(K.readv, 'readv', input, this, args, real.readv,
      (n) => ({ n, data: gather(buffers, n) }),
      (v) => {
        scatter(buffers, v.data);
        return [v.n, buffers];
      });
  }, real.readv);

  // Directories read entry by entry: fs.opendirSync / fs.opendir / fs.promises.opendir.
  // Record: Node's Dir, its read/readSync/close/closeSync/entries hooked on the instance
  // (async iteration included: Node's entries() calls Dir internals, which would read
  // unrecorded). Each read is an event (its Dirent, or null at the end), as each close, in
  // the order the program made them; the async ones complete in recorded order. Replay: a Dir
  // of ours that answers the same methods from the log and holds no descriptor.
  //
  // Calls on a closed Dir throw or fail at once in Node (ERR_DIR_CLOSED) and are no events.
  // Both runs tell them by the same state, kept here per Dir: closed at a close() or
  // closeSync() call, as Node's (a closeSync that fails because an operation is under way
  // leaves it open). Record hands such calls to Node's Dir, replay to `dead` below.
  const dirState = new WeakMap();
  // Argument forms Node rejects at once (a callback that is no function): not hooked.
  const badCallback = (cb) => cb !== undefined && typeof cb !== 'function';

  // Each takes the Dir, its state, the function that does the real thing (record: Node's
  // method; replay: what runs when replay went live) and the call's arguments.
  const dirMethods = {
    readSync(dir, st, fn, args) {
      return syncCall(K['dir.readSync'], st.where, dir, args, fn, encodeDirent, decodeDirent);
    },
    read(dir, st, fn, args) {
      if (args[0] === undefined) {
        return promiseCall(K['dir.read'], 'Dir.read', st.where, () => fn.apply(dir, args), encodeDirent,
          decodeDirent);
      }
      return callbackCall(K['dir.read'], 'Dir.read', st.where, dir, args, fn, encodeDirent,
        (x) => [decodeDirent(x)]);
    },
    close(dir, st, fn, args) {
      st.closed = true;
      if (args[0] === undefined) {
        return promiseCall(K['dir.close'], 'Dir.close', st.where, () => fn.apply(dir, args), same, same);
      }
      return callbackCall(K['dir.close'], 'Dir.close', st.where, dir, args, fn, none, noArgs);
    },
    closeSync(dir, st, fn, args) {
      try {
        const r = syncCall(K['dir.closeSync'], st.where, dir, args, fn);
        st.closed = true;
        return r;
      } catch (e) {
        st.closed = !e || e.code !== 'ERR_DIR_CONCURRENT_OPERATION';
        throw e;
      }
    },
  };

  // True when method `name` called with `args` on a Dir in state `st` is an event (the
  // sync ones take no callback: their arguments are ignored, as Node does).
  const dirEvent = (name, st, args) => !st.closed && (name.endsWith('Sync') || !badCallback(args[0]));

  // Node's entries(), over the (hooked) read() and close() of `this`.
  const dirEntries = like(async function* entries() {
    try {
      while (true) {
        const dirent = await this.read();
        if (dirent === null) break;
        yield dirent;
      }
    } finally {
      await this.close();
    }
  }, fs.Dir.prototype.entries);

  function hookDir(dir, where) {
    const st = { where, path: dir.path, closed: false };
    dirState.set(dir, st);
    for (const [name, method] of Object.entries(dirMethods)) {
      const fn = dir[name];
      Object.defineProperty(dir, name, {
        configurable: true,
        writable: true,
        value: like(function hook() {
          if (!ev.on || ev.busy || !dirEvent(name, st, arguments) || fromNode(hook)) return fn.apply(this, arguments);
          return method(this, st, fn, [...arguments]);
        }, fn),
      });
    }
    for (const key of ['entries', Symbol.asyncIterator]) {
      const fn = dir[key];
      Object.defineProperty(dir, key, {
        configurable: true,
        writable: true,
        value: like(function hook() {
          if (!ev.on || ev.busy || fromNode(hook)) return fn.apply(this, arguments);
          return dirEntries.apply(this, arguments);
        }, fn),
      });
    }
    return dir;
  }

  // A real Dir, closed at once (made at first need): the replayed Dir hands the calls that
  // are no events to it, for Node's own errors (ERR_DIR_CLOSED; ERR_INVALID_ARG_TYPE for a
  // callback of a wrong type), thrown or passed on as Node does.
  let dead = null;
  const deadDir = () => {
    if (dead === null) {
      dead = ev.live(() => real.opendirSync('/'));
      dead.closeSync();
    }
    return dead;
  };
  const dirGone = () => new Error('replay went live: a replayed Dir has no directory to read');
  // Named as Node's class (and one of its instances for instanceof fs.Dir); its state is in
  // dirState, so util.inspect shows no fields.
  class Dir {
    get path() {
      return dirState.get(this).path;
    }

    read(callback) {
      const st = dirState.get(this);
      if (!dirEvent('read', st, arguments)) {
        // Node's read checks for a closed Dir before the callback's type, its close the
        // other way round: so the closed Dir's read and close give Node's error each.
        return st.closed ? deadDir().read(callback) : deadDir().close(callback);
      }
      const live = callback === undefined ? () => Promise.reject(dirGone()) : (cb) => process.nextTick(cb, dirGone());
      return dirMethods.read(this, st, live, [callback]);
    }

    readSync() {
      const st = dirState.get(this);
      if (st.closed) return deadDir().readSync();
      return dirMethods.readSync(this, st, () => {
        throw dirGone();
      }, []);
    }

    close(callback) {
      const st = dirState.get(this);
      if (!dirEvent('close', st, arguments)) return deadDir().close(callback);
      const live = callback === undefined ? () => Promise.resolve() : (cb) => process.nextTick(cb, null);
      return dirMethods.close(this, st, live, [callback]);
    }

    closeSync() {
      const st = dirState.get(this);
      if (st.closed) return deadDir().closeSync();
      return dirMethods.closeSync(this, st, () => undefined, []);
    }
  }
  Object.setPrototypeOf(Dir.prototype, fs.Dir.prototype);
  for (const key of ['entries', Symbol.asyncIterator]) {
    Object.defineProperty(Dir.prototype, key, { configurable: true, writable: true, value: dirEntries });
  }

  // `path`: the recorded Dir's (a string or Buffer: Node's, from a file: URL too); `where`:
  // the path the program named, which its reads' events are named by.
  const newDir = (path, where) => {
    const dir = new Dir();
    dirState.set(dir, { path, where, closed: false });
    return dir;
  };

  hooks.opendirSync = like(function opendirSync(p, options) {
    if (!ev.on || ev.busy || fromNode(opendirSync)) return real.opendirSync.apply(this, arguments);
    const where = pathOf(p);
    if (where === null) return real.opendirSync.apply(this, arguments);
    return syncCall(K.opendirSync, `${where} ${dirOpts(options)}`, this, arguments, real.opendirSync,
      (dir) => hookDir(dir, where).path, (path) => newDir(path, where));
  }, real.opendirSync);

  hooks.opendir = like(function opendir(p, options) {
    const args = [...arguments];
    const where = pathOf(p);
    if (!ev.on || ev.busy || where === null || typeof args[args.length - 1] !== 'function' || fromNode(opendir)) {
      return real.opendir.apply(this, args);
    }
    const o = args.length > 2 ? options : undefined;
    return callbackCall(K.opendir, 'opendir', `${where} ${dirOpts(o)}`, this, args, real.opendir,
      (dir) => hookDir(dir, where).path, (path) => [newDir(path, where)]);
  }, real.opendir);

  hooks.promisesOpendir = like(function opendir(p, options) {
    const where = pathOf(p);
    if (!ev.on || ev.busy || where === null || fromNode(opendir)) return real.promisesOpendir.apply(this, arguments);
    const args = arguments;
    return promiseCall(K.promisesOpendir, 'promises.opendir', `${where} ${dirOpts(options)}`,
      () => real.promisesOpendir.apply(this, args), (dir) => hookDir(dir, where).path, (path) => newDir(path, where));
  }, real.promisesOpendir);

  // Changes of the file system by path: `input(args)` names the call (null: not by path,
  // live), `redo` as in mutateCall.
  const flagsOf = (o) => (o !== null && typeof o === 'object' ? `${o.recursive ? 'r' : ''}${o.force ? 'f' : ''}` : '');
  const mutation = (name, input, redo) =>
    like(
      {
        [name](...args) {
          const what = ev.on && !ev.busy ? input(args) : null;
          if (what === null || fromNode(hooks[name])) return real[name].apply(this, args);
          return mutateCall(K[name], what, this, args, real[name], redo);
        },
      }[name],
      real[name],
    );
  const one = (a) => {
    const w = pathOf(a[0]);
    return w === null ? null : `${w} ${flagsOf(a[1])}`;
  };
  const two = (a) => {
    const x = pathOf(a[0]);
    const y = pathOf(a[1]);
    return x === null || y === null ? null : `${x} -> ${y}`;
  };
  hooks.mkdirSync = mutation('mkdirSync', one);
  hooks.mkdtempSync = mutation('mkdtempSync', (a) => pathOf(a[0]), (dir) => {
    if (typeof dir === 'string') real.mkdirSync(dir, { recursive: true });
  });
  hooks.rmdirSync = mutation('rmdirSync', one);
  hooks.rmSync = mutation('rmSync', one);
  hooks.unlinkSync = mutation('unlinkSync', one);
  hooks.renameSync = mutation('renameSync', two);
  // copyFileSync, copyFile and promises.copyFile read the source (an input) and write the copy
  // (output): record keeps what the destination holds after the copy, and its mode; replay
  // writes that to the destination (a live copy took the edited source: fs-extra's copy
  // replayed with the new contents and exit 0). A recorded failure is the same failure.
  // Node's own calls are copies too (fs.cp and cpSync copy each file through these): no
  // fromNode check.
  const copyValue = (dest) => ev.live(() => ({ b: real.readFileSync(dest), m: real.statSync(dest).mode }));
  const writeCopy = (dest, v) => {
    if (v === null || typeof v !== 'object' || !Buffer.isBuffer(v.b)) return;
    ev.live(() => {
      real.writeFileSync(dest, v.b);
      try {
        fs.chmodSync(dest, v.m & 0o7777);
      } catch (_) {
        // The bytes are what matters; a mode the file system refuses is left.
      }
    });
  };
  hooks.copyFileSync = like(function copyFileSync(src, dest) {
    const what = ev.on && !ev.busy ? two(arguments) : null;
    if (what === null) return real.copyFileSync.apply(this, arguments);
    return syncCall(K.copyFileSync, what, this, arguments, real.copyFileSync, () => copyValue(dest), (v) => {
      writeCopy(dest, v);
      return undefined;
    });
  }, real.copyFileSync);
  hooks.copyFile = like(function copyFile(src, dest) {
    const args = [...arguments];
    const what = ev.on && !ev.busy && typeof args[args.length - 1] === 'function' ? two(args) : null;
    if (what === null) return real.copyFile.apply(this, args);
    return callbackCall(K.copyFile, 'copyFile', what, this, args, real.copyFile, () => copyValue(dest), (v) => {
      writeCopy(dest, v);
      return [];
    });
  }, real.copyFile);
  hooks.promisesCopyFile = like({
    copyFile(src, dest) {
      const what = ev.on && !ev.busy ? two([src, dest]) : null;
      if (what === null) return real.promisesCopyFile.apply(this, arguments);
      const args = arguments;
      return promiseCall(K.promisesCopyFile, 'promises.copyFile', what, () => real.promisesCopyFile.apply(this, args),
        () => copyValue(dest), (v) => {
          writeCopy(dest, v);
          return undefined;
        });
    },
  }.copyFile, real.promisesCopyFile);
  hooks.writeFileSync = mutation('writeFileSync', (a) => pathOf(a[0]));
  hooks.appendFileSync = mutation('appendFileSync', (a) => pathOf(a[0]));
  for (const name of ['writeFileSync', 'appendFileSync']) {
    const hook = hooks[name];
    hooks[name] = like({
      [name](file, data, options) {
        if (ev.on && !ev.busy) noteWrite(typeof file === 'number' ? writeFds.get(file) : pathOf(file), data, writeEncoding(options));
        return hook.apply(this, arguments);
      },
    }[name], real[name]);
  }
  hooks.symlinkSync = mutation('symlinkSync', two);

  // The asynchronous changes (mkdir, rename, writeFile, ... and their fs.promises forms):
  // their effect is output and their outcome an input, as the synchronous ones' (mutateCall),
  // and the outcome comes in its recorded order among the other completions. Record: the
  // real call; its outcome is a completion. Replay: nothing at the call; at the completion's
  // turn a recorded success is made live with the synchronous form (the program's callback
  // may use what it made: a directory to write into) and the program gets the recorded
  // result; a recorded failure gives its error and changes nothing (a directory the
  // recording made and left exists now: the replayed mkdir still succeeds, as recorded).
  // Descriptors opened for writing, by the program (fs.open, fs.openSync) or by Node's own
  // code (a write stream's), to their path. The callback calls on them (FD_WRITES, close)
  // run live in both modes, at the call, and complete in the recorded order
  // (ev.orderedCall): their completions ran in whatever order the disk gave, and what came
  // next followed it. write-file-atomic's open/write/fsync/close/rename chains for several
  // files renamed in another order (a divergence every replay); a write stream's write
  // completed after a timer that came later in the recording, and bunyan's last line,
  // written from that timer before process.exit, stayed in the stream's buffer (lost from the
  // file, exit 0). Made at the call, as recorded, a write lands even when the program exits
  // before its completion. Synchronous calls on them stay live: they keep the program's
  // order.
  const writeFds = new Map();

  // What the program writes into files (by path, as it named them) goes to the core, which
  // compares replay's with the recording's at the end (ev.fileWritten): a replay that wrote
  // other bytes into a file is a divergence, not a silent exit 0. Noted at the program's
  // call, in both modes (not in replay's remaking of a recorded change, which runs busy).
  // The encoding a string is written in ('utf8' unless the options name a valid one).
  const writeEncoding = (o) => {
    const e = encodingOf(o);
    return e !== '' && Buffer.isEncoding(e) ? e : 'utf8';
  };
  const noteWrite = (where, data, enc) => {
    // A worker fed through shared memory (index.js) writes what another thread handed it,
    // when that thread's timing says (pino's transports flush at the worker's exit, before or
    // after the hooks end): its writes are not compared, as the memory is not (said at the
    // end of the replay).
    if (!ev.on || ev.sharedMemory || where === null || where === undefined) return;
    try {
      if (typeof data === 'string') ev.fileWritten(where, Buffer.from(data, enc || 'utf8'));
      else if (ArrayBuffer.isView(data)) ev.fileWritten(where, Buffer.from(data.buffer, data.byteOffset, data.byteLength));
    } catch (e) {
      ev.fail('noting a file write', e);
    }
  };
  // fs.write(fd, ...) / writeSync's bytes (and writev's buffers) on a written descriptor.
  const noteFdWrite = (name, where, args) => {
    if (name === 'write' || name === 'writeSync') {
      const chunk = fsChunk(args[1], args[2], args[3]);
      if (chunk !== null) noteWrite(where, chunk, typeof chunk === 'string' && typeof args[3] === 'string' ? args[3] : 'utf8');
    } else if ((name === 'writev' || name === 'writevSync') && Array.isArray(args[1])) {
      for (const b of args[1]) noteWrite(where, b);
    }
  };
  const orderedFdCall = (name, fd, where, self, args) => {
    noteFdWrite(name, where, args);
    if (name === 'close') writeFds.delete(fd);
    // A worker fed through shared memory (index.js): live, in whatever order.
    if (ev.sharedMemory) return real[name].apply(self, args);
    // write and writev take one place in the order: a WriteStream picks writev when chunks
    // queued up while its last write ran, which is timing (archiver's zip diverged in 1 of
    // 4 recordings); the bytes are summed per file all the same.
    const op = name === 'writev' ? 'write' : name;
    return ev.orderedCall(`${op} fd ${where}`, self, args, real[name]);
  };

  // replay: a file the recording made exists now: an open with 'x' that fails with EEXIST
  // opens it without O_EXCL, as the recorded one got it.
  const withoutExcl = (e, flags) => replaying && e && e.code === 'EEXIST' && typeof flags === 'string' &&
    flags.includes('x');

  // The descriptor replay opens in place of a recorded fs.openSync for writing: with the
  // program's flags (see withoutExcl); where the file cannot be opened at all (its directory
  // gone), /dev/null, so the writes go nowhere rather than failing where they succeeded.
  function reopenWrite(args) {
    const [p, flags, mode] = args;
    return ev.live(() => {
      try {
        return real.openSync(p, flags, mode);
      } catch (e) {
        if (withoutExcl(e, flags)) {
          try {
            return real.openSync(p, flags.replace('x', ''), mode);
          } catch (_) {
            // As below.
          }
        }
        return real.openSync('/dev/null', 'w');
      }
    });
  }

  // fs.open for writing, by the program or by Node's code: live in both modes, completed in
  // the recorded order, the descriptor then in writeFds.
  function openWrite(self, args, where) {
    // A worker fed through shared memory (index.js): its files' opens and writes race the
    // thread that feeds it and the worker's end; live, as before they were ordered.
    if (ev.sharedMemory) return real.open.apply(self, args);
    const at = args.length - 1;
    const cb = args[at];
    const flags = at > 1 ? args[1] : undefined;
    args[at] = function (err, fd) {
      if (!err) {
        writeFds.set(fd, where);
      } else if (withoutExcl(err, flags)) {
        const again = [args[0], flags.replace('x', ''), ...args.slice(2, at)];
        again.push((err2, fd2) => {
          if (!err2) writeFds.set(fd2, where);
          cb(err2, fd2);
        });
        ev.live(() => real.open.apply(fs, again));
        return undefined;
      }
      return cb.apply(this, arguments);
    };
    return ev.orderedCall(`open ${where}`, self, args, real.open);
  }

  for (const name of ['writeSync', 'writevSync']) {
    hooks[name] = like({
      [name](fd) {
        const where = writeFds.get(fd);
        if (where !== undefined && ev.on && !ev.busy) noteFdWrite(name, where, arguments);
        return real[name].apply(this, arguments);
      },
    }[name], real[name]);
  }

  for (const name of FD_WRITES) {
    hooks[name] = like({
      [name](fd) {
        const where = writeFds.get(fd);
        if (where === undefined || !ev.on || ev.busy || typeof arguments[arguments.length - 1] !== 'function') {
          return real[name].apply(this, arguments);
        }
        return orderedFdCall(name, fd, where, this, [...arguments]);
      },
    }[name], real[name]);
  }

  // Before, these ran live in replay: mkdir failed with EEXIST where the recording's
  // succeeded, and the program wrote another status without a word.
  // `sync`: the synchronous form's name, or a function of (args, recorded value);
  // `input(args)`: the call's name (null: not by path, or data a synchronous write cannot
  // take, such as a stream: live).
  const data = (a) => typeof a[1] === 'string' || ArrayBuffer.isView(a[1]);
  const written = (a) => (data(a) ? pathOf(a[0]) : null);
  const ASYNC = {
    mkdir: ['mkdirSync', one],
    // The random directory the recording got is made again, by its recorded name.
    mkdtemp: [(args, dir) => {
      if (typeof dir === 'string') real.mkdirSync(dir, { recursive: true });
    }, (a) => pathOf(a[0])],
    rmdir: ['rmdirSync', one],
    rm: ['rmSync', one],
    unlink: ['unlinkSync', one],
    rename: ['renameSync', two],
    symlink: ['symlinkSync', two],
    writeFile: ['writeFileSync', written],
    appendFile: ['appendFileSync', written],
    // write-file-atomic sets a temporary file's mode, owner and times before its rename:
    // live, their completions raced the recorded ones.
    chmod: ['chmodSync', (a) => pathOf(a[0])],
    chown: ['chownSync', (a) => pathOf(a[0])],
    utimes: ['utimesSync', (a) => pathOf(a[0])],
    truncate: ['truncateSync', (a) => pathOf(a[0])],
    link: ['linkSync', two],
  };
  const redoLive = (sync, args, value) => {
    ev.live(() => {
      try {
        if (typeof sync === 'function') sync(args, value);
        else real[sync].apply(fs, args);
      } catch (_) {
        // The recorded call succeeded: so does this one (the world differs, not the program).
      }
    });
  };
  const resultArgs = (v) => (v === null || v === undefined ? [] : [v]);
  const orNull = (v) => (v === undefined ? null : v);
  for (const [name, [sync, input]] of Object.entries(ASYNC)) {
    const promisesName = `promises${name[0].toUpperCase()}${name.slice(1)}`;
    hooks[name] = like({
      [name](...args) {
        const cb = args[args.length - 1];
        const what = ev.on && !ev.busy && typeof cb === 'function' ? input(args) : null;
        if (what === null || fromNode(hooks[name])) return real[name].apply(this, args);
        if (name === 'writeFile' || name === 'appendFile') noteWrite(what, args[1], writeEncoding(args.length > 3 ? args[2] : undefined));
        const callArgs = args.slice(0, -1);
        return callbackCall(K[name], name, what, this, args, real[name], orNull, (v) => {
          redoLive(sync, callArgs, v);
          return resultArgs(v);
        });
      },
    }[name], real[name]);
    if (real[promisesName] === undefined) continue;
    hooks[promisesName] = like({
      [name](...args) {
        const what = ev.on && !ev.busy ? input(args) : null;
        if (what === null || fromNode(hooks[promisesName])) return real[promisesName].apply(this, args);
        if (name === 'writeFile' || name === 'appendFile') noteWrite(what, args[1], writeEncoding(args[2]));
        return promiseCall(K[promisesName], `promises.${name}`, what, () => real[promisesName].apply(this, args),
          orNull, (v) => {
            redoLive(sync, args, v);
            return v === null ? undefined : v;
          });
      },
    }[name], real[promisesName]);
  }

  // fs.openAsBlob: one event, the file's bytes read at the call (Node's Blob reads the file
  // only when it is read, where no hook reaches: an edited file went into the replayed
  // output), or the error Node's gave.
  if (real.openAsBlob !== undefined) {
    kind('openAsBlob', 'node.fs.openAsBlob');
    hooks.openAsBlob = like(function openAsBlob(p, options) {
      const where = pathOf(p);
      if (!ev.on || ev.busy || where === null || fromNode(openAsBlob)) return real.openAsBlob.apply(this, arguments);
      const type = options !== null && typeof options === 'object' && typeof options.type === 'string' ? options.type : '';
      const args = arguments;
      const blobOf = (b) => new Blob([b], { type });
      const input = `${where} ${type}`;
      if (replaying) {
        const v = ev.replay(K.openAsBlob, input);
        if (v === ev.LIVE) return ev.live(() => real.openAsBlob.apply(this, args));
        // Node's throws at once for a file it cannot stat.
        if (v !== null && typeof v === 'object' && v.t !== undefined) throw v.t;
        const key = ev.opKey(`openAsBlob ${input}`);
        return new Promise((resolve, reject) => {
          ev.await(key, (r) => {
            if (r === ev.LIVE) ev.live(() => real.openAsBlob.apply(this, args)).then(resolve, reject);
            else if (r.e !== undefined) reject(r.e);
            else resolve(blobOf(Buffer.from(r.v)));
          });
        });
      }
      let pending;
      try {
        pending = ev.live(() => real.openAsBlob.apply(this, args));
      } catch (e) {
        ev.record(K.openAsBlob, input, { t: e });
        throw e;
      }
      const key = ev.opKey(`openAsBlob ${input}`);
      ev.record(K.openAsBlob, input, null);
      return pending.then((blob) => blob.arrayBuffer()).then(
        (ab) => {
          const b = Buffer.from(ab);
          complete(key, () => ({ v: b }));
          return blobOf(b);
        },
        (e) => {
          ev.done(key, { e });
          throw e;
        },
      );
    }, real.openAsBlob);
  }

  for (const [name, [obj, prop]] of Object.entries(SLOTS)) obj[prop] = hooks[name];
  guardReplaced(ev, hooks, real);
  ev.onDisable(() => {
    for (const [name, [obj, prop]] of Object.entries(SLOTS)) obj[prop] = real[name];
  });
  hookJsonRequire(ev);
}

// fs.close and fs.closeSync as a program replaces them after the hooks are in place:
// graceful-fs does so when it is loaded (webpack, postcss, archiver, fs-extra's users), and
// its wrappers read Date.now to reset their retry queue. Node's own code calls them at the
// end of operations the hooks take whole: an async writeFile's last close, a read stream's.
// In record that ran after the hook had returned, outside ev.live, and its Date.now was an
// event; replay, serving the operation from the log, never closes anything: every such
// replay ended with clock events left over. Such a call from Node's code runs under ev.live
// (its clock reads are not events) in both modes. A replacement set on another object that
// copied fs's properties (graceful-fs's clone copies this accessor) stays that object's.
let closeGuarded = 0;
function guardReplaced(ev, hooks, real) {
  for (const name of ['close', 'closeSync']) {
    let current = fs[name];
    const wrap = (v) => {
      if (typeof v !== 'function' || v === hooks[name] || v === real[name]) return v;
      const guarded = {
        [name](...args) {
          if (!ev.on || ev.busy || !fromNode(guarded)) return v.apply(this, args);
          // graceful-fs's close passes the hook its own callback, which reads the clock and
          // then calls Node's: the hook runs that one under ev.live (closeGuarded), Node's
          // (the program's callback follows it) runs as the program's again.
          const at = args.length - 1;
          if (name === 'close' && typeof args[at] === 'function') {
            const cb = args[at];
            args[at] = function (...results) {
              const was = ev.busy;
              ev.busy = false;
              try {
                return cb.apply(this, results);
              } finally {
                ev.busy = was;
              }
            };
          }
          closeGuarded++;
          try {
            return ev.live(() => v.apply(this, args));
          } finally {
            closeGuarded--;
          }
        },
      }[name];
      for (const key of Reflect.ownKeys(v)) {
        if (key === 'prototype' || key === 'caller' || key === 'arguments') continue;
        try {
          Object.defineProperty(guarded, key, Object.getOwnPropertyDescriptor(v, key));
        } catch (_) {
          // A property the function cannot take: the wrapper works without it.
        }
      }
      return guarded;
    };
    Object.defineProperty(fs, name, {
      configurable: true,
      enumerable: true,
      get() {
        return current;
      },
      set(v) {
        if (this !== fs) {
          Object.defineProperty(this, name, { value: v, writable: true, configurable: true, enumerable: true });
          return;
        }
        current = wrap(v);
      },
    });
  }
}

// `require('./config.json')`: the CommonJS loader reads the file with fs.readFileSync, a call
// of Node's own code and so live, like source files. A JSON file of the program's own is its
// data, not its code: read here, by the program's call, it is an event (a replay with the
// file edited read the new value and went on with exit 0). A package's metadata
// (`package.json`) and files of installed packages (under `node_modules`) go with the code
// and stay live, as module loading does. What the loader does with the text is Node's.
function hookJsonRequire(ev) {
  let Module;
  try {
    Module = require('module');
  } catch (_) {
    return;
  }
  const exts = Module._extensions;
  const real = exts && exts['.json'];
  if (typeof real !== 'function') return;
  const json = function (module, filename) {
    const name = String(filename);
    if (!ev.on || ev.busy || path.basename(name) === 'package.json' || name.split(path.sep).includes('node_modules')) {
      return real.call(this, module, filename);
    }
    const content = fs.readFileSync(filename, 'utf8');
    try {
      module.exports = JSON.parse(content.charCodeAt(0) === 0xfeff ? content.slice(1) : content);
    } catch (err) {
      err.message = filename + ': ' + err.message;
      throw err;
    }
  };
  exts['.json'] = json;
  ev.onDisable(() => {
    if (exts['.json'] === json) exts['.json'] = real;
  });
}

module.exports = { install, fsChunk };
