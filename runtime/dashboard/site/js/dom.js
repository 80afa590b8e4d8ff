// Building the page: a tiny element helper and the formats every view shares.

/**
 * `h("td", {class: "num", onclick: f}, "text", child)`: an element with attributes, event
 * handlers (`on...`) and children (strings, nodes, arrays; null and false are skipped).
 */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = value;
    else if (key === "value") el.value = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

/**
 * Replaces `el`'s children with `children`, skipped and flattened as `h` does (the DOM's own
 * `replaceChildren(null)` would show the text "null").
 */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : String(child));
  }
}

/** A reward or score: four decimals, or a dash. */
export function score(value) {
  return typeof value === "number" && Number.isFinite(value) ? value.toFixed(4) : "—";
}

/** Seconds as `850 ms`, `12.3 s`, `4m 05s`, `2h 03m`. */
export function duration(seconds) {
  if (typeof seconds !== "number" || !Number.isFinite(seconds) || seconds < 0) return "—";
  if (seconds < 0.001) return `${Math.round(seconds * 1e6)} µs`;
  if (seconds < 1) return `${Math.round(seconds * 1000)} ms`;
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  const s = Math.round(seconds);
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}

/** Unix seconds as `2026-11-24 21:05:12` (UTC). */
export function time(unixSeconds) {
  if (typeof unixSeconds !== "number") return "—";
  return new Date(unixSeconds * 1000).toISOString().replace("T", " ").slice(0, 19);
}

/** A status word, coloured by its class. */
export function status(word) {
  return h("span", { class: `status status-${word}` }, word ?? "—");
}

/** A value as one short line (JSON for objects), at most `max` characters. */
export function oneLine(value, max = 90) {
  const text = (typeof value === "string" ? value : JSON.stringify(value) ?? "").replace(/\s*\n\s*/g, " ⏎ ");
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** A labelled number card of the summary. */
export function card(label, value, testId) {
  return h("div", { class: "card", "data-card": testId },
    h("div", { class: "label" }, label), h("div", { class: "value" }, value));
}

/** A `<select>` of `options` ([value, label] pairs), calling `onChange(value)`. */
export function select(name, options, current, onChange) {
  return h("select", { name, onchange: (e) => onChange(e.target.value) },
    options.map(([value, label]) => h("option", { value, selected: value === current }, label)));
}
