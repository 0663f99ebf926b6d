'use strict';
// Turns capture.jsonl (written by the preloads while iSDLC's own tests ran) into cases.json:
// one case per it(), with the hook events, the project each saw and iSDLC's outcome.
const fs = require('fs');
const path = require('path');
const [,, capturePath, peerRoot, outPath, commit] = process.argv;
const L = fs.readFileSync(capturePath, 'utf8').trim().split('\n').map(JSON.parse);
const canon = (f) => { try { return JSON.stringify(JSON.parse(fs.readFileSync(path.join(peerRoot, 'src/isdlc/config', f), 'utf8'))); } catch { return null; } };
const CANON = { 'iteration-requirements.json': canon('iteration-requirements.json'), 'artifact-paths.json': canon('artifact-paths.json') };
const POST = { 'walkthrough-tracker.cjs': true, 'discover-menu-guard.cjs': true };
const WARNERS = { 'walkthrough-tracker.cjs': true, 'discover-menu-guard.cjs': true, 'plan-surfacer.cjs': true };
function outcome(hook, stdout, stderr, code) {
  const s = (stdout || '').trim();
  if (code === 2) return 'block';
  if (s) { try { const o = JSON.parse(s.split('\n').pop()); if (o.continue === false || o.decision === 'block' || (o.hookSpecificOutput || {}).permissionDecision === 'deny') return 'block'; if ((o.hookSpecificOutput || {}).additionalContext || o.systemMessage) return 'warn'; } catch {} }
  if (WARNERS[hook] && /WARNING|Format warnings/.test(stderr || '')) return 'warn';
  return 'allow';
}
function files(snap) {
  const out = {};
  for (const [k, v] of Object.entries(snap || {})) {
    if (k.endsWith('/') || v === null) continue;
    if (k === '.claude/hooks/config/skills-manifest.json') continue;
    const base = path.basename(k);
    if (k.startsWith('.claude/hooks/config/') && CANON[base] !== undefined) {
      let j = null; try { j = JSON.stringify(JSON.parse(v)); } catch {}
      if (j !== null && j === CANON[base]) continue; // iSDLC's own table: des has it built in
    }
    out[k] = v;
  }
  return out;
}
const short = (s) => (s || '').trim().slice(0, 240);
const cases = []; const byTest = new Map();
for (const r of L) {
  if (!r.test) continue;
  if (!byTest.has(r.test)) { const c = { test: r.test, steps: [], calls: [] }; byTest.set(r.test, c); cases.push(c); }
  const c = byTest.get(r.test);
  if (r.kind === 'hook') {
    let ev = null; try { ev = JSON.parse(r.stdin); } catch { ev = r.stdin; }
    c.steps.push({ hook: r.hook.replace(/\.cjs$/, ''), event_name: POST[r.hook] ? 'PostToolUse' : 'PreToolUse', event: ev, files: files(r.files),
      git: r.git ? { head: r.git.head.replace(/^ref: refs\/heads\//, ''), branches: r.git.branches } : null,
      expect: outcome(r.hook, r.stdout, r.stderr, r.code), peer_said: short(r.stdout) || short(r.stderr) });
  } else if (r.kind === 'call') {
    c.calls.push(r);
  } else if (r.kind === 'result') { c.ok = r.ok; c.seq = r.seq; if (!r.ok) c.err = r.err; }
}
const perFile = {};
const out = [];
for (const c of cases.sort((a, b) => a.test.split(' > ')[0].localeCompare(b.test.split(' > ')[0]) || a.seq - b.seq)) {
  const [file, ...rest] = c.test.split(' > ');
  perFile[file] = (perFile[file] || 0) + 1;
  const id = `${file}#${String(perFile[file]).padStart(2, '0')}`;
  const kase = { id, file, name: rest.join(' > '), peer_test_passed: c.ok !== false };
  if (c.ok === false) kase.peer_failure = c.err;
  if (c.steps.length) { kase.replay = 'hook'; kase.steps = c.steps; }
  else if (c.calls.some((x) => x.fn === 'gate-logic.check')) {
    kase.replay = 'check';
    kase.steps = c.calls.filter((x) => x.fn === 'gate-logic.check').map((x) => {
      const ctx = x.args[0];
      const f = { '.isdlc/state.json': JSON.stringify(ctx.state, null, 2) };
      if (ctx.requirements && Object.keys(ctx.requirements).length) f['.claude/hooks/config/iteration-requirements.json'] = JSON.stringify(ctx.requirements, null, 2);
      return { hook: 'gate-blocker', event_name: 'PreToolUse', event: ctx.input, files: f, git: null, expect: x.result.decision === 'block' ? 'block' : 'allow', peer_said: short(x.result.stopReason) };
    });
  } else if (c.calls.some((x) => x.fn === 'common.cjs.detectPhaseDelegation' && x.args[0] && x.args[0].tool_name)) {
    // The detection helper, asked about one call: replayed as that call in a phase-03 workflow
    // whose requirements are all met; iSDLC's phase-sequence-guard blocks it exactly when the
    // helper finds a delegation to another phase.
    kase.replay = 'derived';
    kase.steps = c.calls.filter((x) => x.fn === 'common.cjs.detectPhaseDelegation' && x.args[0] && x.args[0].tool_name).map((x) => ({
      hook: 'phase-sequence-guard', event_name: 'PreToolUse', event: x.args[0], files: { '.isdlc/state.json': '@clean-03-architecture' }, git: null,
      expect: x.result.isDelegation && x.result.targetPhase !== '03-architecture' ? 'block' : 'allow', peer_said: 'detectPhaseDelegation: ' + JSON.stringify(x.result) }));
  } else {
    kase.replay = 'none';
    kase.calls = c.calls.map((x) => ({ fn: x.fn, args: x.args, result: x.result }));
  }
  out.push(kase);
}
fs.writeFileSync(outPath, JSON.stringify({ peer: { repo: 'github.com/vihang-hub/isdlc-framework', commit }, cases: out }, null, 1) + '\n');
const n = {}; for (const k of out) n[k.replay] = (n[k.replay] || 0) + 1;
console.log(out.length, JSON.stringify(n));
