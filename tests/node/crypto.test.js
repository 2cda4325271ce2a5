'use strict';
// lib/crypto.js: every crypto random source replays the recorded values; Node's argument
// errors stay the same; a different call than recorded is a divergence.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const { tmpdir, runNode, script } = require('./harness.js');

const APP = `
const crypto = require('crypto');
const size = Number(process.argv[2] || 8);
const hex = (b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');
console.log('bytes', crypto.randomBytes(size).toString('hex'));
const f = Buffer.alloc(8);
crypto.randomFillSync(f, 2, 4);
console.log('fillSync', f.toString('hex'));
const u32 = new Uint32Array(4);
crypto.randomFillSync(u32, 1, 2);
console.log('fillSync u32', u32[0], u32[3], hex(u32));
console.log('uuid', crypto.randomUUID());
console.log('int', crypto.randomInt(1000000), crypto.randomInt(-5, 5));
console.log('getRandomValues', hex(crypto.getRandomValues(new Uint8Array(6))));
console.log('web getRandomValues', hex(globalThis.crypto.getRandomValues(new Uint16Array(3))));
console.log('web uuid', globalThis.crypto.randomUUID(), crypto.webcrypto === globalThis.crypto);
for (const bad of [() => crypto.randomBytes(-1), () => crypto.randomInt(5, 1),
  () => crypto.randomFillSync(Buffer.alloc(2), 3), () => globalThis.crypto.getRandomValues(new Float64Array(2)),
  () => crypto.webcrypto.getRandomValues.call({}, new Uint8Array(2))]) {
  try { bad(); console.log('no error'); } catch (e) { console.log('error', e.name, e.code); }
}
crypto.randomBytes(5, (err, b) => console.log('bytes cb', err, b.toString('hex')));
const af = Buffer.alloc(6);
crypto.randomFill(af, 1, (err, b) => console.log('fill cb', err, b === af, af.toString('hex')));
crypto.randomInt(10, 20, (err, n) => console.log('int cb', err, n));
console.log('names', crypto.randomBytes.name, crypto.randomBytes.length, crypto.randomFill.length);
`;

function setup() {
  const dir = tmpdir('replay-crypto');
  return { app: script(dir, 'app.js', APP), log: path.join(dir, 'app.replay') };
}

test('crypto random values replay as recorded', () => {
  const t = setup();
  const rec = runNode('record', t.log, t.app);
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stderr, '');
  assert.match(rec.stdout, /^bytes [0-9a-f]{16}\nfillSync 0000[0-9a-f]{8}0000\nfillSync u32 0 0 /);
  assert.match(rec.stdout, /web uuid [0-9a-f-]{36} true/);
  assert.match(rec.stdout, /error RangeError ERR_OUT_OF_RANGE\n/);
  assert.match(rec.stdout, /error TypeError ERR_INVALID_THIS/);
  assert.match(rec.stdout, /fill cb null true 00[0-9a-f]{10}/);
  assert.match(rec.stdout, /names randomBytes 2 4/);
  // Two recordings differ (the values are really random), replay gives back the first.
  const rec2 = runNode('record', t.log + '.2', t.app);
  assert.notStrictEqual(rec2.stdout, rec.stdout);
  const bare = runNode(null, null, t.app);
  // The same lines with the values masked; sorted, because the three callbacks finish on the
  // thread pool in any order when the addon is not there to replay an order.
  const shape = (out) => out.replace(/-?[0-9a-f]{4,}|-?\d+/g, 'x').split('\n').sort().join('\n');
  assert.strictEqual(shape(bare.stdout), shape(rec.stdout));

  const rep = runNode('replay', t.log, t.app);
  assert.strictEqual(rep.code, 0, rep.stderr);
  assert.strictEqual(rep.stderr, '');
  assert.strictEqual(rep.stdout, rec.stdout);
});

test('asking for other bytes than recorded is a divergence', () => {
  const t = setup();
  const rec = runNode('record', t.log, t.app);
  assert.strictEqual(rec.code, 0, rec.stderr);
  const other = runNode('replay', t.log, t.app, { args: ['16'] });
  assert.strictEqual(other.code, 86, other.stderr);
  assert.match(other.stderr, /DIVERGENCE/);
  assert.match(other.stderr, /node\.crypto\.randomBytes/);
  assert.match(other.stderr, /app\.js:\d+/);
});

// Keys and primes OpenSSL makes from its own randomness, written to a file (a keygen CLI):
// the replay writes the recorded ones, without generating anything.
const KEYGEN = `
const crypto = require('crypto');
const fs = require('fs');
const h = (b) => crypto.createHash('sha256').update(b).digest('hex').slice(0, 16);
const out = [];
const { privateKey, publicKey } = crypto.generateKeyPairSync('rsa', {
  modulusLength: 1024,
  publicKeyEncoding: { type: 'spki', format: 'pem' },
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
});
out.push(privateKey, publicKey);
const ed = crypto.generateKeyPairSync('ed25519');
out.push(h(ed.privateKey.export({ type: 'pkcs8', format: 'der' })), ed.publicKey.asymmetricKeyType);
out.push(h(crypto.generateKeySync('hmac', { length: 256 }).export()));
out.push(String(crypto.generatePrimeSync(48, { bigint: true })));
const ecdh = crypto.createECDH('prime256v1');
out.push(ecdh.generateKeys('hex'));
const group = crypto.getDiffieHellman('modp14');
group.generateKeys();
const peer = crypto.getDiffieHellman('modp14');
peer.generateKeys();
out.push(h(group.computeSecret(peer.getPublicKey())) === h(peer.computeSecret(group.getPublicKey())));
try {
  crypto.generateKeyPairSync('nonsense');
} catch (e) {
  out.push(e.code);
}
crypto.generateKeyPair('ec', { namedCurve: 'P-256' }, async (err, pub, priv) => {
  out.push(err, h(priv.export({ type: 'pkcs8', format: 'der' })), h(pub.export({ type: 'spki', format: 'der' })));
  const s = globalThis.crypto.subtle;
  const pair = await s.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify']);
  out.push(h(Buffer.from(await s.exportKey('pkcs8', pair.privateKey))), pair.publicKey.usages.join(','));
  const aes = await s.generateKey({ name: 'AES-GCM', length: 128 }, false, ['encrypt']);
  out.push(aes.extractable, aes.algorithm.length);
  fs.writeFileSync(process.argv[2], out.join('\\n'));
  console.log(h(out.join('\\n')));
});
`;

test('generated keys and primes replay as recorded and go into the files again', () => {
  const dir = tmpdir('crypto-keygen');
  const app = script(dir, 'keygen.js', KEYGEN);
  const log = path.join(dir, 'keygen.replay');
  const file = path.join(dir, 'keys.txt');
  const rec = runNode('record', log, app, { args: [file] });
  assert.strictEqual(rec.code, 0, rec.stderr);
  const recorded = require('fs').readFileSync(file, 'utf8');
  assert.match(recorded, /^-----BEGIN PRIVATE KEY-----/);
  assert.match(recorded, /\ntrue\nERR_INVALID_ARG_VALUE\n\n[0-9a-f]{16}\n[0-9a-f]{16}\n[0-9a-f]{16}\nverify\nfalse\n128$/);
  const live = runNode(null, null, app, { args: [file] });
  assert.notStrictEqual(live.stdout, rec.stdout, 'two live runs make other keys');
  const rep = runNode('replay', log, app, { args: [file] });
  assert.strictEqual(rep.stderr, '');
  assert.strictEqual(rep.code, 0);
  assert.strictEqual(rep.stdout, rec.stdout);
  assert.strictEqual(require('fs').readFileSync(file, 'utf8'), recorded);
});

test('zlib and key derivations in flight together call back in the recorded order', () => {
  // Thread-pool work whose result does not depend on the world (lib/pool.js): each callback
  // reads a file (an event), so a callback that came in another order than recorded made
  // another call than the recording. Before, most replays diverged.
  const dir = tmpdir('replay-pool-order');
  const app = script(dir, 'app.js', `
const zlib = require('zlib');
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');
const util = require('util');
const d = process.argv[2];
const data = Buffer.alloc(400000, 'replay');
const seen = [];
const read = (n) => seen.push(n + '=' + fs.readFileSync(path.join(d, n + '.txt'), 'utf8').trim());
for (const n of ['z1', 'z2', 'z3']) zlib.gzip(data, (e, r) => { read(n); zlib.gunzip(r, (e2, back) => read(n + 'u' + back.length)); });
zlib.brotliCompress(data.subarray(0, 50000), (e, r) => read('br'));
for (const n of ['k1', 'k2', 'k3']) crypto.pbkdf2('pw', n, 30000, 16, 'sha256', (e, k) => read(n));
crypto.scrypt('pw', 'salt', 16, (e, k) => read('s' + k.length));
util.promisify(zlib.deflate)(data).then(() => read('pd'));
crypto.hkdf('sha256', 'key', 'salt', 'info', 8, (e, k) => read('h' + k.byteLength));
process.on('exit', () => console.log(seen.join(' ')));
`);
  const d = path.join(dir, 'w');
  fs.mkdirSync(d);
  const names = ['z1', 'z2', 'z3', 'z1u400000', 'z2u400000', 'z3u400000', 'br', 'k1', 'k2', 'k3', 's16', 'pd', 'h8'];
  for (const n of names) fs.writeFileSync(path.join(d, `${n}.txt`), `${n}-recorded`);
  const log = path.join(dir, 'app.replay');
  const rec = runNode('record', log, app, { args: [d] });
  assert.strictEqual(rec.code, 0, rec.stderr);
  assert.strictEqual(rec.stdout.trim().split(' ').length, names.length, rec.stdout);
  for (const n of names) fs.writeFileSync(path.join(d, `${n}.txt`), `${n}-edited`);
  for (let i = 0; i < 4; i++) {
    const rep = runNode('replay', log, app, { args: [d] });
    assert.strictEqual(rep.code, 0, rep.stderr);
    assert.strictEqual(rep.stderr, '');
    assert.strictEqual(rep.stdout, rec.stdout);
  }
});
