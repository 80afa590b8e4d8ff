// f-string prompt templates formatted in the guest, for inline templates the agent carries (the
// rollout's own templates are formatted by the host). The same rules and messages as the host's
// formatter (runtime/template): `{name}` placeholders (letters, digits, underscores), `{{` and `}}`
// for literal braces, values inserted as they are.

import { PromptError } from './errors.js';

/**
 * A placeholder name: letters, digits and underscores (Rust's `char::is_alphanumeric`). The
 * engine componentize-js builds on has no Unicode property tables (`\p{...}` is a SyntaxError
 * there), so it falls back to ASCII letters, digits and underscores plus every non-ASCII
 * character: inline templates there accept a few names (symbols) that the host would refuse.
 */
const NAME = unicodeNames() ?? /^[\w\u0080-\uffff]+$/;

function unicodeNames() {
  try {
    return new RegExp('^[\\p{Alphabetic}\\p{N}_]+$', 'u');
  } catch {
    return undefined;
  }
}

/** The pieces of `template`: strings (text) and `{field: name}` objects, in order. */
export function parseTemplate(template) {
  const pieces = [];
  let rest = template;
  for (;;) {
    const at = rest.search(/[{}]/);
    if (at < 0) {
      break;
    }
    if (at > 0) {
      pieces.push(rest.slice(0, at));
    }
    const tail = rest.slice(at);
    if (tail.startsWith('{{')) {
      pieces.push('{');
      rest = tail.slice(2);
    } else if (tail.startsWith('}}')) {
      pieces.push('}');
      rest = tail.slice(2);
    } else if (tail.startsWith('}')) {
      throw new PromptError('a single `}` (write `}}` for a literal brace)');
    } else {
      const end = tail.indexOf('}');
      if (end < 0) {
        throw new PromptError('a `{` that is never closed (write `{{` for a literal brace)');
      }
      const inside = tail.slice(1, end);
      if (!NAME.test(inside)) {
        throw new PromptError(`the placeholder \`{${inside}}\`, which is not a plain name`);
      }
      pieces.push({ field: inside });
      rest = tail.slice(end + 1);
    }
  }
  if (rest.length > 0) {
    pieces.push(rest);
  }
  return pieces;
}

/** Fills every placeholder of `template` from `vars` (an object); unused values are fine. */
export function formatTemplate(template, vars) {
  const given = Object.keys(vars);
  let out = '';
  for (const piece of parseTemplate(template)) {
    if (typeof piece === 'string') {
      out += piece;
    } else if (Object.prototype.hasOwnProperty.call(vars, piece.field)) {
      out += String(vars[piece.field]);
    } else {
      const names = given.length > 0 ? given.join(', ') : 'nothing';
      throw new PromptError(`no value for placeholder \`{${piece.field}}\` (given: ${names})`);
    }
  }
  return out;
}
