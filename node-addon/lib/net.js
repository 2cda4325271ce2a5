'use strict';
// Records and replays TCP client connections at the socket level: every net.Socket the
// program connects (net.connect/createConnection, http/http.Agent, global fetch (undici), any
// TCP client library) is hooked in net.Socket.prototype.connect, so the client code above
// the socket (the HTTP parser, undici, a database driver) runs for real against recorded bytes.
// TLS client connections (tls.connect, which https.request/get, https.Agent and fetch of an
// https URL go through) are hooked in tls.connect and recorded above the encryption: the
// plaintext, which a replay can feed; ciphertext could never replay (fresh keys every run).
//
// Record: the real connection runs; its connect outcome, every incoming chunk, EOF, error and
// close are completions (ev.done) of a stream key, in the order they happened over all
// connections. What the program writes is one event per write whose input is the written
// bytes (a changed request diverges), of a kind per request identity
// (`node.net.write net HOST:PORT METHOD URL`, or `... net HOST:PORT` for other protocols).
// Replay: no network at all. The socket is left unconnected (no handle) and fed: 'connect',
// the recorded chunks and EOF/error, through ev.await in recorded order; writes are checked.
//
// TLS: the same, on the TLSSocket tls.connect returns (its push/_write/emit carry plaintext;
// its TCP connection is made inside ev.live, so the net hook leaves it alone), plus a
// 'secureConnect' completion holding what the handshake told the program (authorized,
// authorizationError, ALPN protocol, TLS version, cipher, a subset of the peer certificate).
// A handshake failure (a certificate error such as DEPTH_ZERO_SELF_SIGNED_CERT) is the error
// the socket emitted, with its code. Endpoint identity: `tls HOST:PORT SERVERNAME` (servername
// '-' when none), so http and https to one host are separate streams. Replay: tls.connect
// returns a ReplayTLSSocket (a handle-less net.Socket that is `instanceof tls.TLSSocket`, with
// the TLSSocket API https and undici use) fed like a TCP socket, emitting 'connect' and then
// 'secureConnect' with the recorded handshake facts. Connect and handshake stay on the
// connection's own stream even when a request line was written before the handshake ended
// (https.request does), so they reach the right socket when a pool reorders requests.
//
// Stream keys: a connection starts as `net HOST:PORT#n` (n: the order connections to that
// endpoint are made). Each HTTP request line it writes moves it to the request's own stream,
// `net HOST:PORT METHOD URL#n` (n: the order of identical requests), so a response reaches
// its request in replay even when parallel requests start in another order or a pool
// (http.Agent, undici) puts a request on another connection than it did when recorded.
//
// Secrets: header values of Authorization, Proxy-Authorization, Cookie, Set-Cookie and the
// names in REPLAY_REDACT (comma list) are replaced, in what is stored and in what writes are
// checked against, by `[redacted hmac:<key id>:<16 hex>]`: an HMAC-SHA256 of the live value
// under a key that is not in the log (REPLAY_REDACT_KEY, else a random key kept 0600 in the
// user's config dir, see redactKey), so a value cannot be found by guessing from the log
// alone; a replay with the same key and secret matches, another secret diverges. Replay with
// another key (another machine) cannot check the redacted values: it says so once and does
// not check the writes that hold them. Cookies are redacted value by value, as
// `NAME=redacted-hmac-<key id>-<16 hex>` (attributes kept): a replayed response carries that
// cookie in place of a recorded Set-Cookie value, a cookie jar keeps it, and the Cookie header
// the client then sends with it is checked as recorded.
//
// TLS through a proxy tunnel (tls.connect({ socket }) over a connection recorded here, as
// https-proxy-agent does): recorded above the encryption too, see tunnel() below.
//
// Sockets a TCP server of the program accepts are recorded the same way (see "connections a
// server of the program accepts" below). Not hooked: unix-socket paths, TLS servers.
// TLSSockets the program builds itself (new tls.TLSSocket(socket)) run live in record, their
// TCP socket recorded as ciphertext; in replay TLS over a replayed socket is a divergence (see
// _wrapHandle below), over a socket that is not replayed (a unix path) it runs live.

const net = require('net');
const dns = require('dns');
const crypto = require('crypto');
const fs = require('fs');
const os = require('os');
const path = require('path');
const tls = require('tls');

const CONN = Symbol('replay-node.net');
const HTTP_LINE = /^([A-Z]+) (\S+) HTTP\/1\.[01]\r\n/;

function like(hook, real) {
  Object.defineProperty(hook, 'name', { value: real.name, configurable: true });
  Object.defineProperty(hook, 'length', { value: real.length, configurable: true });
  return hook;
}

// The redaction key: REPLAY_REDACT_KEY (its UTF-8 bytes), else the key file
// $XDG_CONFIG_HOME/replay/redact.key (~/.config/replay/redact.key), 32 random bytes made
// 0600 at its first use. Read with ev.live: not an event of the program. Without either, a
// key of this process only, said once: its placeholders can be checked by no replay.
// Returns { key, id }: id names the key in the log (an HMAC of a constant: it tells keys
// apart without telling anything about the key).
function redactKey(ev) {
  let key = null;
  let why = null;
  const env = process.env.REPLAY_REDACT_KEY;
  if (env) {
    key = Buffer.from(env, 'utf8');
  } else {
    // Under ev.live, like everything here: os.homedir() is a hooked call, and an event of
    // the addon's own in the program's stream was left over in every replay of a response
    // with a Set-Cookie header (superagent, needle) where XDG_CONFIG_HOME was not set.
    const dir = ev.live(() => path.join(process.env.XDG_CONFIG_HOME || path.join(os.homedir(), '.config'), 'replay'));
    const file = path.join(dir, 'redact.key');
    try {
      key = ev.live(() => {
        try {
          return fs.readFileSync(file);
        } catch (e) {
          if (e.code !== 'ENOENT') throw e;
        }
        fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
        const fresh = crypto.randomBytes(32);
        try {
          fs.writeFileSync(file, fresh, { flag: 'wx', mode: 0o600 });
          return fresh;
        } catch (e) {
          // Made by another process meanwhile: theirs.
          if (e.code === 'EEXIST') return fs.readFileSync(file);
          throw e;
        }
      });
      if (key.length < 16) throw new Error(`${file} holds ${key.length} bytes, fewer than 16`);
    } catch (e) {
      why = `${e.code || e.message}`;
      key = null;
    }
  }
  if (key === null) {
    key = ev.live(() => crypto.randomBytes(32));
    notice(ev, `replay: no redaction key (${why}; set REPLAY_REDACT_KEY): redacted header values in this log cannot be checked by any replay\n`);
  }
  const id = crypto.createHmac('sha256', key).update('replay redaction key id').digest('hex').slice(0, 8);
  return { key, id };
}

// One line of the addon on stderr, not the program's output (not recorded or compared).
function notice(ev, line) {
  try {
    ev.live(() => fs.writeSync(2, line));
  } catch (_) {
    // stderr closed: nothing to tell it to.
  }
}

// What a redacted cookie value holds (redactor's cookieMark).
const COOKIE_PLACEHOLDER = /^redacted-hmac-[0-9a-f]{8}-[0-9a-f]{16}$/;
const MARKED = /\[redacted hmac:|redacted-hmac-[0-9a-f]{8}-/;

function redactor(ev) {
  const names = ['authorization', 'proxy-authorization', 'cookie', 'set-cookie'];
  for (const n of String(process.env.REPLAY_REDACT || '').split(',')) {
    const t = n.trim().toLowerCase();
    if (t && /^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(t) && !names.includes(t)) names.push(t);
  }
  const escaped = names.map((n) => n.replace(/[.*+^$|]/g, '\\$&'));
  // A header line: at the start of the bytes or after CRLF, up to the next CR.
  const re = new RegExp(`(^|\\r\\n)(${escaped.join('|')})(:[ \\t]*)([^\\r\\n]*)`, 'gi');
  // The key is looked up at the first redaction (a program without secret headers makes no
  // key file).
  let key = null;
  const mark = (value) => {
    if (key === null) key = redactKey(ev);
    const tag = crypto.createHmac('sha256', key.key).update(value, 'latin1').digest('hex').slice(0, 16);
    return `[redacted hmac:${key.id}:${tag}]`;
  };
  // Whether a header line of those names may be in `buf`: a cheap look at each line start
  // (found by the native indexOf) with a first byte that can begin a name, comparing bytes,
  // instead of making a string of every chunk (a 64 KB body cost more than the rest of its
  // recording; a string per candidate line cost microseconds per response).
  // The names' bytes with bit 0x20 set: a byte compared the same way matches its letter in
  // either case (other bytes may match where they should not, which only costs the exact
  // test below; none fails to match).
  const folded = names.map((n) => Buffer.from(n, 'latin1').map((b) => b | 0x20));
  const firstByte = new Uint8Array(256);
  for (const f of folded) {
    firstByte[f[0]] = 1;
    firstByte[f[0] & ~0x20] = 1;
  }
  const nameAt = (buf, i) => {
    for (let n = 0; n < folded.length; n++) {
      const f = folded[n];
      if (i + f.length >= buf.length || buf[i + f.length] !== 0x3a) continue;
      let k = 0;
      while (k < f.length && (buf[i + k] | 0x20) === f[k]) k++;
      if (k === f.length) return true;
    }
    return false;
  };
  // Lines are found by LF alone (a line start of the exact test is after CRLF): more places
  // looked at, never fewer. Past 64 lines, the rest is searched as a whole.
  const mayHold = (buf) => {
    for (let i = 0, lines = 0; i < buf.length; lines++) {
      if (lines === 64) {
        re.lastIndex = 0;
        return re.test(buf.toString('latin1', i));
      }
      if (firstByte[buf[i]] === 1 && nameAt(buf, i)) return true;
      const j = buf.indexOf(0x0a, i);
      if (j < 0) return false;
      i = j + 1;
    }
    return false;
  };
  // Cookies are redacted value by value, with a placeholder a cookie may hold: the whole
  // `Set-Cookie` header as `[redacted ...]` was no cookie at all (cookie jars rejected it in
  // replay, on stderr), and the `Cookie` a client then sends holds the replayed placeholder,
  // which stays as it is (the recorded write held the placeholder of the same secret).
  const cookieMark = (value) => {
    if (COOKIE_PLACEHOLDER.test(value)) return value;
    if (key === null) key = redactKey(ev);
    const tag = crypto.createHmac('sha256', key.key).update(value, 'latin1').digest('hex').slice(0, 16);
    return `redacted-hmac-${key.id}-${tag}`;
  };
  const cookiePair = (pair) => {
    const eq = pair.indexOf('=');
    if (eq < 0) return pair;
    const v = pair.slice(eq + 1).trim();
    return v === '' ? pair : `${pair.slice(0, eq + 1)}${cookieMark(v)}`;
  };
  const replace = (s) => {
    re.lastIndex = 0;
    return s.replace(re, (_, pre, name, sep, value) => {
      const n = name.toLowerCase();
      if (n === 'set-cookie') {
        const semi = value.indexOf(';');
        return pre + name + sep + (semi < 0 ? cookiePair(value) : cookiePair(value.slice(0, semi)) + value.slice(semi));
      }
      if (n === 'cookie') return pre + name + sep + value.split(';').map((p, i) => (i ? ' ' : '') + cookiePair(p.trim())).join(';');
      return pre + name + sep + mark(value);
    });
  };
  // Bytes in, bytes out (latin1 keeps every byte); the same Buffer when nothing matched.
  const bytes = (buf) => {
    if (!mayHold(buf)) return buf;
    const s = buf.toString('latin1');
    re.lastIndex = 0;
    if (!re.test(s)) return buf;
    return Buffer.from(replace(s), 'latin1');
  };
  // The same for the latin1 text of bytes (what an HTTP client writes its head as).
  bytes.text = (s) => {
    re.lastIndex = 0;
    return re.test(s) ? replace(s) : s;
  };
  // The log gets the key's id as one event at the first write that holds a placeholder
  // (record); replay reads it at the same write, and with another key its writes holding
  // placeholders are not checked (`unchecked`). Writes only: replay redacts no reads.
  bytes.unchecked = false;
  let announced = false;
  bytes.announce = () => {
    if (announced || key === null) return;
    announced = true;
    const kind = ev.kind('node.redact.key');
    if (ev.mode === 'record') {
      ev.record(kind, null, { id: key.id });
      return;
    }
    const rec = ev.replay(kind, null);
    if (rec !== ev.LIVE && rec && rec.id !== key.id) {
      bytes.unchecked = true;
      notice(
        ev,
        `replay: the recording's redacted header values were made with another key (key ${rec.id}, this one ${key.id}): ` +
          "writes holding them are replayed without checking those bytes (set REPLAY_REDACT_KEY to the recording's key to check them)\n",
      );
    }
  };
  return bytes;
}

// Encodings in which a string of code units up to 0xff is its bytes' latin1 text.
const LATIN1 = new Set(['latin1', 'binary', 'ascii']);
const WIDE = /[^\x00-\xff]/;

// A chunk's latin1 text when Writable hands it over as one (no conversion needed), or null.
// A response head's Date header, which Node's http server fills from a clock the addon does
// not see (its internal, cached `new Date()`), without its value: a server's writes are
// checked without it. What a replayed server writes goes to no client.
const RESPONSE_DATE = /^(HTTP\/1\.[01] [^\r\n]*\r\n(?:[^\r\n]+\r\n)*?)Date: [^\r\n]*\r\n/i;
function undated(text) {
  return text.startsWith('HTTP/1.') ? text.replace(RESPONSE_DATE, '$1Date: -\r\n') : text;
}

function textOf(chunk, encoding) {
  return typeof chunk === 'string' && LATIN1.has(encoding) && !WIDE.test(chunk) ? chunk : null;
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

// [options, cb] as tls.connect normalizes its arguments: (port[, host][, options][, cb]) gets
// the options object merged over port and host. A copy: the program's object is not changed.
function normalizeTls(args) {
  const norm = net._normalizeArgs(args);
  let options = norm[0];
  const extra = [args[1], args[2]].find((a) => a !== null && typeof a === 'object');
  if (extra !== undefined) options = Object.assign({}, options, extra);
  return [options, norm[1]];
}

// What a client learns from the handshake, as recorded: the peer certificate is kept to the
// fields a program checks (no raw DER), which is also what replay hands back, in Node's key
// order. `pubkey` (the public key's bytes, under 600) and the fingerprints are what
// certificate pinning compares (Node's checkServerIdentity example hashes `pubkey`).
const CERT_FIELDS = [
  'subject',
  'issuer',
  'subjectaltname',
  'ca',
  'bits',
  'pubkey',
  'valid_from',
  'valid_to',
  'fingerprint',
  'fingerprint256',
  'fingerprint512',
  'serialNumber',
];
function certSubset(full) {
  const cert = {};
  if (full && typeof full === 'object') {
    for (const f of CERT_FIELDS) {
      const v = full[f];
      if (v === undefined) continue;
      // subject/issuer are null-prototype objects: plain copies encode as JSON.
      if (Buffer.isBuffer(v)) cert[f] = Buffer.from(v);
      else cert[f] = v !== null && typeof v === 'object' ? Object.assign({}, v) : v;
    }
  }
  return cert;
}

function handshake(sock) {
  const cert = certSubset(sock.getPeerCertificate());
  const cipher = sock.getCipher();
  return {
    authorized: sock.authorized === true,
    authorizationError: sock.authorizationError == null ? null : String(sock.authorizationError),
    alpnProtocol: sock.alpnProtocol === undefined ? null : sock.alpnProtocol,
    servername: sock.servername === undefined ? null : sock.servername,
    protocol: sock.getProtocol(),
    cipher: cipher ? Object.assign({}, cipher) : null,
    reused: sock.isSessionReused() === true,
    cert,
  };
}

// A TLS error as recorded. checkServerIdentity's errors (ERR_TLS_CERT_ALTNAME_INVALID) carry
// the detailed peer certificate, whose issuerCertificate chain is circular for a self-signed
// one and holds raw DER: it is kept as the same subset as the handshake's.
function tlsError(e) {
  if (!(e instanceof Error) || e.cert === null || typeof e.cert !== 'object') return e;
  const copy = new Error(e.message);
  Object.defineProperty(copy, 'name', { value: e.name, configurable: true, writable: true });
  for (const k of Object.keys(e)) copy[k] = e[k];
  copy.cert = certSubset(e.cert);
  return copy;
}

const HS = Symbol('replay-node.handshake');
const IDENTITY = Symbol('replay-node.checkServerIdentity');

// Replay's client TLS socket: a net.Socket without a handle, fed the recorded plaintext by
// the net machinery, with the TLSSocket state and methods https.Agent and undici use; its
// prototype chain goes through tls.TLSSocket.prototype so `instanceof tls.TLSSocket` holds.
// No secure context, no OpenSSL state: nothing of TLS runs in replay.
class ReplayTLSSocket extends net.Socket {
  constructor(options) {
    super({
      allowHalfOpen: options.allowHalfOpen,
      highWaterMark: options.highWaterMark,
      signal: options.signal,
    });
    this.encrypted = true;
    this.authorized = false;
    this.authorizationError = null;
    this.alpnProtocol = null;
    this.servername = null;
    this.secureConnecting = true;
    this.ssl = null;
    this._secureEstablished = false;
    this._tlsOptions = {
      isServer: false,
      requestCert: true,
      rejectUnauthorized:
        options.rejectUnauthorized === undefined
          ? process.env.NODE_TLS_REJECT_UNAUTHORIZED !== '0'
          : options.rejectUnauthorized !== false,
    };
    this[HS] = null;
    // A checkServerIdentity of the program's own, which Node's onConnectSecure (_tls_wrap.js)
    // calls after the handshake with the hostname below; replay calls it too (see secured()).
    const check = options.checkServerIdentity;
    this[IDENTITY] =
      typeof check === 'function' && check !== tls.checkServerIdentity
        ? {
            check,
            options,
            hostname: options.servername || options.host || (options.socket && options.socket._host) || 'localhost',
          }
        : null;
  }

  getPeerCertificate() {
    // A fresh copy per call, as the real one: the program may change what it gets.
    return this[HS] === null ? {} : certSubset(this[HS].cert);
  }

  getCertificate() {
    return this[HS] === null ? null : {};
  }

  getProtocol() {
    return this[HS] === null ? null : this[HS].protocol;
  }

  getCipher() {
    const h = this[HS];
    return h === null || h.cipher === null ? undefined : Object.assign({}, h.cipher);
  }

  isSessionReused() {
    return this[HS] !== null && this[HS].reused;
  }

  setServername(name) {
    if (typeof name !== 'string') {
      const e = new TypeError(`The "name" argument must be of type string. Received ${typeof name}`);
      e.code = 'ERR_INVALID_ARG_TYPE';
      throw e;
    }
  }

  // Sessions and tickets are not recorded: a replayed handshake has none to offer, so pools
  // (https.Agent, undici) cache nothing and pass nothing back.
  setSession() {}

  getSession() {
    return undefined;
  }

  getTLSTicket() {
    return undefined;
  }

  getFinished() {
    return undefined;
  }

  getPeerFinished() {
    return undefined;
  }

  getEphemeralKeyInfo() {
    return this[HS] === null ? null : {};
  }

  getPeerX509Certificate() {
    return undefined;
  }

  getX509Certificate() {
    return undefined;
  }

  getSharedSigalgs() {
    return [];
  }

  setMaxSendFragment() {
    return true;
  }

  disableRenegotiation() {}

  enableTrace() {}

  setKeyCert() {}

  renegotiate(options, cb) {
    if (typeof cb === 'function') {
      process.nextTick(cb, new Error('replay-node: a replayed TLS socket cannot renegotiate'));
    }
    return false;
  }

  exportKeyingMaterial() {
    throw new Error('replay-node: a replayed TLS socket has no keying material');
  }
}
Object.setPrototypeOf(ReplayTLSSocket.prototype, tls.TLSSocket.prototype);

// The warnings the real tls.connect prints before any I/O, each once per process as Node does
// (the texts are Node 20's): a replay's stderr has them where the recorded run's had.
const warned = { unauthorized: false, ipServername: false };
function connectWarnings(options) {
  if (process.env.NODE_TLS_REJECT_UNAUTHORIZED === '0' && !warned.unauthorized) {
    warned.unauthorized = true;
    process.emitWarning(
      "Setting the NODE_TLS_REJECT_UNAUTHORIZED environment variable to '0' makes TLS connections " +
        'and HTTPS requests insecure by disabling certificate verification.',
    );
  }
  if (options.servername && net.isIP(options.servername) && !warned.ipServername) {
    warned.ipServername = true;
    process.emitWarning(
      'Setting the TLS ServerName to an IP address is not permitted by RFC 6066. ' +
        'This will be ignored in a future version.',
      'DeprecationWarning',
      'DEP0123',
    );
  }
}

// The certificate a replayed checkServerIdentity gets: Node passes getPeerCertificate(true),
// whose issuerCertificate chain is not recorded; a self-issued certificate is its own issuer
// there (a circular reference), so loops up the chain (Node's pinning example) end on it.
function detailedCert(recorded) {
  const cert = certSubset(recorded);
  if (cert.fingerprint256 !== undefined && JSON.stringify(cert.subject) === JSON.stringify(cert.issuer)) {
    cert.issuerCertificate = cert;
  }
  return cert;
}

// The recorded handshake outcome, set as the real client sets it before 'secureConnect'.
// The program's own checkServerIdentity runs again, as Node's onConnectSecure runs it, when the
// recorded run ran it and it let the connection through (authorized, no session resumed): its
// side effects happen in replay too, and an answer that changed since (a pin taken from the
// environment; a file it reads is a recorded read) fails the connection as it would now: a
// truthy return destroys the socket with it (no 'secureConnect'), or with rejectUnauthorized
// false leaves it unauthorized.
function secured(sock, info) {
  sock[HS] = info;
  sock.authorized = info.authorized;
  sock.authorizationError = info.authorizationError;
  sock.alpnProtocol = info.alpnProtocol;
  sock.servername = info.servername;
  sock._secureEstablished = true;
  const id = sock[IDENTITY];
  if (id !== null && info.authorized && !info.reused) {
    const verifyError = id.check.call(id.options, id.hostname, detailedCert(info.cert));
    if (verifyError) {
      sock.authorized = false;
      sock.authorizationError = verifyError.code || verifyError.message;
      if (sock._tlsOptions.rejectUnauthorized) {
        sock.destroy(verifyError);
        return;
      }
    }
  }
  sock.secureConnecting = false;
  sock.emit('secureConnect');
}

function install(ev) {
  // UDP (dgram) is not recorded: a replay says so when the program makes a socket (loaded
  // for that in replay only: 0.5 ms).
  if (ev.mode === 'replay') {
    const dgram = require('dgram');
    const realCreateSocket = dgram.createSocket;
    const createSocket = like(function createSocket() {
      if (ev.on && !ev.busy) ev.ranLive('UDP socket');
      return realCreateSocket.apply(this, arguments);
    }, realCreateSocket);
    dgram.createSocket = createSocket;
    ev.onDisable(() => {
      if (dgram.createSocket === createSocket) dgram.createSocket = realCreateSocket;
    });
  }
  const replaying = ev.mode === 'replay';
  const redact = redactor(ev);
  const P = net.Socket.prototype;
  // tls is loaded here, not on the first connection: https and undici look tls.connect up
  // on the module at each call, so it must be hooked before the program's first one.
  const isTls = (sock) => sock instanceof tls.TLSSocket;
  const real = {
    tlsConnect: tls.connect,
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

  // One connection. `ep` is its endpoint identity (`net HOST:PORT`, `tls HOST:PORT
  // SERVERNAME`). `cur` is the key of the stream its incoming events belong to: the
  // connection's own key until it writes an HTTP request line, then that request's.
  function newConn(sock, host, port, servername) {
    const secure = servername !== undefined;
    const ep = secure ? `tls ${host}:${port} ${servername || '-'}` : `net ${host}:${port}`;
    const key = ev.opKey(ep);
    // TLS, record: `held` while a request line has moved the connection on before its handshake
    // ended (https.request writes at once): the connection's own stream stays open for the
    // connect and handshake outcome, which belong to the connection, not to that request.
    const c = {
      sock,
      host,
      port,
      ep,
      secure,
      key,
      cur: key,
      head: null, // ev.tagHead(cur), made when first needed
      req: ep,
      kind: -1, // writeKind(req), made when first needed
      closed: false,
      fake: replaying,
      accepted: false, // a connection a server of the program accepted
      ownLookup: false, // replay: a lookup function of the program's emits its `lookup` events
      out: '', // an accepted connection's written bytes not checked yet (served)
      held: false,
      read: undefined, // replay: bytes fed (bytesRead)
      written: undefined, // replay: bytes written (bytesWritten)
    };
    if (replaying && sock) counted(sock, c);
    return c;
  }

  // The URL of a request line's target: origin-form gets the Host header's origin.
  function absolute(c, head, target) {
    if (!target.startsWith('/')) return target;
    const h = /\r\nhost:[ \t]*([^\r\n]*)/i.exec(head);
    return `${c.secure ? 'https' : 'http'}://${h ? h[1].trim() : `${c.host}:${c.port}`}${target}`;
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

  // What a request head written as text makes, by that text and endpoint: a pooled connection
  // writes the same head again and again, and parsing, redacting and naming it cost more than
  // the rest of recording a request. At most HEADS entries of at most HEAD_MAX characters.
  const HEADS = 256;
  const HEAD_MAX = 4096;
  const heads = new Map();
  // The entry for `text` (latin1 text Writable handed over with `encoding`) on `c`, or
  // undefined.
  function seenHead(c, text, encoding) {
    if (text.length > HEAD_MAX || !LATIN1.has(encoding)) return undefined;
    const h = heads.get(text);
    return h !== undefined && h.ep === c.ep ? h : undefined;
  }

  // A request head's identity and what follows from it, or null when `head` (the first bytes
  // as latin1 text) starts no HTTP request.
  function requestOf(c, head) {
    const m = HTTP_LINE.exec(head);
    if (!m) return null;
    const req = `${c.ep} ${m[1]} ${absolute(c, head, m[2])}`;
    return {
      ep: c.ep,
      req,
      kind: writeKind(req),
      count: ev.opCount(req),
      // JSON text of the request's keys up to their number (no character of '#n' is escaped).
      json: JSON.stringify(req).slice(0, -1),
      red: null, // the redacted text (cached entries only)
    };
  }

  // A write that starts an HTTP request moves the connection's incoming stream to a key of
  // that request's own: `net HOST:PORT METHOD URL#n`, n counting identical requests in the
  // order the program makes them. So a response goes to its request in replay even when a
  // pool (http.Agent, undici) puts the request on another connection than it did recorded.
  // The old stream ends with 'n' (moved on).
  // `text`: the bytes' latin1 text when the program wrote them as one, else null (then `b`);
  // `h`: seenHead's entry for the text, if any.
  function written(c, b, text, h) {
    let red = null;
    if (h === undefined) {
      const head =
        text !== null ? text.slice(0, 8192) : b.toString('latin1', 0, Math.min(b.length, 8192));
      h = requestOf(c, head);
      if (h !== null && text !== null && text.length <= HEAD_MAX) {
        h.red = redact.text(text);
        if (heads.size >= HEADS) heads.clear();
        heads.set(text, h);
      }
    }
    if (h !== null) {
      red = h.red;
      c.req = h.req;
      c.kind = h.kind;
      const n = ++h.count.n;
      const next = `${h.req}#${n}`;
      if (replaying) {
        c.cur = next;
        c.head = null;
        follow(c, next);
      } else {
        if (c.secure && c.cur === c.key && !c.sock._secureEstablished) c.held = true;
        else noteTag(c, 'n');
        c.cur = next;
        c.head = `{"v":{"k":${h.json}#${n}","v":{"t":"`;
      }
    }
    if (c.kind < 0) c.kind = writeKind(c.req);
    if (red === null) red = text !== null ? redact.text(text) : redact(b).toString('latin1');
    if (c.accepted) return served(c, undated(red));
    return checkWrite(c, c.cur, red);
  }

  // Records or checks written bytes `red` (redacted) of stream `key`; false when the
  // connection went live. Replay with another key than recorded: a write holding a
  // placeholder cannot be checked (its recorded digest covers the recorded tag), the others
  // still are.
  function checkWrite(c, key, red) {
    const marked = MARKED.test(red);
    if (marked) redact.announce();
    const input = marked && redact.unchecked ? null : `${key} ${red}`;
    if (!replaying) {
      ev.record(c.kind, input, null);
      return true;
    }
    if (ev.replay(c.kind, input) === ev.LIVE) {
      goneLive(c);
      return false;
    }
    return true;
  }

  // What a server writes on an accepted connection is checked as a byte stream, in pieces of
  // SERVED_PIECE bytes and the rest at the connection's next incoming event or the program's
  // exit; not write by write. How a response is cut into writes depends on the real socket:
  // under backpressure Node gathers a file streamed into it (createReadStream piped into the
  // response) into other writes, and a replayed socket has none, so per-write checks
  // diverged on every big streamed response.
  const SERVED_PIECE = 64 * 1024;
  function served(c, red) {
    c.out += red;
    while (c.out.length >= SERVED_PIECE) {
      const piece = c.out.slice(0, SERVED_PIECE);
      c.out = c.out.slice(SERVED_PIECE);
      if (!checkWrite(c, c.key, piece)) return false;
    }
    return true;
  }

  // The rest of what the server wrote (before the connection's next incoming event).
  function flushServed(c) {
    if (c.out === '') return true;
    const rest = c.out;
    c.out = '';
    return checkWrite(c, c.key, rest);
  }

  // At exit, what servers wrote last (on a connection still open).
  const servedOpen = new Set();
  process.on('exit', () => {
    if (!ev.on) return;
    for (const c of servedOpen) {
      try {
        flushServed(c);
      } catch (e) {
        ev.fail('checking what a server wrote', e);
      }
    }
  });

  // ---- record ----

  function note(c, v) {
    ev.done(c.cur, v);
  }

  // A connected socket's peer and own address, as [address, family, port] each.
  function names(sock) {
    const out = {};
    try {
      const r = sock._getpeername();
      const l = sock._getsockname();
      if (r && r.address !== undefined) out.r = [r.address, r.family, r.port];
      if (l && l.address !== undefined) out.l = [l.address, l.family, l.port];
    } catch (_) {
      // A socket without them replays without them.
    }
    return out;
  }

  // Replay: a fed socket answers with the recorded addresses ({ address, family, port }, in
  // the order Node's own getsockname gives them: JSON of address() prints the same).
  function setNames(sock, r, l) {
    if (Array.isArray(r)) {
      const peer = { address: r[0], family: r[1], port: r[2] };
      sock._getpeername = () => peer;
    }
    if (Array.isArray(l)) {
      const local = { address: l[0], family: l[1], port: l[2] };
      sock._getsockname = () => local;
    }
  }

  // Replay: a fed socket has no handle to count what went through it: bytesRead and
  // bytesWritten count what was fed and written (they were 0).
  function counted(sock, c) {
    c.read = 0;
    c.written = 0;
    Object.defineProperty(sock, 'bytesRead', { configurable: true, get: () => c.read });
    Object.defineProperty(sock, 'bytesWritten', { configurable: true, get: () => c.written });
  }

  // note(c, { t, b }) of a plain tag (and chunk), the way that costs least.
  function noteTag(c, t, b) {
    if (c.head === null) c.head = ev.tagHead(c.cur);
    ev.doneHead(c.head, t, b);
  }

  // A TLS connection's connect and handshake outcome, on its own stream; the stream ends there
  // if a request moved the connection on meanwhile (replay's follower of it stops at the 'n').
  function noteConn(c, v, last) {
    if (!c.held) {
      note(c, v);
      return;
    }
    if (v !== null) ev.done(c.key, v);
    if (last) {
      c.held = false;
      ev.done(c.key, { t: 'n' });
    }
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
    if (c.accepted && (v.t === 'd' || v.t === 'e' || v.t === 'c' || v.t === 'x')) {
      if (!flushServed(c)) return false;
      if (v.t === 'c' || v.t === 'x') servedOpen.delete(c);
    }
    switch (v.t) {
      case 'l':
        // A lookup function of the program's emitted its own in this replay (replayLookup).
        if (!c.ownLookup && Array.isArray(v.a)) {
          const [err, address, family, host] = v.a;
          real.emit.call(sock, 'lookup', err, address === null ? undefined : address,
            family === null ? undefined : family, host === null ? undefined : host);
        }
        return true;
      case 'k':
        sock.connecting = false;
        setNames(sock, v.r, v.l);
        real.emit.call(sock, 'connect');
        real.emit.call(sock, 'ready');
        return true;
      case 's':
        // The handshake, once per socket (a pool may carry the request stream that recorded
        // it on a socket that already had its own).
        if (sock.secureConnecting) secured(sock, v.i);
        return true;
      case 'd':
        if (typeof c.read === 'number' && v.b) c.read += v.b.length;
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
        if (sock.destroyed) return false;
        // Its bytes not all read yet (the program pauses it, say while a file stream it pipes
        // into drains): a real socket closes only after its 'end', once they are read, and a
        // destroy now would drop them (a download piped to a file came out truncated).
        if (sock.readableLength > 0 && !sock.readableEnded) {
          sock.once('end', () => {
            if (!sock.destroyed) sock.destroy();
          });
          return false;
        }
        sock.destroy();
        return false;
      default:
        // 'n': the connection moved on to another request; 'o': it was still open when the
        // recorded run exited; 't': TLS took it over (a tunnel, see tunnel()).
        return false;
    }
  }

  function replayConnect(sock, options, cb, servername) {
    const c = newConn(sock, options.host || 'localhost', Number(options.port), servername);
    sock[CONN] = c;
    // What the real connect() sets before it resolves the address.
    sock.connecting = true;
    if (options.timeout) sock.setTimeout(options.timeout);
    if (typeof cb === 'function') sock.once(servername === undefined ? 'connect' : 'secureConnect', cb);
    replayLookup(sock, options);
    follow(c, c.key);
    return sock;
  }

  // A lookup function of the program's (options.lookup: a DNS cache such as @npmcli/agent's,
  // whose clocks and dns calls are the program's): Node calls it for a host name, and so
  // does replay, when and as Node's lookupAndConnect does (at once with `all` when it picks
  // the address family itself, else on the next tick), emitting 'lookup' with what it gives.
  // The connection itself stays fed from the log. Before, replay never called it: its
  // recorded clock reads and lookups were left over (npm-check-updates). Record runs it as the
  // program's (withLookup) though Node calls it inside the hooked connect.
  function lookupPlan(options) {
    const host = options.host || 'localhost';
    if (typeof options.lookup !== 'function' || net.isIP(host)) return null;
    let family = options.family;
    if (family === 'IPv4') family = 4;
    else if (family === 'IPv6') family = 6;
    const dnsopts = { family, hints: options.hints || 0 };
    if (family !== 4 && family !== 6 && dnsopts.hints === 0) dnsopts.hints = dns.ADDRCONFIG;
    const auto = options.autoSelectFamily != null ? options.autoSelectFamily
      : typeof net.getDefaultAutoSelectFamily === 'function' && net.getDefaultAutoSelectFamily();
    const all = family !== 4 && family !== 6 && !options.localAddress && Boolean(auto);
    if (all) dnsopts.all = true;
    return { host, dnsopts, all };
  }

  function replayLookup(sock, options) {
    const plan = lookupPlan(options);
    if (plan === null) return;
    sock[CONN].ownLookup = true;
    const { host, dnsopts, all } = plan;
    const lookup = options.lookup;
    const call = () => {
      try {
        lookup(host, dnsopts, (err, ip, addressType) => {
          if (!sock.connecting) return;
          if (err || !all) sock.emit('lookup', err, err ? undefined : ip, err ? undefined : addressType, host);
          else if (Array.isArray(ip)) for (const a of ip) if (a) sock.emit('lookup', err, a.address, a.family, host);
        });
      } catch (e) {
        // Node would have thrown it from connect(), as the recorded run did not.
        ev.fail('replaying a lookup function of the program', e);
      }
    };
    if (all) call();
    else process.nextTick(call);
  }

  // Record: connect() with the program's lookup function run as the program's code (not
  // inside ev.live, where the hooked connect runs Node's), so its calls are events as replay
  // makes them (replayLookup). Node reads options.lookup once, in connect itself.
  function withLookup(options, fn) {
    const lookup = lookupPlan(options) === null ? null : options.lookup;
    if (lookup === null) return fn();
    options.lookup = function (...args) {
      const was = ev.busy;
      ev.busy = false;
      try {
        return lookup.apply(this, args);
      } finally {
        ev.busy = was;
      }
    };
    try {
      return fn();
    } finally {
      options.lookup = lookup;
    }
  }

  // ---- hooks ----

  // Ports this process's own servers listen on. A connection to one has both ends in this
  // process (a test suite calling its express app, supertest): it runs live in both modes and
  // the server's side replays its own calls. Replayed as a recorded client, it got the
  // recorded response while the server never saw the request, and the events of the server's
  // handlers were left over: a divergence every time.
  const ownPorts = new Map();
  const loopback = (h) => h === 'localhost' || h === '::1' || h === '::' || h === '0.0.0.0' || /^127\./.test(h);
  // Client sockets of this process connecting to its own servers (see above).
  const ownClients = new Set();
  const realListen = net.Server.prototype.listen;
  // listen(0) takes a port the system picks, which a program prints or hands to its clients
  // (a test server's URL): the port is recorded, and replay asks for the recorded one.
  const listenKind = ev.kind('node.net.listen');
  // Where the port is in listen's arguments when the system is to pick it: `i` (a 0, null or
  // undefined there, or no argument at all: prepend), `options` (an object whose port is 0 or
  // missing, without path or handle); -1 for a path, a handle or a fixed port.
  function pickedPort(args) {
    const a = args[0];
    if (args.length === 0 || typeof a === 'function') return { i: 0, insert: true };
    if (a === null || a === undefined || a === 0 || a === '0') return { i: 0 };
    if (typeof a === 'object' && a.path === undefined && a.fd === undefined && a.handle === undefined
      && a._handle === undefined && (a.port === undefined || a.port === null || Number(a.port) === 0)) {
      return { i: 0, options: true };
    }
    return null;
  }
  const listen = like(function listen(...args) {
    const server = this;
    const picked = ev.on && !ev.busy ? pickedPort(args) : null;
    if (picked !== null && ev.mode === 'replay') {
      const v = ev.replay(listenKind, null);
      if (v !== ev.LIVE && v && typeof v.port === 'number') {
        if (picked.insert) args.unshift(v.port);
        else if (picked.options) args[0] = { ...args[0], port: v.port };
        else args[0] = v.port;
      }
    } else if (picked !== null) {
      server.once('listening', () => {
        const a = server.address();
        ev.record(listenKind, null, { port: a !== null && typeof a === 'object' ? a.port : null });
      });
    }
    server.once('listening', () => {
      const a = server.address();
      // A TLS server's connections are ciphertext below and not recorded above: in replay it
      // serves whoever connects now, which the end of the replay says.
      if (ev.on && server instanceof tls.Server) ev.ranLive('TLS server');
      if (ev.on && typeof a === 'string') ev.ranLive('unix socket');
      if (ev.on && a !== null && typeof a === 'object' && typeof a.port === 'number' && !(server instanceof tls.Server)) {
        try {
          listening(server, a.port);
        } catch (e) {
          ev.fail('a server', e);
        }
      }
      if (a !== null && typeof a === 'object' && typeof a.port === 'number') {
        ownPorts.set(a.port, (ownPorts.get(a.port) || 0) + 1);
        server.once('close', () => {
          const n = ownPorts.get(a.port) - 1;
          if (n > 0) ownPorts.set(a.port, n);
          else ownPorts.delete(a.port);
        });
      }
    });
    return realListen.apply(this, args);
  }, realListen);
  net.Server.prototype.listen = listen;
  ev.onDisable(() => {
    if (net.Server.prototype.listen === listen) net.Server.prototype.listen = realListen;
  });

  // ---- connections a server of the program accepts ----
  //
  // A TCP server's (net, http; not TLS: its bytes are ciphertext) accepted connections are
  // recorded like client connections: each accept is a completion of the server's key
  // (`server PORT#n`, n counting listens on that port) holding the connection's own key
  // (`accept PORT#m`) and its addresses; what the connection receives, its end and close are
  // completions of that key; what the program writes (the response) is checked. Replay
  // accepts nothing for real: at each recorded accept's turn the server gets a socket fed
  // from the log ('connection', then the request bytes), so a server replays with its
  // clients gone. Connections from this process's own clients (a test calling its own app)
  // run live on both sides.
  const SERVER = Symbol('replay-node.server');
  const ServerP = net.Server.prototype;
  const realServerEmitOwn = Object.getOwnPropertyDescriptor(ServerP, 'emit');
  const realServerEmit = ServerP.emit;
  const bare = (ip) => (typeof ip === 'string' && ip.startsWith('::ffff:') ? ip.slice(7) : ip);
  const inProcess = (sock) => {
    if (ownClients.size === 0 || !loopback(bare(sock.remoteAddress) || '')) return false;
    const port = sock.remotePort;
    for (const s of ownClients) if (s.localPort === port) return true;
    return false;
  };

  function listening(server, port) {
    const st = { port, key: ev.opKey(`server ${port}`) };
    server[SERVER] = st;
    if (replaying) acceptNext(server, st);
  }

  // Record: the server accepted `sock`.
  function accepted(server, sock) {
    const st = server[SERVER];
    if (st === undefined || sock[CONN] !== undefined || !sock._handle || inProcess(sock)) return;
    const c = newConn(sock, 'accept', st.port);
    c.ep = `accept ${st.port}`;
    c.key = c.cur = ev.opKey(c.ep);
    c.req = c.ep;
    c.accepted = true;
    servedOpen.add(c);
    const peer = sock._getpeername();
    const local = sock._getsockname();
    ev.done(st.key, {
      t: 'a',
      k: c.key,
      r: [peer.address, peer.port, peer.family],
      l: [local.address, local.port, local.family],
    });
    sock[CONN] = c;
    open.add(c);
    // The http server reads a connection's bytes straight from its handle in C++
    // (`parser.consume`) when the handle is not taken yet: they would never pass `push`,
    // where they are recorded. Taken, the server reads them from 'data' events.
    if (sock._handle.isStreamBase) sock._handle._consumed = true;
  }

  // Replay: the server's next recorded accept, at its turn.
  function acceptNext(server, st) {
    ev.await(
      st.key,
      (v) => {
        if (v === ev.LIVE || !v || v.t !== 'a') return;
        acceptNext(server, st);
        const sock = new net.Socket();
        const c = newConn(sock, 'accept', st.port);
        c.ep = c.req = `accept ${st.port}`;
        c.key = c.cur = v.k;
        c.accepted = true;
        servedOpen.add(c);
        sock[CONN] = c;
        setNames(sock, [v.r[0], v.r[2], v.r[1]], [v.l[0], v.l[2], v.l[1]]);
        // What net's onconnection does for an accepted socket.
        sock.server = server;
        sock._server = server;
        server._connections++;
        follow(c, c.key);
        realServerEmit.call(server, 'connection', sock);
      },
      // The server's real listening handle keeps the process alive, as it did.
      true,
    );
  }

  ServerP.emit = like(function emit(name, sock) {
    if (name === 'connection' && !replaying && ev.on && !ev.busy && sock instanceof net.Socket) {
      try {
        accepted(this, sock);
      } catch (e) {
        ev.fail('recording an accepted connection', e);
      }
    }
    return realServerEmit.apply(this, arguments);
  }, realServerEmit);
  ev.onDisable(() => {
    if (realServerEmitOwn) Object.defineProperty(ServerP, 'emit', realServerEmitOwn);
    else delete ServerP.emit;
  });

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
      if (options.path && ev.on) ev.ranLive('unix socket');
      return real.connect.apply(this, args);
    }
    if (ownPorts.has(Number(options.port)) && loopback(options.host || 'localhost')) {
      // Its server side is accepted in this process too: that one runs live (inProcess).
      ownClients.add(this);
      this.once('close', () => ownClients.delete(this));
      return real.connect.apply(this, args);
    }
    if (replaying) return replayConnect(this, options, norm[1]);
    const c = newConn(this, options.host || 'localhost', Number(options.port));
    this[CONN] = c;
    open.add(c);
    return withLookup(options, () => ev.live(() => real.connect.apply(this, args)));
  }, real.connect);

  // `arguments`, not a rest parameter: every event of every socket passes here, and the
  // array a rest parameter makes is an allocation per event.
  const emit = like(function emit(name) {
    const c = this[CONN];
    if (c !== undefined && !c.fake && ev.on) {
      try {
        if (name === 'connect') {
          // With the socket's two addresses: what localPort, remoteAddress, address() say.
          const k = { t: 'k', ...names(this) };
          if (c.secure) noteConn(c, k, false);
          else note(c, k);
        } else if (name === 'lookup') {
          // The host name's address as Node's lookup gave it (got's timings listen for it):
          // replay emits it at its place (deliver).
          const err = arguments[1];
          const v = { t: 'l', a: [err ? err : null, arguments[2] === undefined ? null : arguments[2],
            arguments[3] === undefined ? null : arguments[3], arguments[4] === undefined ? null : arguments[4]] };
          if (c.secure) noteConn(c, v, false);
          else note(c, v);
        } else if (name === 'secureConnect' && c.secure) {
          noteConn(c, { t: 's', i: handshake(this) }, true);
        } else if (name === 'error') {
          note(c, { t: 'x', e: c.secure ? tlsError(arguments[1]) : arguments[1] });
          if (c.held) noteConn(c, null, true); // no handshake will come
        } else if (name === 'close' && !c.closed) {
          c.closed = true;
          open.delete(c);
          if (c.accepted) {
            flushServed(c);
            servedOpen.delete(c);
          }
          noteTag(c, 'c');
          if (c.held) noteConn(c, null, true);
        }
      } catch (e) {
        ev.fail('recording a connection', e);
      }
    }
    return real.emit.apply(this, arguments);
  }, real.emit);

  const push = like(function push(chunk, encoding) {
    const c = this[CONN];
    if (c !== undefined && !c.fake && ev.on && !c.closed) {
      try {
        if (c.accepted) {
          flushServed(c);
        }
        if (chunk === null) noteTag(c, 'e');
        else noteTag(c, 'd', redact(bytesOf(chunk, encoding)));
      } catch (e) {
        ev.fail('recording a connection', e);
      }
    }
    return real.push.call(this, chunk, encoding);
  }, real.push);

  // Whether a write (`chunks` of a _writev, else `data` in `encoding`) is checked (replay)
  // and so recorded (record): false when it went live.
  function wrote(c, chunks, data, encoding) {
    if (chunks !== null) {
      const all = chunks.allBuffers
        ? Buffer.concat(chunks.map((x) => bytesOf(x.chunk || x)))
        : Buffer.concat(chunks.map((x) => bytesOf(x.chunk, x.encoding)));
      return written(c, all, null);
    }
    const h = typeof data === 'string' ? seenHead(c, data, encoding) : undefined;
    const text = h !== undefined ? data : textOf(data, encoding);
    return written(c, text === null ? bytesOf(data, encoding) : null, text, h);
  }

  // A write on a connection of ours. Record: the bytes go out first and are recorded after,
  // while the peer works on them: the recording is off the request's round trip. Nothing the
  // connection reads can come in between (reads are dispatched by the event loop), and the
  // program gets control back only after both, with its bytes as they were written.
  // Replay: checked, and nothing is written.
  const byteLength = (x, encoding) =>
    typeof x === 'string' ? Buffer.byteLength(x, encoding) : x && typeof x.length === 'number' ? x.length : 0;

  function hookedWrite(sock, c, chunks, data, encoding, cb) {
    if (!c.fake) {
      const r = chunks !== null ? real.writev.call(sock, chunks, cb) : real.write.call(sock, data, encoding, cb);
      try {
        wrote(c, chunks, data, encoding);
      } catch (e) {
        ev.fail('a connection write', e);
      }
      return r;
    }
    if (typeof c.written === 'number') {
      if (chunks !== null) {
        for (const x of chunks) c.written += byteLength(x.chunk, x.encoding);
      } else {
        c.written += byteLength(data, encoding);
      }
    }
    try {
      if (!wrote(c, chunks, data, encoding)) return cb(new Error('replay-node: write not replayed'));
    } catch (e) {
      ev.fail('a connection write', e);
    }
    return cb();
  }

  const _write = like(function _write(data, encoding, cb) {
    const c = this[CONN];
    if (c === undefined || !ev.on) return real.write.call(this, data, encoding, cb);
    return hookedWrite(this, c, null, data, encoding, cb);
  }, real.write);

  const _writev = like(function _writev(chunks, cb) {
    const c = this[CONN];
    if (c === undefined || !ev.on) return real.writev.call(this, chunks, cb);
    return hookedWrite(this, c, chunks, undefined, undefined, cb);
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

  // tls.connect: the TLSSocket it returns is recorded above the encryption (its TCP connection
  // is made inside ev.live, so the net hook above does not record it a second time).
  const tlsConnect = like(function connect(...args) {
    if (!ev.on || ev.busy) return real.tlsConnect.apply(this, args);
    let norm;
    try {
      norm = normalizeTls(args);
    } catch (_) {
      return real.tlsConnect.apply(this, args);
    }
    const options = norm[0];
    const under = options.socket != null ? options.socket[CONN] : undefined;
    if (under !== undefined && !under.closed && !under.secure) return tunnel(this, args, norm, under);
    // Over a socket of the program's that is not recorded (a unix path), unix sockets and
    // ports the real connect rejects: the real way.
    if (options.socket || options.path || options.port == null || !Number.isInteger(Number(options.port))) {
      return real.tlsConnect.apply(this, args);
    }
    const host = options.host || 'localhost';
    // To a server of this process: both sides run live (the TCP connection under it is one
    // of ownClients, made by the net hook above).
    if (ownPorts.has(Number(options.port)) && loopback(host)) return real.tlsConnect.apply(this, args);
    const servername = options.servername ? String(options.servername) : '';
    if (replaying) {
      let sock;
      try {
        connectWarnings(options);
        sock = new ReplayTLSSocket(options);
      } catch (e) {
        ev.fail('a TLS connection', e);
        return real.tlsConnect.apply(this, args);
      }
      return replayConnect(sock, options, norm[1], servername);
    }
    const sock = withLookup(options, () => ev.live(() => real.tlsConnect.apply(this, args)));
    try {
      const c = newConn(sock, host, Number(options.port), servername);
      sock[CONN] = c;
      open.add(c);
    } catch (e) {
      ev.fail('recording a TLS connection', e);
    }
    return sock;
  }, real.tlsConnect);

  // tls.connect({ socket }) over a connection this module records or replays: TLS through a
  // proxy's CONNECT tunnel (https-proxy-agent, undici's ProxyAgent). Recorded above the
  // encryption, as a TLS connection of its own: the connection under it ends its stream with
  // 't' (tunnelled) and records nothing more (what it carries from then on is ciphertext). Its
  // endpoint is the CONNECT request's target when it made one, else the options' host (or
  // servername) and port (or 443). Replay: a ReplayTLSSocket fed from the recorded plaintext;
  // the socket under it is not fed again and is destroyed when the TLS socket closes, as the
  // real one is.
  function tunnel(self, args, norm, under) {
    const options = norm[0];
    const servername = options.servername ? String(options.servername) : '';
    const target = /^\S+ \S+ CONNECT \[?([^\]\s]*?)\]?:(\d+)$/.exec(under.req);
    const host = target ? target[1] : String(options.host || options.servername || under.host);
    let port = 443;
    if (target) port = Number(target[2]);
    else if (options.port != null && Number.isInteger(Number(options.port))) port = Number(options.port);
    const opts = Object.assign({}, options, { host, port });
    const base = options.socket;
    if (replaying) {
      let sock;
      try {
        under.closed = true;
        connectWarnings(options);
        sock = new ReplayTLSSocket(options);
        replayConnect(sock, opts, norm[1], servername);
        // Over a connected socket no 'connect' comes: writes must not wait for one.
        sock.connecting = false;
        sock.once('close', () => {
          if (!base.destroyed) base.destroy();
        });
      } catch (e) {
        ev.fail('a TLS connection through a tunnel', e);
        return real.tlsConnect.apply(self, args);
      }
      return sock;
    }
    try {
      noteTag(under, 't');
      under.closed = true;
      open.delete(under);
      delete base[CONN];
    } catch (e) {
      ev.fail('recording a TLS connection through a tunnel', e);
    }
    const sock = ev.live(() => real.tlsConnect.apply(self, args));
    try {
      const c = newConn(sock, host, port, servername);
      sock[CONN] = c;
      open.add(c);
    } catch (e) {
      ev.fail('recording a TLS connection through a tunnel', e);
    }
    return sock;
  }

  // TLS over a socket replay feeds that tls.connect did not make (the program's own
  // new tls.TLSSocket(socket)): what was recorded under it is ciphertext of keys made fresh
  // each run, which no replay can decrypt. Every TLSSocket wraps its transport in _wrapHandle (Node 20 to 24), so that is where replay
  // stops it: a divergence naming the connection under it (exit 86 under the default policy),
  // or, under a policy that goes on, the socket fails with an error. Without this, TLS sat on
  // a socket that never answered and the program ended early, with status 0 and no report.
  const TLSP = tls.TLSSocket.prototype;
  const realWrap = TLSP._wrapHandle;
  const wrapHandle =
    typeof realWrap === 'function'
      ? like(function _wrapHandle(wrap, ...rest) {
          // A handle-less socket (every replayed one) reaches here inside the JSStreamSocket
          // Node wraps it in, as its `stream`.
          const sock = wrap != null && wrap[CONN] === undefined && wrap.stream != null ? wrap.stream : wrap;
          const c = sock != null ? sock[CONN] : undefined;
          const stop = c !== undefined && c.fake && ev.on && !c.closed;
          if (stop) {
            try {
              // No events of this kind are ever recorded: replaying one is always a divergence,
              // and the kind's name is what the report shows.
              const k = ev.kind(`node.tls over a replayed connection (${c.req}): TLS over a tunnel or a program's socket is not replayed`);
              ev.replay(k, c.req);
            } catch (e) {
              ev.fail('a TLS socket over a replayed connection', e);
            }
            goneLive(c);
          }
          const r = realWrap.call(this, wrap, ...rest);
          if (stop && !this.destroyed) {
            // The TLS socket itself fails too: over a JS stream the transport's error does not
            // reach it, and the program would wait for an 'end' that never comes.
            const e = new Error('replay-node: TLS over a replayed connection cannot go live');
            process.nextTick(() => this.destroy(e));
          }
          return r;
        }, realWrap)
      : undefined;

  const define = (name, value) =>
    Object.defineProperty(P, name, { value, writable: true, configurable: true, enumerable: false });
  define('connect', connect);
  tls.connect = tlsConnect;
  define('_write', _write);
  define('_writev', _writev);
  if (replaying) {
    if (wrapHandle !== undefined) TLSP._wrapHandle = wrapHandle;
    define('_read', _read);
    define('_final', _final);
    define('ref', ref);
    define('unref', unref);
  } else {
    define('emit', emit);
    define('push', push);
    // Connections still open at exit (a keep-alive pool): replay stops waiting for them there.
    // Only when the loop ran dry ('beforeExit'): after process.exit() the replayed program
    // stops at the same call, before it could take those marks, and they were left over (a
    // divergence for every CLI that exits explicitly with a keep-alive connection open).
    let ranDry = false;
    process.on('beforeExit', () => {
      ranDry = true;
    });
    process.on('exit', () => {
      if (!ev.on) return;
      if (!ranDry) {
        open.clear();
        return;
      }
      for (const c of open) {
        ev.done(c.cur, { t: 'o' });
        if (c.held) ev.done(c.key, { t: 'o' });
      }
      open.clear();
    });
  }

  ev.onDisable(() => {
    if (tls.connect === tlsConnect) tls.connect = real.tlsConnect;
    if (wrapHandle !== undefined && TLSP._wrapHandle === wrapHandle) TLSP._wrapHandle = realWrap;
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
