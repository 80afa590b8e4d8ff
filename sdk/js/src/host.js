// The host's interfaces (wit/agent.wit, package agl:agent@0.3.0) as the rest of the SDK calls
// them: one object (`Host`) of the functions imported here and those of every capability module
// (`agl:capabilities`, see capability.js). componentize-js turns these imports into the
// component's imports; `agl/testing`'s LocalHost stands in for this object under Node.
//
// Functions of the WIT that return `result<_, e>` throw a ComponentError whose `payload` is `e`
// (a `{tag, val}` object for a variant); the SDK turns those into its own errors.

import { chat } from 'agl:agent/llm@0.3.0';
import { formatPrompt, get } from 'agl:agent/resources@0.3.0';
import { endOperation, log, message, object, startOperation } from 'agl:agent/trace@0.3.0';
import capabilities from 'agl:capabilities';

import { mergeImports } from './capability.js';

/** The host's imports, as the rest of the SDK calls them. */
export const witHost = Object.freeze(
  mergeImports(capabilities, (capability) => capability.imports, {
    chat,
    get,
    formatPrompt,
    log,
    message,
    object,
    startOperation,
    endOperation,
  }),
);
