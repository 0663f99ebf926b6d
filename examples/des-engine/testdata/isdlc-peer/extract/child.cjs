'use strict';
// Preload for a peer hook process: records its stdin, the project it sees (before it runs),
// its stdout, stderr and exit status, under the case that started it.
const fs = require('fs');
const path = require('path');
const script = process.argv[1] || '';
const HOOKS = process.env.CAPTURE_HOOKS || '';
if (process.env.CAPTURE_OUT && HOOKS && /\.cjs$/.test(script) && fs.existsSync(path.join(HOOKS, path.basename(script))) && path.dirname(script) !== path.join(HOOKS, 'lib')) {
  let stdin = '';
  try { stdin = fs.readFileSync(0, 'utf8'); } catch { stdin = ''; }
  const { Readable } = require('stream');
  const s = Readable.from(stdin ? [stdin] : []);
  s.setEncoding = function () { return this; };
  s.isTTY = false;
  Object.defineProperty(process, 'stdin', { value: s, configurable: true });
  const root = process.env.CLAUDE_PROJECT_DIR || process.cwd();
  const files = {};
  function walk(dir, rel) {
    let ents = [];
    try { ents = fs.readdirSync(dir, { withFileTypes: true }); } catch { return; }
    for (const e of ents) {
      const r = rel ? rel + '/' + e.name : e.name;
      if (e.name === '.git' || e.name === 'node_modules') continue;
      if (!rel && (e.name === 'lib' || e.name === 'dispatchers' || e.name.endsWith('.cjs'))) continue;
      const p = path.join(dir, e.name);
      if (e.isDirectory()) { files[r + '/'] = null; walk(p, r); }
      else if (e.isFile()) { try { const b = fs.readFileSync(p); files[r] = b.length > 300000 ? '<large>' : b.toString('utf8'); } catch {} }
    }
  }
  if (root !== '/' && fs.existsSync(root)) walk(root, '');
  let git = null;
  try {
    const head = fs.readFileSync(path.join(root, '.git', 'HEAD'), 'utf8').trim();
    const heads = [];
    const hd = path.join(root, '.git', 'refs', 'heads');
    (function lw(d, pre) { for (const e of fs.readdirSync(d, { withFileTypes: true })) { if (e.isDirectory()) lw(path.join(d, e.name), pre + e.name + '/'); else heads.push(pre + e.name); } })(hd, '');
    git = { head, branches: heads.sort() };
  } catch {}
  let out = '', err = '';
  const ow = process.stdout.write.bind(process.stdout), ew = process.stderr.write.bind(process.stderr);
  process.stdout.write = (c, ...a) => { out += String(c); return ow(c, ...a); };
  process.stderr.write = (c, ...a) => { err += String(c); return ew(c, ...a); };
  process.on('exit', (code) => {
    fs.appendFileSync(process.env.CAPTURE_OUT, JSON.stringify({
      kind: 'hook', test: process.env.CAPTURE_TEST || null, hook: path.basename(script), root,
      env: { CLAUDE_PROJECT_DIR: process.env.CLAUDE_PROJECT_DIR || null, ISDLC_PROJECT: process.env.ISDLC_PROJECT || null },
      stdin, files, git, stdout: out, stderr: err, code: process.exitCode ?? code,
    }) + '\n');
  });
}
