// Node module-resolution hooks for tests (registered by register.js): `agl:agent/<iface>@0.2.0`
// resolves to a stub of that interface generated from the WIT (wit-stub.js), `agl` and
// `agl/testing` to this SDK, anything else as usual.

import { stubSource } from './wit-stub.js';

const STUB = 'agl-wit-stub:';
const SDK = new URL('../src/index.js', import.meta.url).href;
const TESTING = new URL('./index.js', import.meta.url).href;

export async function resolve(specifier, context, nextResolve) {
  if (specifier.startsWith('agl:agent/')) {
    return { url: `${STUB}${specifier}`, shortCircuit: true };
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
  return nextLoad(url, context);
}
