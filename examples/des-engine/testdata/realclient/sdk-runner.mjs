// sdk-runner runs one Claude Code session through the Agent SDK with des
// connected as callback hooks, the way a team's agent runner would: each
// callback pipes the event's JSON to des-hook and returns what it printed.
//
// Usage: node sdk-runner.mjs CONFIG.json. The config names the SDK's
// node_modules, the CLI, the project, the prompt and des-hook; each SDK
// message is printed to stdout as one JSON line, and each event the
// callbacks received is appended to config.record as one JSON line.
import { spawn } from 'node:child_process';
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const cfg = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const { query } = await import(pathToFileURL(join(cfg.nodeModules, '@anthropic-ai/claude-agent-sdk/sdk.mjs')).href);

// runHook treats des-hook as Claude Code treats a command hook: exit 0 with
// JSON on stdout is the hook's output, exit 0 with nothing is no opinion,
// exit 2 is a block with stderr as the reason, anything else an error.
function runHook(input) {
  return new Promise((resolve, reject) => {
    const p = spawn(cfg.hook, [], { cwd: input.cwd || cfg.cwd, env: { ...process.env, ...cfg.hookEnv } });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => { err += d; });
    p.on('error', reject);
    p.on('close', (code) => {
      if (code === 0) {
        resolve(out.trim() === '' ? {} : JSON.parse(out));
      } else if (code === 2) {
        resolve({ decision: 'block', reason: err.trim() });
      } else {
        reject(new Error(`des-hook exited with status ${code}: ${err.trim()}`));
      }
    });
    p.stdin.end(JSON.stringify(input));
  });
}

function callback(event) {
  return async (input) => {
    if (cfg.record) {
      appendFileSync(cfg.record, JSON.stringify(input) + '\n');
    }
    // A runner that breaks, for the onFailure checks: it throws, or it
    // never answers.
    if (cfg.failure && cfg.failure.event === event) {
      if (cfg.failure.mode === 'throw') {
        throw new Error('des runner failure (test)');
      }
      if (cfg.failure.mode === 'hang') {
        return new Promise(() => {});
      }
    }
    return runHook(input);
  };
}

const hooks = {};
for (const [event, spec] of Object.entries(cfg.hooks)) {
  const m = { hooks: [callback(event)] };
  if (spec.matcher) m.matcher = spec.matcher;
  if (spec.timeout) m.timeout = spec.timeout;
  if (spec.onFailure) m.onFailure = spec.onFailure;
  hooks[event] = [m];
}

const options = {
  cwd: cfg.cwd,
  pathToClaudeCodeExecutable: cfg.cli,
  hooks,
  env: { ...process.env, ...cfg.clientEnv },
  allowedTools: cfg.allowedTools || [],
  settingSources: cfg.settingSources || ['project', 'local'],
  maxTurns: cfg.maxTurns || 40,
  stderr: (data) => process.stderr.write(data),
};
if (cfg.permissionMode) options.permissionMode = cfg.permissionMode;
if (cfg.debugFile) options.extraArgs = { 'debug-file': cfg.debugFile };

try {
  for await (const message of query({ prompt: cfg.prompt, options })) {
    process.stdout.write(JSON.stringify(message) + '\n');
  }
} catch (e) {
  process.stdout.write(JSON.stringify({ type: 'runner_error', error: String(e && e.stack || e) }) + '\n');
  process.exitCode = 1;
}
