// One attempt's spans as a tree laid out on a timeline, as `agl-host show RUN ROLLOUT` builds it
// (runtime/runs/src/span_tree.rs): each span under its parent (a span whose parent is not among
// them is a root), siblings by start time then sequence id, each span once even if parent ids
// loop; and what each span says in a few words. Pure functions: no DOM, no fetching.

export const LLM_SPAN = "openai.chat.completion";
const ROLLOUT_SPAN = "agentlightning.rollout";
const ANNOTATION_SPAN = "agentlightning.annotation";
const MESSAGE_SPANS = ["agentlightning.message", "agl.message", "agl.log"];
const OBJECT_SPANS = ["agentlightning.object", "agl.object"];
const OPERATION_SPAN = "agentlightning.operation";
const REWARD_PREFIX = "agentlightning.reward.";

const start = (span) => span.start_time ?? -Infinity;

/** → `[{span, depth}]` in display order (depth-first, children in start order). */
export function flatten(spans) {
  const ordered = [...spans].sort((a, b) => start(a) - start(b) || a.sequence_id - b.sequence_id);
  const ids = new Set(ordered.map((s) => s.span_id));
  const children = new Map();
  const roots = [];
  for (const span of ordered) {
    const parent = span.parent_id;
    if (parent && ids.has(parent) && parent !== span.span_id) {
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(span);
    } else {
      roots.push(span);
    }
  }
  const out = [];
  const shown = new Set();
  const stack = roots.slice().reverse().map((span) => [span, 0]);
  while (stack.length) {
    const [span, depth] = stack.pop();
    if (shown.has(span.span_id)) continue;
    shown.add(span.span_id);
    out.push({ span, depth });
    for (const kid of (children.get(span.span_id) ?? []).slice().reverse()) stack.push([kid, depth + 1]);
  }
  // Spans only reachable through a parent loop.
  for (const span of ordered) if (!shown.has(span.span_id)) out.push({ span, depth: 0 });
  return out;
}

/** Each row's bar on the timeline: `left` and `width` in percent of the attempt's span. */
export function timeline(rows) {
  const starts = rows.map((r) => r.span.start_time).filter(Number.isFinite);
  const ends = rows.map((r) => r.span.end_time ?? r.span.start_time).filter(Number.isFinite);
  const t0 = Math.min(...starts);
  const total = Math.max(Math.max(...ends) - t0, 1e-9);
  return rows.map((row) => {
    const s = row.span.start_time ?? t0;
    const e = row.span.end_time ?? s;
    return { ...row, left: ((s - t0) / total) * 100, width: (Math.max(e - s, 0) / total) * 100, seconds: e - s };
  });
}

/** What kind of span this is, for its bar's colour: `llm`, `reward`, `error` or `other`. */
export function kind(span) {
  if (span.status?.status_code === "ERROR") return "error";
  if (isLlmCall(span)) return "llm";
  if (rewardsOf(span).length) return "reward";
  return "other";
}

/** Whether the span is an LLM call (as the adapter decides). */
export function isLlmCall(span) {
  return span.name.includes(LLM_SPAN)
    || Object.keys(span.attributes ?? {}).some((k) => k.startsWith("gen_ai.prompt.") || k.startsWith("gen_ai.completion."));
}

/** The 0.3.0 reward dimensions a span carries: `[[name, value]]`. */
export function rewardsOf(span) {
  const attributes = span.attributes ?? {};
  const dims = new Map();
  for (const [key, value] of Object.entries(attributes)) {
    if (!key.startsWith(REWARD_PREFIX)) continue;
    const [index, field] = key.slice(REWARD_PREFIX.length).split(".");
    if (!dims.has(index)) dims.set(index, {});
    dims.get(index)[field] = value;
  }
  const out = [...dims].sort(([a], [b]) => Number(a) - Number(b))
    .filter(([, d]) => typeof d.value === "number")
    .map(([, d]) => [d.name ?? "primary", d.value]);
  if (!out.length && span.name === ANNOTATION_SPAN && typeof attributes.reward === "number") {
    out.push(["primary", attributes.reward]);
  }
  return out;
}

const text = (value) => (typeof value === "string" ? value : value === undefined ? "" : JSON.stringify(value));

/** What the span says in a few words (the line `agl-host show` prints after its name). */
export function summary(span) {
  const a = span.attributes ?? {};
  const name = span.name;
  const parts = [];
  if (name === ROLLOUT_SPAN) {
    if (a["agl.failure"] !== undefined) parts.push(`failure: ${text(a["agl.failure"])}`);
    if (a["agl.llm.calls"] !== undefined) parts.push(`${a["agl.llm.calls"]} LLM call(s), ${a["agl.llm.tokens"] ?? 0} tokens`);
    if (typeof a["agl.memory.bytes"] === "number") parts.push(`${(a["agl.memory.bytes"] / 1048576).toFixed(1)} MiB memory`);
    if (a["agl.agent"] !== undefined) parts.push(`agent ${text(a["agl.agent"])}`);
  } else if (isLlmCall(span)) {
    const model = a["gen_ai.response.model"] ?? a["gen_ai.request.model"];
    const input = a["gen_ai.usage.input_tokens"] ?? a["gen_ai.usage.prompt_tokens"];
    const output = a["gen_ai.usage.output_tokens"] ?? a["gen_ai.usage.completion_tokens"];
    if (model !== undefined) parts.push(text(model));
    if (input !== undefined && output !== undefined) parts.push(`${input}+${output} tokens`);
  } else if (rewardsOf(span).length) {
    parts.push(`reward ${rewardsOf(span).map(([n, v]) => `${n} = ${v.toFixed(4)}`).join(", ")}`);
  } else if (MESSAGE_SPANS.includes(name)) {
    const body = a["agentlightning.message.body"] ?? a["agl.message"] ?? a["agl.log.message"] ?? "";
    parts.push(a["agl.log.level"] !== undefined ? `log ${a["agl.log.level"]}: ${text(body)}` : `message: ${text(body)}`);
  } else if (OBJECT_SPANS.includes(name)) {
    parts.push(`object ${text(a["agentlightning.object.json"] ?? a["agl.object"])}`);
  } else if (name === OPERATION_SPAN) {
    parts.push(text(a["agentlightning.operation.name"]));
  } else if (name === "agl.stdout" || name === "agl.stderr") {
    parts.push(text(a["agl.output.text"]));
  } else if (name === "agl.resources.get" || name === "agl.resources.format_prompt") {
    parts.push(text(a["agl.resource.name"]) + (a["agl.resource.found"] === false ? " (not found)" : "")
      + (a["agl.resources_id"] !== undefined ? ` of ${text(a["agl.resources_id"])}` : ""));
  } else if (name === "agl.spans.dropped") {
    parts.push(`${a["agl.spans.dropped.count"]} span(s) not kept (${a["agl.spans.budget.bound"]} bound reached)`);
  } else {
    parts.push(Object.keys(a).sort().slice(0, 6).map((k) => `${k}=${text(a[k])}`).join(" "));
  }
  if (span.status?.status_code === "ERROR") parts.push(`ERROR: ${span.status.description ?? "(no description)"}`);
  return parts.filter(Boolean).join(" · ");
}

/** An attempt's failure as its root span records it (`agl.failure`), if any. */
export function failureOf(spans) {
  const root = spans.find((s) => s.name === ROLLOUT_SPAN && s.attributes?.["agl.failure"] !== undefined);
  return root ? text(root.attributes["agl.failure"]) : null;
}

/** The log and message spans, in order: `[{level, body, time}]`. */
export function logsOf(spans) {
  return spans.filter((s) => MESSAGE_SPANS.includes(s.name))
    .sort((x, y) => start(x) - start(y) || x.sequence_id - y.sequence_id)
    .map((s) => ({
      level: s.attributes?.["agl.log.level"] ?? "message",
      body: text(s.attributes?.["agentlightning.message.body"] ?? s.attributes?.["agl.message"] ?? s.attributes?.["agl.log.message"]),
      time: s.start_time,
    }));
}
