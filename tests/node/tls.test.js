'use strict';
// lib/net.js over TLS: https.get, https.request, fetch of https URLs and tls.connect recorded
// above the encryption against a loopback https server in this process (a self-signed
// certificate for localhost and 127.0.0.1), replayed after the server stopped.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const https = require('https');
const net = require('net');
const { spawnSync } = require('child_process');
const { tmpdir, runNode, runNodeAsync, script, cli, argsWarned } = require('./harness.js');
const { certificate } = require('./certs.js');

// A server whose every answer differs from run to run (a counter and a random number).
function startServer(tlsFiles, port = 0) {
  let n = 0;
  const server = https.createServer({ key: tlsFiles.key, cert: tlsFiles.cert }, (req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      n += 1;
      res.setHeader('Set-Cookie', 'sid=COOKIESECRET' + n);
      res.setHeader('x-count', String(n));
      res.setHeader('X-Session-Token', 'SESSIONSECRET' + n);
      const count = n;
      const answer = () => res.end(`${req.method} ${req.url} body=${body} n=${count} r=${Math.random()}`);
      setTimeout(answer, req.url === '/slow' ? 80 : 0);
    });
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}

const close = (server) => {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(resolve));
};

// The client: every line it prints comes from the network, including what the TLS socket
// says about the handshake. argv: port, CA file, POST body, bearer token part, extra path,
// the order of two parallel requests ('slow,fast').
const CLIENT = `
const https = require('https');
const tls = require('tls');
const fs = require('fs');
const [port, caFile, body, tokenPart, extra, order] = process.argv.slice(2);
const ca = fs.readFileSync(caFile);
const token = 'TOKEN' + tokenPart + 'SECRET';
function facts(s) {
  const c = s.getPeerCertificate();
  return 'encrypted=' + s.encrypted + ' authorized=' + s.authorized + ' error=' + s.authorizationError +
    ' alpn=' + s.alpnProtocol + ' protocol=' + s.getProtocol() + ' cn=' + (c.subject && c.subject.CN) +
    ' san=' + c.subjectaltname + ' fp=' + c.fingerprint256 + ' until=' + c.valid_to +
    ' tlssocket=' + (s instanceof tls.TLSSocket);
}
function get(p, headers) {
  return new Promise((resolve, reject) => {
    https.get({ host: '127.0.0.1', servername: 'localhost', port, path: p, ca, headers }, (r) => {
      const s = r.socket; // the pool takes it back before 'end'
      let b = '';
      r.setEncoding('utf8');
      r.on('data', (d) => (b += d));
      r.on('end', () => resolve(r.statusCode + ' ' + b + ' cookie=' + (r.headers['set-cookie'] ? 'yes' : 'no') + ' ' + facts(s)));
    }).on('error', reject);
  });
}
(async () => {
  console.log('get', await get('/a', { authorization: 'Bearer ' + token }));
  console.log('again', await get('/b'));
  const posted = await new Promise((resolve, reject) => {
    const q = https.request({ host: '127.0.0.1', servername: 'localhost', port, path: '/post', method: 'POST', ca }, (r) => {
      let b = '';
      r.on('data', (d) => (b += d));
      r.on('end', () => resolve(r.statusCode + ' ' + b));
    });
    q.on('error', reject);
    q.end(body);
  });
  console.log('post', posted);
  if (extra) console.log('extra', await get(extra));
  // Parallel, on the pool's keep-alive socket and a new one (which request gets which follows
  // the order they start): the server answers /slow later. The socket facts are printed
  // apart: the new connection resumes the TLS session (no peer certificate then), and which
  // request it carries depends on the order.
  const names = order.split(',');
  const got = await Promise.all(names.map((n) => get('/' + n)));
  names.forEach((n, i) => (names[n] = got[i].split(' encrypted=')[0]));
  for (const n of ['fast', 'slow']) console.log('parallel', n, names[n]);
  console.log('parallel sockets', got.map((g) => 'encrypted=' + g.split(' encrypted=')[1]).sort().join(' | '));
  // fetch trusts the test CA through NODE_EXTRA_CA_CERTS.
  const f = await fetch('https://127.0.0.1:' + port + '/fetched');
  console.log('fetch', f.status, f.headers.get('x-count'), await f.text());
  const g = await fetch('https://127.0.0.1:' + port + '/again');
  console.log('fetch', g.status, await g.text());
  // tls.connect with its callback, speaking HTTP by hand.
  const raw = await new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port: Number(port), servername: 'localhost', ca }, () => {
      console.log('raw secure', facts(s));
      s.write('GET /raw HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nConnection: close\\r\\n\\r\\n');
    });
    let b = '';
    s.setEncoding('utf8');
    s.on('data', (d) => (b += d));
    s.on('end', () => resolve(b.split('\\r\\n')[0] + ' ' + b.slice(b.indexOf('\\r\\n\\r\\n') + 4)));
    s.on('error', reject);
  });
  console.log('raw', raw);
})().catch((e) => console.log('ERR', e.code, e.message));
`;

async function recorded(name, env = {}) {
  const dir = tmpdir(name);
  const files = certificate(dir);
  const app = script(dir, 'client.js', CLIENT);
  const log = `${dir}/app.replay`;
  const server = await startServer(files);
  const port = String(server.address().port);
  const fullEnv = Object.assign({ NODE_EXTRA_CA_CERTS: files.certPath }, env);
  const args = (token, extra, order = 'slow,fast') => [port, files.certPath, 'hello body', token, extra || '', order];
  const rec = await runNodeAsync('record', log, app, { args: args('1234'), env: fullEnv });
  await close(server);
  return { dir, app, log, port, rec, args, env: fullEnv };
}

function dump(log) {
  const bin = cli();
  if (!bin) return null;
  const d = spawnSync(bin, ['dump', '--json', log], { encoding: 'utf8', maxBuffer: 64 << 20 });
  assert.strictEqual(d.status, 0, d.stderr);
  return d.stdout;
}

test('https.get, POST, fetch and tls.connect replay with the server stopped', async () => {
  const { app, log, port, rec, args, env } = await recorded('tls-https');
  assert.strictEqual(rec.code, 0, rec.stderr);
  const facts =
    'encrypted=true authorized=true error=null alpn=false protocol=TLSv1.3 cn=localhost ' +
    'san=DNS:localhost, IP Address:127.0.0.1 fp=([0-9A-F]{2}:){31}[0-9A-F]{2} until=\\w+ +\\d+ [\\d:]+ \\d+ GMT tlssocket=true';
  assert.match(rec.stdout, new RegExp(`^get 200 GET /a body= n=1 r=0\\.\\d+ cookie=yes ${facts}\n`));
  assert.match(rec.stdout, new RegExp(`\nagain 200 GET /b body= n=2 r=0\\.\\d+ cookie=yes ${facts}\n`));
  assert.match(rec.stdout, /\npost 200 POST \/post body=hello body n=3 /);
  assert.match(rec.stdout, /\nparallel fast 200 GET \/fast body= n=\d r=0\.\d+ cookie=yes\n/);
  assert.match(rec.stdout, /\nparallel slow 200 GET \/slow body= n=\d r=0\.\d+ cookie=yes\n/);
  // Both connections completed their handshake (the second one resumed the first's session).
  assert.match(rec.stdout, /\nparallel sockets encrypted=true authorized=true .* \| encrypted=true authorized=true /);
  assert.match(rec.stdout, /\nfetch 200 6 GET \/fetched body= n=6 r=0\.\d+\nfetch 200 GET \/again body= n=7 /);
  assert.match(rec.stdout, new RegExp(`\nraw secure ${facts}\nraw HTTP/1.1 200 OK GET /raw body= n=8 r=0\\.\\d+\n$`));

  // The server is gone: a live connection would fail with ECONNREFUSED. The parallel requests
  // start in the other order and still get their own responses.
  const rep = runNode('replay', log, app, { args: args('1234', '', 'fast,slow'), env });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(argsWarned(rep.stderr), '');
  assert.strictEqual(rep.stdout, rec.stdout);

  // Another request body than recorded: a divergence at that write, naming the request.
  const body = runNode('replay', log, app, { args: [port, args('1234')[1], 'other body', '1234', '', 'slow,fast'], env });
  assert.strictEqual(body.code, 86, body.stderr);
  assert.match(body.stderr, /DIVERGENCE/);
  assert.match(body.stderr, /POST https:\/\/127\.0\.0\.1:\d+\/post/);

  const d = dump(log);
  if (d !== null) {
    // Plaintext requests, keyed by endpoint and servername (https.get named one; fetch of an
    // IP sends none)...
    assert.ok(d.includes(`node.net.write tls 127.0.0.1:${port} localhost GET https://127.0.0.1:${port}/a`), d);
    assert.ok(d.includes(`node.net.write tls 127.0.0.1:${port} - GET https://127.0.0.1:${port}/fetched`), d);
    // ...and the TCP connections under them were not recorded a second time.
    assert.ok(!d.includes(`net 127.0.0.1:${port}`), d);
  }
});

test('an https request that was never recorded diverges naming its method and URL', async () => {
  const { app, log, rec, args, env } = await recorded('tls-unrecorded');
  assert.strictEqual(rec.code, 0, rec.stderr);
  const rep = runNode('replay', log, app, { args: args('1234', '/unknown?x=1'), env });
  assert.strictEqual(rep.code, 86, rep.stderr);
  assert.match(rep.stderr, /GET https:\/\/127\.0\.0\.1:\d+\/unknown\?x=1/);
  assert.doesNotMatch(rep.stdout, /extra/);
});

test('secret headers over https are not in the log, and replay checks them by digest', async () => {
  const redact = { REPLAY_REDACT: 'x-session-token' };
  const { log, app, rec, args, env } = await recorded('tls-secret', redact);
  assert.strictEqual(rec.code, 0, rec.stderr);
  const raw = fs.readFileSync(log);
  for (const secret of ['TOKEN1234SECRET', 'COOKIESECRET', 'SESSIONSECRET']) assert.ok(!raw.includes(secret), secret);
  const d = dump(log);
  if (d !== null) {
    // The plaintext response is there (a write is stored as the digest of its redacted bytes).
    assert.match(d, /GET \/a body= n=1/);
    assert.match(d, /Set-Cookie: sid=redacted-hmac-[0-9a-f]{8}-[0-9a-f]{16}\b/);
    assert.match(d, /X-Session-Token: \[redacted hmac:[0-9a-f]{8}:[0-9a-f]{16}\]/);
    assert.doesNotMatch(d, /TOKEN1234SECRET|COOKIESECRET|SESSIONSECRET/); // ...the secrets not
  }
  const same = runNode('replay', log, app, { args: args('1234'), env });
  assert.strictEqual(same.code, 0, same.stderr);
  assert.strictEqual(same.stdout, rec.stdout);
  const other = runNode('replay', log, app, { args: args('9999'), env });
  assert.strictEqual(other.code, 86, other.stderr);
  assert.match(other.stderr, /GET https:\/\/127\.0\.0\.1:\d+\/a/);
});

test('certificate errors and ECONNREFUSED replay as the same errors', async () => {
  const dir = tmpdir('tls-errors');
  const files = certificate(dir);
  // No CA given and none in the environment: the self-signed certificate is rejected, unless
  // rejectUnauthorized is false; a wrong servername fails the identity check.
  const app = script(
    dir,
    'errors.js',
    `const https = require('https');
     const [port, refused, caFile] = process.argv.slice(2);
     const ca = require('fs').readFileSync(caFile);
     const get = (o) => new Promise((resolve) => {
       https.get({ host: '127.0.0.1', path: '/', agent: false, ...o }, (r) => {
         const s = r.socket;
         let b = ''; r.on('data', (d) => (b += d));
         r.on('end', () => resolve(r.statusCode + ' ' + b + ' authorized=' + s.authorized + ' error=' + s.authorizationError));
       }).on('error', (e) => {
         resolve('ERR ' + e.code + ' ' + e.message + (e.cert ? ' cert=' + e.cert.subject.CN : ''));
       });
     });
     (async () => {
       console.log('default', await get({ port }));
       console.log('unchecked', await get({ port, rejectUnauthorized: false }));
       console.log('altname', await get({ port, ca, servername: 'example.com' }));
       console.log('refused', await get({ port: refused, ca }));
       const f = await fetch('https://127.0.0.1:' + port + '/f').then(
         (r) => 'status ' + r.status,
         (e) => 'ERR ' + e.message + ' ' + (e.cause && e.cause.code),
       );
       console.log('fetch', f);
     })();`,
  );
  const server = await startServer(files);
  const port = server.address().port;
  // A port that refuses connections at record time.
  const probe = net.createServer();
  await new Promise((r) => probe.listen(0, '127.0.0.1', r));
  const refused = probe.address().port;
  await new Promise((r) => probe.close(r));
  const log = `${dir}/errors.replay`;
  const args = [String(port), String(refused), files.certPath];
  const rec = await runNodeAsync('record', log, app, { args });
  await close(server);
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.match(rec.stdout, /^default ERR DEPTH_ZERO_SELF_SIGNED_CERT self[- ]signed certificate\n/);
  assert.match(rec.stdout, /\nunchecked 200 GET \/ body= n=\d r=0\.\d+ authorized=false error=DEPTH_ZERO_SELF_SIGNED_CERT\n/);
  assert.match(
    rec.stdout,
    /\naltname ERR ERR_TLS_CERT_ALTNAME_INVALID Hostname\/IP does not match certificate's altnames: Host: example\.com\. is not in the cert's altnames: DNS:localhost, IP Address:127\.0\.0\.1 cert=localhost\n/,
  );
  assert.match(rec.stdout, /\nrefused ERR ECONNREFUSED connect ECONNREFUSED 127\.0\.0\.1:\d+\n/);
  assert.match(rec.stdout, /\nfetch ERR fetch failed DEPTH_ZERO_SELF_SIGNED_CERT\n$/);

  // Now an https server with a trusted certificate listens on the refused port, and nothing
  // on the other: a live run would connect to the first and be refused by the second.
  const moved = await startServer(files, refused);
  try {
    const rep = await runNodeAsync('replay', log, app, { args });
    assert.strictEqual(rep.code, 0, rep.stderr);
    assert.strictEqual(rep.stdout, rec.stdout);
  } finally {
    await close(moved);
  }
});

test("tls.connect's own warnings are printed in replay as in the recorded run", async () => {
  const dir = tmpdir('tls-warnings');
  const files = certificate(dir);
  const app = script(
    dir,
    'warn.js',
    `const https = require('https');
     const get = (o) => new Promise((resolve) => {
       https.get({ host: '127.0.0.1', port: process.argv[2], agent: false, ...o }, (r) => {
         const s = r.socket;
         r.resume();
         r.on('end', () => resolve(r.statusCode + ' authorized=' + s.authorized + ' error=' + s.authorizationError));
       }).on('error', (e) => resolve('ERR ' + e.code));
     });
     (async () => {
       console.log(await get({}));
       console.log(await get({ servername: '127.0.0.1' }));
       console.log(await get({ servername: '127.0.0.1' }));
     })();`,
  );
  const server = await startServer(files);
  const port = String(server.address().port);
  const log = `${dir}/warn.replay`;
  // Certificate checks off for the process: the self-signed server is accepted, with a warning.
  const env = { NODE_TLS_REJECT_UNAUTHORIZED: '0' };
  const rec = await runNodeAsync('record', log, app, { args: [port], env });
  await close(server);
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stdout, '200 authorized=false error=DEPTH_ZERO_SELF_SIGNED_CERT\n'.repeat(3));
  assert.match(rec.stderr, /NODE_TLS_REJECT_UNAUTHORIZED/);
  assert.match(rec.stderr, /DEP0123/);
  const rep = runNode('replay', log, app, { args: [port], env });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stdout, rec.stdout);
  // Each warning once, as recorded (the process id in them differs).
  const pidless = (t) => t.replace(/\(node:\d+\)/g, '(node)');
  assert.strictEqual(pidless(rep.stderr), pidless(rec.stderr));
});

test('an https server of the program is said to run live; its own https client runs live with it', () => {
  const dir = tmpdir('tls-server');
  const files = certificate(dir);
  const app = script(
    dir,
    'srv.js',
    `const https = require('https');
     const fs = require('fs');
     const s = https.createServer({ key: fs.readFileSync('key.pem'), cert: fs.readFileSync('cert.pem') }, (req, res) => {
       console.log('server got', req.method, req.url);
       res.end('body ' + fs.readFileSync('data.txt', 'utf8'));
       s.close();
     });
     s.listen(0, '127.0.0.1', () => {
       https.get({ host: '127.0.0.1', port: s.address().port, path: '/x', rejectUnauthorized: false }, (r) => {
         let b = '';
         r.on('data', (d) => (b += d));
         r.on('end', () => console.log('client got', r.statusCode, b));
       });
     });`,
  );
  fs.writeFileSync(`${dir}/data.txt`, 'one');
  const log = `${dir}/srv.replay`;
  const rec = runNode('record', log, app);
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stdout, 'server got GET /x\nclient got 200 body one\n');
  fs.writeFileSync(`${dir}/data.txt`, 'two');
  const rep = runNode('replay', log, app);
  assert.strictEqual(rep.code, 0, rep.stderr);
  // The file read is replayed; the TLS server and its client ran for real, which is said.
  assert.strictEqual(rep.stdout, rec.stdout);
  assert.match(rep.stderr, /ran live \(1 TLS server\)/);
});
