'use strict';
// lib/net.js: a program's own checkServerIdentity (https.request / tls.connect option) runs
// in replay as Node runs it after a handshake: with the hostname and the recorded peer
// certificate (fingerprints, pubkey, subject, a self-signed one its own issuerCertificate),
// so its side effects show in replay, and an answer that changed since record (a pin read from
// the environment) fails the connection with its error, or leaves it unauthorized under
// rejectUnauthorized: false. Recorded against a loopback https server in this process (the
// self-signed certificate of certs.js), replayed after the server stopped.
const test = require('node:test');
const assert = require('node:assert');
const crypto = require('crypto');
const fs = require('fs');
const https = require('https');
const path = require('path');
const { tmpdir, runNode, runNodeAsync, script, OUTPUT_OFF } = require('./harness.js');
const { certificate } = require('./certs.js');

// Every answer differs from run to run: a replay that printed one did not reach the server.
function startServer(files) {
  let n = 0;
  const server = https.createServer({ key: files.key, cert: files.cert }, (req, res) => {
    n += 1;
    res.end(`${req.url} n=${n} r=${Math.random()}`);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

const close = (server) => {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(resolve));
};

// argv: port, CA file. The callbacks print what they are given (Node's pinning example: the
// chain walked up to a self-issued certificate, the sha256 of each pubkey) and reject a
// certificate whose fingerprint256 is not $PIN. (The environment, not a file: a file the
// callback reads is a recorded read, and replays the recorded pin.)
const CLIENT = `
const https = require('https');
const tls = require('tls');
const fs = require('fs');
const crypto = require('crypto');
const [port, caFile] = process.argv.slice(2);
const ca = fs.readFileSync(caFile);
const sha256 = (b) => crypto.createHash('sha256').update(b).digest('base64');
function pinned(label) {
  return function checkServerIdentity(host, cert) {
    const err = tls.checkServerIdentity(host, cert);
    if (err) return err;
    const chain = [];
    let last;
    do {
      chain.push(cert.subject.CN + ' ' + cert.fingerprint256 + ' ' + sha256(cert.pubkey));
      last = cert.fingerprint256;
      cert = cert.issuerCertificate;
    } while (cert.fingerprint256 !== last);
    console.log(label, 'checkServerIdentity', host, chain.join(' <- '), typeof this);
    if (cert.fingerprint256 !== process.env.PIN) {
      const e = new Error('certificate not pinned: ' + label);
      e.code = 'PIN_MISMATCH';
      return e;
    }
    return undefined;
  };
}
function get(label, extra) {
  return new Promise((resolve) => {
    const opts = { host: '127.0.0.1', servername: 'localhost', port, path: '/' + label, ca, agent: false,
      checkServerIdentity: pinned(label), ...extra };
    https.get(opts, (r) => {
      const s = r.socket;
      let b = '';
      r.on('data', (d) => (b += d));
      r.on('end', () => resolve(label + ' ' + r.statusCode + ' ' + b + ' authorized=' + s.authorized +
        ' error=' + s.authorizationError));
    }).on('error', (e) => resolve(label + ' error ' + e.code + ' ' + e.message));
  });
}
(async () => {
  console.log(await get('strict'));
  console.log(await get('lenient', { rejectUnauthorized: false }));
  const raw = await new Promise((resolve) => {
    // Written before the handshake ends, as https.request does: a replay that rejects the
    // certificate makes the same calls (a write only after 'secureConnect' would not be made
    // there, and the recorded one would be left over: a divergence).
    const s = tls.connect({ host: '127.0.0.1', port: Number(port), servername: 'localhost', ca,
      checkServerIdentity: pinned('raw') }, () => console.log('raw secureConnect', s.authorized));
    s.end('GET /raw HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n');
    let b = '';
    s.setEncoding('utf8');
    s.on('data', (d) => (b += d));
    s.on('end', () => resolve('raw ' + b.split('\\r\\n')[0]));
    s.on('error', (e) => resolve('raw error ' + e.code + ' secureConnecting=' + s.secureConnecting));
  });
  console.log(raw);
  // The default check, passed explicitly: nothing of the program's to call again.
  console.log(await get('default', { checkServerIdentity: tls.checkServerIdentity }));
  // A second connection of one agent resumes the first one's TLS session: Node calls no
  // checkServerIdentity then, and neither does replay.
  const agent = new https.Agent({ keepAlive: false });
  console.log(await get('first', { agent }));
  console.log(await get('resumed', { agent }));
})();
`;

async function recorded(name) {
  const dir = tmpdir(name);
  const files = certificate(dir);
  const fp = new crypto.X509Certificate(files.cert).fingerprint256;
  const app = script(dir, 'client.js', CLIENT);
  const log = path.join(dir, 'app.replay');
  const server = await startServer(files);
  const args = [String(server.address().port), files.certPath];
  const rec = await runNodeAsync('record', log, app, { args, env: { PIN: fp } });
  await close(server);
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stderr, '');
  return { dir, files, fp, app, log, args, rec };
}

test('a checkServerIdentity of the program runs in replay with the recorded certificate', async () => {
  const t = await recorded('replay-tls-identity');
  const fp = t.fp.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const lines = t.rec.stdout.split('\n');
  assert.deepStrictEqual(lines.map((l) => l.split(' ').slice(0, 2).join(' ')), [
    'strict checkServerIdentity', 'strict 200', 'lenient checkServerIdentity', 'lenient 200',
    'raw checkServerIdentity', 'raw secureConnect', 'raw HTTP/1.1', 'default 200', 'first checkServerIdentity',
    'first 200', 'resumed 200', '']);
  const chain = `localhost ${fp} [A-Za-z0-9+/]{43}=`;
  assert.match(lines[0], new RegExp(`^strict checkServerIdentity localhost ${chain} object$`));
  assert.match(lines[1], /^strict 200 \/strict n=1 r=0\.\d+ authorized=true error=null$/);
  const rep = runNode('replay', t.log, t.app, { args: t.args, env: { PIN: t.fp } });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stderr, '');
  assert.strictEqual(rep.stdout, t.rec.stdout);
});

test('a pin that changed since record fails the replayed connection with the callback\'s error', async () => {
  const t = await recorded('replay-tls-pin');
  // (The failing connection prints another line: output not compared.)
  const rep = runNode('replay', t.log, t.app, { args: t.args, env: { PIN: 'AA:BB', ...OUTPUT_OFF } });
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stderr, '');
  const lines = rep.stdout.split('\n');
  const rec = t.rec.stdout.split('\n');
  // The callbacks print what they printed when recorded, then reject.
  assert.strictEqual(lines[0], rec[0]);
  assert.strictEqual(lines[1], 'strict error PIN_MISMATCH certificate not pinned: strict');
  // rejectUnauthorized: false: the response arrives, on an unauthorized socket.
  assert.strictEqual(lines[2], rec[2]);
  assert.strictEqual(lines[3], rec[3].replace('authorized=true error=null', 'authorized=false error=PIN_MISMATCH'));
  assert.strictEqual(lines[4], rec[4]);
  assert.strictEqual(lines[5], 'raw error PIN_MISMATCH secureConnecting=true');
  // tls.checkServerIdentity itself is not called again: its recorded answer stands.
  assert.strictEqual(lines[6], rec[7]);
  assert.strictEqual(lines[7], rec[8]);
  assert.strictEqual(lines[8], 'first error PIN_MISMATCH certificate not pinned: first');
  // The resumed session's recorded handshake stands (and with it the response).
  assert.strictEqual(lines[9], rec[10]);
  assert.strictEqual(lines.length, 11);
});
