'use strict';
// node:dns: what a lookup or query answers is input (a name that resolves elsewhere now, a
// DNS server that is gone). The module's functions, callback and dns.promises forms: lookup,
// lookupService, reverse, resolve and resolve4/6/Any/Caa/Cname/Mx/Naptr/Ns/Ptr/Soa/Srv/Txt.
// Each call is an event whose input is the function and its arguments; its answer (or error)
// is a completion in recorded order. Replay asks no resolver. Node's own lookups (a
// connection to a host name: net, http) are not the program's: replay makes no connection,
// and those are not hooked (ev.fromNode). setServers runs live (and puts the hooks back over
// the functions it binds anew). Not hooked: Resolver objects the program makes
// (`new dns.Resolver()`), getServers.

const dns = require('dns');

const QUERIES = ['resolve', 'resolve4', 'resolve6', 'resolveAny', 'resolveCaa', 'resolveCname', 'resolveMx',
  'resolveNaptr', 'resolveNs', 'resolvePtr', 'resolveSoa', 'resolveSrv', 'resolveTxt', 'reverse'];

// What names the call: its arguments but the callback (an options object as JSON).
function inputOf(args) {
  const parts = [];
  for (const a of args) {
    if (typeof a === 'function') continue;
    parts.push(typeof a === 'object' && a !== null ? JSON.stringify(a) : String(a));
  }
  return parts.join(' ');
}

function install(ev) {
  const replaying = ev.mode === 'replay';
  const fromNode = typeof ev.fromNode === 'function' ? ev.fromNode : () => false;
  const restore = [];
  // The hooks in place (setServers puts new functions over them).
  const hooked = new Set();

  function hookCallback(name) {
    const real = dns[name];
    if (typeof real !== 'function') return;
    const k = ev.kind(`node.dns.${name}`);
    const hook = {
      [name](...args) {
        const cb = args[args.length - 1];
        if (!ev.on || ev.busy || typeof cb !== 'function' || fromNode(hook)) return real.apply(this, args);
        const input = inputOf(args);
        if (replaying) {
          const v = ev.replay(k, input);
          if (v === ev.LIVE) return real.apply(this, args);
          ev.await(ev.opKey(`dns.${name} ${input}`), (r) => {
            if (r === ev.LIVE) real.apply(this, args);
            else if (r.e !== undefined) cb(r.e);
            else cb(null, ...(Array.isArray(r.v) ? r.v : []));
          });
          return {};
        }
        let key = null;
        args[args.length - 1] = function (err, ...results) {
          if (key !== null) {
            try {
              ev.done(key, err ? { e: err } : { v: results });
            } catch (e) {
              ev.fail('recording a DNS answer', e);
            }
          }
          return cb.apply(this, arguments);
        };
        const r = ev.live(() => real.apply(this, args));
        key = ev.opKey(`dns.${name} ${input}`);
        ev.record(k, input, null);
        return r;
      },
    }[name];
    Object.defineProperty(hook, 'length', { value: real.length });
    for (const sym of Object.getOwnPropertySymbols(real)) {
      Object.defineProperty(hook, sym, { ...Object.getOwnPropertyDescriptor(real, sym), configurable: true });
    }
    dns[name] = hook;
    hooked.add(hook);
    restore.push(() => {
      if (dns[name] === hook) dns[name] = real;
    });
  }

  function hookPromise(name) {
    const promises = dns.promises;
    const real = promises && promises[name];
    if (typeof real !== 'function') return;
    const k = ev.kind(`node.dns.promises.${name}`);
    const hook = {
      [name](...args) {
        if (!ev.on || ev.busy || fromNode(hook)) return real.apply(this, args);
        const input = inputOf(args);
        const key = () => ev.opKey(`dns.promises.${name} ${input}`);
        if (replaying) {
          const v = ev.replay(k, input);
          if (v === ev.LIVE) return real.apply(this, args);
          return new Promise((resolve, reject) => {
            ev.await(key(), (r) => {
              if (r === ev.LIVE) real.apply(this, args).then(resolve, reject);
              else if (r.e !== undefined) reject(r.e);
              else resolve(r.v);
            });
          });
        }
        const pending = ev.live(() => real.apply(this, args));
        const at = key();
        ev.record(k, input, null);
        return pending.then(
          (v) => {
            try {
              ev.done(at, { v });
            } catch (e) {
              ev.fail('recording a DNS answer', e);
            }
            return v;
          },
          (e) => {
            ev.done(at, { e });
            throw e;
          },
        );
      },
    }[name];
    Object.defineProperty(hook, 'length', { value: real.length });
    promises[name] = hook;
    hooked.add(hook);
    restore.push(() => {
      if (promises[name] === hook) promises[name] = real;
    });
  }

  for (const name of ['lookup', 'lookupService', ...QUERIES]) {
    hookCallback(name);
    hookPromise(name);
  }
  // setServers makes a new default resolver and binds the module's query functions to it
  // again (both modules): over the hooks, which go back on top.
  for (const target of [dns, dns.promises]) {
    const real = target && target.setServers;
    if (typeof real !== 'function') continue;
    const setServers = {
      setServers(...args) {
        const r = real.apply(this, args);
        for (const name of QUERIES) {
          if (!hooked.has(dns[name])) hookCallback(name);
          if (dns.promises && !hooked.has(dns.promises[name])) hookPromise(name);
        }
        return r;
      },
    }.setServers;
    Object.defineProperty(setServers, 'length', { value: real.length });
    target.setServers = setServers;
    restore.push(() => {
      if (target.setServers === setServers) target.setServers = real;
    });
  }
  ev.onDisable(() => {
    for (const r of restore) r();
  });
}

module.exports = { install };
