// The sandbox probe in JavaScript: an agent that does what its task says, `{"do": "<action>", ...}`,
// so that the host's tests can check that a JS guest is bounded like a Rust one (CPU, memory,
// stack, output) and what the engine (StarlingMonkey, built by componentize-js) lets it reach:
// files, environment, network. Same action names and "may it?" convention as tests/guests/probe;
// see tests/guests/README.md.

import * as agl from 'agl';

const MIB = 1024 * 1024;

/** Logs the verdict on a "may it?" action and turns it into the reward (1 allowed, 0 denied). */
function verdict(ctx, action, attempt) {
  try {
    const detail = attempt();
    ctx.info(`${action}: allowed: ${detail}`);
    return 1;
  } catch (err) {
    ctx.info(`${action}: denied: ${err instanceof Error ? err.message : String(err)}`);
    return 0;
  }
}

/** The first of `names` that is a global of this engine, or undefined. */
function globalNamed(...names) {
  return names.find((name) => globalThis[name] !== undefined);
}

function readFile(path) {
  // Node's `fs`, Deno's and Bun's file APIs are what a JS program would try; StarlingMonkey offers
  // none of them (its only file-like APIs would be fetch of file: URLs, which it does not serve).
  const api = globalNamed('require', 'Deno', 'Bun', 'process');
  if (api === undefined) {
    throw new Error(`no file API in this engine (no require/process/Deno/Bun) to read ${path}`);
  }
  throw new Error(`the engine has ${api} but no way to read ${path} was found`);
}

function listDir(path) {
  const api = globalNamed('require', 'Deno', 'Bun', 'process');
  throw new Error(`no directory API in this engine${api ? ` (only ${api})` : ''} to list ${path}`);
}

function readEnv(name) {
  const env = globalThis.process?.env;
  if (env === undefined) {
    throw new Error('no environment in this engine (no process.env)');
  }
  const entries = name === undefined ? Object.entries(env) : [[name, env[name]]].filter(([, v]) => v !== undefined);
  if (entries.length === 0) {
    throw new Error(name === undefined ? 'no environment variables visible' : `${name}: not set`);
  }
  return entries.map(([k, v]) => `${k}=${v}`).join(', ');
}

async function openSocket(ctx, addr) {
  // No TCP/UDP API exists in the engine; fetch (HTTP over wasi:http) is the only way out, and
  // the host lets it reach only the hosts the sandbox grants (--agent-http): any other is
  // refused inside the guest (fetch rejects), and nothing leaves the sandbox.
  if (typeof globalThis.fetch !== 'function') {
    return verdict(ctx, 'open_socket', () => {
      throw new Error(`no socket API and no fetch in this engine to reach ${addr}`);
    });
  }
  ctx.info(`open_socket: no socket API; trying fetch http://${addr}/`);
  try {
    const response = await globalThis.fetch(`http://${addr}/`);
    ctx.info(`open_socket: allowed: fetch http://${addr}/ answered ${response.status}`);
    return 1;
  } catch (err) {
    ctx.info(`open_socket: denied: fetch http://${addr}/: ${err instanceof Error ? err.message : String(err)}`);
    return 0;
  }
}

/** `fetch(url)`: 1 with the status and body logged if a response came, 0 with the error if not. */
async function httpGet(ctx, url) {
  try {
    const response = await globalThis.fetch(url, { headers: { 'x-probe': 'probe-js' } });
    const body = await response.text();
    ctx.info(`http_get: allowed: status ${response.status}, ${body.length} bytes: ${body.slice(0, 200)}`);
    return 1;
  } catch (err) {
    ctx.info(`http_get: denied: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`);
    return 0;
  }
}

function spin() {
  let turns = 0;
  for (;;) {
    turns = (turns + 1) | 0;
  }
}

function memoryBomb() {
  const hoard = [];
  for (;;) {
    const chunk = new Uint8Array(16 * MIB);
    for (let page = 0; page < chunk.length; page += 4096) {
      chunk[page] = 1;
    }
    hoard.push(chunk);
  }
}

function deepRecursion(depth) {
  return deepRecursion(depth + 1) + 1;
}

function stdoutFlood(ctx, bytes) {
  const line = `${'x'.repeat(64 * 1024 - 1)}`;
  let written = 0;
  while (written < bytes) {
    console.log(line);
    written += line.length + 1;
  }
  let errors = 0;
  while (errors < bytes / 16) {
    console.error(line);
    errors += line.length + 1;
  }
  ctx.info(`stdout_flood: wrote ${written} bytes to stdout and ${errors} to stderr`);
  return 1;
}

/**
 * Asks the LLM `ask` (when given), gives each of `texts` (and `repeat` more copies of the last)
 * as feedback, then returns `reward` (none when absent), or throws "failed on purpose" when `fail`.
 */
async function feedback(ctx, task) {
  if (task.ask !== undefined && task.ask !== null) {
    await ctx.llm.ask(task.ask);
  }
  const texts = task.texts.map(String);
  for (const text of texts) {
    ctx.feedback(text);
  }
  for (let i = 0; texts.length > 0 && i < (task.repeat ?? 0); i += 1) {
    ctx.feedback(texts[texts.length - 1]);
  }
  if (task.fail) {
    throw new Error('failed on purpose');
  }
  return task.reward ?? undefined;
}

export const rollout = agl.rollout(async (task, ctx) => {
  switch (task.do) {
    case 'noop':
      return 1;
    case 'spin':
      return spin();
    case 'memory_bomb':
      return memoryBomb();
    case 'deep_recursion':
      return deepRecursion(0);
    case 'read_file':
      return verdict(ctx, 'read_file', () => readFile(task.path));
    case 'list_dir':
      return verdict(ctx, 'list_dir', () => listDir(task.path));
    case 'read_env':
      return verdict(ctx, 'read_env', () => readEnv(task.name));
    case 'open_socket':
      return openSocket(ctx, task.addr);
    case 'http_get':
      return httpGet(ctx, task.url);
    case 'stdout_flood':
      return stdoutFlood(ctx, task.bytes ?? 10 * MIB);
    case 'huge_error':
      throw new Error('E'.repeat(task.bytes));
    case 'error_text':
      throw new Error(String(task.text));
    case 'panic':
      throw new Error('probe: panic on purpose');
    case 'throw_value':
      // Not an Error: the SDK reports the value itself.
      throw { code: 42 };
    case 'llm_once': {
      const reply = await ctx.llm.ask(task.prompt ?? 'Say hello.', { model: task.model });
      ctx.info(`llm_once: said ${JSON.stringify(reply)}`);
      return 1;
    }
    case 'host_calls':
      for (let i = 0; i < task.n; i += 1) {
        ctx.debug('probe');
      }
      return 1;
    case 'emit_rewards':
      ctx.reward('a', 0.5);
      ctx.reward(0.25);
      return undefined;
    case 'operation':
      try {
        await ctx.operation('probe-operation', async () => {
          ctx.info('operation: inside');
          throw new Error('operation failed on purpose');
        });
      } catch (err) {
        ctx.info(`operation: ended with error: ${err.message}`);
      }
      return 1;
    case 'flaky':
      if (ctx.attemptNumber === 1) {
        throw new Error('probe: flaky, the first attempt fails on purpose');
      }
      return 1;
    case 'reward':
      return task.value;
    case 'feedback':
      return feedback(ctx, task);
    default:
      throw new Error(`unknown action ${JSON.stringify(task.do)}`);
  }
});
