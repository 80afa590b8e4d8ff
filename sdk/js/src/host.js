// The one module of the SDK that imports the host's interfaces (wit/agent.wit, package
// agl:agent@0.2.0). componentize-js turns these imports into the component's imports; every other
// module of the SDK receives them as a plain object (`Host`), so that `agl/testing` can stand in
// for the host under Node.
//
// Functions of the WIT that return `result<_, e>` throw a ComponentError whose `payload` is `e`
// (a `{tag, val}` object for a variant); the SDK turns those into its own errors.

import { chat } from 'agl:agent/llm@0.2.0';
import { emit, emitNamed } from 'agl:agent/reward@0.2.0';
import { formatPrompt, get } from 'agl:agent/resources@0.2.0';
import { endOperation, log, message, object, startOperation } from 'agl:agent/trace@0.2.0';

/** The host's imports, as the rest of the SDK calls them. */
export const witHost = Object.freeze({
  chat,
  emit,
  emitNamed,
  get,
  formatPrompt,
  log,
  message,
  object,
  startOperation,
  endOperation,
});
