// Prompt templates: one of the rollout's `prompt_template` resources, formatted by the host's
// `format-prompt` (so the trace records the version used), or an inline template the agent
// carries, formatted here with the same f-string rules.

import { PromptError, describe, payloadOf } from './errors.js';
import { formatTemplate } from './template.js';

/** A prompt template; get one with `ctx.prompt(name)` or `Prompt.inline(template)`. */
export class Prompt {
  #host;

  constructor(host, resourceName, template, engine) {
    this.#host = host;
    /** The resource this template came from; undefined for an inline one. */
    this.resourceName = resourceName;
    /** The template text. */
    this.template = template;
    /** "f-string", "jinja" or "poml". */
    this.engine = engine;
  }

  /** An f-string template the agent carries itself (e.g. a fallback). */
  static inline(template) {
    if (typeof template !== 'string') {
      throw new PromptError(`an inline prompt template must be a string, not ${typeof template}`);
    }
    return new Prompt(undefined, undefined, template, 'f-string');
  }

  /**
   * Fills the placeholders with `vars` (an object of names to values; values become strings). A
   * missing variable is a PromptError; unused ones are fine.
   */
  format(vars = {}) {
    if (vars === null || typeof vars !== 'object') {
      throw new PromptError(`prompt variables must be an object of names to values, not ${describe(vars)}`);
    }
    if (this.resourceName === undefined) {
      try {
        return formatTemplate(this.template, vars);
      } catch (err) {
        const shown = [...this.template].slice(0, 60).join('');
        const more = [...this.template].length > 60 ? '...' : '';
        throw new PromptError(`prompt template ${JSON.stringify(shown)}${more}: ${describe(err)}`);
      }
    }
    const pairs = Object.entries(vars).map(([name, value]) => [name, String(value)]);
    try {
      return this.#host.formatPrompt(this.resourceName, pairs);
    } catch (err) {
      throw new PromptError(`prompt \`${this.resourceName}\`: ${describe(payloadOf(err))}`);
    }
  }
}
