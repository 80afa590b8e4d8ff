// agl-host's build of a JavaScript guest folder (embedded in agl-host, run with the toolchain's
// Node modules): read package.json, install its `dependencies` when the folder has no
// node_modules, bundle the entry module with esbuild into one ES module (the `agl` SDK and the
// dependencies inlined, the host's `agl:agent/*` imports left as imports, `agl:capabilities` the
// SDK's capability modules: see the SDK's src/capability.js), then componentize it
// with componentize-js against the world. Errors go to stderr as the tools wrote them (esbuild's
// name the user's file and line); the exit status is 1 for the guest's fault, 2 for a bad call.
//
// node build.mjs --dir DIR --toolchain DIR --sdk DIR --wit DIR --work DIR --out FILE

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const WORLDS = ['agent', 'algorithm'];

function fail(message) {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

function args() {
  const out = {};
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i += 2) {
    out[argv[i].replace(/^--/, '')] = argv[i + 1];
  }
  for (const key of ['dir', 'toolchain', 'sdk', 'wit', 'work', 'out']) {
    if (typeof out[key] !== 'string') {
      process.stderr.write(`build.mjs: --${key} is missing\n`);
      process.exit(2);
    }
  }
  return out;
}

/** The guest's package.json, and what the build reads from it. */
function readPackage(dir) {
  const path = join(dir, 'package.json');
  let pkg;
  try {
    pkg = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    fail(`${path}: ${err.message}`);
  }
  if (pkg === null || typeof pkg !== 'object' || Array.isArray(pkg)) {
    fail(`${path}: must hold a JSON object`);
  }
  const agl = pkg.agl ?? {};
  if (agl === null || typeof agl !== 'object') {
    fail(`${path}: "agl" must be an object {"entry": "...", "world": "agent" | "algorithm"}`);
  }
  const entry = agl.entry ?? pkg.main ?? (existsSync(join(dir, 'index.js')) ? 'index.js' : undefined);
  if (typeof entry !== 'string') {
    fail(`${path}: name the agent's module with "main" (or "agl": {"entry": "..."}); there is no index.js`);
  }
  if (!existsSync(join(dir, entry))) {
    fail(`${path}: the entry module ${entry} does not exist in ${dir}`);
  }
  const world = agl.world ?? 'agent';
  if (!WORLDS.includes(world)) {
    fail(`${path}: "agl": {"world": ${JSON.stringify(world)}} is not one of ${WORLDS.join(', ')}`);
  }
  const dependencies = pkg.dependencies ?? {};
  if (dependencies === null || typeof dependencies !== 'object' || Array.isArray(dependencies)) {
    fail(`${path}: "dependencies" must be an object of names to versions`);
  }
  return { entry, world, dependencies };
}

/**
 * A node_modules folder with the guest's dependencies: the guest's own when it has one (used as
 * it is), else one installed with npm into the work cache, keyed by package.json's dependencies
 * and the lockfile, reused by later builds.
 */
function dependencyPaths(dir, work, dependencies) {
  if (Object.keys(dependencies).length === 0 || existsSync(join(dir, 'node_modules'))) {
    return [];
  }
  const lockPath = join(dir, 'package-lock.json');
  const lock = existsSync(lockPath) ? readFileSync(lockPath) : Buffer.alloc(0);
  const key = createHash('sha256').update(JSON.stringify(dependencies)).update('\0').update(lock).digest('hex').slice(0, 16);
  const target = join(work, 'deps', key);
  if (existsSync(join(target, '.agl-complete'))) {
    return [join(target, 'node_modules')];
  }
  const partial = `${target}.partial-${process.pid}`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  writeFileSync(join(partial, 'package.json'), JSON.stringify({ private: true, dependencies }, null, 2));
  if (lock.length > 0) {
    writeFileSync(join(partial, 'package-lock.json'), lock);
  }
  process.stderr.write(`installing the dependencies of ${dir} (npm install --omit=dev)\n`);
  const npm = spawnSync('npm', ['install', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd: partial,
    encoding: 'utf8',
  });
  if (npm.error !== undefined || npm.status !== 0) {
    fail(`npm install of the dependencies failed${npm.error ? `: ${npm.error.message}` : ''}\n${npm.stdout ?? ''}${npm.stderr ?? ''}`);
  }
  writeFileSync(join(partial, '.agl-complete'), '');
  rmSync(target, { recursive: true, force: true });
  renameSync(partial, target);
  return [join(target, 'node_modules')];
}

/**
 * The esbuild plugin that resolves the SDK's virtual module `agl:capabilities` to one importing
 * every module of `<sdk>/src/capabilities/` (testing/hooks.js does the same under Node).
 */
async function capabilitiesPlugin(sdk) {
  const { capabilitiesSource, capabilityFiles } = await import(pathToFileURL(join(sdk, 'src', 'capability.js')).href);
  const folder = join(sdk, 'src', 'capabilities');
  return {
    name: 'agl-capabilities',
    setup(build) {
      build.onResolve({ filter: /^agl:capabilities$/ }, () => ({ path: 'agl:capabilities', namespace: 'agl-capabilities' }));
      build.onLoad({ filter: /.*/, namespace: 'agl-capabilities' }, () => ({
        contents: capabilitiesSource(capabilityFiles(readdirSync(folder)).map((name) => join(folder, name))),
        resolveDir: folder,
        loader: 'js',
      }));
    },
  };
}

async function main() {
  const opts = args();
  const dir = resolve(opts.dir);
  const { entry, world, dependencies } = readPackage(dir);
  const modules = join(resolve(opts.toolchain), 'node_modules');
  const esbuild = await import(pathToFileURL(join(modules, 'esbuild', 'lib', 'main.js')).href);
  const { componentize } = await import(
    pathToFileURL(join(modules, '@bytecodealliance', 'componentize-js', 'src', 'componentize.js')).href
  );
  mkdirSync(opts.work, { recursive: true });
  const bundle = join(resolve(opts.work), `bundle-${process.pid}.js`);
  try {
    await esbuild.build({
      entryPoints: [join(dir, entry)],
      absWorkingDir: dir,
      bundle: true,
      format: 'esm',
      platform: 'neutral',
      target: 'es2022',
      mainFields: ['module', 'main'],
      conditions: ['import', 'default'],
      external: ['agl:agent/*', 'wasi:*'],
      alias: { agl: join(resolve(opts.sdk), 'src', 'index.js') },
      plugins: [await capabilitiesPlugin(resolve(opts.sdk))],
      nodePaths: dependencyPaths(dir, resolve(opts.work), dependencies),
      outfile: bundle,
      logLevel: 'silent',
      legalComments: 'none',
    });
  } catch (err) {
    const messages = err.errors ?? [];
    if (messages.length === 0) {
      fail(`bundling ${entry} failed: ${err.message}`);
    }
    const text = await esbuild.formatMessages(messages, { kind: 'error', color: false });
    fail(`bundling ${entry} (esbuild) failed:\n${text.join('')}`);
  }
  let component;
  try {
    ({ component } = await componentize({
      sourcePath: bundle,
      witPath: resolve(opts.wit),
      worldName: world,
      // `fetch` goes out through wasi:http/outgoing-handler, which the host serves under the
      // sandbox's allow-list (denied by default); no incoming-handler export (fetch-event).
      disableFeatures: ['fetch-event'],
    }));
  } catch (err) {
    fail(`componentize-js failed on ${entry} (bundled with the agl SDK):\n${err.message ?? err}`);
  } finally {
    rmSync(bundle, { force: true });
  }
  writeFileSync(opts.out, component);
}

await main();
