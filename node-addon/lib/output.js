'use strict';
// The program's output: every write to stdout and stderr, through process.stdout/stderr.write
// (console.* writes there) or fs.writeSync/fs.write on fd 1 and 2. Record: each write is an
// event of kind output.stdout/output.stderr holding the bytes as written (strings encoded as
// the stream encodes them), in its place among the other events (index.js host.queueOut).
// Replay: each write is compared with the recorded bytes before it is let through; the first
// difference is a divergence the core reports (stream, byte offset, line, both texts, the JS
// stack of the write) under the policy.
//
// Comparing crosses N-API rarely: recorded bytes are fetched a run of events at a time
// (src/output.rs out_fetch) and compared here; the native side crosses again at the first
// difference (out_differ, which hands the write and its stack to the core) and at exit
// (out_end). Both sides count bytes per stream, so a write split differently in replay still
// matches.
//
// Not seen: writes made by native code (process._rawDebug, V8's fatal error printing),
// writes to /dev/stdout opened as a file, and writes while a hook runs the real function (they
// happen in record only).

const fs = require('fs');
const { fsChunk } = require('./fs.js');

// The hook looks like the real function: name, length and own properties (fs.write's
// custom promisify arguments, for util.promisify).
function like(hook, real) {
  for (const key of Reflect.ownKeys(real)) {
    if (key === 'prototype' || key === 'arguments' || key === 'caller') continue;
    Object.defineProperty(hook, key, Object.getOwnPropertyDescriptor(real, key));
  }
  return hook;
}

// Strings up to this long are encoded into one reused buffer in replay.
const SCRATCH = 1 << 16;

// `ev`: lib/events.js; `native`: the addon; `host`: index.js's (queueOut, checkStop, wentLive,
// disable). Returns { end() (at exit, replay: the rest goes to the core), off() (replay went
// live: compare no more) }.
function install(ev, native, host) {
  const replaying = ev.mode === 'replay';
  const kinds = [ev.kind('output.stdout'), ev.kind('output.stderr')];
  // Inside a hooked write: the stream's own fs.writeSync (a file stdout) is the same bytes.
  let depth = 0;
  let ended = false;
  const restorers = [];

  // Replay, per stream: the recorded bytes fetched (buf, compared up to pos), the stream
  // bytes found equal so far (done), and off once a difference was reported (the core
  // compares no more of the stream either) or replay went live.
  // `ascii`: where buf's first byte past ASCII is (see ascii()).
  const streams = [0, 1].map((s) => ({ s, buf: null, ascii: 0, pos: 0, done: 0, off: false }));
  const scratch = replaying ? Buffer.allocUnsafeSlow(SCRATCH) : null;

  // The first m bytes at a[ai] and b[bi] are the same. Short runs (a console.log line) in
  // JS: Buffer#compare's argument checks cost more than the loop.
  function same(a, ai, b, bi, m) {
    if (m > 32) return a.compare(b, bi, bi + m, ai, ai + m) === 0;
    for (let j = 0; j < m; j++) if (a[ai + j] !== b[bi + j]) return false;
    return true;
  }

  // Replay: compares the first n bytes of `bytes` with what the recording wrote next on
  // stream s. True: let the write through.
  function check(s, bytes, n) {
    const t = streams[s];
    if (t.off || n === 0) return true;
    const before = t.done;
    let i = 0;
    while (i < n) {
      if (t.buf === null || t.pos === t.buf.length) {
        t.buf = native.outFetch(s, t.done);
        t.pos = 0;
        if (t.buf === null) break;
        // Where its ASCII part ends (one pass in native code per fetch).
        const high = t.buf.latin1Slice(0, t.buf.length).search(/[^\x00-\x7f]/);
        t.ascii = high < 0 ? t.buf.length : high;
        continue;
      }
      const m = Math.min(n - i, t.buf.length - t.pos);
      if (!same(bytes, i, t.buf, t.pos, m)) break;
      t.pos += m;
      t.done += m;
      i += m;
    }
    if (i === n) return true;
    // Nothing of this write was recorded, and the recording ended by a signal's default
    // action that is the next recorded completion: the signal struck in the middle of the
    // program's code, after its last recorded call and before this write. It ends the
    // process here (lib/signals.js), as it did in the recording.
    if (i === 0 && t.buf === null && ev.deliverWatched((k) => k.startsWith('signal ') && k.endsWith('(default action)'))) {
      return false;
    }
    // A difference, or no recorded bytes left: the core compares the write again from where
    // it started, reports the first difference with this write's stack, and decides.
    t.off = true;
    const go = native.outDiffer(s, before, bytes.subarray(0, n));
    host.checkStop();
    if (native.isLive()) host.wentLive();
    return go;
  }

  // Node's warnings start with the pid, an input no hook covers: in replay such a line is
  // compared as the recorded process printed it.
  const livePid = `(${process.release.name}:${process.pid}) `;
  const recordedPid = replaying ? `(${process.release.name}:${native.recordedPid()}) ` : livePid;

  const utf8 = (encoding) => encoding === 'utf8' || encoding === 'utf-8';

  // The common case without encoding the string: the recorded bytes ahead are ASCII and the
  // string's char codes are those bytes: then it is ASCII itself, and its bytes (in utf8,
  // latin1 or ascii) are the recorded ones. True when it matched (and counts as compared);
  // false leaves everything to check() (another character, a difference, the recorded bytes
  // not fetched yet), which compares it from its start. (Measured against startsWith on the
  // fetched bytes as latin1 text: no faster.)
  function ascii(t, chunk, encoding) {
    const m = chunk.length;
    const p = t.pos;
    const b = t.buf;
    if (t.off || b === null || p + m > t.ascii) return false;
    if (!utf8(encoding) && encoding !== 'latin1' && encoding !== 'ascii') return false;
    for (let j = 0; j < m; j++) if (chunk.charCodeAt(j) !== b[p + j]) return false;
    t.pos = p + m;
    t.done += m;
    return true;
  }

  // Replay: a string or bytes the program writes to stream s; true: let it through.
  function checkChunk(s, chunk, encoding) {
    if (typeof chunk === 'string') {
      if (s === 1 && chunk.startsWith(livePid)) chunk = recordedPid + chunk.slice(livePid.length);
      if (ascii(streams[s], chunk, encoding)) return true;
      if (chunk.length * 3 <= SCRATCH) {
        const n = utf8(encoding) ? scratch.utf8Write(chunk, 0) : scratch.write(chunk, 0, encoding);
        return check(s, scratch, n);
      }
      const b = Buffer.from(chunk, encoding);
      return check(s, b, b.length);
    }
    return check(s, chunk, chunk.length);
  }

  // A write of `chunk` (a string in `encoding`, or a Uint8Array) to stream s: compared in
  // replay before it is written (false: do not write it, replay stopped), recorded after.
  // The hooks call the real function themselves with their `arguments`: a closure over
  // them, or a copy, cost ~0.9 us a write (measured on Node 20), a fifth of a console.log.
  function before(s, chunk, encoding) {
    if (!replaying) return true;
    try {
      return checkChunk(s, chunk, encoding);
    } catch (e) {
      ev.fail('replay', e);
      return true;
    }
  }
  function after(s, chunk, encoding) {
    if (replaying) return;
    try {
      host.queueOut(kinds[s], chunk, encoding);
    } catch (e) {
      ev.fail('recording', e);
    }
  }

  const bypass = () => !ev.on || ended || ev.busy || depth > 0;

  // process.stdout/stderr are made on first use (a getter of process): hooked then, so that
  // a program that never prints gets no stream made by the addon.
  function hookStream(stream, s) {
    if (!stream || typeof stream.write !== 'function') return;
    // Replay: a pipe written faster than its reader reads queues the writes in the process,
    // and a stop (which exits at once, as process.exit does) would lose the queue: the
    // output before the report, the part the person compares with the recording. Blocking
    // writes (as files and terminals get on Linux) leave nothing queued; the program cannot
    // tell, as the replayed run's timing is not the recorded one anyway.
    if (replaying && stream._handle && typeof stream._handle.setBlocking === 'function') {
      try {
        stream._handle.setBlocking(true);
      } catch (_) {
        // Only the output after a stop may be cut short then.
      }
    }
    const real = stream.write;
    const own = Object.getOwnPropertyDescriptor(stream, 'write');
    stream.write = like(function write(chunk, encoding, cb) {
      if (bypass() || (typeof chunk !== 'string' && !(chunk instanceof Uint8Array))) {
        return real.apply(this, arguments);
      }
      const enc =
        typeof encoding === 'string' && encoding !== 'buffer'
          ? encoding
          : (this._writableState && this._writableState.defaultEncoding) || 'utf8';
      if (!before(s, chunk, enc)) return false;
      depth++;
      let r;
      try {
        r = real.apply(this, arguments);
      } finally {
        depth--;
      }
      after(s, chunk, enc);
      return r;
    }, real);
    restorers.push(() => {
      if (own) Object.defineProperty(stream, 'write', own);
      else delete stream.write;
    });
  }

  for (const [name, s] of [
    ['stdout', 0],
    ['stderr', 1],
  ]) {
    const desc = Object.getOwnPropertyDescriptor(process, name);
    if (!desc || !desc.configurable || typeof desc.get !== 'function') {
      hookStream(process[name], s);
      continue;
    }
    let done = false;
    Object.defineProperty(process, name, {
      configurable: true,
      enumerable: desc.enumerable,
      get: like(function get() {
        const stream = desc.get.call(this);
        if (!done) {
          done = true;
          hookStream(stream, s);
        }
        return stream;
      }, desc.get),
    });
    restorers.push(() => Object.defineProperty(process, name, desc));
  }

  for (const name of ['writeSync', 'write']) {
    const real = fs[name];
    if (typeof real !== 'function') continue;
    // Named parameters, not arguments[i]: reading past the arguments given cost ~0.2 us.
    fs[name] = like(function (fd, data, o, x) {
      if ((fd !== 1 && fd !== 2) || bypass()) return real.apply(this, arguments);
      const chunk = fsChunk(data, o, x);
      if (chunk === null) return real.apply(this, arguments);
      const enc = typeof chunk === 'string' && typeof x === 'string' ? x : 'utf8';
      // (Not compared: replay stopped.)
      if (!before(fd - 1, chunk, enc)) return name === 'writeSync' ? 0 : undefined;
      depth++;
      let r;
      try {
        r = real.apply(this, arguments);
      } finally {
        depth--;
      }
      after(fd - 1, chunk, enc);
      return r;
    }, real);
    restorers.push(() => {
      fs[name] = real;
    });
  }

  ev.onDisable(() => {
    ended = true;
    for (const fn of restorers.splice(0)) fn();
  });

  return {
    // At exit (replay): what was found equal goes to the core, which then checks that the
    // program wrote everything recorded. Writes after this (exit listeners running after
    // index.js's) are not compared, as record does not record them.
    end() {
      if (ended) return;
      ended = true;
      if (!replaying) return;
      for (const t of streams) if (!t.off) native.outEnd(t.s, t.done);
    },
    off() {
      for (const t of streams) t.off = true;
    },
  };
}

module.exports = { install };
