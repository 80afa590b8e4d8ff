// Rewards (WIT interface agl:agent/reward): `ctx.reward(value)`, `ctx.reward(name, value)` and
// `ctx.feedback(text)`; under agl/testing, LocalHost records them in `host.rewards` as
// `[name or undefined, value]` and in `host.feedback` as texts.

import { emit, emitNamed, feedback } from 'agl:agent/reward@0.3.0';

import { hostOf } from '../capability.js';
import { AglError } from '../errors.js';

function rewardValue(value, what) {
  if (typeof value !== 'number') {
    throw new AglError(`${what} must be a number, not ${value === null ? 'null' : typeof value}`);
  }
  return value;
}

export default {
  // `feedback` is the host's `giveFeedback`: LocalHost's `feedback` is the list of texts.
  imports: { emit, emitNamed, giveFeedback: feedback },

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

    /**
     * `feedback(text)`: textual feedback on this attempt beside its reward (what went wrong on
     * this task), for algorithms that learn from text. Several calls append, in order; the host
     * keeps up to 16 KiB in all and records them on the attempt's final reward span.
     */
    feedback(text) {
      if (typeof text !== 'string') {
        throw new AglError(`feedback must be a string, not ${text === null ? 'null' : typeof text}`);
      }
      hostOf(this).giveFeedback(text);
    },
  },

  local: {
    state: () => ({ rewards: [], feedback: [] }),
    imports: {
      emit(value) {
        this.rewards.push([undefined, value]);
      },
      emitNamed(name, value) {
        this.rewards.push([name, value]);
      },
      giveFeedback(text) {
        this.feedback.push(text);
      },
    },
  },
};
