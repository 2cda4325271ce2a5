'use strict';
// Records and replays TCP client connections at the socket level: every net.Socket the
// program connects (net.connect/createConnection, http/http.Agent, global fetch (undici), any
// TCP client library) is hooked in net.Socket.prototype.connect, so the client code above
// the socket (the HTTP parser, undici, a database driver) runs for real against recorded bytes.
//
// Record: the real connection runs; its connect outcome, every incoming chunk, EOF, error and
// close are completions (ev.done) of a stream key, in the order they happened over all
// connections. What the program writes is one event per write whose input is the written
// bytes (a changed request diverges), of a kind per request identity
// (`node.net.write net HOST:PORT METHOD URL`, or `... net HOST:PORT` for other protocols).
// Replay: no network at all. The socket is left unconnected (no handle) and fed: 'connect',
// the recorded chunks and EOF/error, through ev.await in recorded order; writes are checked.
//
// Stream keys: a connection starts as `net HOST:PORT#n` (n: the order connections to that
// endpoint are made). Each HTTP request line it writes moves it to the request's own stream,
// `net HOST:PORT METHOD URL#n` (n: the order of identical requests), so a response reaches
// its request in replay even when parallel requests start in another order or a pool
// (http.Agent, undici) puts a request on another connection than it did when recorded.
//
// Secrets: header values of Authorization, Proxy-Authorization, Cookie, Set-Cookie and the
// names in REPLAY_REDACT (comma list) are replaced, in what is stored and in what writes are
// checked against, by `[redacted sha256:<16 hex>]` of the live value: the log never holds the
// secret, a replay with the same secret matches, another secret diverges. A replayed response
// carries the placeholder in place of a recorded Set-Cookie value.
//
// Not hooked: TLS sockets (https: they connect live in replay), unix-socket paths, sockets a
// server accepts.

const net = require('net');
const crypto = require('crypto');

const CONN = Symbol('replay-node.net');
const HTTP_LINE = /^([A-Z]+) (\S+) HTTP\/1\.[01]\r\n/;

function like(hook, real) {
  Object.defineProperty(hook, 'name', { value: real.name, configurable: true });
  Object.defineProperty(hook, 'length', { value: real.length, configurable: true });
  return hook;
}

function redactor() {
  const names = ['authorization', 'proxy-authorization', 'cookie', 'set-cookie'];
  for (const n of String(process.env.REPLAY_REDACT || '').split(',')) {
    const t = n.trim().toLowerCase();
    if (t && /^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(t) && !names.includes(t)) names.push(t);
  }
  const escaped = names.map((n) => n.replace(/[.*+^$|]/g, '\\$&'));
  // A header line: at the start of the bytes or after CRLF, up to the next CR.
  const re = new RegExp(`(^|\\r\\n)(${escaped.join('|')})(:[ \\t]*)([^\\r\\n]*)`, 'gi');
  const mark = (value) =>
    `[redacted sha256:${crypto.createHash('sha256').update(value, 'latin1').digest('hex').slice(0, 16)}]`;
  // Bytes in, bytes out (latin1 keeps every byte); the same Buffer when nothing matched.
  return (buf) => {
    const s = buf.toString('latin1');
    re.lastIndex = 0;
    if (!re.test(s)) return buf;
    re.lastIndex = 0;
    return Buffer.from(
      s.replace(re, (_, pre, name, sep, value) => pre + name + sep + mark(value)),
      'latin1',
    );
  };
}

// Bytes of a chunk as Writable hands it to _write/_writev.
function bytesOf(chunk, encoding) {
  if (Buffer.isBuffer(chunk)) return chunk;
  if (typeof chunk === 'string') return Buffer.from(chunk, encoding === 'buffer' ? 'utf8' : encoding);
  if (ArrayBuffer.isView(chunk)) return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  return Buffer.from(String(chunk));
}

// [options, cb] of connect()'s arguments. net.connect passes the pair it already normalized
// as the only argument (marked by a symbol of its own), which is recognised by its shape.
function normalize(args) {
  if (args.length === 1 && Array.isArray(args[0])) return args[0];
  return net._normalizeArgs(args);
}

function install(ev) {
  const replaying = ev.mode === 'replay';
  const redact = redactor();
  const P = net.Socket.prototype;
  // tls loads on the first connect, not at every program's start.
  let TLSSocket = null;
  const isTls = (sock) => {
    if (TLSSocket === null) TLSSocket = require('tls').TLSSocket;
    return sock instanceof TLSSocket;
  };
  const real = {
    connect: P.connect,
    write: P._write,
    writev: P._writev,
    read: P._read,
    final: P._final,
    ref: P.ref,
    unref: P.unref,
    emitOwn: Object.getOwnPropertyDescriptor(P, 'emit'),
    pushOwn: Object.getOwnPropertyDescriptor(P, 'push'),
    emit: P.emit,
    push: P.push,
  };
  const open = new Set(); // recorded connections not closed yet

  // One connection. `cur` is the key of the stream its incoming events belong to: the
  // connection's own key until it writes an HTTP request line, then that request's.
  function newConn(sock, host, port) {
    const key = ev.opKey(`net ${host}:${port}`);
    return { sock, host, port, key, cur: key, req: `net ${host}:${port}`, closed: false, fake: replaying };
  }

  // The URL of a request line's target: origin-form gets the Host header's origin.
  function absolute(c, head, target) {
    if (!target.startsWith('/')) return target;
    const h = /\r\nhost:[ \t]*([^\r\n]*)/i.exec(head);
    return `http://${h ? h[1].trim() : `${c.host}:${c.port}`}${target}`;
  }

  // Writes are checked per request identity (`net HOST:PORT METHOD URL`, or `net HOST:PORT`
  // for other protocols), so a divergence names the request the program made.
  const kinds = new Map();
  function writeKind(identity) {
    let k = kinds.get(identity);
    if (k === undefined) {
      k = ev.kind(`node.net.write ${identity}`);
      kinds.set(identity, k);
    }
    return k;
  }

  // A write that starts an HTTP request moves the connection's incoming stream to a key of
  // that request's own: `net HOST:PORT METHOD URL#n`, n counting identical requests in the
  // order the program makes them. So a response goes to its request in replay even when a
  // pool (http.Agent, undici) puts the request on another connection than it did recorded.
  // The old stream ends with 'n' (moved on).
  function written(c, b) {
    const head = b.toString('latin1', 0, Math.min(b.length, 8192));
    const m = HTTP_LINE.exec(head);
    if (m) {
      c.req = `net ${c.host}:${c.port} ${m[1]} ${absolute(c, head, m[2])}`;
      const next = ev.opKey(c.req);
      if (replaying) {
        c.cur = next;
        follow(c, next);
      } else {
        ev.done(c.cur, { t: 'n' });
        c.cur = next;
      }
    }
    const kind = writeKind(c.req);
    const input = `${c.cur} ${redact(b).toString('latin1')}`;
    if (!replaying) {
      ev.record(kind, input, null);
      return true;
    }
    if (ev.replay(kind, input) === ev.LIVE) {
      goneLive(c);
      return false;
    }
    return true;
  }

  // ---- record ----

  function note(c, v) {
    ev.done(c.cur, v);
  }

  // ---- replay ----

  function goneLive(c) {
    c.closed = true;
    const sock = c.sock;
    if (!sock.destroyed) {
      sock.destroy(new Error('replay-node: a replayed connection cannot go live'));
    }
  }

  // Feeds the recorded events of stream `key` to the connection, one completion at a time.
  function follow(c, key) {
    ev.await(key, (v) => {
      if (v === ev.LIVE) {
        goneLive(c);
        return;
      }
      if (deliver(c, v)) follow(c, key);
    });
  }

  // One recorded event; false when its stream ends there.
  function deliver(c, v) {
    const sock = c.sock;
    switch (v.t) {
      case 'k':
        sock.connecting = false;
        real.emit.call(sock, 'connect');
        real.emit.call(sock, 'ready');
        return true;
      case 'd':
        real.push.call(sock, v.b);
        return true;
      case 'e':
        real.push.call(sock, null);
        return true;
      case 'x':
        sock.connecting = false;
        sock.destroy(v.e);
        return true;
      case 'c':
        c.closed = true;
        if (!sock.destroyed) sock.destroy();
        return false;
      default:
        // 'n': the connection moved on to another request; 'o': it was still open when the
        // recorded run exited.
        return false;
    }
  }

  function replayConnect(sock, options, cb) {
    const c = newConn(sock, options.host || 'localhost', Number(options.port));
    sock[CONN] = c;
    // What the real connect() sets before it resolves the address.
    sock.connecting = true;
    if (options.timeout) sock.setTimeout(options.timeout);
    if (typeof cb === 'function') sock.once('connect', cb);
    follow(c, c.key);
    return sock;
  }

  // ---- hooks ----

  const connect = like(function connect(...args) {
    if (!ev.on || ev.busy || isTls(this)) return real.connect.apply(this, args);
    let norm;
    try {
      norm = normalize(args);
    } catch (_) {
      return real.connect.apply(this, args);
    }
    const options = norm[0];
    // Unix sockets, and ports the real connect rejects, go the real way.
    if (options.path || options.port == null || !Number.isInteger(Number(options.port))) {
      return real.connect.apply(this, args);
    }
    if (replaying) return replayConnect(this, options, norm[1]);
    const c = newConn(this, options.host || 'localhost', Number(options.port));
    this[CONN] = c;
    open.add(c);
    return ev.live(() => real.connect.apply(this, args));
  }, real.connect);

  const emit = like(function emit(name, ...rest) {
    const c = this[CONN];
    if (c !== undefined && !c.fake && ev.on) {
      try {
        if (name === 'connect') note(c, { t: 'k' });
        else if (name === 'error') note(c, { t: 'x', e: rest[0] });
        else if (name === 'close' && !c.closed) {
          c.closed = true;
          open.delete(c);
          note(c, { t: 'c' });
        }
      } catch (e) {
        ev.fail('recording a connection', e);
      }
    }
    return real.emit.call(this, name, ...rest);
  }, real.emit);

  const push = like(function push(chunk, encoding) {
    const c = this[CONN];
    if (c !== undefined && !c.fake && ev.on && !c.closed) {
      try {
        if (chunk === null) note(c, { t: 'e' });
        else {
          note(c, { t: 'd', b: redact(bytesOf(chunk, encoding)) });
        }
      } catch (e) {
        ev.fail('recording a connection', e);
      }
    }
    return real.push.call(this, chunk, encoding);
  }, real.push);

  const _write = like(function _write(data, encoding, cb) {
    const c = this[CONN];
    if (c === undefined || !ev.on) return real.write.call(this, data, encoding, cb);
    try {
      if (!written(c, bytesOf(data, encoding))) return cb(new Error('replay-node: write not replayed'));
    } catch (e) {
      ev.fail('a connection write', e);
    }
    if (c.fake) return cb();
    return real.write.call(this, data, encoding, cb);
  }, real.write);

  const _writev = like(function _writev(chunks, cb) {
    const c = this[CONN];
    if (c === undefined || !ev.on) return real.writev.call(this, chunks, cb);
    try {
      const all = chunks.allBuffers
        ? Buffer.concat(chunks.map((x) => bytesOf(x.chunk || x)))
        : Buffer.concat(chunks.map((x) => bytesOf(x.chunk, x.encoding)));
      if (!written(c, all)) return cb(new Error('replay-node: write not replayed'));
    } catch (e) {
      ev.fail('a connection write', e);
    }
    if (c.fake) return cb();
    return real.writev.call(this, chunks, cb);
  }, real.writev);

  const _read = like(function _read(n) {
    const c = this[CONN];
    if (c !== undefined && c.fake) return undefined; // data comes from the log
    return real.read.call(this, n);
  }, real.read);

  const _final = like(function _final(cb) {
    const c = this[CONN];
    if (c !== undefined && c.fake) return cb();
    return real.final.call(this, cb);
  }, real.final);

  // Without a handle, ref/unref wait for 'connect' by adding a listener each call (a pooled
  // socket is ref'd and unref'd per request): a fed socket has nothing to (un)ref.
  const ref = like(function ref() {
    const c = this[CONN];
    if (c !== undefined && c.fake) return this;
    return real.ref.call(this);
  }, real.ref);
  const unref = like(function unref() {
    const c = this[CONN];
    if (c !== undefined && c.fake) return this;
    return real.unref.call(this);
  }, real.unref);

  const define = (name, value) =>
    Object.defineProperty(P, name, { value, writable: true, configurable: true, enumerable: false });
  define('connect', connect);
  define('_write', _write);
  define('_writev', _writev);
  if (replaying) {
    define('_read', _read);
    define('_final', _final);
    define('ref', ref);
    define('unref', unref);
  } else {
    define('emit', emit);
    define('push', push);
    // Connections still open at exit (a keep-alive pool): replay stops waiting for them there.
    process.on('exit', () => {
      if (!ev.on) return;
      for (const c of open) ev.done(c.cur, { t: 'o' });
      open.clear();
    });
  }

  ev.onDisable(() => {
    define('connect', real.connect);
    define('_write', real.write);
    define('_writev', real.writev);
    define('_read', real.read);
    define('_final', real.final);
    define('ref', real.ref);
    define('unref', real.unref);
    if (real.emitOwn) Object.defineProperty(P, 'emit', real.emitOwn);
    else delete P.emit;
    if (real.pushOwn) Object.defineProperty(P, 'push', real.pushOwn);
    else delete P.push;
  });
}

module.exports = { install };
