'use strict';
// Child processes that will not be recorded themselves (a native binary such as esbuild's or
// TypeScript 7's, `sort`, a shell command) are recorded and replayed from the parent's side:
// their pipe traffic and exit status are the parent's I/O, and replay does not start them.
//
// Which children: every child started through ChildProcess.prototype.spawn (spawn, exec,
// execFile) or the spawn_sync binding (spawnSync, execSync, execFileSync) whose stdio slots are
// 'pipe', 'overlapped', 'inherit' (or the slot's own fd number) or 'ignore'. Left to run live,
// as before (replay counts them as ran live): a child the launcher's process tree records into
// its own log (its environment carries REPLAY_TREE and REPLAY_MODE, and it runs node, java, a
// script whose `#!` line runs one of them (an npm bin shim such as `mocha`), or a shell command
// naming or starting with one of those: core/src/tree.rs), an 'ipc' channel (fork), other fds or
// streams as stdio slots, a detached child with an inherited stdout or stderr (a daemon that
// outlives the parent: a pipe of the parent's would kill it with SIGPIPE once the parent is
// gone).
//
// Record (async): the child runs; one event `node.child.spawn` (input: the decision, file and
// arguments) holds the spawn's result (0 or an errno such as ENOENT) and pid. Then, as
// completions (ev.done) of the child's key `child FILE#n` in the order the parent saw them:
// 'a'/'b' a chunk of its stdout/stderr, 'A'/'B' their EOF, 'c'/'d' the streams' 'close' (what
// the child's 'close' waits for), 'x' its exit {c, s}, 'z' still
// running when the parent exited (esbuild's service child). What the parent writes to its
// stdin is one `node.child.stdin` event per write, input = key and bytes: replay checks it
// (another request to the child is a divergence). kill() results are `node.child.kill`.
// Replay: no child. The ChildProcess gets a handle of ours (spawn returns the recorded result,
// kill the recorded one) so Node's own ChildProcess code runs on it: 'spawn' or the ENOENT
// 'error', 'exit' and 'close' come from Node's code; the stdio streams are handle-less sockets
// fed the recorded chunks in recorded order (ev.await, among every other completion).
//
// stdio 'inherit' for stdout/stderr: the child writes to the parent's fd itself, which the
// parent never sees. Record gives such a child a pipe instead and writes what comes through it
// to process.stdout/stderr (so the program's output comparison covers it); the ChildProcess
// still shows null for that stream. Replay writes the recorded bytes at the same place. The
// child then sees a pipe, not the terminal (no colours from a tty check). An inherited stdin
// is left as it is: what the child reads from it is not recorded.
//
// Sync (spawnSync and friends): one event `node.child.spawnSync` (input: decision, file,
// arguments, the stdin bytes given) holding the binding's whole result (pid, status, signal,
// output buffers, errno); 'inherit' stdout/stderr slots are captured as above and written
// after the child ended. maxBuffer then covers those bytes too.

const childProcess = require('child_process');
const fs = require('fs');
const net = require('net');
const path = require('path');
const ipc = require('./ipc.js');


// Runtimes the launcher records in their own log when the tree's variables reach them.
const RUNTIMES = /^(node|nodejs|java|javac|jshell|jar|jdb|javadoc|npm|npx|yarn|pnpm)$/;
const SHELLS = /^(sh|bash|dash|zsh|ksh|env)$/;
const NAMES = /(^|[\s/;&|(`'"])(node|nodejs|java|javac|jshell|npm|npx|yarn|pnpm)($|[\s;&|)`'"])/;

function envOf(pairs) {
  const env = {};
  if (Array.isArray(pairs)) {
    for (const p of pairs) {
      const s = String(p);
      const eq = s.indexOf('=');
      if (eq > 0) env[s.slice(0, eq)] = s.slice(eq + 1);
    }
  }
  return env;
}

// Runs fn with the hooks passing through (ev.live once installed): reading a script's first
// line to decide is not the program's read.
let asLive = (fn) => fn();

// Whether `cmd` (a path, or a name looked up on the child's PATH) is a script whose `#!` line
// runs node or java: an npm bin shim (`mocha`, `jest`, `tsc`), which the process tree records
// in its own log.
function scriptOfRuntime(cmd, env, cwd) {
  if (!cmd) return false;
  return asLive(() => {
    let p = null;
    if (cmd.includes('/')) {
      p = path.resolve(cwd || process.cwd(), cmd);
    } else {
      for (const dir of String(env.PATH || '').split(':')) {
        if (!dir) continue;
        const c = path.resolve(cwd || process.cwd(), dir, cmd);
        const st = fs.statSync(c, { throwIfNoEntry: false });
        if (st && st.isFile()) {
          p = c;
          break;
        }
      }
    }
    if (p === null) return false;
    let head = '';
    let fd = -1;
    try {
      fd = fs.openSync(p, 'r');
      const buf = Buffer.alloc(160);
      head = buf.toString('latin1', 0, fs.readSync(fd, buf, 0, buf.length, 0));
    } catch (_) {
      return false;
    } finally {
      if (fd >= 0) fs.closeSync(fd);
    }
    const m = /^#!([^\n]*)/.exec(head);
    return m !== null && /(^|[\s/])(node|nodejs|java)(\s|$)/.test(m[1]);
  });
}

// The command a shell's `-c` script starts with (after variable assignments and `exec`).
function firstCommand(script) {
  for (const w of String(script).trim().split(/[\s;&|()]+/)) {
    if (w === '' || w === 'exec' || /^[A-Za-z_][A-Za-z0-9_]*=/.test(w)) continue;
    return w.replace(/^["']|["']$/g, '');
  }
  return '';
}

// Whether the child will be recorded in its own log by the process tree (then it runs live).
function recordedByTree(file, args, envPairs, cwd) {
  const env = envOf(envPairs !== undefined ? envPairs : Object.entries(process.env).map(([k, v]) => `${k}=${v}`));
  const mode = String(env.REPLAY_MODE || '').trim().toLowerCase();
  if (!env.REPLAY_TREE || (mode !== 'record' && mode !== 'replay')) return false;
  if (file === process.execPath) return true;
  const base = path.basename(String(file));
  if (RUNTIMES.test(base)) return true;
  if (SHELLS.test(base)) {
    const a = (args || []).slice(1).map(String);
    if (a.some((x) => NAMES.test(x))) return true;
    const c = a.indexOf('-c');
    return c >= 0 && a[c + 1] !== undefined && scriptOfRuntime(firstCommand(a[c + 1]), env, cwd);
  }
  return scriptOfRuntime(String(file), env, cwd);
}

// A stdio option as an array of what each of slots 0..2 is: 'pipe', 'inherit', 'ignore', or
// null when a slot is something replay cannot take the child's place for.
function slots(stdio) {
  let arr = stdio == null ? 'pipe' : stdio;
  if (typeof arr === 'string') arr = [arr, arr, arr];
  if (!Array.isArray(arr)) return null;
  const out = [];
  const n = Math.max(3, arr.length);
  for (let i = 0; i < n; i++) {
    let s = arr[i];
    if (s == null) s = i < 3 ? 'pipe' : 'ignore';
    if (s === 'overlapped' || (typeof s === 'number' && s < 0)) s = 'pipe';
    if (s === i && i < 3) s = 'inherit';
    if (s === 'pipe' || s === 'inherit' || s === 'ignore') {
      if (i >= 3 && s !== 'ignore') return null;
      out.push(s);
    } else {
      return null;
    }
  }
  return out;
}

function bytesOf(chunk, encoding) {
  if (Buffer.isBuffer(chunk)) return chunk;
  if (typeof chunk === 'string') return Buffer.from(chunk, encoding || 'utf8');
  if (ArrayBuffer.isView(chunk)) return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  return Buffer.from(String(chunk));
}

function install(ev, native) {
  const replaying = ev.mode === 'replay';
  asLive = (fn) => ev.live(fn);
  const P = childProcess.ChildProcess.prototype;
  const realSpawn = P.spawn;
  const kSpawn = ev.kind('node.child.spawn');
  const kSync = ev.kind('node.child.spawnSync');
  const kStdin = ev.kind('node.child.stdin');
  const kKill = ev.kind('node.child.kill');
  const open = new Set(); // recorded children whose key has not ended
  // Replay: the recorded pid of each live child running now, to its real pid (index.js maps
  // process.kill through it).
  const childPids = ev.livePids || new Map();

  // `own`: a child the process tree replays from its own log (checked there), not one whose
  // doings nothing checks.
  const ranLive = (own) => {
    if (!replaying) return;
    try {
      native.ranLive(own ? 'child process with its own log' : 'child process');
    } catch (_) {
      // Only a report's detail is lost.
    }
  };

  // Replay: a child answered from the recording (its pipes and status) and not started.
  const notRun = () => {
    try {
      native.notRun('child process');
    } catch (_) {
      // Only the end-of-replay note loses it.
    }
  };

  const describe = (how, file, args) => `${how} ${JSON.stringify([String(file), ...(args || []).slice(1).map(String)])}`;

  // ---- record (async) ----

  function recordAsync(cp, options, modes) {
    const file = options.file;
    const key = ev.opKey(`child ${file}`);
    const input = describe('parent', file, options.args);
    const c = { key, pipes: 0, exited: false, done: false };
    const note = (v) => {
      if (c.done || !ev.on) return;
      try {
        ev.done(key, v);
      } catch (e) {
        ev.fail('recording a child process', e);
      }
    };
    const finish = () => {
      if (!c.done && c.exited && c.pipes === 0) {
        c.done = true;
        open.delete(c);
      }
    };
    c.end = () => {
      note({ t: 'z' });
      c.done = true;
    };
    const handle = cp._handle;
    const realExit = handle.onexit;
    handle.onexit = function onexit(code, signal) {
      note({ t: 'x', c: code, s: signal || null });
      c.exited = true;
      finish();
      return realExit.call(this, code, signal);
    };
    const realKill = handle.kill;
    handle.kill = function kill(sig) {
      const r = realKill.call(this, sig);
      ev.record(kKill, `${key} ${sig}`, r);
      return r;
    };
    // 'inherit' stdout/stderr become pipes this module tees to the parent's stream.
    const given = options.stdio;
    options.stdio = modes.map((m, i) => (m === 'inherit' && i > 0 ? 'pipe' : m));
    let err;
    try {
      err = ev.live(() => realSpawn.call(cp, options));
    } catch (e) {
      // Node threw (an errno other than the few it emits as 'error'): replay's handle returns
      // the same errno, and Node throws the same error again.
      if (typeof e.errno === 'number') ev.record(kSpawn, input, { e: e.errno, p: null });
      throw e;
    } finally {
      options.stdio = given;
    }
    ev.record(kSpawn, input, { e: err || 0, p: cp.pid === undefined ? null : cp.pid });
    open.add(c);
    for (let i = 1; i < 3; i++) {
      const sock = cp.stdio && cp.stdio[i];
      if (!sock) continue;
      c.pipes++;
      const tag = i === 1 ? 'a' : 'b';
      const realPush = sock.push;
      sock.push = function push(chunk, encoding) {
        if (chunk === null) note({ t: tag.toUpperCase() });
        else note({ t: tag, b: bytesOf(chunk, encoding) });
        return realPush.call(this, chunk, encoding);
      };
      // The stream's 'close' is what Node's 'close' of the child waits for; when it comes
      // after EOF depends on the pipe's handle closing: replay reproduces it where it was.
      sock.prependListener('close', () => {
        note({ t: i === 1 ? 'c' : 'd' });
        c.pipes--;
        finish();
      });
      if (modes[i] === 'inherit') hide(cp, i, sock);
    }
    const stdin = cp.stdin;
    if (stdin) {
      const realWrite = stdin._write;
      const realWritev = stdin._writev;
      stdin._write = function _write(data, encoding, cb) {
        const r = realWrite.call(this, data, encoding, cb);
        ev.record(kStdin, `${key} ${bytesOf(data, encoding).toString('latin1')}`, null);
        return r;
      };
      stdin._writev = function _writev(chunks, cb) {
        const r = realWritev.call(this, chunks, cb);
        ev.record(kStdin, `${key} ${joined(chunks).toString('latin1')}`, null);
        return r;
      };
    }
    finish();
    return err;
  }

  function joined(chunks) {
    return Buffer.concat(chunks.map((x) => bytesOf(x.chunk !== undefined ? x.chunk : x, x.encoding)));
  }

  // An 'inherit' slot given a pipe: the program sees null, as it would; the bytes go to the
  // parent's own stream.
  function hide(cp, i, sock) {
    if (i === 1) cp.stdout = null;
    else cp.stderr = null;
    cp.stdio[i] = null;
    // The real child would hold no pipe of this process: this one must not keep the event
    // loop alive either (esbuild's service child, unref'd, inherits stderr).
    sock.unref();
    const out = i === 1 ? process.stdout : process.stderr;
    sock.on('data', (b) => {
      try {
        out.write(b);
      } catch (_) {
        // The parent's stream is gone: so would the child's output have been.
      }
    });
  }

  // ---- replay (async) ----

  function replayAsync(cp, options, modes, rec) {
    const file = options.file;
    const key = ev.opKey(`child ${file}`);
    const realHandle = cp._handle;
    const fake = {
      pid: rec.p === null ? undefined : rec.p,
      onexit: realHandle.onexit,
      spawn: () => rec.e,
      kill(sig) {
        const r = ev.replay(kKill, `${key} ${sig}`);
        return r === ev.LIVE ? 0 : r;
      },
      ref() {},
      unref() {},
      close() {},
      hasRef: () => false,
    };
    cp._handle = fake;
    const given = options.stdio;
    options.stdio = modes.map(() => 'ignore');
    let err;
    try {
      err = realSpawn.call(cp, options);
    } finally {
      options.stdio = given;
    }
    {
      // Node's maybeClose: 'close' once 'exit' and every readable stream's 'close' came.
      const closed = () => {
        cp._closesGot++;
        if (cp._closesGot === cp._closesNeeded) cp.emit('close', cp.exitCode, cp.signalCode);
      };
      const socks = [null, null, null];
      for (let i = 0; i < 3; i++) {
        if (modes[i] === 'ignore' || (modes[i] === 'inherit' && i === 0)) continue;
        const sock = new net.Socket({ readable: i > 0, writable: i === 0 });
        sock._read = () => {};
        sock.ref = () => sock;
        sock.unref = () => sock;
        socks[i] = sock;
        if (i === 0) {
          sock._write = (data, encoding, cb) => {
            checked(`${key} ${bytesOf(data, encoding).toString('latin1')}`, cb);
          };
          sock._writev = (chunks, cb) => {
            checked(`${key} ${joined(chunks).toString('latin1')}`, cb);
          };
          sock._final = (cb) => cb();
        } else {
          cp._closesNeeded++;
        }
        if (modes[i] === 'inherit') {
          hide(cp, i, sock);
        } else {
          cp.stdio[i] = sock;
          if (i === 0) cp.stdin = sock;
          else if (i === 1) cp.stdout = sock;
          else cp.stderr = sock;
        }
      }
      // Ends where record stopped noting: exited and every readable pipe at EOF.
      follow(key, cp, socks, closed, { exited: false, pipes: socks.filter((x, i) => i > 0 && x !== null).length });
    }
    return err;
  }

  function checked(input, cb) {
    if (ev.replay(kStdin, input) === ev.LIVE) {
      cb(new Error('replay-node: a replayed child process cannot go live'));
      return;
    }
    cb();
  }

  function follow(key, cp, socks, closed, st) {
    ev.await(key, (v) => {
      if (v === ev.LIVE) {
        // No child to go on with: what the program waits for ends here, loudly.
        const e = new Error('replay-node: a replayed child process cannot go live');
        for (const s of socks) if (s && !s.destroyed) s.destroy(e);
        return;
      }
      switch (v.t) {
        case 'a':
        case 'b':
          socks[v.t === 'a' ? 1 : 2].push(v.b);
          break;
        case 'A':
        case 'B':
          socks[v.t === 'A' ? 1 : 2].push(null);
          break;
        case 'c':
        case 'd': {
          // The recorded stream closed here: its end, and Node's count towards 'close'.
          const s = socks[v.t === 'c' ? 1 : 2];
          if (s.readableEnded && !s.destroyed) s.destroy();
          st.pipes--;
          closed();
          break;
        }
        case 'x':
          st.exited = true;
          if (cp._handle) cp._handle.onexit(v.c, v.s);
          break;
        default:
          // 'z': still running when the recorded parent exited.
          return;
      }
      if (!st.exited || st.pipes > 0) follow(key, cp, socks, closed, st);
    });
  }

  // ---- live children: their exit ----

  // A child that runs live (one the process tree replays from its own log, a daemon) exits
  // when it exits; when its 'exit' reaches the program, relative to the program's timers and
  // I/O, is input all the same (jest's parent ran its summary after its workers' exits in
  // replay, before them in the recording). Record notes the exit as a completion of
  // `exit FILE#n` (tag 'x', code and signal), or 'z' for a child still running when the
  // process exited. Replay waits from the spawn on: at the exit's recorded turn it delivers
  // the live exit (with the recorded code and signal), holding every later completion until
  // the child has really exited; a 'z' one is never delivered, as it never was.
  const liveOpen = new Set();
  function followExit(cp, file) {
    const handle = cp._handle;
    if (!handle || typeof handle.onexit !== 'function') return;
    const key = ev.opKey(`exit ${file}`);
    const realExit = handle.onexit;
    if (!replaying) {
      const c = { done: false };
      const note = (v) => {
        if (c.done || !ev.on) return;
        c.done = true;
        liveOpen.delete(c);
        try {
          ev.done(key, v);
        } catch (e) {
          ev.fail('recording a child process', e);
        }
      };
      c.end = () => note({ t: 'z' });
      liveOpen.add(c);
      handle.onexit = function onexit(code, signal) {
        note({ t: 'x', c: code, s: signal || null });
        return realExit.call(this, code, signal);
      };
      return;
    }
    let exited = null; // the live exit's arguments, once it came
    let turn = null; // the recorded exit, once its turn came first
    let through = false; // replay went live: exits pass
    handle.onexit = function onexit(code, signal) {
      if (through || !ev.on) return realExit.call(this, code, signal);
      exited = [code, signal];
      if (turn !== null) {
        const r = turn;
        turn = null;
        try {
          realExit.call(this, r.c, r.s);
        } finally {
          ev.release();
        }
      }
    };
    ev.await(
      key,
      (r) => {
        if (r === ev.LIVE || r === null || typeof r !== 'object') {
          through = true;
          if (exited !== null) realExit.call(handle, ...exited);
          return;
        }
        if (r.t !== 'x') return;
        if (exited !== null) {
          realExit.call(handle, r.c, r.s);
          return;
        }
        turn = r;
        ev.hold();
      },
      false,
    );
  }

  // ---- live children: their pipes ----

  // What a live child writes to its stdout/stderr pipes reaches the program in an order,
  // relative to its other completions (another child's output), that is timing: replayed,
  // the children run again (from their own logs) at their own pace, and `concurrently`'s
  // prefixed lines came in another order every replay. Record notes each chunk the parent
  // got and each EOF as completions of `pipes FILE#n` ('a'/'b' with the bytes, 'A'/'B'), and
  // 'z' for pipes still open when the process exited. Replay gives the program the recorded
  // chunks at their recorded turns; the live child's bytes are dropped (its own replay
  // checks what it writes) and the stream ends at the recorded EOF's turn once the live
  // pipe has ended too (holding later completions until then), so the child never writes
  // into a closed pipe.
  function followPipes(cp, file) {
    const socks = [1, 2].map((i) => (cp.stdio && cp.stdio[i]) || null);
    if (socks[0] === null && socks[1] === null) return;
    const key = ev.opKey(`pipes ${file}`);
    if (!replaying) {
      const c = { done: false, open: 0 };
      const note = (v) => {
        if (c.done || !ev.on) return;
        try {
          ev.done(key, v);
        } catch (e) {
          ev.fail('recording a child process', e);
        }
      };
      c.end = () => {
        note({ t: 'z' });
        c.done = true;
      };
      liveOpen.add(c);
      socks.forEach((sock, j) => {
        if (sock === null) return;
        c.open++;
        const tag = j === 0 ? 'a' : 'b';
        const realPush = sock.push;
        sock.push = function push(chunk, encoding) {
          if (chunk !== null) {
            note({ t: tag, b: bytesOf(chunk, encoding) });
          } else {
            note({ t: tag.toUpperCase() });
            if (--c.open === 0) {
              c.done = true;
              liveOpen.delete(c);
            }
          }
          return realPush.call(this, chunk, encoding);
        };
      });
      return;
    }
    const st = socks.map((sock) => sock && { sock, realPush: sock.push, liveEnded: false, recEnded: false });
    let through = false; // replay went live: the live bytes pass
    let waiting = -1; // the pipe whose recorded EOF came before its live one (held)
    st.forEach((x, j) => {
      if (x === null) return;
      x.sock.push = function push(chunk, encoding) {
        if (through || !ev.on) return x.realPush.call(this, chunk, encoding);
        // The live bytes: the recorded ones stand for them.
        if (chunk !== null) return true;
        x.liveEnded = true;
        if (waiting === j) {
          waiting = -1;
          try {
            x.realPush.call(x.sock, null);
          } finally {
            ev.release();
          }
        }
        return false;
      };
    });
    const open = () => st.some((x) => x !== null && !x.recEnded);
    const next = () =>
      ev.await(
        key,
        (v) => {
          if (v === ev.LIVE || v === null || typeof v !== 'object') {
            through = true;
            for (const x of st) if (x !== null && x.liveEnded && !x.recEnded) x.realPush.call(x.sock, null);
            return;
          }
          const j = 'aA'.includes(v.t) ? 0 : 'bB'.includes(v.t) ? 1 : -1;
          // 'z': the recorded process exited with the pipes open; nothing more comes.
          if (j < 0 || st[j] === null) return;
          const x = st[j];
          if (v.t === 'a' || v.t === 'b') {
            x.realPush.call(x.sock, v.b);
          } else {
            x.recEnded = true;
            if (x.liveEnded) {
              x.realPush.call(x.sock, null);
            } else {
              waiting = j;
              ev.hold();
            }
          }
          if (open()) next();
        },
        false,
      );
    next();
  }

  // ---- the hooks ----

  const spawn = function spawn(options) {
    if (!ev.on || ev.busy || options == null || typeof options !== 'object' || typeof options.file !== 'string') {
      return realSpawn.call(this, options);
    }
    let modes = null;
    let how = 'live';
    let own = false;
    try {
      modes = slots(options.stdio);
      // A detached child writing to an inherited stdout/stderr is meant to outlive the parent
      // (a daemon): through a pipe of the parent's it would die of SIGPIPE at its first write
      // after the parent exited. It runs live, writing where it would.
      const daemon = options.detached && modes !== null && (modes[1] === 'inherit' || modes[2] === 'inherit');
      own = recordedByTree(options.file, options.args, options.envPairs, options.cwd);
      if (modes !== null && !daemon && !own) how = 'parent';
    } catch (e) {
      ev.fail('a child process', e);
      return realSpawn.call(this, options);
    }
    if (how === 'live') {
      // Checked in replay all the same: another command is a divergence. Its pid is
      // recorded: in replay the child (running again, under its own log when it is a
      // recorded process) shows the recorded pid, which the program may pass on (c8's
      // watchdog gets it as an argument) or print; process.kill maps it back.
      const input = describe('live', options.file, options.args);
      if (replaying) {
        const rec = ev.replay(kSpawn, input);
        ranLive(own);
        const r = realSpawn.call(this, options);
        followExit(this, options.file);
        followPipes(this, options.file);
        ipc.watchChild(ev, this);
        if (rec !== null && typeof rec === 'object' && typeof rec.p === 'number' && typeof this.pid === 'number') {
          const live = this.pid;
          childPids.set(rec.p, live);
          this.pid = rec.p;
          this.once('exit', () => {
            if (childPids.get(rec.p) === live) childPids.delete(rec.p);
          });
        }
        return r;
      }
      let r;
      try {
        r = realSpawn.call(this, options);
      } catch (e) {
        ev.record(kSpawn, input, null);
        throw e;
      }
      ev.record(kSpawn, input, typeof this.pid === 'number' ? { p: this.pid } : null);
      followExit(this, options.file);
      followPipes(this, options.file);
      ipc.watchChild(ev, this);
      return r;
    }
    if (!replaying) {
      try {
        return recordAsync(this, options, modes);
      } catch (e) {
        ev.fail('recording a child process', e);
        throw e;
      }
    }
    const rec = ev.replay(kSpawn, describe('parent', options.file, options.args));
    if (rec === ev.LIVE || rec === null || typeof rec !== 'object') {
      ranLive();
      return realSpawn.call(this, options);
    }
    notRun();
    return replayAsync(this, options, modes, rec);
  };
  Object.defineProperty(spawn, 'length', { value: realSpawn.length });

  // ---- sync ----

  let binding = null;
  let realSync = null;
  try {
    binding = process.binding('spawn_sync');
    realSync = binding.spawn;
  } catch (_) {
    // Without the binding, synchronous children run live, uncounted.
  }
  const syncHook = function spawn(options) {
    if (!ev.on || ev.busy || options == null || typeof options.file !== 'string') {
      return Reflect.apply(realSync, this, arguments);
    }
    const stdio = Array.isArray(options.stdio) ? options.stdio : [];
    const modes = [];
    let ok = true;
    for (let i = 0; i < Math.max(3, stdio.length); i++) {
      const s = stdio[i] || { type: 'ignore' };
      if (s.type === 'pipe' || s.type === 'overlapped') modes.push('pipe');
      else if (s.type === 'ignore') modes.push('ignore');
      else if ((s.type === 'inherit' || (s.type === 'fd' && s.fd === i)) && i < 3) modes.push('inherit');
      else ok = false;
    }
    let how = 'live';
    let own = false;
    try {
      own = recordedByTree(options.file, options.args, options.envPairs, options.cwd);
      if (ok && !own) how = 'parent';
    } catch (e) {
      ev.fail('a child process', e);
      return Reflect.apply(realSync, this, arguments);
    }
    const stdinBytes = stdio[0] && stdio[0].input != null ? bytesOf(stdio[0].input).toString('latin1') : '';
    const input = `${describe(how, options.file, options.args)} ${stdinBytes}`;
    if (how === 'live') {
      if (replaying) {
        ev.replay(kSync, input);
        ranLive(own);
      } else {
        ev.record(kSync, input, null);
      }
      return Reflect.apply(realSync, this, arguments);
    }
    const tee = (r) => {
      for (let i = 1; i < 3; i++) {
        if (modes[i] !== 'inherit' || !r.output || !r.output[i]) continue;
        try {
          (i === 1 ? process.stdout : process.stderr).write(r.output[i]);
        } catch (_) {
          // As for a child writing to a closed fd.
        }
        r.output[i] = null;
      }
      return r;
    };
    if (replaying) {
      const rec = ev.replay(kSync, input);
      if (rec === ev.LIVE || rec === null || typeof rec !== 'object') {
        ranLive();
        return Reflect.apply(realSync, this, arguments);
      }
      notRun();
      return tee(rec);
    }
    const was = options.stdio;
    options.stdio = stdio.map((s, i) =>
      modes[i] === 'inherit' && i > 0 ? { type: 'pipe', readable: false, writable: true } : s,
    );
    let r;
    try {
      r = ev.live(() => Reflect.apply(realSync, this, [options]));
    } finally {
      options.stdio = was;
    }
    ev.record(kSync, input, r);
    return tee(r);
  };

  P.spawn = spawn;
  if (typeof realSync === 'function') binding.spawn = syncHook;

  if (!replaying) {
    // Children still running at exit (an unref'd service child): replay stops feeding them there.
    process.on('exit', () => {
      if (!ev.on) return;
      for (const c of open) c.end();
      open.clear();
      for (const c of liveOpen) c.end();
    });
  }

  ev.onDisable(() => {
    if (P.spawn === spawn) P.spawn = realSpawn;
    if (binding !== null && binding.spawn === syncHook) binding.spawn = realSync;
  });
}

module.exports = { install, recordedByTree, slots };
