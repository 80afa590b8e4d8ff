// What `agl:agent/*` imports resolve to under Node (see hooks.js): every function throws, saying
// that only agl-host serves it. Tests run agents through `run(..., new LocalHost())` instead.

function outside(name) {
  return () => {
    throw new Error(`${name} is served by agl-host; under Node, run the agent with run() and a LocalHost from 'agl/testing'`);
  };
}

export const chat = outside('llm.chat');
export const emit = outside('reward.emit');
export const emitNamed = outside('reward.emit-named');
export const get = outside('resources.get');
export const formatPrompt = outside('resources.format-prompt');
export const log = outside('trace.log');
export const message = outside('trace.message');
export const object = outside('trace.object');
export const startOperation = outside('trace.start-operation');
export const endOperation = outside('trace.end-operation');
