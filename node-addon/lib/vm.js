'use strict';
// vm contexts: each new context (vm.createContext, vm.runInNewContext, script.runInNewContext;
// jest runs every test file in one) has Date and Math of its own, which the main context's
// hooks do not reach. This installs the same hooks in each: its Date (called, constructed,
// Date.now) and Math.random call the main hooks' clock and generator, so their values go
// into the one log in the order the calls happen, whichever context makes them, and replay
// serves them back the same way. `performance` is not a built-in of a context: a context
// that has one got it from the main context (jest copies it), hooked already.
//
// Contexts are reached at their creation (the vm.createContext export) and, for those Node
// makes internally (runInNewContext calls its own createContext), at the first
// Script.prototype.runInContext with them, which every vm entry point that runs code in a
// context goes through.

const vm = require('vm');

// Runs inside the context: `hooks` are functions of the main context.
const INSTALL = new vm.Script(
  `(function install(hooks) {
  'use strict';
  const RealDate = Date;
  const ReplayDate = function Date(...args) {
    if (new.target === undefined) return new RealDate(hooks.date()).toString();
    if (args.length === 0) return Reflect.construct(RealDate, [hooks.date()], new.target);
    return Reflect.construct(RealDate, args, new.target);
  };
  Object.defineProperty(ReplayDate, 'length', { value: RealDate.length });
  ReplayDate.prototype = RealDate.prototype;
  Object.setPrototypeOf(ReplayDate, RealDate);
  for (const key of ['UTC', 'parse']) {
    Object.defineProperty(ReplayDate, key, Object.getOwnPropertyDescriptor(RealDate, key));
  }
  Object.defineProperty(ReplayDate, 'now', {
    value: { now() { return hooks.now(); } }.now,
    writable: true,
    configurable: true,
  });
  if (typeof hooks.stacks === 'function') hooks.stacks(Error);
  RealDate.prototype.constructor = ReplayDate;
  Object.defineProperty(globalThis, 'Date', { value: ReplayDate, writable: true, configurable: true, enumerable: false });
  Object.defineProperty(Math, 'random', {
    value: { random() { return hooks.random(); } }.random,
    writable: true,
    configurable: true,
    enumerable: false,
  });
})`,
  { filename: 'replay-node:vm-context' },
);

// hooks: { now, date, random, stacks } of the main context (index.js). Returns a function that
// takes the hooks back out of vm (the contexts already hooked keep theirs; their calls then
// run live as the main hooks do).
function install(hooks, onError) {
  const done = new WeakSet();
  const realCreate = vm.createContext;
  const realRun = vm.Script.prototype.runInContext;
  const hook = (ctx) => {
    if (done.has(ctx)) return;
    done.add(ctx);
    try {
      realRun.call(INSTALL, ctx)(hooks);
    } catch (e) {
      // A context whose code generation is restricted still runs scripts; anything else
      // leaves this context live (said once).
      onError(e);
    }
  };
  const createContext = {
    createContext(...args) {
      const ctx = Reflect.apply(realCreate, this, args);
      if (ctx !== null && typeof ctx === 'object') hook(ctx);
      return ctx;
    },
  }.createContext;
  Object.defineProperty(createContext, 'length', { value: realCreate.length, configurable: true });
  const runInContext = {
    runInContext(ctx, ...rest) {
      if (ctx !== null && typeof ctx === 'object' && !done.has(ctx) && vm.isContext(ctx)) hook(ctx);
      return Reflect.apply(realRun, this, [ctx, ...rest]);
    },
  }.runInContext;
  Object.defineProperty(runInContext, 'length', { value: realRun.length, configurable: true });
  vm.createContext = createContext;
  vm.Script.prototype.runInContext = runInContext;
  return () => {
    if (vm.createContext === createContext) vm.createContext = realCreate;
    if (vm.Script.prototype.runInContext === runInContext) vm.Script.prototype.runInContext = realRun;
  };
}

module.exports = { install };
