// A toy capability for capabilities.test.js, written as a module of sdk/js/src/capabilities/ is
// (see src/capability.js): `ctx.tally(name[, by])` adds to a named counter and returns its total.
// capabilities.test.js adds this folder to `agl:capabilities` through testing/hooks.js. (`node
// --test` also loads this file alone, as it does every .js under test/: it has no tests.)

import { AglError } from '../../src/errors.js';
import { hostOf } from '../../src/capability.js';

/** Exported by `agl`, as every named export of a capability module is. */
export class TallyError extends AglError {}

/** A real capability imports these from `agl:agent/<iface>@0.3.0`; the WIT has no toy interface. */
function tallyAdd() {
  throw new Error('tally is a toy: only LocalHost serves it');
}

export default {
  imports: { tallyAdd },

  ctx: {
    tally(name, by = 1) {
      if (typeof name !== 'string' || !Number.isInteger(by)) {
        throw new TallyError('ctx.tally(name, by): a string and an integer');
      }
      return hostOf(this).tallyAdd(name, by);
    },
  },

  local: {
    state: ({ tallies = {} }) => ({ tallies: { ...tallies } }),
    imports: {
      tallyAdd(name, by) {
        this.tallies[name] = (this.tallies[name] ?? 0) + by;
        return this.tallies[name];
      },
    },
  },
};
