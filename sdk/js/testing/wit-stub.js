// What `agl:agent/<iface>` imports resolve to under Node (see hooks.js), generated from the WIT
// (`wit/*.wit` of the repository): one module per interface, exporting each of its functions
// under the name componentize-js gives it (kebab-case to camelCase), each throwing, saying that
// only agl-host serves it. Tests run agents through `run(..., new LocalHost())` instead.

import { readFileSync } from 'node:fs';

/** The WIT files whose interfaces are stubbed. */
const WIT_FILES = ['agent.wit', 'algorithm.wit'].map((name) => new URL(`../../../wit/${name}`, import.meta.url));

/** `format-prompt` -> `formatPrompt`. */
function camel(name) {
  return name.replace(/-([a-z0-9])/g, (_, letter) => letter.toUpperCase());
}

/** Each interface's function names, in the order the WIT declares them: `interface x { ... }`
 * blocks, their `name: func(` items at the block's own depth (records and variants nest). */
export function witFunctions(text) {
  const found = new Map();
  const source = text.replace(/\/\/.*$/gm, '');
  const header = /\binterface\s+([a-z][a-z0-9-]*)\s*\{/g;
  let match;
  while ((match = header.exec(source)) !== null) {
    const functions = [];
    let depth = 1;
    let i = header.lastIndex;
    let item = '';
    for (; i < source.length && depth > 0; i += 1) {
      const c = source[i];
      if (c === '{') depth += 1;
      else if (c === '}') depth -= 1;
      else if (c === ';' && depth === 1) {
        const fn = /^\s*([a-z%][a-z0-9-]*)\s*:\s*(?:async\s+)?func\b/.exec(item);
        if (fn) functions.push(fn[1].replace(/^%/, ''));
        item = '';
        continue;
      }
      if (depth === 1 && c !== '}') item += c;
      else if (c === '}' && depth === 1) item = '';
    }
    found.set(match[1], functions);
    header.lastIndex = i;
  }
  return found;
}

let interfaces;

/** Every stubbed interface's function names, read once. */
function allInterfaces() {
  if (!interfaces) {
    interfaces = new Map();
    for (const file of WIT_FILES) {
      for (const [name, functions] of witFunctions(readFileSync(file, 'utf8'))) interfaces.set(name, functions);
    }
  }
  return interfaces;
}

/** The stub module's source for `agl:agent/<iface>[@version]`. */
export function stubSource(specifier) {
  const iface = specifier.slice('agl:agent/'.length).split('@')[0];
  const functions = allInterfaces().get(iface);
  if (!functions) throw new Error(`${specifier}: no interface '${iface}' in agl-host's WIT`);
  const lines = [
    'function outside(name) {',
    '  return () => {',
    "    throw new Error(`${name} is served by agl-host; under Node, run the agent with run() and a LocalHost from 'agl/testing'`);",
    '  };',
    '}',
  ];
  for (const name of functions) lines.push(`export const ${camel(name)} = outside(${JSON.stringify(`${iface}.${name}`)});`);
  return `${lines.join('\n')}\n`;
}
