'use strict';
// TLS over a socket the program supplies: tls.connect({ socket }) through an http proxy's
// CONNECT tunnel (as https-proxy-agent does) and a TLSSocket the program builds itself over
// net.connect. The tunnel's TLS is recorded above the encryption and replays. The hand-built
// TLSSocket runs live in record (the TCP socket under it is recorded as ciphertext); a replay
// cannot decrypt that ciphertext, so it must stop with a divergence report naming the
// connection, never hang or end quietly, and under warn-live the TLS socket fails with an error.
const test = require('node:test');
const assert = require('node:assert');
const http = require('http');
const https = require('https');
const net = require('net');
const { tmpdir, runNode, runNodeAsync, script, cli } = require('./harness.js');
const { certificate } = require('./certs.js');

const CLIENT = `
const http = require('http');
const tls = require('tls');
const net = require('net');
const fs = require('fs');
const [port, proxyPort, caFile, how] = process.argv.slice(2);
const ca = fs.readFileSync(caFile);
const readAll = (s) => new Promise((resolve, reject) => {
  let b = '';
  s.setEncoding('utf8');
  s.on('data', (d) => (b += d));
  s.on('end', () => resolve(b.split('\\r\\n')[0] + ' ' + b.slice(b.indexOf('\\r\\n\\r\\n') + 4)));
  s.on('error', reject);
});
const GET = (p) => 'GET ' + p + ' HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n';
(async () => {
  if (how === 'tunnel') {
    const sock = await new Promise((resolve, reject) => {
      http.request({ host: '127.0.0.1', port: proxyPort, method: 'CONNECT', path: '127.0.0.1:' + port })
        .on('connect', (res, s) => { console.log('connect', res.statusCode); resolve(s); })
        .on('error', reject)
        .end();
    });
    const t = tls.connect({ socket: sock, servername: 'localhost', ca }, () => {
      console.log('secure', t.authorized);
      t.write(GET('/tunnel'));
    });
    console.log('tunnel', await readAll(t));
  } else if (how === 'agent') {
    // As https-proxy-agent does it: an https.Agent whose connections are TLS over a tunnel.
    const https = require('https');
    class TunnelAgent extends https.Agent {
      createConnection(options, cb) {
        http.request({ host: '127.0.0.1', port: proxyPort, method: 'CONNECT', path: '127.0.0.1:' + port })
          .on('connect', (res, s) => cb(null, tls.connect({ ...options, socket: s })))
          .on('error', cb)
          .end();
      }
    }
    const agent = new TunnelAgent({ ca });
    for (const p of ['/a', '/b']) {
      const body = await new Promise((resolve, reject) => {
        https.get({ host: 'localhost', port, path: p, agent }, (r) => {
          let b = '';
          r.on('data', (d) => (b += d));
          r.on('end', () => resolve(r.statusCode + ' ' + b));
        }).on('error', reject);
      });
      console.log('agent', body);
    }
    agent.destroy();
  } else {
    const raw = net.connect(Number(port), '127.0.0.1');
    await new Promise((resolve, reject) => raw.once('connect', resolve).once('error', reject));
    console.log('tcp connected');
    const u = new tls.TLSSocket(raw, { isServer: false, servername: 'localhost', secureContext: tls.createSecureContext({ ca }) });
    u.on('secure', () => console.log('secure', u.authorized));
    u._start(); // a client TLSSocket built by hand starts its handshake here (tls.connect does the same)
    u.write(GET('/own'));
    console.log('own', await readAll(u));
  }
})().catch((e) => console.log('ERR', e.code, e.message));
`;

// An https server whose answers differ per run, and an http proxy that tunnels CONNECT.
async function servers(files) {
  let n = 0;
  const origin = https.createServer({ key: files.key, cert: files.cert }, (req, res) =>
    res.end(`${req.url} n=${++n} r=${Math.random()}`),
  );
  const proxy = http.createServer();
  proxy.on('connect', (req, sock, head) => {
    const [h, p] = req.url.split(':');
    const up = net.connect(Number(p), h, () => {
      sock.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      up.write(head);
      up.pipe(sock);
      sock.pipe(up);
    });
    up.on('error', () => sock.destroy());
    sock.on('error', () => up.destroy());
  });
  // Every socket of both, tunnels included (a CONNECT socket leaves the http server's count).
  const sockets = new Set();
  for (const s of [origin, proxy]) {
    s.on('connection', (c) => {
      sockets.add(c);
      c.on('close', () => sockets.delete(c));
    });
  }
  await new Promise((r) => origin.listen(0, '127.0.0.1', r));
  await new Promise((r) => proxy.listen(0, '127.0.0.1', r));
  const close = async () => {
    const closed = [origin, proxy].map((s) => new Promise((r) => s.close(r)));
    for (const c of sockets) c.destroy();
    await Promise.all(closed);
  };
  return { port: String(origin.address().port), proxyPort: String(proxy.address().port), close };
}

async function recordWith(how) {
  const dir = tmpdir(`tls-${how}`);
  const files = certificate(dir);
  const app = script(dir, 'client.js', CLIENT);
  const log = `${dir}/app.replay`;
  const s = await servers(files);
  const args = [s.port, s.proxyPort, files.certPath, how];
  let rec;
  try {
    rec = await runNodeAsync('record', log, app, { args });
  } finally {
    await s.close();
  }
  assert.strictEqual(rec.code, 0, rec.stderr);
  return { app, log, args, rec };
}

test('TLS through a CONNECT tunnel (tls.connect({ socket })) is recorded above the encryption and replays with the servers gone', async () => {
  const { app, log, args, rec } = await recordWith('tunnel');
  assert.match(rec.stdout, /^connect 200\nsecure true\ntunnel HTTP\/1\.1 200 OK \/tunnel n=1 r=0\.\d+\n$/);
  // The proxy and the origin are gone: the same output, the origin's random answer included.
  const rep = runNode('replay', log, app, { args, timeout: 30000 });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stdout, rec.stdout);
  // The log holds the request and the answer as plaintext, on a stream of the tunnel's target.
  const bin = cli();
  assert.ok(bin, 'the replay CLI is built (cargo build --release)');
  const dump = require('child_process').execFileSync(bin, ['dump', '--json', log], { encoding: 'utf8' });
  assert.match(dump, new RegExp(`node\\.net\\.write tls 127\\.0\\.0\\.1:${args[0]} localhost GET https://localhost/tunnel`));
  assert.match(dump, /\/tunnel n=1 r=0\.\d+/);
  // A changed request through the tunnel diverges, naming it. The changed program keeps the
  // script's name (another program's log is refused before it runs, exit 3).
  const edited = require('path').join(require('path').dirname(app), 'edited');
  require('fs').mkdirSync(edited);
  const changed = script(edited, 'client.js', CLIENT.replace("t.write(GET('/tunnel'))", "t.write(GET('/other'))"));
  const div = runNode('replay', log, changed, { args, timeout: 30000 });
  assert.strictEqual(div.code, 86, div.stderr);
  assert.match(div.stderr, /DIVERGENCE/);
  assert.match(div.stderr, /GET https:\/\/localhost\/(tunnel|other)/);
});

test('https requests through an Agent that tunnels (as https-proxy-agent) replay with the servers gone', async () => {
  const { app, log, args, rec } = await recordWith('agent');
  assert.match(rec.stdout, /^agent 200 \/a n=1 r=0\.\d+\nagent 200 \/b n=2 r=0\.\d+\n$/);
  const rep = runNode('replay', log, app, { args, timeout: 30000 });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stdout, rec.stdout);
});

test('TLS over a TLSSocket the program builds: live in record, a divergence in replay', async () => {
  const { app, log, args, rec } = await recordWith('own');
  // A TLSSocket built by hand checks no certificate (tls.connect sets `authorized`).
  assert.match(rec.stdout, /^tcp connected\nsecure false\nown HTTP\/1\.1 200 OK \/own n=1 r=0\.\d+\n$/);

  // The servers are gone. Replay gets as far as the recorded TCP connection, then reports the
  // TLS on top of it instead of waiting for it.
  const rep = runNode('replay', log, app, { args, timeout: 30000 });
  assert.strictEqual(rep.code, 86, rep.stderr);
  assert.strictEqual(rep.stdout, 'tcp connected\n');
  assert.match(rep.stderr, /DIVERGENCE/);
  assert.match(rep.stderr, /node\.tls over a replayed connection/);
  assert.match(rep.stderr, /net 127\.0\.0\.1:\d+/);

  // warn-live: the program runs on and its TLS socket fails with an error (no hang).
  const live = runNode('replay', log, app, { args, env: { REPLAY_POLICY: 'warn-live' }, timeout: 30000 });
  assert.strictEqual(live.code, 0, live.stderr);
  assert.match(live.stdout, /^tcp connected\nERR .*cannot go live\n$/);
});
