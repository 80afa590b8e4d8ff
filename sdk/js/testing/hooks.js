// Node module-resolution hooks for tests (registered by register.js): `agl:agent/<iface>@0.3.0`
// resolves to a stub of that interface generated from the WIT (wit-stub.js), `agl:capabilities`
// to every module of src/capabilities/ (as build.mjs's esbuild plugin does in a guest), `agl` and
// `agl/testing` to this SDK, anything else as usual.
//
// A test adds capability folders of its own by registering these hooks again before it first
// imports the SDK: `register('<sdk>/testing/hooks.js', import.meta.url, {data: {capabilities:
// [folderUrl]}})`; the modules there join the SDK's, exactly as if they were in src/capabilities/.

import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { capabilitiesSource, capabilityFiles } from '../src/capability.js';
import { stubSource } from './wit-stub.js';

const STUB = 'agl-wit-stub:';
const CAPABILITIES = 'agl-capabilities:';
const SDK = new URL('../src/index.js', import.meta.url).href;
const TESTING = new URL('./index.js', import.meta.url).href;

/** The folders whose modules `agl:capabilities` imports: the SDK's, then any a test added. */
const folders = [new URL('../src/capabilities/', import.meta.url).href];

export function initialize(data) {
  for (const folder of data?.capabilities ?? []) {
    folders.push(String(folder).endsWith('/') ? String(folder) : `${folder}/`);
  }
}

export async function resolve(specifier, context, nextResolve) {
  if (specifier.startsWith('agl:agent/')) {
    return { url: `${STUB}${specifier}`, shortCircuit: true };
  }
  if (specifier === 'agl:capabilities') {
    return { url: CAPABILITIES, shortCircuit: true };
  }
  if (specifier === 'agl') {
    return { url: SDK, shortCircuit: true };
  }
  if (specifier === 'agl/testing') {
    return { url: TESTING, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}

export async function load(url, context, nextLoad) {
  if (url.startsWith(STUB)) {
    return { format: 'module', source: stubSource(url.slice(STUB.length)), shortCircuit: true };
  }
  if (url === CAPABILITIES) {
    const modules = folders.flatMap((folder) =>
      capabilityFiles(readdirSync(fileURLToPath(folder))).map((name) => new URL(name, folder).href),
    );
    return { format: 'module', source: capabilitiesSource(modules), shortCircuit: true };
  }
  return nextLoad(url, context);
}
