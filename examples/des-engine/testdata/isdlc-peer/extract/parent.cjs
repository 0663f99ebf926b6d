'use strict';
// Preload for a peer test file: names each it() case for the hook processes it starts,
// records in-process check()/detection calls, and each case's pass/fail.
const Module = require('module');
const fs = require('fs');
const path = require('path');
const OUT = process.env.CAPTURE_OUT;
const FILE = path.basename(process.argv[1] || '');
const rec = (o) => fs.appendFileSync(OUT, JSON.stringify(o) + '\n');
process.env.NODE_OPTIONS = ((process.env.NODE_OPTIONS || '') + ' --require ' + path.join(__dirname, 'child.cjs')).trim();
const stack = [];
let seq = 0;
function wrapTest(orig) {
  const w = function (name, a, b) {
    const fn = typeof a === 'function' ? a : b;
    const opts = typeof a === 'function' ? undefined : a;
    const id = FILE.replace(/\.test\.cjs$/, '') + ' > ' + [...stack, name].join(' > ');
    const n = ++seq;
    const run = async function (...args) {
      process.env.CAPTURE_TEST = id;
      process.env.CAPTURE_SEQ = String(n);
      global.__captureTest = id;
      let ok = true, err;
      try { return await fn.apply(this, args); } catch (e) { ok = false; err = String(e && e.message || e).slice(0, 300); throw e; }
      finally { rec({ kind: 'result', test: id, seq: n, ok, err }); }
    };
    return opts === undefined ? orig.call(this, name, run) : orig.call(this, name, opts, run);
  };
  for (const k of Object.keys(orig)) w[k] = orig[k];
  return w;
}
function wrapDescribe(orig) {
  const w = function (name, a, b) {
    const fn = typeof a === 'function' ? a : b;
    const opts = typeof a === 'function' ? undefined : a;
    const run = function (...args) { stack.push(name); try { return fn.apply(this, args); } finally { stack.pop(); } };
    return opts === undefined ? orig.call(this, name, run) : orig.call(this, name, opts, run);
  };
  for (const k of Object.keys(orig)) w[k] = orig[k];
  return w;
}
const clone = (v) => { try { return JSON.parse(JSON.stringify(v === undefined ? null : v)); } catch { return null; } };
function wrapFn(name, fn) {
  return function (...args) {
    const before = clone(args); // the arguments as the test passed them: check() writes into ctx.state
    const r = fn.apply(this, args);
    rec({ kind: 'call', fn: name, test: global.__captureTest, args: before, result: clone(r) });
    return r;
  };
}
const origLoad = Module._load;
let nodeTest;
Module._load = function (request, parent, isMain) {
  const m = origLoad.apply(this, arguments);
  if (request === 'node:test') {
    if (!nodeTest) nodeTest = Object.assign({}, m, { it: wrapTest(m.it), test: wrapTest(m.test), describe: wrapDescribe(m.describe) });
    return nodeTest;
  }
  if (parent && /\/tests\//.test(parent.filename || '')) {
    if (/gate-blocker\.cjs$/.test(request) && typeof m.check !== 'function') {
      const gl = origLoad.call(this, path.join(path.dirname(parent.filename), '..', 'lib', 'gate-logic.cjs'), parent, false);
      return Object.assign({}, m, { check: wrapFn('gate-logic.check', gl.check) });
    }
    if (/common\.cjs$/.test(request) || /test-adequacy-blocker\.cjs$/.test(request)) {
      const w = Object.assign({}, m);
      for (const k of ['detectPhaseDelegation', 'isSetupCommand', 'isUpgradeDelegation', 'isUpgradePhaseActive', 'check']) if (typeof m[k] === 'function') w[k] = wrapFn(path.basename(request) + '.' + k, m[k]);
      return w;
    }
  }
  return m;
};
