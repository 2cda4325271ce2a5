'use strict';
// Records and replays random numbers from the crypto module: randomBytes (sync and
// callback), randomFillSync, randomFill, randomUUID, randomInt (sync and callback), and Web
// Crypto's getRandomValues / randomUUID (globalThis.crypto, which is crypto.webcrypto; the
// crypto.getRandomValues export calls it, so it is hooked through it).
//
// Argument checks stay Node's own: replay calls the real function too (same arguments, so the
// same exceptions for bad ones, and a result of the right type), then puts the recorded bytes
// or value in its place. Node's internals call no hooked export (randomUUID's pool and
// randomInt's cache use internal bindings), and the ev.busy guard keeps a nested hooked call,
// like the crypto.getRandomValues export calling webcrypto's, from being a second event.

const crypto = require('crypto');

function like(hook, real) {
  Object.defineProperty(hook, 'name', { value: real.name, configurable: true });
  Object.defineProperty(hook, 'length', { value: real.length, configurable: true });
  return hook;
}

// The bytes of `buf` that randomFill(Sync)(buf, offset, size) fills: offset and size count
// elements of a typed array, bytes otherwise. Only used after the real call accepted them.
function region(buf, offset, size) {
  const view = ArrayBuffer.isView(buf)
    ? Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength)
    : Buffer.from(buf);
  const unit = (ArrayBuffer.isView(buf) && buf.BYTES_PER_ELEMENT) || 1;
  const start = offset === undefined ? 0 : offset * unit;
  const end = size === undefined ? view.length : start + size * unit;
  return view.subarray(start, end);
}

const typeName = (b) => (b && b.constructor ? b.constructor.name : typeof b);
const sizeOf = (b) => (b && typeof b.byteLength === 'number' ? b.byteLength : '?');

function install(ev) {
  const replaying = ev.mode === 'replay';
  const webProto = globalThis.crypto ? Object.getPrototypeOf(globalThis.crypto) : null;
  const real = {
    randomBytes: crypto.randomBytes,
    randomFillSync: crypto.randomFillSync,
    randomFill: crypto.randomFill,
    randomUUID: crypto.randomUUID,
    randomInt: crypto.randomInt,
    getRandomValues: webProto && webProto.getRandomValues,
    webRandomUUID: webProto && webProto.randomUUID,
  };
  const K = {
    randomBytes: ev.kind('node.crypto.randomBytes'),
    randomFillSync: ev.kind('node.crypto.randomFillSync'),
    randomFill: ev.kind('node.crypto.randomFill'),
    randomUUID: ev.kind('node.crypto.randomUUID'),
    randomInt: ev.kind('node.crypto.randomInt'),
    getRandomValues: ev.kind('node.crypto.getRandomValues'),
  };

  // A synchronous call whose value is the result (replay: the real call checks the arguments,
  // `put(realResult, recorded)` gives what the program gets).
  function valueCall(k, input, self, args, fn, put) {
    if (replaying) {
      const r = ev.live(() => fn.apply(self, args));
      const v = ev.replay(k, input);
      return v === ev.LIVE ? r : put(r, v);
    }
    const r = ev.live(() => fn.apply(self, args));
    ev.record(k, input, r);
    return r;
  }

  // A synchronous fill of `buf`'s region.
  function fillCall(k, input, self, args, fn, buf, offset, size) {
    const r = ev.live(() => fn.apply(self, args));
    const bytes = region(buf, offset, size);
    if (replaying) {
      const v = ev.replay(k, input);
      if (v !== ev.LIVE) v.copy(bytes);
    } else {
      ev.record(k, input, Buffer.from(bytes));
    }
    return r;
  }

  // An async call with a callback. `check()` runs the real synchronous form (replay: Node's
  // argument errors, thrown at the call as the async form throws them); `start(cb)` runs the
  // real async call; `deliver(recorded, cb)` completes it in replay.
  // `keep(value)` is what the completion records of the real result.
  function asyncCall(k, input, check, start, cb, deliver, keep = (v) => v) {
    const key = ev.opKey(input);
    if (replaying) {
      ev.live(check);
      const v = ev.replay(k, input);
      if (v === ev.LIVE) return ev.live(() => start(cb));
      ev.await(key, (r) => {
        if (r === ev.LIVE) start(cb);
        else deliver(r, cb);
      });
      return undefined;
    }
    ev.record(k, input, null);
    return ev.live(() =>
      start(function (err, value) {
        // The error argument as given (null or undefined on success: programs can tell).
        ev.done(key, err ? { e: err } : { e: err, v: keep(value) });
        return cb.apply(this, arguments);
      }),
    );
  }

  const hooks = {};
  hooks.randomBytes = like(function randomBytes(size, callback) {
    if (!ev.on || ev.busy || (callback !== undefined && typeof callback !== 'function')) {
      return real.randomBytes.apply(this, arguments);
    }
    const input = `randomBytes ${size}`;
    if (callback === undefined) {
      return valueCall(K.randomBytes, input, this, [size], real.randomBytes, (b, v) => {
        v.copy(b);
        return b;
      });
    }
    return asyncCall(K.randomBytes, input, () => real.randomBytes(size),
      (cb) => real.randomBytes(size, cb), callback,
      (r, cb) => (r.e ? cb(r.e) : cb(r.e, r.v)));
  }, real.randomBytes);

  hooks.randomFillSync = like(function randomFillSync(buf, offset, size) {
    if (!ev.on || ev.busy) return real.randomFillSync.apply(this, arguments);
    const input = `randomFillSync ${typeName(buf)} ${sizeOf(buf)} ${offset} ${size}`;
    return fillCall(K.randomFillSync, input, this, arguments, real.randomFillSync, buf, offset, size);
  }, real.randomFillSync);

  hooks.randomFill = like(function randomFill(buf, offset, size, callback) {
    const args = [...arguments];
    const cb = args[args.length - 1];
    if (!ev.on || ev.busy || typeof cb !== 'function' || args.length < 2) {
      return real.randomFill.apply(this, arguments);
    }
    const fillArgs = args.slice(0, -1);
    const [, off, sz] = fillArgs;
    const input = `randomFill ${typeName(buf)} ${sizeOf(buf)} ${off} ${sz}`;
    return asyncCall(K.randomFill, input,
      () => real.randomFillSync(...fillArgs),
      (done) => real.randomFill(...fillArgs, done), cb,
      (r, done) => {
        if (r.e) return done(r.e);
        r.v.copy(region(buf, off, sz));
        return done(r.e, buf);
      },
      () => Buffer.from(region(buf, off, sz)));
  }, real.randomFill);

  hooks.randomUUID = like(function randomUUID(options) {
    if (!ev.on || ev.busy) return real.randomUUID.apply(this, arguments);
    return valueCall(K.randomUUID, 'randomUUID', this, arguments, real.randomUUID, (_, v) => v);
  }, real.randomUUID);

  hooks.randomInt = like(function randomInt(min, max, callback) {
    const args = [...arguments];
    const cb = typeof args[args.length - 1] === 'function' ? args.pop() : undefined;
    if (!ev.on || ev.busy) return real.randomInt.apply(this, arguments);
    const input = `randomInt ${args.join(' ')}`;
    if (cb === undefined) {
      return valueCall(K.randomInt, input, this, arguments, real.randomInt, (_, v) => v);
    }
    return asyncCall(K.randomInt, input, () => real.randomInt(...args),
      (done) => real.randomInt(...args, done), cb,
      (r, done) => (r.e ? done(r.e) : done(r.e, r.v)));
  }, real.randomInt);

  if (webProto) {
    hooks.getRandomValues = like(function getRandomValues(array) {
      if (!ev.on || ev.busy) return real.getRandomValues.apply(this, arguments);
      const input = `getRandomValues ${typeName(array)} ${sizeOf(array)}`;
      return fillCall(K.getRandomValues, input, this, arguments, real.getRandomValues, array);
    }, real.getRandomValues);
    hooks.webRandomUUID = like(function randomUUID() {
      if (!ev.on || ev.busy) return real.webRandomUUID.apply(this, arguments);
      return valueCall(K.randomUUID, 'randomUUID', this, arguments, real.webRandomUUID, (_, v) => v);
    }, real.webRandomUUID);
  }

  // Key and prime generation: OpenSSL draws their randomness itself (not through the hooked
  // functions), so a generated key or prime came out new in replay and went into files
  // (key.pem) without a word. Each call is one event holding what it made: key objects as
  // DER (pkcs8, spki, or a secret's bytes), encoded keys (PEM strings, DER buffers) as they
  // are, primes as bytes or a bigint's digits. Replay rebuilds them without generating
  // anything (an RSA key takes seconds to make); a call that threw throws again.
  const K2 = {
    generateKeyPair: ev.kind('node.crypto.generateKeyPair'),
    generateKey: ev.kind('node.crypto.generateKey'),
    generatePrime: ev.kind('node.crypto.generatePrime'),
    dhKeys: ev.kind('node.crypto.DiffieHellman.generateKeys'),
    ecdhKeys: ev.kind('node.crypto.ECDH.generateKeys'),
    dhPrime: ev.kind('node.crypto.createDiffieHellman'),
  };
  const keyOut = (k) => {
    if (k instanceof crypto.KeyObject) {
      if (k.type === 'secret') return { s: k.export() };
      if (k.type === 'private') return { p: k.export({ type: 'pkcs8', format: 'der' }) };
      return { u: k.export({ type: 'spki', format: 'der' }) };
    }
    return { x: k };
  };
  const keyIn = (v) => {
    if (v.s !== undefined) return crypto.createSecretKey(v.s);
    if (v.p !== undefined) return crypto.createPrivateKey({ key: v.p, format: 'der', type: 'pkcs8' });
    if (v.u !== undefined) return crypto.createPublicKey({ key: v.u, format: 'der', type: 'spki' });
    return v.x;
  };
  const primeOut = (p) => (typeof p === 'bigint' ? { n: p.toString() } : { b: Buffer.from(p) });
  const primeIn = (v) => {
    if (v.n !== undefined) return BigInt(v.n);
    const b = Buffer.from(v.b);
    return b.buffer.slice(b.byteOffset, b.byteOffset + b.length);
  };

  // Synchronous: `run()` the real call, `out(result)` what is recorded, `inp(v)` the result.
  function madeSync(k, input, run, out, inp) {
    if (replaying) {
      const v = ev.replay(k, input);
      if (v === ev.LIVE) return ev.live(run);
      if (v !== null && typeof v === 'object' && v.t !== undefined) throw v.t;
      return inp(v.v);
    }
    let r;
    try {
      r = ev.live(run);
    } catch (e) {
      ev.record(k, input, { t: e });
      throw e;
    }
    ev.record(k, input, { v: out(r) });
    return r;
  }

  // With a callback: `start(done)` the real call, the callback's values recorded by `out`
  // (an array of them) and given back by `inp`.
  function madeAsync(k, input, start, cb, out, inp) {
    const key = ev.opKey(input);
    if (replaying) {
      const v = ev.replay(k, input);
      if (v === ev.LIVE) return ev.live(() => start(cb));
      if (v !== null && typeof v === 'object' && v.t !== undefined) throw v.t;
      ev.await(key, (r) => {
        if (r === ev.LIVE) start(cb);
        else if (r.e) cb(r.e);
        else cb(null, ...inp(r.v));
      });
      return undefined;
    }
    try {
      ev.live(() =>
        start(function (err, ...values) {
          ev.done(key, err ? { e: err } : { v: out(values) });
          return cb.apply(this, arguments);
        }),
      );
    } catch (e) {
      ev.record(k, input, { t: e });
      throw e;
    }
    ev.record(k, input, null);
    return undefined;
  }

  const describeArgs = (name, args) => {
    try {
      return `${name} ${JSON.stringify(args, (_, x) => (typeof x === 'bigint' ? `${x}n` : x))}`;
    } catch (_) {
      return name;
    }
  };
  const pairOut = (r) => ({ pub: keyOut(r.publicKey), priv: keyOut(r.privateKey) });
  const pairIn = (v) => ({ publicKey: keyIn(v.pub), privateKey: keyIn(v.priv) });
  const made = {};
  for (const name of ['generateKeyPairSync', 'generateKeyPair', 'generateKeySync', 'generateKey',
    'generatePrimeSync', 'generatePrime', 'createDiffieHellman']) {
    real[name] = crypto[name];
  }
  if (typeof real.generateKeyPairSync === 'function') {
    made.generateKeyPairSync = like(function generateKeyPairSync(type, options) {
      if (!ev.on || ev.busy) return real.generateKeyPairSync.apply(this, arguments);
      const args = arguments;
      return madeSync(K2.generateKeyPair, describeArgs('generateKeyPairSync', [type, options]),
        () => real.generateKeyPairSync.apply(this, args), pairOut, pairIn);
    }, real.generateKeyPairSync);
  }
  if (typeof real.generateKeyPair === 'function') {
    made.generateKeyPair = like(function generateKeyPair(type, options, callback) {
      const args = [...arguments];
      const cb = args.pop();
      if (!ev.on || ev.busy || typeof cb !== 'function') return real.generateKeyPair.apply(this, arguments);
      return madeAsync(K2.generateKeyPair, describeArgs('generateKeyPair', args),
        (done) => real.generateKeyPair(...args, done), cb,
        ([pub, priv]) => ({ pub: keyOut(pub), priv: keyOut(priv) }),
        (v) => [keyIn(v.pub), keyIn(v.priv)]);
    }, real.generateKeyPair);
  }
  if (typeof real.generateKeySync === 'function') {
    made.generateKeySync = like(function generateKeySync(type, options) {
      if (!ev.on || ev.busy) return real.generateKeySync.apply(this, arguments);
      const args = arguments;
      return madeSync(K2.generateKey, describeArgs('generateKeySync', [type, options]),
        () => real.generateKeySync.apply(this, args), keyOut, keyIn);
    }, real.generateKeySync);
  }
  if (typeof real.generateKey === 'function') {
    made.generateKey = like(function generateKey(type, options, callback) {
      const args = [...arguments];
      const cb = args.pop();
      if (!ev.on || ev.busy || typeof cb !== 'function') return real.generateKey.apply(this, arguments);
      return madeAsync(K2.generateKey, describeArgs('generateKey', args),
        (done) => real.generateKey(...args, done), cb,
        ([key]) => keyOut(key), (v) => [keyIn(v)]);
    }, real.generateKey);
  }
  if (typeof real.generatePrimeSync === 'function') {
    made.generatePrimeSync = like(function generatePrimeSync(size, options) {
      if (!ev.on || ev.busy) return real.generatePrimeSync.apply(this, arguments);
      const args = arguments;
      return madeSync(K2.generatePrime, describeArgs('generatePrimeSync', [size, options]),
        () => real.generatePrimeSync.apply(this, args), primeOut, primeIn);
    }, real.generatePrimeSync);
  }
  if (typeof real.generatePrime === 'function') {
    made.generatePrime = like(function generatePrime(size, options, callback) {
      const args = [...arguments];
      const cb = args.pop();
      if (!ev.on || ev.busy || typeof cb !== 'function') return real.generatePrime.apply(this, arguments);
      return madeAsync(K2.generatePrime, describeArgs('generatePrime', args),
        (done) => real.generatePrime(...args, done), cb,
        ([p]) => primeOut(p), (v) => [primeIn(v)]);
    }, real.generatePrime);
  }
  // createDiffieHellman(primeLength[, generator]) generates its prime; with a prime given it
  // makes none.
  if (typeof real.createDiffieHellman === 'function') {
    made.createDiffieHellman = like(function createDiffieHellman(prime, ...rest) {
      if (!ev.on || ev.busy || typeof prime !== 'number') return real.createDiffieHellman.apply(this, arguments);
      const args = arguments;
      return madeSync(K2.dhPrime, describeArgs('createDiffieHellman', [prime, ...rest]),
        () => real.createDiffieHellman.apply(this, args),
        (dh) => ({ p: dh.getPrime(), g: dh.getGenerator() }),
        (v) => ev.live(() => real.createDiffieHellman(Buffer.from(v.p), Buffer.from(v.g))));
    }, real.createDiffieHellman);
  }
  // generateKeys() of DiffieHellman, DiffieHellmanGroup and ECDH objects: the key pair is set
  // from the recording (setPrivateKey; DiffieHellman's public key too).
  const keyProtos = [];
  for (const [ctor, k] of [[crypto.DiffieHellman, K2.dhKeys], [crypto.DiffieHellmanGroup, K2.dhKeys], [crypto.ECDH, K2.ecdhKeys]]) {
    const proto = ctor && ctor.prototype;
    if (!proto || typeof proto.generateKeys !== 'function' || keyProtos.some(([p]) => p === proto)) continue;
    const realGen = proto.generateKeys;
    const gen = like(function generateKeys(encoding, format) {
      if (!ev.on || ev.busy) return realGen.apply(this, arguments);
      const self = this;
      const args = arguments;
      return madeSync(k, describeArgs('generateKeys', [ctor.name]), () => realGen.apply(self, args),
        () => ({ priv: self.getPrivateKey(), pub: self.getPublicKey() }),
        (v) => ev.live(() => {
          let target = self;
          if (typeof self.setPrivateKey !== 'function') {
            // A DiffieHellmanGroup has no setters: a DiffieHellman of the same group holds
            // the recorded pair and answers for it.
            target = real.createDiffieHellman(self.getPrime(), self.getGenerator());
            for (const m of ['generateKeys', 'getPublicKey', 'getPrivateKey', 'computeSecret']) {
              Object.defineProperty(self, m, { value: target[m].bind(target), configurable: true, writable: true });
            }
          }
          if (!(target instanceof crypto.ECDH)) target.setPublicKey(Buffer.from(v.pub));
          target.setPrivateKey(Buffer.from(v.priv));
          return target instanceof crypto.ECDH ? target.getPublicKey(encoding, format) : target.getPublicKey(encoding);
        }));
    }, realGen);
    keyProtos.push([proto, realGen, gen]);
  }

  // Web Crypto's subtle.generateKey: the key (or pair) recorded as KeyObject DER with its
  // algorithm, extractable flag and usages; replay imports it back (raw, pkcs8 or spki).
  const subtle = globalThis.crypto && globalThis.crypto.subtle;
  const subtleProto = subtle ? Object.getPrototypeOf(subtle) : null;
  const realSubtleGen = subtleProto && subtleProto.generateKey;
  let subtleGen = null;
  if (typeof realSubtleGen === 'function' && typeof crypto.KeyObject.from === 'function') {
    const kSubtle = ev.kind('node.crypto.subtle.generateKey');
    const cryptoKeyOut = (k) => ({
      k: keyOut(crypto.KeyObject.from(k)),
      a: JSON.stringify({ name: k.algorithm.name, hash: k.algorithm.hash, namedCurve: k.algorithm.namedCurve, length: k.algorithm.length }),
      x: k.extractable,
      u: [...k.usages],
    });
    const cryptoKeyIn = (v) => {
      const format = v.k.s !== undefined ? 'raw' : v.k.p !== undefined ? 'pkcs8' : 'spki';
      const bytes = v.k.s !== undefined ? v.k.s : v.k.p !== undefined ? v.k.p : v.k.u;
      return ev.live(() => Reflect.apply(subtleProto.importKey, subtle, [format, Buffer.from(bytes), JSON.parse(v.a), v.x, v.u]));
    };
    subtleGen = like(function generateKey(algorithm, extractable, keyUsages) {
      if (!ev.on || ev.busy) return Reflect.apply(realSubtleGen, this, arguments);
      const input = describeArgs('subtle.generateKey', [algorithm, extractable, keyUsages]);
      const key = ev.opKey(input);
      if (replaying) {
        const v = ev.replay(kSubtle, input);
        if (v === ev.LIVE) return ev.live(() => Reflect.apply(realSubtleGen, this, [algorithm, extractable, keyUsages]));
        return new Promise((resolve, reject) => {
          ev.await(key, (r) => {
            if (r === ev.LIVE) {
              Reflect.apply(realSubtleGen, subtle, [algorithm, extractable, keyUsages]).then(resolve, reject);
            } else if (r.e !== undefined) {
              reject(r.e);
            } else if (r.v.pub !== undefined) {
              Promise.all([cryptoKeyIn(r.v.pub), cryptoKeyIn(r.v.priv)])
                .then(([publicKey, privateKey]) => resolve({ publicKey, privateKey }), reject);
            } else {
              cryptoKeyIn(r.v).then(resolve, reject);
            }
          });
        });
      }
      const pending = ev.live(() => Reflect.apply(realSubtleGen, this, [algorithm, extractable, keyUsages]));
      ev.record(kSubtle, input, null);
      return pending.then(
        (k) => {
          ev.done(key, { v: k.publicKey !== undefined ? { pub: cryptoKeyOut(k.publicKey), priv: cryptoKeyOut(k.privateKey) } : cryptoKeyOut(k) });
          return k;
        },
        (e) => {
          ev.done(key, { e });
          throw e;
        },
      );
    }, realSubtleGen);
  }

  const set = (on) => {
    const src = on ? hooks : real;
    if (subtleGen !== null) subtleProto.generateKey = on ? subtleGen : realSubtleGen;
    for (const name of Object.keys(made)) crypto[name] = on ? made[name] : real[name];
    for (const [proto, realGen, gen] of keyProtos) proto.generateKeys = on ? gen : realGen;
    crypto.randomBytes = src.randomBytes;
    crypto.randomFillSync = src.randomFillSync;
    crypto.randomFill = src.randomFill;
    crypto.randomUUID = src.randomUUID;
    crypto.randomInt = src.randomInt;
    if (webProto) {
      webProto.getRandomValues = src.getRandomValues;
      webProto.randomUUID = src.webRandomUUID;
    }
  };
  set(true);
  ev.onDisable(() => set(false));
}

module.exports = { install };
