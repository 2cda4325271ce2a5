'use strict';
// Crash safety: a recording killed with SIGKILL at a random moment holds every event older
// than one flush interval, even while the JS thread never yields (no timer can run); a
// SIGTERM/SIGINT the program has no handler for writes everything, and the process still
// ends by the signal as it would without replay.
const { test } = require('node:test');
const assert = require('node:assert');
const { spawn, spawnSync } = require('child_process');
const path = require('path');
const { PKG, tmpdir, script, cleanEnv, cli, runNode } = require('./harness.js');

const FLUSH_MS = 100;
const RUNS = 10;

// Prints each clock read as it happens (fs.writeSync: unbuffered). `sync`: the loop never
// returns to the event loop (it sleeps in Atomics.wait); else it sleeps with setTimeout.
const LOOP = `
const fs = require('fs');
const sync = process.argv[2] === 'sync';
const cell = new Int32Array(new SharedArrayBuffer(4));
let i = 0;
function step() {
  const t = Date.now();
  fs.writeSync(1, t + ' ' + Math.random().toFixed(6) + '\\n');
  i++;
  return 3 + (i % 7);
}
if (sync) {
  for (;;) Atomics.wait(cell, 0, 0, step());
} else {
  const again = () => setTimeout(again, step());
  again();
}
`;

// The values of the log's node.Date.now events, in order (read from a cut log too).
function recordedNows(log) {
  const r = spawnSync(cli(), ['dump', '--json', log], { encoding: 'utf8', maxBuffer: 256 << 20 });
  assert.ok(r.status === 0 || r.status === 1, `replay dump failed (${r.status}): ${r.stderr}`);
  const out = [];
  for (const line of r.stdout.split('\n')) {
    if (!line.startsWith('{')) continue;
    const e = JSON.parse(line);
    if (e.kind === 'node.Date.now') out.push(e.payload.value);
  }
  return out;
}

// What the log says the program wrote to stdout (its output.stdout events), as text.
function recordedStdout(log) {
  const r = spawnSync(cli(), ['dump', '--json', log], { encoding: 'utf8', maxBuffer: 256 << 20 });
  assert.ok(r.status === 0 || r.status === 1, `replay dump failed (${r.status}): ${r.stderr}`);
  let out = '';
  for (const line of r.stdout.split('\n')) {
    if (!line.startsWith('{')) continue;
    const e = JSON.parse(line);
    if (e.kind === 'output.stdout') out += e.payload.data;
  }
  return out;
}

// Runs the loop under record, sends `signal` after `afterMs` ms of output; resolves to
// { code, signal, printed: the times printed }.
function recordAndSignal(log, app, mode, signal, afterMs) {
  return new Promise((resolve, reject) => {
    const env = cleanEnv({ REPLAY_MODE: 'record', REPLAY_LOG: log, REPLAY_FLUSH: `${FLUSH_MS}ms` });
    const child = spawn(process.execPath, ['--require', PKG, app, mode], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let armed = false;
    child.stdout.on('data', (d) => {
      out += d;
      if (!armed) {
        armed = true;
        setTimeout(() => child.kill(signal), afterMs);
      }
    });
    child.stderr.on('data', (d) => (err += d));
    const guard = setTimeout(() => child.kill('SIGKILL'), 20000);
    child.on('error', reject);
    child.on('close', (code, sig) => {
      clearTimeout(guard);
      const printed = out.split('\n').filter((l) => l).map((l) => Number(l.split(' ')[0]));
      resolve({ code, signal: sig, printed, stdout: out, stderr: err });
    });
  });
}

for (const mode of ['sync', 'async']) {
  test(`SIGKILL at random moments loses at most one flush interval (${mode} loop)`, { skip: !cli() && 'no replay CLI built' }, async (t) => {
    const d = tmpdir('crash');
    const app = script(d, 'loop.js', LOOP);
    const losses = [];
    for (let run = 0; run < RUNS; run++) {
      const log = path.join(d, `kill-${mode}-${run}.replay`);
      const r = await recordAndSignal(log, app, mode, 'SIGKILL', 250 + Math.floor(Math.random() * 900));
      assert.strictEqual(r.signal, 'SIGKILL', r.stderr);
      assert.ok(r.printed.length > 10, `too few lines before the kill: ${r.stdout}`);
      const nows = recordedNows(log);
      assert.ok(nows.length > 0, `run ${run}: the killed recording holds no clock read`);
      // The recorded reads are the printed ones, in order (nothing made up, nothing skipped).
      assert.deepStrictEqual(nows, r.printed.slice(0, nows.length), `run ${run}`);
      const lost = r.printed[r.printed.length - 1] - nows[nows.length - 1];
      losses.push(lost);
    }
    // The printed time of the last line and the last recorded read: what the kill lost.
    const worst = Math.max(...losses);
    t.diagnostic(`ms lost per kill: ${losses.join(' ')}`);
    assert.ok(worst <= FLUSH_MS, `lost up to ${worst} ms of ${mode} events with flush=${FLUSH_MS}ms: ${losses.join(' ')}`);
  });
}

for (const [signal, status] of [['SIGTERM', 143], ['SIGINT', 130]]) {
  test(`${signal} without a handler writes the whole log and still ends the process by the signal`, { skip: !cli() && 'no replay CLI built' }, async () => {
    const d = tmpdir('signal');
    const app = script(d, 'loop.js', LOOP);
    for (let run = 0; run < RUNS; run++) {
      const mode = run % 2 === 0 ? 'sync' : 'async';
      const log = path.join(d, `${signal}-${run}.replay`);
      const r = await recordAndSignal(log, app, mode, signal, 150 + Math.floor(Math.random() * 400));
      assert.strictEqual(r.signal, signal, `run ${run}: ${r.stderr}`);
      assert.strictEqual(r.stderr, '');
      const v = spawnSync(cli(), ['verify', log], { encoding: 'utf8' });
      assert.strictEqual(v.status, 0, `run ${run}: the log is not complete: ${v.stdout}${v.stderr}`);
      // Every read the program printed before the signal is in the log, and no other: the
      // program runs on for the moment the log takes to close (its reads then are after the
      // signal, and are not recorded).
      const nows = recordedNows(log);
      assert.ok(nows.length > 0, `run ${run}: no read recorded`);
      assert.deepStrictEqual(nows, r.printed.slice(0, nows.length), `run ${run}`);
      const after = r.printed[r.printed.length - 1] - nows[nows.length - 1];
      // (About a millisecond; a loaded machine may hold the dying process longer.)
      assert.ok(after <= FLUSH_MS, `run ${run}: reads of the last ${after} ms before the signal took effect are not in the log`);
      const info = spawnSync(cli(), ['info', log], { encoding: 'utf8' });
      assert.match(info.stdout, new RegExp(`^exit:\\s+${status}$`, 'm'), info.stdout);
      if (run < 2) {
        // Replay serves every recorded read and prints what the recording printed with
        // them, then ends where the recording ended.
        // A write is recorded right after it is made: a signal between the two leaves the
        // program's last line out of the log. Replay prints exactly the log's output, and
        // stops at the first write the recording does not have.
        const recorded = recordedStdout(log);
        assert.ok(r.stdout.startsWith(recorded), `run ${run}: the log's output is not what was printed`);
        const extra = r.stdout.slice(recorded.length);
        assert.ok(extra.split('\n').length <= 2, `run ${run}: printed but not recorded: ${extra}`);
        const rep = runNode('replay', log, app, { args: [mode], timeout: 20000 });
        assert.strictEqual(rep.stdout, recorded, `run ${run}: ${rep.stderr}`);
        if (mode === 'async') {
          // The signal is the recording's last completion (lib/signals.js): the replayed
          // program's loop reaches it and the process ends by it, as recorded.
          assert.strictEqual(rep.signal, signal, `run ${run}: ${rep.stderr}`);
          assert.strictEqual(rep.stderr, '');
        } else if (rep.signal === signal) {
          // The signal struck between the log's last read and the write it fed: at that
          // write, nothing of which was recorded, replay ends the process by the signal.
          assert.strictEqual(rep.stderr, '');
        } else {
          // A loop that never yields never reaches a completion: past the log's last read
          // (the program's next call), a report.
          assert.match(rep.stderr, /ran out|ends at|recorded stdout ends here/, rep.stderr);
          assert.notStrictEqual(rep.code, 0, rep.stderr);
        }
      }
    }
  });
}

test('a program with its own SIGTERM handler keeps it, and its exit completes the log', { skip: !cli() && 'no replay CLI built' }, async () => {
  const d = tmpdir('signal-own');
  const app = script(d, 'own.js', `process.on('SIGTERM', () => { console.log('bye', Date.now()); process.exit(3); });\n${LOOP}`);
  const log = path.join(d, 'own.replay');
  const r = await recordAndSignal(log, app, 'async', 'SIGTERM', 200);
  assert.strictEqual(r.code, 3, r.stderr);
  assert.match(r.stdout, /^bye \d+$/m);
  const v = spawnSync(cli(), ['verify', log], { encoding: 'utf8' });
  assert.strictEqual(v.status, 0, v.stdout + v.stderr);
  const nows = recordedNows(log);
  const bye = Number(/^bye (\d+)$/m.exec(r.stdout)[1]);
  assert.strictEqual(nows[nows.length - 1], bye);
});

test('a signal that struck between the reads and the write they fed ends the replay there, by the signal', { skip: !cli() && 'no replay CLI built' }, async () => {
  // Each step reads the clock and a random number, computes for a while, then writes: a
  // SIGTERM with no handler mostly strikes in the middle, after the step's last recorded
  // read. Replay meets the write, which the recording never made, with the signal as the
  // next recorded completion: it ends there by the signal, as the recording did (before,
  // half of such replays reported the write as past the recorded stdout).
  const d = tmpdir('signal-mid');
  const app = script(d, 'busy.js', `
const fs = require('fs');
function step() {
  const t = Date.now();
  const r = Math.random().toFixed(6);
  let s = 0;
  for (let k = 0; k < 3e6; k++) s += k;
  fs.writeSync(1, t + ' ' + r + ' ' + s + '\\n');
  return 1;
}
const again = () => setTimeout(again, step());
again();
`);
  for (let run = 0; run < 3; run++) {
    const log = path.join(d, `mid-${run}.replay`);
    const r = await recordAndSignal(log, app, 'async', 'SIGTERM', 200 + 100 * run);
    assert.strictEqual(r.signal, 'SIGTERM', r.stderr);
    const recorded = recordedStdout(log);
    const rep = runNode('replay', log, app, { args: ['async'], timeout: 20000 });
    assert.strictEqual(rep.stderr, '', `run ${run}`);
    assert.strictEqual(rep.signal, 'SIGTERM', `run ${run}`);
    assert.strictEqual(rep.stdout, recorded, `run ${run}`);
  }
});

// A program that takes SIGUSR2 (a reload) and SIGWINCH as messages: each is a completion at
// its place among the program's timers, as SIGTERM's is.
test('SIGUSR2 and SIGWINCH a program listens for come back at their recorded place', async () => {
  const d = tmpdir('signal-usr');
  const app = script(d, 'usr.js', `
let n = 0;
let ticks = 0;
const got = (s) => {
  n++;
  console.log('got', s, n, 'after tick', ticks);
  if (n === 2) process.exit(0);
};
process.on('SIGUSR2', got);
process.on('SIGWINCH', got);
setInterval(() => ticks++, 20);
console.log('ready');
`);
  const log = path.join(d, 'usr.replay');
  const rec = await new Promise((resolve, reject) => {
    const env = cleanEnv({ REPLAY_MODE: 'record', REPLAY_LOG: log });
    const child = spawn(process.execPath, ['--require', PKG, app], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (x) => {
      if (out === '') {
        setTimeout(() => child.kill('SIGUSR2'), 150);
        setTimeout(() => child.kill('SIGWINCH'), 300);
      }
      out += x;
    });
    child.stderr.on('data', (x) => (err += x));
    const guard = setTimeout(() => child.kill('SIGKILL'), 20000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(guard);
      resolve({ code, stdout: out, stderr: err });
    });
  });
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.match(rec.stdout, /^ready\ngot SIGUSR2 1 after tick \d+\ngot SIGWINCH 2 after tick \d+\n$/);
  const rep = runNode('replay', log, app);
  assert.strictEqual(rep.stderr, '');
  assert.strictEqual(rep.code, 0);
  assert.strictEqual(rep.stdout, rec.stdout);
});
