"""f-string prompt templates formatted inside the agent, with the host's rules.

The rules are those of agl-host's one formatter (``agl-template``, behind ``resources.format-prompt``):
``{name}`` placeholders (a name is letters, digits and underscores), ``{{`` and ``}}`` for literal
braces, values inserted as they are and never scanned again, a placeholder without a value is an
error and unused values are fine. Used for inline templates only; a template from the rollout's
resources is formatted by the host, which records the prompt it produced.
"""

from __future__ import annotations

from typing import Mapping

from .errors import PromptError

__all__ = ["format_template", "placeholders"]


def _is_name(text: str) -> bool:
    return bool(text) and all(c.isalnum() or c == "_" for c in text)


def _parse(template: str) -> list[tuple[bool, str]]:
    """The template as (is_placeholder, text) pieces, in order."""
    pieces: list[tuple[bool, str]] = []
    i = 0
    n = len(template)
    text_start = 0
    while i < n:
        c = template[i]
        if c not in "{}":
            i += 1
            continue
        if i > text_start:
            pieces.append((False, template[text_start:i]))
        if template.startswith("{{", i):
            pieces.append((False, "{"))
            i += 2
        elif template.startswith("}}", i):
            pieces.append((False, "}"))
            i += 2
        elif c == "}":
            raise PromptError("a single `}` (write `}}` for a literal brace)")
        else:
            end = template.find("}", i)
            if end < 0:
                raise PromptError("a `{` that is never closed (write `{{` for a literal brace)")
            inside = template[i + 1 : end]
            if not _is_name(inside):
                raise PromptError(f"the placeholder `{{{inside}}}`, which is not a plain name")
            pieces.append((True, inside))
            i = end + 1
        text_start = i
    if text_start < n:
        pieces.append((False, template[text_start:]))
    return pieces


def placeholders(template: str) -> list[str]:
    """The placeholder names of ``template``, each once, in order of first appearance."""
    names: list[str] = []
    for is_field, text in _parse(template):
        if is_field and text not in names:
            names.append(text)
    return names


def format_template(template: str, values: Mapping[str, object]) -> str:
    """Fills every placeholder of ``template`` from ``values`` (each converted with ``str``).

    Raises :class:`~agl.PromptError` for a malformed template or a placeholder without a value.
    """
    out: list[str] = []
    for is_field, text in _parse(template):
        if not is_field:
            out.append(text)
        elif text in values:
            out.append(str(values[text]))
        else:
            given = ", ".join(values) if values else "nothing"
            raise PromptError(f"no value for placeholder `{{{text}}}` (given: {given})")
    return "".join(out)
