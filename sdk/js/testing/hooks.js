// Node module-resolution hooks for tests (registered by register.js): `agl:agent/<iface>@0.2.0`
// resolves to wit-stub.js, `agl` and `agl/testing` to this SDK, anything else as usual.

const STUB = new URL('./wit-stub.js', import.meta.url).href;
const SDK = new URL('../src/index.js', import.meta.url).href;
const TESTING = new URL('./index.js', import.meta.url).href;

export async function resolve(specifier, context, nextResolve) {
  if (specifier.startsWith('agl:agent/')) {
    return { url: STUB, shortCircuit: true };
  }
  if (specifier === 'agl') {
    return { url: SDK, shortCircuit: true };
  }
  if (specifier === 'agl/testing') {
    return { url: TESTING, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}
