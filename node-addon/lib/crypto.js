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

  const set = (on) => {
    const src = on ? hooks : real;
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
