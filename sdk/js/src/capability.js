// What a capability module is, and how the SDK finds and combines them. A capability is one
// module of `src/capabilities/` whose default export is
//
//   {
//     imports: { fn, ... },          // its `agl:agent/<iface>@0.3.0` functions, as it imported them
//     ctx: { method() {}, get x() {} },   // members of Ctx; `hostOf(this)` is the attempt's host
//     local: {                       // its fake in agl/testing's LocalHost
//       state(options) { return { recorded: [] }; },   // fields of a new LocalHost, from its options
//       imports: { fn() {}, ... },   // the same functions, `this` being the LocalHost
//     },
//   }
//
// and whose named exports are `agl`'s. The virtual module `agl:capabilities` (built by
// `capabilitiesSource`, resolved by build.mjs's esbuild plugin in a guest and by
// testing/hooks.js under Node) imports every such module: default export, the list of
// descriptors; named exports, theirs. The host the SDK calls is flat (one object of every
// function), so two capabilities may not name a function, or a Ctx member, alike.

/** The host of each Ctx (the component's imports, or a LocalHost). */
const HOSTS = new WeakMap();

/** Binds `ctx` to `host`; done once, by the Ctx constructor. */
export function attachHost(ctx, host) {
  HOSTS.set(ctx, host);
}

/** The host behind `ctx`, for the members a capability adds to Ctx. */
export function hostOf(ctx) {
  return HOSTS.get(ctx);
}

/** One object of every capability's functions, `pick(capability)` each; a name twice throws. */
export function mergeImports(capabilities, pick, base = {}) {
  const merged = { ...base };
  for (const capability of capabilities) {
    for (const [name, fn] of Object.entries(pick(capability) ?? {})) {
      if (Object.hasOwn(merged, name)) {
        throw new Error(`two host functions are called ${name}: rename one in its capability's imports`);
      }
      merged[name] = fn;
    }
  }
  return merged;
}

/** Defines `members` (methods and accessors of an object literal) on `target`, as a class would. */
export function defineMembers(target, members, what) {
  for (const [name, descriptor] of Object.entries(Object.getOwnPropertyDescriptors(members ?? {}))) {
    if (name in target) {
      throw new Error(`${what} already has a member called ${name}`);
    }
    Object.defineProperty(target, name, { ...descriptor, enumerable: false });
  }
}

/** The capability modules among a folder's file names: `*.js`, hidden ones left out, sorted. */
export function capabilityFiles(names) {
  return names.filter((name) => name.endsWith('.js') && !name.startsWith('.')).sort();
}

/** The source of `agl:capabilities` for the capability modules at `specifiers` (absolute). */
export function capabilitiesSource(specifiers) {
  const lines = specifiers.flatMap((specifier, i) => [
    `import capability${i} from ${JSON.stringify(specifier)};`,
    `export * from ${JSON.stringify(specifier)};`,
  ]);
  lines.push(`export default [${specifiers.map((_, i) => `capability${i}`).join(', ')}];`);
  return `${lines.join('\n')}\n`;
}
