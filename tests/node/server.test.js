'use strict';
// A server's accepted connections and the signal that stopped it are recorded: a server
// recorded while clients called it replays with the clients gone, serves the recorded
// requests in their recorded order (the files it reads changed meanwhile), writes the same
// responses, and ends where the recording ended: at the same signal, through the program's
// handler or the default action.
const { test } = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const http = require('http');
const { spawn } = require('child_process');
const { PKG, tmpdir, runNode, script, cleanEnv } = require('./harness.js');

const SERVER = `
const http = require('http');
const fs = require('fs');
let n = 0;
const server = http.createServer((req, res) => {
  n++;
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    const file = fs.readFileSync('data.txt', 'utf8').trim();
    console.log('#' + n, req.method, req.url, 'body=' + body, 'file=' + file, 'from', req.socket.remoteAddress);
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ n, file, t: Date.now(), r: Math.random() }));
  });
});
server.listen(0, () => console.log('port', server.address().port));
if (process.argv[2] === 'handler') {
  process.on('SIGTERM', () => server.close(() => console.log('closed after', n)));
}
`;

// Starts `app` recording, calls it as a client (two requests on one keep-alive connection, a
// POST on another), then sends `signal`. Resolves to what the recording printed, its exit.
function recordServed(app, log, args, signal) {
  const env = cleanEnv({});
  env.REPLAY_MODE = 'record';
  env.REPLAY_LOG = log;
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, ['--require', PKG, app, ...args], {
      env,
      cwd: require('path').dirname(app),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let called = false;
    const timer = setTimeout(() => c.kill('SIGKILL'), 30000);
    c.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    c.stdout.setEncoding('utf8').on('data', async (d) => {
      stdout += d;
      const m = /port (\d+)/.exec(stdout);
      if (!m || called) return;
      called = true;
      try {
        const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
        const get = (p) =>
          new Promise((ok, fail) => {
            http.get({ port: Number(m[1]), path: p, agent }, (res) => {
              let b = '';
              res.on('data', (x) => (b += x));
              res.on('end', () => ok(b));
            }).on('error', fail);
          });
        const answers = [await get('/a'), await get('/b?x=1')];
        agent.destroy();
        answers.push(
          await new Promise((ok, fail) => {
            const req = http.request({ port: Number(m[1]), path: '/post', method: 'POST' }, (res) => {
              let b = '';
              res.on('data', (x) => (b += x));
              res.on('end', () => ok(b));
            });
            req.on('error', fail);
            req.end('hello=1');
          }),
        );
        c.answers = answers;
        setTimeout(() => c.kill(signal), 100);
      } catch (e) {
        c.kill('SIGKILL');
        reject(e);
      }
    });
    c.on('close', (code, sig) => {
      clearTimeout(timer);
      resolve({ code, signal: sig, stdout, stderr, answers: c.answers });
    });
  });
}

for (const [how, args, signal] of [
  ['its SIGTERM handler', ['handler'], 'SIGTERM'],
  ['the default action of SIGINT', [], 'SIGINT'],
]) {
  test(`a server replays its recorded requests with the clients gone and ends at ${how}`, async () => {
    const d = tmpdir('server');
    const app = script(d, 'server.js', SERVER);
    fs.writeFileSync(`${d}/data.txt`, 'recorded\n');
    const log = `${d}/server.replay`;
    const rec = await recordServed(app, log, args, signal);
    assert.strictEqual(rec.stderr, '');
    assert.strictEqual(rec.answers.length, 3, rec.stdout);
    const lines = rec.stdout.trim().split('\n');
    assert.match(lines[1], /^#1 GET \/a body= file=recorded from /);
    assert.match(lines[3], /^#3 POST \/post body=hello=1 file=recorded /);
    if (signal === 'SIGTERM') {
      assert.strictEqual(rec.code, 0);
      assert.strictEqual(lines[4], 'closed after 3');
    } else {
      assert.strictEqual(rec.signal, 'SIGINT');
    }
    fs.writeFileSync(`${d}/data.txt`, 'changed\n');
    for (let i = 0; i < 2; i++) {
      const rep = runNode('replay', log, app, { args, timeout: 30000 });
      assert.strictEqual(rep.stderr, '');
      assert.strictEqual(rep.stdout, rec.stdout);
      assert.strictEqual(rep.code, rec.code);
      assert.strictEqual(rep.signal, rec.signal);
    }
  });
}

test('a server streaming a file into its responses replays: what it writes is checked as a byte stream', async () => {
  // createReadStream(file).pipe(res): under backpressure Node gathers the chunks into other
  // writes than a replayed socket (which has none) does, so the writes' boundaries differ
  // from run to run; their bytes do not.
  const d = tmpdir('server-stream');
  const app = script(d, 'server.js', `
const http = require('http');
const fs = require('fs');
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    const s = fs.createReadStream('big.txt');
    s.on('end', () => console.log('streamed', req.url));
    s.pipe(res);
  });
});
server.listen(0, () => console.log('port', server.address().port));
process.on('SIGTERM', () => server.close(() => console.log('closed')));
`);
  fs.writeFileSync(`${d}/big.txt`, 'x'.repeat(300000) + 'end\n');
  const log = `${d}/server.replay`;
  const rec = await recordServed(app, log, [], 'SIGTERM');
  assert.strictEqual(rec.stderr, '');
  assert.strictEqual(rec.answers.length, 3, rec.stdout);
  assert.ok(rec.answers.every((a) => a.length === 300004), rec.stdout);
  fs.writeFileSync(`${d}/big.txt`, 'changed\n');
  for (let i = 0; i < 2; i++) {
    const rep = runNode('replay', log, app, { timeout: 30000 });
    assert.strictEqual(rep.stderr, '');
    assert.strictEqual(rep.stdout, rec.stdout);
    assert.strictEqual(rep.code, rec.code);
  }
});
