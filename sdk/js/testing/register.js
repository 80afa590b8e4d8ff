// `node --import <sdk>/testing/register.js --test`: lets an agent module run under Node for unit
// tests. Registers hooks.js, which resolves the host's `agl:agent/*` imports to stubs,
// `agl:capabilities` to the SDK's capability modules and the bare specifiers `agl` and
// `agl/testing` to this copy of the SDK.

import { register } from 'node:module';

register('./hooks.js', import.meta.url);
