'use strict';
// Timers and immediates are completions (node-addon/lib/timers.js): in replay they fire in
// their recorded place among I/O completions, without waiting the real time.
const test = require('node:test');
const assert = require('node:assert');
const http = require('http');
const { tmpdir, runNode, runNodeAsync, script } = require('./harness.js');

// Three requests whose responses come after the server's delays race two timers; the
// program prints what happens in the order it happens.
const RACE = `
const http = require('http');
const port = process.argv[2];
const order = [];
const say = (what) => { order.push(what); console.log(what, Date.now() - t0 >= 0); };
const t0 = Date.now();
let left = 5;
const end = () => { if (--left === 0) console.log('order', order.join(' ')); };
for (const name of (process.argv[3] || 'fast,mid,slow').split(',')) {
  http.get({ host: '127.0.0.1', port, path: '/' + name, agent: false }, (res) => {
    let body = '';
    res.setEncoding('utf8');
    res.on('data', (d) => (body += d));
    res.on('end', () => { say(body); end(); });
  });
}
setTimeout(() => { say('timer45'); end(); }, 45);
const t95 = setTimeout(() => { say('timer95'); end(); }, 95);
// Never fires in the recording (cleared), nor does an unref'd one the run ends before.
const never = setTimeout(() => console.log('cleared timer fired'), 20);
clearTimeout(never);
setTimeout(() => console.log('unref timer fired'), 60000).unref();
setImmediate((a) => say('immediate ' + a), 'x');
`;

function startServer(delays, port = 0) {
  const server = http.createServer((req, res) => {
    const name = req.url.slice(1);
    setTimeout(() => res.end(name), delays[name]);
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}

async function recordRace(delays) {
  const dir = tmpdir('timers-race');
  const app = script(dir, 'race.js', RACE);
  const log = `${dir}/race.replay`;
  const server = await startServer(delays);
  const port = String(server.address().port);
  const rec = await runNodeAsync('record', log, app, { args: [port] });
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  return { dir, app, log, port, rec };
}

test('http completions racing timers replay in the recorded order with the server stopped', async () => {
  const { app, log, port, rec } = await recordRace({ fast: 5, mid: 70, slow: 130 });
  assert.strictEqual(rec.code, 0, rec.stderr);
  const order = rec.stdout.match(/^order (.*)$/m)[1];
  // The recorded order is whatever this machine's timing made (under load the timers may
  // land elsewhere); replay must give back exactly that one.
  assert.deepStrictEqual(order.split(' ').sort(), ['fast', 'immediate', 'x', 'mid', 'slow', 'timer45', 'timer95'].sort());
  assert.doesNotMatch(rec.stdout, /fired/);
  console.log(`recorded: ${order}`);

  // Served from the log: a stopped server, and a live run's order would be timers first.
  const rep = runNode('replay', log, app, { args: [port] });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stdout, rec.stdout);
  assert.strictEqual(rep.stderr, '');
});

test('the recorded order wins over the live one: responses that now come at once', async () => {
  // Recorded with slow responses: both timers first. Replayed against a server answering at
  // once (a live run would print the responses first).
  const { app, log, port, rec } = await recordRace({ fast: 150, mid: 200, slow: 250 });
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.match(rec.stdout, /^order immediate x timer45 timer95 /m);
  // The same port: the requests are the recorded ones.
  const server = await startServer({ fast: 0, mid: 0, slow: 0 }, Number(port));
  try {
    const live = await runNodeAsync(null, null, app, { args: [port] });
    assert.match(live.stdout, /^order immediate x (fast|mid|slow) /m, 'the changed world must show without replay');
    const rep = await runNodeAsync('replay', log, app, { args: [port] });
    assert.strictEqual(rep.code, 0, rep.stderr);
    assert.strictEqual(rep.stdout, rec.stdout);
    assert.strictEqual(rep.stderr, '');
  } finally {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
});

// A program whose timers are made in another order than recorded: the firing the recording
// has next belongs to a timer the program did not make; loud, not a hang or another order.
const ORDER = `
const a = () => console.log('a');
const b = () => console.log('b');
const c = () => console.log('c');
const how = process.argv[2];
if (how === 'swap') {
  setTimeout(b, 50);
  setTimeout(a, 10);
} else {
  setTimeout(a, 10);
  if (how !== 'fewer') setTimeout(b, 50);
  if (how === 'more') setTimeout(c, 100);
}
`;

test('timers made in another order, or more or fewer timers than recorded, are a divergence', () => {
  const dir = tmpdir('timers-order');
  const app = script(dir, 'order.js', ORDER);
  const log = `${dir}/order.replay`;
  const rec = runNode('record', log, app, { args: ['same'] });
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stdout, 'a\nb\n');
  const rep = runNode('replay', log, app, { args: ['same'] });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stdout, 'a\nb\n');
  for (const how of ['swap', 'fewer', 'more']) {
    // swap: the first timer is now b's, and fires first as recorded: b is printed where the
    // recording printed a. fewer: the second firing is left over at exit. more: the third
    // timer waits for a firing the recording does not have.
    const r = runNode('replay', log, app, { args: [how], env: { REPLAY_TIMEOUT: '2s' } });
    assert.strictEqual(r.code, 86, `${how}: ${r.stderr}`);
    assert.match(r.stderr, /DIVERGENCE/, how);
    assert.doesNotMatch(r.stdout, /^b\na\n/, how);
  }
});

// Sleeps 10 x 1 s and more (setTimeout, timers/promises and its interval iterator,
// util.promisify, an interval, setImmediate in between) and prints clock-derived values:
// replay prints the same without the wait.
const SLEEPY = `
const { setTimeout: sleep, setImmediate: tick } = require('timers/promises');
const util = require('util');
const psleep = util.promisify(setTimeout);
const t0 = Date.now();
(async () => {
  for (let i = 0; i < 4; i++) {
    const v = await sleep(1000, 'v' + i);
    console.log('sleep', i, v, Math.round((Date.now() - t0) / 1000));
  }
  for (let i = 0; i < 3; i++) {
    await psleep(1000);
    await tick();
    console.log('promisified', i, Math.round((Date.now() - t0) / 1000));
  }
  await new Promise((resolve) => {
    let n = 0;
    const iv = setInterval(() => {
      console.log('interval', ++n, Math.round((Date.now() - t0) / 1000));
      if (n === 2) iv.refresh();
      if (n === 3) { clearInterval(iv); resolve(); }
    }, 1000);
  });
  // timers/promises' interval iterator: two ticks, then one ended by its signal.
  const every = require('timers/promises').setInterval;
  let k = 0;
  for await (const v of every(500, 'tick')) {
    console.log(v, ++k, Math.round((Date.now() - t0) / 100));
    if (k === 2) break;
  }
  const stop = new AbortController();
  setTimeout(() => stop.abort(), 700);
  try {
    for await (const v of every(500, 'tock', { signal: stop.signal })) console.log(v, Math.round((Date.now() - t0) / 100));
  } catch (e) {
    console.log('interval', e.name);
  }
  // A timeout whose signal aborts it: never fires, the promise rejects as recorded.
  const ac = new AbortController();
  const p = sleep(5000, 'never', { signal: ac.signal }).catch((e) => console.log('aborted', e.name, e.code));
  setTimeout(() => ac.abort(), 1);
  await p;
  console.log('total', Math.round((Date.now() - t0) / 1000));
})();
`;

test('a program sleeping 10 s replays without sleeping, with the same output', () => {
  const dir = tmpdir('timers-sleep');
  const app = script(dir, 'sleepy.js', SLEEPY);
  const log = `${dir}/sleepy.replay`;
  const rec = runNode('record', log, app);
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.match(rec.stdout, /^sleep 0 v0 1\n/);
  assert.match(rec.stdout, /\ntick 2 \d+\ntock \d+\ninterval AbortError\naborted AbortError ABORT_ERR\ntotal 1\d\n$/);
  const started = process.hrtime.bigint();
  const rep = runNode('replay', log, app);
  const secs = Number(process.hrtime.bigint() - started) / 1e9;
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stderr, '');
  assert.strictEqual(rep.stdout, rec.stdout);
  // Not a timing figure: a replay that slept would take the recording's 10 s at least.
  assert.ok(secs < 8, `replay took ${secs} s`);
});

// Clearing the only other timer inside a callback, then making an immediate (what mocha
// does between tests: its test timeout is cleared, the next test starts from setImmediate):
// replay must not end the program there. Unref'd timers and an unref'd interval that fire
// while something else keeps the process alive fire in replay too.
const CLEARED = `
const guard = setTimeout(() => console.log('guard fired'), 5000);
setTimeout(() => {
  clearTimeout(guard);
  setImmediate(() => {
    console.log('after clear');
    const weak = setInterval(() => console.log('weak interval'), 30);
    weak.unref();
    console.log('hasRef', weak.hasRef(), guard.hasRef());
    setTimeout(() => { clearInterval(weak); console.log('end'); }, 100);
  });
}, 10);
`;

test('a cleared last timer, then an immediate; unref\'d intervals firing meanwhile', () => {
  const dir = tmpdir('timers-cleared');
  const app = script(dir, 'cleared.js', CLEARED);
  const log = `${dir}/cleared.replay`;
  const rec = runNode('record', log, app);
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.match(rec.stdout, /^after clear\nhasRef false true\n(weak interval\n)+end\n$/);
  const rep = runNode('replay', log, app);
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stderr, '');
  assert.strictEqual(rep.stdout, rec.stdout);
});

// AbortSignal.timeout (a fetch's usual deadline) aborts at its recorded place among the
// program's timers; live, its real-time timer would not fire before the compressed ones.
const DEADLINE = `
const s = AbortSignal.timeout(200);
s.addEventListener('abort', () => console.log('aborted', s.reason.name, s.reason.code, s.reason instanceof DOMException));
setTimeout(() => console.log('t100', s.aborted), 100);
setTimeout(() => console.log('t300', s.aborted), 300);
const late = AbortSignal.timeout(60000);
late.onabort = () => console.log('never: unref\\'d, the program ends first');
`;

test('AbortSignal.timeout fires at its recorded place', () => {
  const dir = tmpdir('timers-abort');
  const app = script(dir, 'deadline.js', DEADLINE);
  const log = `${dir}/deadline.replay`;
  const rec = runNode('record', log, app);
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stdout, 't100 false\naborted TimeoutError 23 true\nt300 true\n');
  const rep = runNode('replay', log, app);
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stderr, '');
  assert.strictEqual(rep.stdout, rec.stdout);
});

// A request timeout is Node's internal socket timer, which stays live: when it fired in the
// recording, replay cannot put it in its place. That must be loud (a divergence whose report
// says a timer ran live), never a quiet other order.
const HANG = `
const http = require('http');
const req = http.get({ host: '127.0.0.1', port: process.argv[2], path: '/hang', agent: false }, () => console.log('response'));
req.setTimeout(300, () => { console.log('request timeout'); req.destroy(new Error('gave up')); });
req.on('error', (e) => console.log('error', e.message));
setTimeout(() => console.log('t100'), 100);
`;

test('a request timeout that fired in the recording is a divergence naming a live timer', async () => {
  const dir = tmpdir('timers-hang');
  const app = script(dir, 'hang.js', HANG);
  const log = `${dir}/hang.replay`;
  const server = http.createServer(() => {});
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const port = String(server.address().port);
  const rec = await runNodeAsync('record', log, app, { args: [port] });
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stdout, 't100\nrequest timeout\nerror gave up\n');
  const rep = runNode('replay', log, app, { args: [port] });
  assert.strictEqual(rep.code, 86, rep.stderr);
  assert.match(rep.stderr, /DIVERGENCE/);
  assert.match(rep.stderr, /ran live by rule in this replay: \d+ timer/);
});

// lru-cache (under every npx run) resets a cached clock with an unref'd 1 ms timer. The
// recorded run was kept alive a moment longer (a FileHandle closing) and the timer fired;
// the replay's loop ran dry before it: the firing comes at the drained loop instead of being
// left over at exit.
const UNREF_AT_END = `
const fs = require('fs');
fs.promises.readFile(__filename).then(() => {
  setTimeout(() => console.log('unref timer fired'), 1).unref();
  const t = process.hrtime.bigint();
  while (process.hrtime.bigint() - t < 3000000n);
  console.log('done');
});
`;

test('an unref\'d timer that fired in the recording while the loop drained fires in replay', () => {
  const dir = tmpdir('timers-unref-end');
  const app = script(dir, 'unref.js', UNREF_AT_END);
  const log = `${dir}/unref.replay`;
  const rec = runNode('record', log, app);
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stdout, 'done\nunref timer fired\n');
  const rep = runNode('replay', log, app);
  assert.strictEqual(rep.stderr, '');
  assert.strictEqual(rep.code, 0);
  assert.strictEqual(rep.stdout, rec.stdout);
});
