// Rewards (WIT interface agl:agent/reward): `ctx.reward(value)`, `ctx.reward(name, value)`; under
// agl/testing, LocalHost records them in `host.rewards` as `[name or undefined, value]`.

import { emit, emitNamed } from 'agl:agent/reward@0.2.0';

import { hostOf } from '../capability.js';
import { AglError } from '../errors.js';

function rewardValue(value, what) {
  if (typeof value !== 'number') {
    throw new AglError(`${what} must be a number, not ${value === null ? 'null' : typeof value}`);
  }
  return value;
}

export default {
  imports: { emit, emitNamed },

  ctx: {
    /** `reward(value)`: the primary reward; `reward(name, value)`: one of several named rewards. */
    reward(nameOrValue, value) {
      const host = hostOf(this);
      if (value === undefined) {
        host.emit(rewardValue(nameOrValue, 'a reward'));
      } else {
        if (typeof nameOrValue !== 'string') {
          throw new AglError(`a reward name must be a string, not ${typeof nameOrValue}`);
        }
        host.emitNamed(nameOrValue, rewardValue(value, `reward ${nameOrValue}`));
      }
    },
  },

  local: {
    state: () => ({ rewards: [] }),
    imports: {
      emit(value) {
        this.rewards.push([undefined, value]);
      },
      emitNamed(name, value) {
        this.rewards.push([name, value]);
      },
    },
  },
};
