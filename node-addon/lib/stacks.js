'use strict';
// Error stacks without this package's frames, in record and in replay alike.
//
// A callback the program gets from a hooked call runs under one of this package's frames, and
// under other Node frames in replay than in record: a recorded fs callback is called from the
// wrapper that FSReqCallback.oncomplete called, a replayed one from the completion queue; an
// error a replayed call throws is made here, not in node:fs. A stack the program prints (a
// test runner's failure report, a logger's error line) then differed between the two runs,
// and replay reported a divergence with the world unchanged.
//
// Error.prepareStackTrace (the V8 API Node keeps) formats every stack: a run of frames that
// holds one of this package's frames, with the Node internals (`node:` frames) next to it, is
// left out, so the program's own frames are what both runs print. Whoever formats does the
// rest (Node 20's own Error.prepareStackTrace, source maps included; source-map-support, as
// jest installs it; babel's), so a stack with no frame of ours prints as without replay.
//
// Error.stackTraceLimit counts frames before they are left out: a stack as deep as the limit
// may show fewer of the program's frames than without replay.
const path = require('path');

const PKG = path.dirname(__dirname) + path.sep;

// This package's files, and the code it runs in vm contexts (lib/vm.js).
function ours(site) {
  const file = site && typeof site.getFileName === 'function' ? site.getFileName() : undefined;
  return typeof file === 'string' && (file.startsWith(PKG) || file.startsWith('replay-node:'));
}

function internal(site) {
  const file = site && typeof site.getFileName === 'function' ? site.getFileName() : undefined;
  return typeof file === 'string' && file.startsWith('node:');
}

// The frames left when every run of our frames and Node's around them is taken out. The
// frame such a run called (a callback the program gave) is shown as a plain call: its
// receiver is what the run called it on, a Node object in record (`ReadFileContext.callback`)
// and another or none in replay.
//
// A trace as long as Error.stackTraceLimit may have been cut before the run's frame of ours
// (replay delivers a socket's data from deeper down than record did): a last run of Node's
// frames is then left out as if it held one.
function programFrames(trace, cut) {
  const out = [];
  let i = 0;
  while (i < trace.length) {
    if (!ours(trace[i]) && !internal(trace[i])) {
      out.push(trace[i]);
      i++;
      continue;
    }
    let j = i;
    let mine = false;
    while (j < trace.length && (ours(trace[j]) || internal(trace[j]))) {
      if (ours(trace[j])) mine = true;
      j++;
    }
    if (j === trace.length && cut) mine = true;
    if (!mine) {
      for (let k = i; k < j; k++) out.push(trace[k]);
    } else if (i > 0 && out[out.length - 1] === trace[i - 1]) {
      out[out.length - 1] = called(trace[i - 1]);
    }
    i = j;
  }
  return out;
}

// A CallSite that prints as a call of a plain function: `name (file:line:col)` or the
// location alone. Its other methods are the site's, on its prototype as a CallSite has them:
// formatters copy a site by the methods of its prototype (source-map-support's cloneCallSite)
// and call them on the copy.
function called(site) {
  if (!site || typeof site.getFileName !== 'function' || site.isEval() || site.isNative()) return site;
  const real = Object.getPrototypeOf(site);
  const methods = {};
  for (const key of Object.getOwnPropertyNames(real)) {
    if (key !== 'constructor' && typeof real[key] === 'function') methods[key] = real[key].bind(site);
  }
  const file = site.getFileName() || '<anonymous>';
  const line = site.getLineNumber();
  const column = site.getColumnNumber();
  const where = line == null ? file : column == null ? `${file}:${line}` : `${file}:${line}:${column}`;
  const name = site.getFunctionName();
  const prefix = `${site.isAsync() ? 'async ' : ''}${site.isConstructor() ? 'new ' : ''}`;
  const text = name ? `${prefix}${name} (${where})` : `${prefix}${where}`;
  methods.getTypeName = () => null;
  methods.getMethodName = () => null;
  methods.getThis = () => undefined;
  methods.isToplevel = () => true;
  methods.toString = () => text;
  return Object.create(methods);
}

// Node's errors (ERR_* codes) carry a private symbol Node's formatter looks for.
function nodeError(error) {
  for (let o = error; o !== null && typeof o === 'object'; o = Object.getPrototypeOf(o)) {
    for (const s of Object.getOwnPropertySymbols(o)) {
      if (s.description === 'kIsNodeError') return true;
    }
  }
  return false;
}

// Node's formatting when the runtime has none to hand over (Error.prepareStackTrace is Node's
// own function from Node 20 on, which also applies source maps).
function format(error, trace) {
  let head;
  if (error !== null && typeof error === 'object' && nodeError(error)) {
    head = `${error.name} [${error.code}]: ${error.message}`;
  } else {
    head = Error.prototype.toString.call(error);
  }
  if (trace.length === 0) return head;
  return `${head}\n    at ${trace.join('\n    at ')}`;
}

// Frames as the program's formatter should see them.
// `limit`: the Error.stackTraceLimit of the context whose error it is.
// Never throws: a frame this cannot read leaves the trace as it was.
function program(trace, limit) {
  if (!Array.isArray(trace)) return trace;
  try {
    const cut = typeof limit === 'number' && trace.length >= limit;
    return cut || trace.some(ours) ? programFrames(trace, cut) : trace;
  } catch (_) {
    return trace;
  }
}

// This package's own stack readers (lib/fs.js fromNode) want the raw frames.
const RAW = Symbol.for('replay-node.rawStack');

// Error.prepareStackTrace of `ErrorCtor` (the main context's Error, or a vm context's: Node
// formats an error with the prepareStackTrace of the context that made it) becomes an
// accessor: what the program (or Node, or source-map-support, as jest installs it) sets is
// kept, and what is read is that function behind the filter, so whoever formats gets the
// program's frames. A read gives back the same wrapper each time, and setting a wrapper back
// (the save-and-restore every stack reader does) sets its function.
//
// Installed for the rest of the process, also when the hooks are put back: Node emits 'exit'
// before it prints an uncaught exception's stack (the exit listener restores the hooks), and
// a stack is formatted at its first read, which is that print.
function guard(ErrorCtor) {
  const desc = Object.getOwnPropertyDescriptor(ErrorCtor, 'prepareStackTrace');
  if (desc && (!desc.configurable || !('value' in desc))) return;
  const wrappers = new WeakMap();
  const originals = new WeakMap();
  let current = desc ? desc.value : undefined;
  const wrap = (fn) => {
    if (typeof fn !== 'function' || fn[RAW]) return fn;
    let w = wrappers.get(fn);
    if (w === undefined) {
      w = {
        prepareStackTrace(error, trace) {
          return Reflect.apply(fn, this, [error, program(trace, ErrorCtor.stackTraceLimit)]);
        },
      }.prepareStackTrace;
      Object.defineProperty(w, 'name', { value: fn.name, configurable: true });
      wrappers.set(fn, w);
      originals.set(w, fn);
    }
    return w;
  };
  // With no function set, Node's default formatter (lib/internal/errors.js) runs on the
  // frames as they are; this one stands in for it then.
  const fallback = (error, trace) => format(error, program(trace, Error.stackTraceLimit));
  Object.defineProperty(ErrorCtor, 'prepareStackTrace', {
    get: {
      prepareStackTrace() {
        return current === undefined && ErrorCtor === Error ? fallback : wrap(current);
      },
    }.prepareStackTrace,
    set: {
      prepareStackTrace(v) {
        if (v === fallback) v = undefined;
        current = typeof v === 'function' && originals.has(v) ? originals.get(v) : v;
      },
    }.prepareStackTrace,
    enumerable: desc ? desc.enumerable : false,
    configurable: true,
  });
}

module.exports = { guard };
