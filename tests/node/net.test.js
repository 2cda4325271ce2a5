'use strict';
// lib/net.js: TCP client connections (http.get, http.request, parallel requests, fetch)
// recorded against a loopback server in this process, replayed after the server stopped.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const http = require('http');
const net = require('net');
const crypto = require('crypto');
const { spawnSync } = require('child_process');
const { tmpdir, runNode, runNodeAsync, script, cli, argsWarned } = require('./harness.js');

// The client: every line it prints comes from the network. argv: port, the order of the two
// parallel requests ('slow,fast'), the POST body, the bearer token.
const CLIENT = `
const http = require('http');
const [port, order, body, tokenPart] = process.argv.slice(2);
const token = 'TOKEN' + tokenPart + 'SECRET';
function get(p, headers, agent) {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: p, headers, agent }, (r) => {
      let b = '';
      r.setEncoding('utf8');
      r.on('data', (d) => (b += d));
      r.on('end', () => resolve(r.statusCode + ' ' + b + ' cookie=' + (r.headers['set-cookie'] ? 'yes' : 'no')));
    }).on('error', reject);
  });
}
(async () => {
  console.log('get', await get('/a', { authorization: 'Bearer ' + token }));
  const posted = await new Promise((resolve, reject) => {
    const q = http.request({ host: '127.0.0.1', port, path: '/post', method: 'POST' }, (r) => {
      let b = '';
      r.on('data', (d) => (b += d));
      r.on('end', () => resolve(r.statusCode + ' ' + b));
    });
    q.on('error', reject);
    q.end(body);
  });
  console.log('post', posted);
  // Parallel, on the pool's keep-alive socket and a new one (which request gets which
  // follows the order they start): the server answers /slow later, so responses arrive out
  // of request order.
  const names = order.split(',');
  const got = await Promise.all(names.map((n) => get('/' + n)));
  const byName = {};
  names.forEach((n, i) => (byName[n] = got[i]));
  for (const n of Object.keys(byName).sort()) console.log('parallel', n, byName[n]);
  const f = await fetch('http://127.0.0.1:' + port + '/fetched');
  console.log('fetch', f.status, f.headers.get('x-count'), await f.text());
  // Sequential fetches: undici's pool may alternate connections, by timing.
  for (let i = 0; i < 4; i++) {
    const g = await fetch('http://127.0.0.1:' + port + '/seq');
    console.log('seq', await g.text());
  }
})().catch((e) => console.log('ERR', e.code, e.message));
`;

// A server whose every answer differs from run to run (a counter and a random number).
function startServer() {
  let n = 0;
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      n += 1;
      const count = n;
      setTimeout(() => {
        res.setHeader('Set-Cookie', 'sid=COOKIESECRET' + count);
        res.setHeader('x-count', String(count));
        res.setHeader('X-Session-Token', 'SESSIONSECRET' + count);
        res.end(`${req.method} ${req.url} body=${body} n=${count} r=${Math.random()}`);
      }, req.url === '/slow' ? 80 : 0);
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

const close = (server) => new Promise((resolve) => server.close(resolve));

async function recorded(name, env) {
  const dir = tmpdir(name);
  const app = script(dir, 'client.js', CLIENT);
  const log = `${dir}/app.replay`;
  const server = await startServer();
  const port = String(server.address().port);
  const rec = await runNodeAsync('record', log, app, { args: [port, 'slow,fast', 'hello body', '1234'], env });
  server.closeAllConnections();
  await close(server);
  return { dir, app, log, port, rec };
}

test('http.get, POST, parallel requests and fetch replay with the server stopped', async () => {
  const { app, log, port, rec } = await recorded('net-http');
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.match(rec.stdout, /^get 200 GET \/a body= n=1 r=0\.\d+ cookie=yes\npost 200 POST \/post body=hello body n=2 /);
  assert.match(rec.stdout, /parallel fast 200 GET \/fast .*\nparallel slow 200 GET \/slow .*\nfetch 200 5 GET \/fetched/);
  assert.strictEqual(rec.stdout.match(/^seq GET \/seq body= n=\d+ /gm).length, 4);
  assert.doesNotMatch(rec.stdout, /ERR/);

  // The server is gone (a live request would fail with ECONNREFUSED); the parallel requests
  // start in the other order and still get their own responses.
  const rep = runNode('replay', log, app, { args: [port, 'fast,slow', 'hello body', '1234'] });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(argsWarned(rep.stderr), '');
  assert.strictEqual(rep.stdout, rec.stdout);

  // Another request body than recorded: a divergence at that write.
  const body = runNode('replay', log, app, { args: [port, 'slow,fast', 'other body', '1234'] });
  assert.strictEqual(body.code, 86, body.stderr);
  assert.match(body.stderr, /DIVERGENCE/);
  assert.match(body.stderr, /POST http:\/\/127\.0\.0\.1:\d+\/post/);
});

test('secret headers are not in the log, and replay checks them by digest', async () => {
  // REPLAY_REDACT adds header names to the built-in ones.
  const env = { REPLAY_REDACT: 'x-session-token, x-other' };
  const { app, log, port, rec } = await recorded('net-secret', env);
  assert.strictEqual(rec.code, 0, rec.stderr);
  const raw = fs.readFileSync(log);
  for (const secret of ['TOKEN1234SECRET', 'COOKIESECRET', 'SESSIONSECRET']) assert.ok(!raw.includes(secret), secret);
  const bin = cli();
  if (bin) {
    // The log is compressed: read what it holds through the CLI's dump.
    const dump = spawnSync(bin, ['dump', '--json', log], { encoding: 'utf8', maxBuffer: 64 << 20 });
    assert.strictEqual(dump.status, 0, dump.stderr);
    assert.match(dump.stdout, /GET \/a body= n=1/); // the response bytes are there...
    assert.match(dump.stdout, /Set-Cookie: sid=redacted-hmac-[0-9a-f]{8}-[0-9a-f]{16}\b/);
    assert.match(dump.stdout, /X-Session-Token: \[redacted hmac:[0-9a-f]{8}:[0-9a-f]{16}\]/);
    assert.doesNotMatch(dump.stdout, /TOKEN1234SECRET|COOKIESECRET|SESSIONSECRET/); // ...the secrets not
  }
  const same = runNode('replay', log, app, { args: [port, 'slow,fast', 'hello body', '1234'], env });
  assert.strictEqual(same.code, 0, same.stderr);
  assert.strictEqual(same.stdout, rec.stdout);
  // Another token than recorded: the request differs, so does its digest.
  const other = runNode('replay', log, app, { args: [port, 'slow,fast', 'hello body', '9999'], env });
  assert.strictEqual(other.code, 86, other.stderr);
  assert.match(other.stderr, /GET http:\/\/127\.0\.0\.1:\d+\/a/);
});

test('a redacted value cannot be guessed from the log; replay with the key checks it, without it says so once', { skip: !cli() && 'no replay CLI built' }, async () => {
  const keyA = tmpdir('config-a');
  const keyB = tmpdir('config-b');
  const env = { REPLAY_REDACT: 'x-pin', XDG_CONFIG_HOME: keyA };
  const dir = tmpdir('net-pin');
  const app = script(
    dir,
    'pin.js',
    `const http = require('http');
     const [port, pin] = process.argv.slice(2);
     http.get({ host: '127.0.0.1', port, path: '/p', headers: { 'x-pin': pin } }, (r) => {
       let b = ''; r.on('data', (d) => (b += d)); r.on('end', () => console.log(r.statusCode, b));
     }).on('error', (e) => console.log('ERR', e.code));`,
  );
  const log = `${dir}/app.replay`;
  const server = await startServer();
  const port = String(server.address().port);
  const rec = await runNodeAsync('record', log, app, { args: [port, '4711'], env });
  server.closeAllConnections();
  await close(server);
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stderr, '');
  // The key: made at first use, 32 bytes, 0600, in the user's config dir.
  const keyFile = `${keyA}/replay/redact.key`;
  const key = fs.readFileSync(keyFile);
  assert.strictEqual(key.length, 32);
  assert.strictEqual(fs.statSync(keyFile).mode & 0o777, 0o600);
  const dump = spawnSync(cli(), ['dump', '--json', log], { encoding: 'utf8', maxBuffer: 64 << 20 });
  assert.strictEqual(dump.status, 0, dump.stderr);
  // The write is stored as a digest; the response's echo of the header is not there, so the
  // key id event is what names the key. Guessing every 4-digit pin against what the log
  // holds, by the old unkeyed digest or a keyed one without the key, finds nothing; with the
  // key, the tag is the HMAC of the value.
  const idEvent = dump.stdout.split('\n').find((l) => l.includes('node.redact.key'));
  assert.ok(idEvent, dump.stdout);
  const crypto = require('crypto');
  const id = crypto.createHmac('sha256', key).update('replay redaction key id').digest('hex').slice(0, 8);
  assert.ok(idEvent.includes(id), idEvent);
  assert.doesNotMatch(dump.stdout, /4711/);
  const sha = (v) => crypto.createHash('sha256').update(v).digest('hex').slice(0, 16);
  const noKey = (v) => crypto.createHmac('sha256', '').update(v).digest('hex').slice(0, 16);
  for (let p = 0; p < 10000; p++) {
    const v = String(p);
    assert.ok(!dump.stdout.includes(sha(v)) && !dump.stdout.includes(noKey(v)), `pin ${v} found by guessing`);
  }
  // Same key, same pin: replays; another pin: diverges at the write.
  const same = runNode('replay', log, app, { args: [port, '4711'], env });
  assert.strictEqual(same.code, 0, same.stderr);
  assert.strictEqual(same.stderr, '');
  assert.strictEqual(same.stdout, rec.stdout);
  const other = runNode('replay', log, app, { args: [port, '4712'], env });
  assert.strictEqual(other.code, 86, other.stderr);
  assert.match(other.stderr, /DIVERGENCE[\s\S]*GET http:\/\/127\.0\.0\.1:\d+\/p/);
  // Another machine (another key): replays, says once that it cannot check the redacted
  // bytes; the trade-off: another pin is not caught there.
  const envB = { REPLAY_REDACT: 'x-pin', XDG_CONFIG_HOME: keyB };
  for (const pin of ['4711', '4712']) {
    const away = runNode('replay', log, app, { args: [port, pin], env: envB });
    assert.strictEqual(away.code, 0, away.stderr);
    assert.strictEqual(away.stdout, rec.stdout);
    assert.strictEqual(away.stderr.match(/made with another key/g).length, 1, away.stderr);
  }
  // REPLAY_REDACT_KEY there: checked again.
  const keyed = { REPLAY_REDACT: 'x-pin', XDG_CONFIG_HOME: keyB };
  const log2 = `${dir}/keyed.replay`;
  const server2 = await startServer();
  const port2 = String(server2.address().port);
  const rec2 = await runNodeAsync('record', log2, app, { args: [port2, '4711'], env: { ...keyed, REPLAY_REDACT_KEY: 'k1' } });
  server2.closeAllConnections();
  await close(server2);
  assert.strictEqual(rec2.code, 0, rec2.stderr);
  const bad = runNode('replay', log2, app, { args: [port2, '4712'], env: { ...keyed, REPLAY_REDACT_KEY: 'k1' } });
  assert.strictEqual(bad.code, 86, bad.stderr);
  const good = runNode('replay', log2, app, { args: [port2, '4711'], env: { ...keyed, REPLAY_REDACT_KEY: 'k1' } });
  assert.strictEqual(good.code, 0, good.stderr);
  assert.strictEqual(good.stdout, rec2.stdout);
});

test('a request that was never recorded diverges naming its method and URL', async () => {
  const dir = tmpdir('net-unrecorded');
  const app = script(
    dir,
    'one.js',
    `const http = require('http');
     http.get({ host: '127.0.0.1', port: process.argv[2], path: process.argv[3] }, (r) => {
       let b = ''; r.on('data', (d) => (b += d)); r.on('end', () => console.log(r.statusCode, b));
     }).on('error', (e) => console.log('ERR', e.code));`,
  );
  const log = `${dir}/app.replay`;
  const server = await startServer();
  const port = String(server.address().port);
  const rec = await runNodeAsync('record', log, app, { args: [port, '/known'] });
  await close(server);
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.match(rec.stdout, /^200 GET \/known /);
  const ok = runNode('replay', log, app, { args: [port, '/known'] });
  assert.strictEqual(ok.stdout, rec.stdout, ok.stderr);
  const rep = runNode('replay', log, app, { args: [port, '/unknown?x=1'] });
  assert.strictEqual(rep.code, 86, rep.stderr);
  assert.match(rep.stderr, /GET http:\/\/127\.0\.0\.1:\d+\/unknown\?x=1/);
  assert.doesNotMatch(rep.stdout, /200/);
});

test('ECONNREFUSED replays while a server listens, and a reply while none does', async () => {
  const dir = tmpdir('net-refused');
  // A raw TCP client (keyed by host:port) and an http.get, both to the same port.
  const app = script(
    dir,
    'refused.js',
    `const net = require('net'); const http = require('http');
     const port = Number(process.argv[2]);
     const s = net.connect(port, '127.0.0.1', () => { s.write('ping\\n'); });
     s.on('data', (d) => console.log('tcp data', JSON.stringify(String(d))));
     s.on('error', (e) => console.log('tcp error', e.code, e.errno, e.syscall, e.address, e.port, e.message));
     s.on('close', () => {
       console.log('tcp close');
       http.get({ host: '127.0.0.1', port, path: '/x' }, (r) => r.on('data', (d) => console.log('http', String(d))))
         .on('error', (e) => console.log('http error', e.code, e.message));
     });`,
  );
  // A port that refuses connections at record time.
  const probe = net.createServer();
  await new Promise((r) => probe.listen(0, '127.0.0.1', r));
  const port = probe.address().port;
  await close(probe);
  const log = `${dir}/refused.replay`;
  const rec = runNode('record', log, app, { args: [String(port)] });
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.match(rec.stdout, /^tcp error ECONNREFUSED -111 connect 127\.0\.0\.1 \d+ connect ECONNREFUSED/);
  assert.match(rec.stdout, /tcp close\nhttp error ECONNREFUSED/);

  // Now something listens there (a live run would connect): replay still refuses.
  const conns = new Set();
  const server = net.createServer((c) => {
    conns.add(c);
    c.on('close', () => conns.delete(c));
    c.end('pong\n');
  });
  await new Promise((r) => server.listen(port, '127.0.0.1', r));
  try {
    const rep = await runNodeAsync('replay', log, app, { args: [String(port)] });
    assert.strictEqual(rep.code, 0, rep.stderr);
    assert.strictEqual(rep.stdout, rec.stdout);
    // The other way round: record a reply, replay with nothing listening.
    const log2 = `${dir}/served.replay`;
    const rec2 = await runNodeAsync('record', log2, app, { args: [String(port)] });
    assert.strictEqual(rec2.code, 0, rec2.stderr);
    assert.match(rec2.stdout, /^tcp data "pong\\n"\ntcp close\n/);
    for (const c of conns) c.destroy();
    await close(server);
    const rep2 = runNode('replay', log2, app, { args: [String(port)] });
    assert.strictEqual(rep2.code, 0, rep2.stderr);
    assert.strictEqual(rep2.stdout, rec2.stdout);
  } finally {
    if (server.listening) await close(server);
  }
});

test('a server on a port the system picks listens on the recorded port in replay', async () => {
  const dir = tmpdir('net-listen0');
  // The forms of "any port": listen(0), listen() with a callback, listen({ port: 0 }) and
  // http's app.listen(0, host); each prints its port and asks itself for a page.
  const app = script(
    dir,
    'listen0.js',
    `const http = require('http'); const net = require('net');
     const servers = [
       (cb) => http.createServer((q, r) => r.end('a' + q.url)).listen(0, cb),
       (cb) => http.createServer((q, r) => r.end('b' + q.url)).listen(cb),
       (cb) => http.createServer((q, r) => r.end('c' + q.url)).listen({ port: 0, host: '127.0.0.1' }, cb),
       (cb) => net.createServer((c) => c.end('d')).listen(0, '127.0.0.1', cb),
     ];
     (async () => {
       for (const start of servers) {
         const s = await new Promise((resolve) => { const srv = start(() => resolve(srv)); });
         const port = s.address().port;
         const body = await new Promise((resolve) => {
           if (s instanceof http.Server) {
             http.get({ host: '127.0.0.1', port, path: '/x' }, (r) => { let d = ''; r.on('data', (c) => d += c); r.on('end', () => resolve(d)); });
           } else {
             const c = net.connect(port, '127.0.0.1'); let d = ''; c.on('data', (x) => d += x); c.on('end', () => resolve(d));
           }
         });
         console.log('port', port, body);
         await new Promise((r) => s.close(r));
       }
     })();`,
  );
  const log = `${dir}/listen0.replay`;
  const rec = runNode('record', log, app);
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.match(rec.stdout, /^port \d+ a\/x\nport \d+ b\/x\nport \d+ c\/x\nport \d+ d\n$/);
  const rep = runNode('replay', log, app);
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stdout, rec.stdout);
  // Live, the system picks other ports: the replay was not a coincidence.
  const live = runNode(null, null, app);
  assert.notStrictEqual(live.stdout, rec.stdout);
});

// A hook has the own properties of the function it replaces, so a program or library that
// looks sees what it would without the addon: strict mode (no own `caller` or `arguments`;
// also no mapped `arguments` object per call: a sloppy emit hook cost every socket event
// ~100 ns), and no `prototype` where the real one is a built-in or async function (so
// `new Date.now()` still throws).
test('hooks have the own properties of the functions they replace', () => {
  const dir = tmpdir('replay-net-props');
  const app = script(dir, 'props.js', `
const net = require('net');
const tls = require('tls');
const fs = require('fs');
const crypto = require('crypto');
const S = net.Socket.prototype;
const fns = { connect: S.connect, emit: S.emit, push: S.push, _write: S._write, _writev: S._writev,
  _read: S._read, tlsConnect: tls.connect, netConnect: net.connect, readFileSync: fs.readFileSync,
  statSync: fs.statSync, existsSync: fs.existsSync, readFile: fs.readFile,
  promisesReadFile: fs.promises.readFile, promisesStat: fs.promises.stat, promisesOpen: fs.promises.open, createReadStream: fs.createReadStream, readSync: fs.readSync,
  randomBytes: crypto.randomBytes, randomFillSync: crypto.randomFillSync, randomUUID: crypto.randomUUID,
  randomInt: crypto.randomInt, getRandomValues: crypto.getRandomValues,
  webGetRandomValues: globalThis.crypto.getRandomValues, webRandomUUID: globalThis.crypto.randomUUID,
  Date, now: Date.now, random: Math.random, perfNow: performance.now, hrtime: process.hrtime,
  hrtimeBigint: process.hrtime.bigint };
const out = {};
for (const [k, f] of Object.entries(fns)) out[k] = Object.getOwnPropertyNames(f).sort().join(' ');
console.log(JSON.stringify(out));
`);
  const bare = runNode(null, null, app);
  assert.strictEqual(bare.code, 0, bare.stderr);
  const rec = runNode('record', `${dir}/p.replay`, app);
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.deepStrictEqual(JSON.parse(rec.stdout), JSON.parse(bare.stdout));
});

test('a download piped into a file is written whole in replay, with the server stopped', async () => {
  // The file stream drains slower than the log feeds the socket: the socket's recorded close
  // must wait for its bytes to be read (a destroy at once truncated the file in 7 of 8 runs).
  const dir = tmpdir('net-download');
  const app = script(dir, 'download.js', `
const http = require('http');
const fs = require('fs');
const crypto = require('crypto');
http.get({ host: '127.0.0.1', port: process.argv[2], path: '/big' }, (res) => {
  const out = fs.createWriteStream(process.argv[3]);
  res.pipe(out);
  out.on('finish', () => {
    const got = fs.readFileSync(process.argv[3]);
    console.log('wrote', got.length, crypto.createHash('sha256').update(got).digest('hex'));
  });
});
`);
  const big = crypto.randomBytes(1 << 20);
  // Connection: close, as python's http.server does: EOF and close follow the last chunk.
  const server = http.createServer((req, res) => {
    res.setHeader('Connection', 'close');
    res.end(big);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = String(server.address().port);
  const log = `${dir}/app.replay`;
  const file = `${dir}/dl.bin`;
  const rec = await runNodeAsync('record', log, app, { args: [port, file] });
  await close(server);
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.match(rec.stdout, /^wrote 1048576 [0-9a-f]{64}\n$/);
  for (let i = 0; i < 3; i++) {
    fs.rmSync(file, { force: true });
    const rep = runNode('replay', log, app, { args: [port, file] });
    assert.strictEqual(rep.code, 0, rep.stderr);
    assert.strictEqual(rep.stdout, rec.stdout);
    assert.strictEqual(fs.statSync(file).size, 1 << 20);
  }
});

test("a replayed socket's addresses and byte counts are the recorded ones", async () => {
  // localAddress, localPort, remoteAddress, remotePort, remoteFamily, address(), bytesRead
  // and bytesWritten of a fed socket were null, {} and 0 in replay (a client logging its
  // local port, a server logging the peer): exit 0 with other output.
  const dir = tmpdir('replay-socket-names');
  const app = script(dir, 'client.js', `
const net = require('net');
const s = net.connect(Number(process.argv[2]), '127.0.0.1');
s.on('connect', () => {
  console.log('connect', s.localAddress, s.localPort > 0, s.remoteAddress, s.remotePort, s.remoteFamily);
  console.log('address', JSON.stringify(s.address()), s.address().port === s.localPort);
  s.end('hello there\\n');
});
s.resume();
s.on('end', () => console.log('counts', s.bytesRead, s.bytesWritten, 'port', s.localPort));
`);
  const server = net.createServer((c) => {
    c.on('data', () => {});
    c.on('end', () => c.end('fourteen bytes'));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = String(server.address().port);
  const log = `${dir}/app.replay`;
  const rec = await runNodeAsync('record', log, app, { args: [port] });
  await new Promise((resolve) => server.close(resolve));
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.match(rec.stdout, new RegExp(`^connect 127\\.0\\.0\\.1 true 127\\.0\\.0\\.1 ${port} IPv4\\naddress \\{"address":"127\\.0\\.0\\.1","family":"IPv4","port":\\d+\\} true\\ncounts 14 12 port \\d+\\n$`));
  const rep = runNode('replay', log, app, { args: [port] });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stderr, '');
  assert.strictEqual(rep.stdout, rec.stdout);
});

test('DNS answers replay with the DNS server gone, after setServers too', async () => {
  // node:dns was not recorded: an answer that changed went into the program's output file
  // with exit 0. A tiny DNS server in this process answers A queries with `ip`.
  const dgram = require('dgram');
  let ip = [10, 0, 0, 1];
  const dnsd = dgram.createSocket('udp4');
  dnsd.on('message', (m, r) => {
    let i = 12;
    while (m[i]) i += m[i] + 1;
    const hdr = Buffer.from([m[0], m[1], 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0]);
    const ans = Buffer.from([0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, ...ip]);
    dnsd.send(Buffer.concat([hdr, m.subarray(12, i + 5), ans]), r.port, r.address);
  });
  await new Promise((resolve) => dnsd.bind(0, '127.0.0.1', resolve));
  const dir = tmpdir('replay-dns');
  const app = script(dir, 'app.js', `
const dns = require('dns');
const fs = require('fs');
dns.setServers(['127.0.0.1:' + process.argv[2]]);
dns.resolve4('api.internal.test', (err, a) => {
  fs.writeFileSync('cb.txt', String(err ? err.code : a));
  dns.promises.resolve4('other.internal.test').then((b) => {
    fs.writeFileSync('promise.txt', String(b));
    return dns.promises.lookup('localhost', { family: 4 });
  }).then((l) => console.log('done', l.family, typeof l.address));
});
`);
  const log = `${dir}/app.replay`;
  const port = String(dnsd.address().port);
  const rec = await runNodeAsync('record', log, app, { args: [port] });
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stdout, 'done 4 string\n');
  assert.strictEqual(fs.readFileSync(`${dir}/cb.txt`, 'utf8'), '10.0.0.1');
  ip = [10, 0, 0, 2];
  dnsd.close();
  fs.rmSync(`${dir}/cb.txt`);
  fs.rmSync(`${dir}/promise.txt`);
  const rep = runNode('replay', log, app, { args: [port] });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stderr, '');
  assert.strictEqual(rep.stdout, rec.stdout);
  assert.strictEqual(fs.readFileSync(`${dir}/cb.txt`, 'utf8'), '10.0.0.1');
  assert.strictEqual(fs.readFileSync(`${dir}/promise.txt`, 'utf8'), '10.0.0.1');
});

test("a lookup function of the program's runs in replay as it did recorded (a DNS cache)", async () => {
  // options.lookup: Node calls it for a host name (with `all` when it picks the family, on
  // the next tick with a family given); a cache like @npmcli/agent's reads the clock and
  // calls dns.lookup. Replay never called it: its events were left over (npm-check-updates).
  const dir = tmpdir('replay-lookup-fn');
  const app = script(dir, 'client.js', `
const http = require('http');
const dns = require('dns');
const calls = [];
const cache = new Map();
function lookup(host, opts, cb) {
  calls.push(host + ' all=' + Boolean(opts.all) + ' family=' + opts.family + ' t=' + (performance.now() > 0));
  const key = host + Boolean(opts.all);
  if (cache.has(key)) return process.nextTick(cb, null, ...cache.get(key));
  dns.lookup(host, opts, (err, a, f) => {
    if (!err) cache.set(key, [a, f]);
    calls.push('answered ' + (err ? err.code : Date.now() > 0));
    cb(err, a, f);
  });
}
const get = (family) => new Promise((resolve) => {
  const req = http.get({ host: 'localhost', port: Number(process.argv[2]), path: '/x', lookup, family, agent: false }, (r) => {
    let b = '';
    r.on('data', (d) => (b += d));
    r.on('end', () => resolve(b));
  });
  req.on('socket', (s) => s.on('lookup', (err, address) => calls.push('lookup event ' + (err ? err.code : typeof address))));
});
(async () => {
  console.log(await get(undefined));
  console.log(await get(4));
  console.log(calls.join('\\n'));
})();
`);
  let n = 0;
  const server = http.createServer((req, res) => res.end(`n=${++n} r=${Math.random()}`));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = String(server.address().port);
  const log = `${dir}/app.replay`;
  const rec = await runNodeAsync('record', log, app, { args: [port] });
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.match(rec.stdout, /^n=1 r=0\.\d+\nn=2 r=0\.\d+\nlocalhost all=true family=undefined t=true\nanswered true\nlookup event string\n(lookup event string\n)?localhost all=false family=4 t=true\nanswered true\nlookup event string\n$/);
  const rep = runNode('replay', log, app, { args: [port] });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stderr, '');
  assert.strictEqual(rep.stdout, rec.stdout);
});

test('a redacted response replays without XDG_CONFIG_HOME (the key under the home directory)', async () => {
  // The redaction key's directory came from os.homedir(), a hooked call made outside
  // ev.live: an event of the addon's own, left over in every replay of a response with a
  // Set-Cookie header when XDG_CONFIG_HOME was not set (superagent, needle).
  const dir = tmpdir('replay-redact-home');
  const app = script(dir, 'client.js', `
const http = require('http');
http.get({ host: '127.0.0.1', port: Number(process.argv[2]), path: '/login' }, (r) => {
  let b = '';
  r.on('data', (d) => (b += d));
  r.on('end', () => console.log(r.statusCode, b, typeof r.headers['set-cookie'][0]));
});
`);
  const server = http.createServer((req, res) => {
    res.setHeader('Set-Cookie', 'sid=SECRET' + Math.random());
    res.end('welcome');
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = String(server.address().port);
  const env = { XDG_CONFIG_HOME: '', HOME: dir };
  const log = `${dir}/app.replay`;
  const rec = await runNodeAsync('record', log, app, { args: [port], env });
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stdout, '200 welcome string\n');
  assert.ok(fs.existsSync(`${dir}/.config/replay/redact.key`));
  const rep = runNode('replay', log, app, { args: [port], env });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stderr, '');
  assert.strictEqual(rep.stdout, rec.stdout);
});

test('a cookie a replayed response set is a cookie, and sending it back replays', async () => {
  // Set-Cookie was redacted whole (`[redacted hmac:...]`, no name, a space inside): a cookie
  // jar rejected it in replay. Cookies are redacted value by value now, and the Cookie header
  // that carries the replayed placeholder back is checked as the recorded one.
  const dir = tmpdir('replay-cookie-jar');
  const app = script(dir, 'client.js', `
const http = require('http');
const port = Number(process.argv[2]);
const get = (path, headers) => new Promise((resolve) => http.get({ host: '127.0.0.1', port, path, headers }, (r) => {
  let b = '';
  r.on('data', (d) => (b += d));
  r.on('end', () => resolve({ b, cookies: r.headers['set-cookie'] || [] }));
}));
(async () => {
  const first = await get('/login');
  const [pair, ...attrs] = first.cookies[0].split(';');
  const value = pair.slice(pair.indexOf('=') + 1);
  // RFC 6265 cookie-octets: what a jar accepts.
  console.log(first.b, pair.split('=')[0], /^[\\x21\\x23-\\x2B\\x2D-\\x3A\\x3C-\\x5B\\x5D-\\x7E]+$/.test(value), attrs.map((a) => a.trim()).join(','));
  const second = await get('/me', { cookie: pair + '; theme=dark' });
  console.log(second.b);
})();
`);
  let secret = null;
  const server = http.createServer((req, res) => {
    if (req.url === '/login') {
      secret = 'S' + Math.random();
      res.setHeader('Set-Cookie', `sid=${secret}; Path=/; HttpOnly`);
      res.end('logged in');
    } else {
      res.end(req.headers.cookie === `sid=${secret}; theme=dark` ? 'known' : 'stranger');
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = String(server.address().port);
  const log = `${dir}/app.replay`;
  const rec = await runNodeAsync('record', log, app, { args: [port] });
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stdout, 'logged in sid true Path=/,HttpOnly\nknown\n');
  const rep = runNode('replay', log, app, { args: [port] });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stderr, '');
  assert.strictEqual(rep.stdout, rec.stdout);
});

test("a connection by host name emits its recorded 'lookup' events in replay (got's timings)", async () => {
  // Node emits 'lookup' when it resolved the host name; replay never did, and got@9's timing
  // listener read the clock there (update-notifier diverged every time).
  const dir = tmpdir('replay-lookup-event');
  const app = script(dir, 'client.js', `
const http = require('http');
const req = http.get({ host: 'localhost', port: Number(process.argv[2]), path: '/' }, (res) => {
  res.resume();
  res.on('end', () => console.log('status', res.statusCode));
});
req.on('socket', (s) => s.on('lookup', (err, address, family, host) => {
  console.log('lookup', err, typeof address, family === 4 || family === 6, host, Date.now() > 0);
}));
`);
  const server = http.createServer((q, s) => s.end('hello'));
  await new Promise((resolve) => server.listen(0, resolve));
  const port = String(server.address().port);
  const log = `${dir}/app.replay`;
  const rec = await runNodeAsync('record', log, app, { args: [port] });
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.match(rec.stdout, /^lookup null string true localhost true\n(lookup null string true localhost true\n)?status 200\n$/);
  const rep = runNode('replay', log, app, { args: [port] });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stderr, '');
  assert.strictEqual(rep.stdout, rec.stdout);
});
