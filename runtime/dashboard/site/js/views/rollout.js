// One rollout: its attempts (status, reason, duration, worker), and for the chosen attempt
// (the latest by default) its span tree as a waterfall, each LLM call as a chat (messages,
// answer, tool calls, tokens, latency), its rewards and its log lines. A span clicked shows all
// it recorded. While the rollout is unfinished, the view is redrawn as its spans arrive.
// Forks (`agl-host fork`): a fork says which rollout and attempt it branched from; a rollout
// others were forked from lists them, by the LLM call they branch at.

import { all, get, optional } from "../api.js";
import { h, fill, score, duration, time, status, oneLine } from "../dom.js";
import { isFinished, forkOf, branchesOf, outcomesOf } from "../run-data.js";
import { setParams } from "../router.js";
import { flatten, timeline, kind, summary, failureOf, logsOf, rewardsOf } from "../span-tree.js";

export async function render(context) {
  const root = h("section", { "data-view": "rollout" });
  const paint = async () => {
    const { rollout, content } = await load(context);
    fill(root, content);
    return rollout;
  };
  const rollout = await paint();
  if (rollout && !isFinished(rollout)) context.live(paint);
  return root;
}

/** The rollout (or `null` when unknown) and what the view shows of it. */
async function load(context) {
  const id = context.id;
  const rollout = await get(`/v1/agl/rollouts/${encodeURIComponent(id)}`);
  if (!rollout) return { rollout, content: [h("p", { class: "error" }, `No rollout ${id} in this store.`)] };
  const [attempts, spans, rollouts] = await Promise.all([
    all(`/v1/agl/rollouts/${encodeURIComponent(id)}/attempts`),
    all("/v1/agl/spans", { rollout_id: id }),
    // The store has no metadata filter: its forks are found among every rollout.
    all("/v1/agl/rollouts"),
  ]);
  const branches = branchesOf(rollout.rollout_id, rollouts);
  const branchOutcomes = branches.length
    ? await outcomesOf(branches.flatMap((group) => group.forks.map((f) => f.rollout.rollout_id)))
    : new Map();
  const chosen = attempts.find((a) => a.attempt_id === context.params.attempt) ?? attempts[attempts.length - 1] ?? null;
  const spansOf = (attempt) => spans.filter((s) => s.attempt_id === attempt.attempt_id);
  const [calls, outcomes] = chosen ? await Promise.all([
    optional(`/v1/agl-host/rollouts/${encodeURIComponent(id)}/attempts/${encodeURIComponent(chosen.attempt_id)}/llm-calls`),
    optional("/v1/agl-host/outcomes", { rollout_id_in: id }),
  ]) : [null, null];
  const outcome = outcomes?.items?.find((o) => o.attempt_id === chosen?.attempt_id) ?? null;
  const attemptSpans = chosen ? spansOf(chosen) : [];
  return { rollout, content: [
    h("h1", {}, h("span", { class: "mono" }, rollout.rollout_id), " ", status(rollout.status)),
    h("p", { class: "muted" }, `mode ${rollout.mode ?? "-"} · resources ${rollout.resources_id ?? "-"} · started ${time(rollout.start_time)}`),
    forkedFrom(forkOf(rollout)),
    h("h2", {}, "Input"), h("pre", { class: "detail" }, JSON.stringify(rollout.input, null, 2)),
    h("h2", {}, "Attempts"), attemptsTable(attempts, chosen, spansOf),
    branches.length ? branchesSection(branches, branchOutcomes) : null,
    chosen ? attemptDetail(chosen, attemptSpans, calls ?? [], outcome) : h("p", { class: "muted" }, "No attempt yet."),
  ] };
}

/** A value of the store's metadata as text: strings as they are, anything else as JSON, `?` when missing. */
function shown(value) {
  if (value === undefined || value === null) return "?";
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** `#/rollout/ID` (`?attempt=ID`), the ids encoded. */
function rolloutHref(rolloutId, attemptId) {
  const query = typeof attemptId === "string" ? `?attempt=${encodeURIComponent(attemptId)}` : "";
  return `#/rollout/${encodeURIComponent(rolloutId)}${query}`;
}

/** A fork's line: "Forked from PARENT (attempt A) at LLM call K, branch i of M"; nothing for a rollout that is not a fork. */
function forkedFrom(fork) {
  if (!fork) return null;
  const parent = fork.parent_rollout_id;
  const attempt = fork.parent_attempt_id;
  return h("p", { "data-forked-from": "" },
    "Forked from ",
    typeof parent === "string" ? h("a", { class: "mono", href: rolloutHref(parent) }, parent) : shown(parent),
    " (attempt ",
    typeof parent === "string" && typeof attempt === "string"
      ? h("a", { class: "mono", href: rolloutHref(parent, attempt) }, attempt) : h("span", { class: "mono" }, shown(attempt)),
    `) at LLM call ${shown(fork.at_llm_call)}, branch ${shown(fork.branch)} of ${shown(fork.branches)}`);
}

/** The rollouts forked from this one, a table per LLM call they branch at. */
function branchesSection(branches, outcomes) {
  const count = branches.reduce((n, group) => n + group.forks.length, 0);
  return h("div", { "data-branches": "" },
    h("h2", {}, `Branches (${count})`),
    branches.map((group) => h("div", { "data-branch-call": shown(group.at) },
      h("h3", {}, `At LLM call ${shown(group.at)}`),
      h("table", { "data-table": "branches" },
        h("thead", {}, h("tr", {}, ["branch", "rollout", "status", "final reward"].map((t) => h("th", { class: t === "final reward" ? "num" : null }, t)))),
        h("tbody", {}, group.forks.map(({ rollout, fork }) => h("tr", { "data-branch-rollout": rollout.rollout_id },
          h("td", {}, `${shown(fork.branch)} of ${shown(fork.branches)}`),
          h("td", {}, h("a", { class: "mono", href: rolloutHref(rollout.rollout_id) }, rollout.rollout_id)),
          h("td", {}, status(rollout.status)),
          h("td", { class: "num", "data-reward": "" }, score(outcomes.get(rollout.rollout_id)?.final_reward)))))))));
}

function attemptsTable(attempts, chosen, spansOf) {
  return h("table", { "data-table": "attempts" },
    h("thead", {}, h("tr", {}, ["#", "attempt", "status", "reason", "worker", "started", "duration", "spans"].map((t) => h("th", {}, t)))),
    h("tbody", {}, attempts.map((attempt) => {
      const spans = spansOf(attempt);
      const end = attempt.end_time ?? attempt.last_heartbeat_time;
      return h("tr", {
        class: `clickable${attempt === chosen ? " selected" : ""}`, "data-attempt": attempt.attempt_id,
        onclick: () => setParams({ attempt: attempt.attempt_id }),
      },
      h("td", {}, String(attempt.sequence_id)),
      h("td", { class: "mono" }, attempt.attempt_id),
      h("td", {}, status(attempt.status)),
      h("td", {}, failureOf(spans) ?? ""),
      h("td", { class: "mono" }, attempt.worker_id ?? "—"),
      h("td", {}, time(attempt.start_time)),
      h("td", {}, end ? duration(end - attempt.start_time) : "—"),
      h("td", {}, String(spans.length)));
    })));
}

function attemptDetail(attempt, spans, calls, outcome) {
  const rewards = spans.flatMap((s) => rewardsOf(s).map(([name, value]) => ({ name, value, span: s })));
  const logs = logsOf(spans);
  const callBySpan = new Map(calls.map((c) => [c.span_id, c]));
  const spanById = new Map(spans.map((s) => [s.span_id, s]));
  const detail = h("div", { class: "detail", "data-span-detail": "", hidden: true });
  return h("div", {},
    h("h2", {}, `Attempt ${attempt.sequence_id}: rewards`),
    outcome?.no_triplet_reason ? h("p", { class: "flag", "data-flag": "" }, `⚑ No triplet: ${outcome.no_triplet_reason}`) : null,
    rewards.length
      ? h("table", { "data-table": "rewards" }, h("tbody", {}, rewards.map((r) => h("tr", {}, h("td", {}, r.name), h("td", { class: "num" }, score(r.value))))))
      : h("p", { class: "muted" }, "No reward recorded."),
    outcome ? h("p", {}, `Final reward ${score(outcome.final_reward)} · ${outcome.triplets} LLM call(s) for training · ${outcome.input_tokens}+${outcome.output_tokens} tokens · ${duration(outcome.llm_seconds)} in LLM calls`) : null,
    h("h2", {}, `Span tree (${spans.length} spans)`),
    spans.length ? waterfall(spans, (span) => showSpan(detail, span, callBySpan.get(span.span_id))) : h("p", { class: "muted" }, "No span recorded."),
    detail,
    h("h2", {}, `LLM calls (${calls.length})`),
    calls.length ? calls.map((call, i) => h("div", { "data-llm-call": call.span_id },
      h("h3", {}, `Call ${i + 1}: ${call.model || "model?"}`, " ", h("span", { class: "muted" }, callFacts(call, spanById.get(call.span_id)))),
      chat(call))) : h("p", { class: "muted" }, "No LLM call."),
    h("h2", {}, `Logs and messages (${logs.length})`),
    logs.length ? h("table", { "data-table": "logs" }, h("tbody", {}, logs.map((l) => h("tr", {},
      h("td", {}, time(l.time)), h("td", {}, l.level), h("td", {}, h("pre", {}, l.body)))))) : h("p", { class: "muted" }, "No log line."),
  );
}

function waterfall(spans, onPick) {
  const rows = timeline(flatten(spans));
  let selected = null;
  return h("table", { class: "waterfall", "data-table": "spans" },
    h("thead", {}, h("tr", {}, h("th", {}, "span"), h("th", {}, "says"), h("th", {}, "duration"), h("th", {}, "timeline"))),
    h("tbody", {}, rows.map((row) => {
      const tr = h("tr", {
        class: "clickable", "data-span": row.span.name,
        onclick: () => { selected?.classList.remove("selected"); tr.classList.add("selected"); selected = tr; onPick(row.span); },
      },
      h("td", { class: "mono", style: `padding-left: ${0.5 + row.depth * 1.2}rem` }, row.span.name),
      h("td", { title: summary(row.span) }, oneLine(summary(row.span), 100)),
      h("td", {}, duration(row.seconds)),
      h("td", { class: "bar-cell" }, h("div", { class: `bar ${kind(row.span)}`, style: `left:${row.left}%;width:${row.width}%` })));
      return tr;
    })));
}

function showSpan(panel, span, call) {
  panel.hidden = false;
  const attributes = Object.entries(span.attributes ?? {}).sort(([a], [b]) => a.localeCompare(b));
  fill(panel,
    h("h3", {}, span.name, " ", h("span", { class: "muted mono" }, span.span_id)),
    h("p", {}, `${time(span.start_time)} · ${duration((span.end_time ?? span.start_time) - span.start_time)} · status ${span.status?.status_code ?? "?"}`,
      span.status?.description ? ` (${span.status.description})` : ""),
    call ? chat(call) : null,
    h("table", {}, h("tbody", {}, attributes.map(([k, v]) => h("tr", {}, h("td", { class: "mono" }, k),
      h("td", {}, h("pre", {}, typeof v === "string" ? v : JSON.stringify(v, null, 2))))))),
  );
  panel.scrollIntoView({ block: "nearest" });
}

function callFacts(call, span) {
  const tokens = call.usage?.input_tokens != null ? `${call.usage.input_tokens}+${call.usage.output_tokens ?? 0} tokens` : "tokens not recorded";
  const latency = span?.end_time != null && span?.start_time != null ? duration(span.end_time - span.start_time) : "—";
  return `${tokens} · ${latency}${call.reward != null ? ` · reward ${score(call.reward)}` : ""}`;
}

/** One LLM call as a chat: the prompt's messages, then the answer and its tool calls. */
export function chat(call) {
  const message = (role, content, extra) => h("div", { class: `msg ${role}` }, h("div", { class: "role" }, role), h("pre", {}, content), extra);
  return h("div", { class: "chat" },
    call.prompt.map((m) => message(m.role, m.content, m.tool_calls?.length ? toolCalls(m.tool_calls) : null)),
    message("assistant", call.response || (call.tool_calls?.length ? "(tool calls only)" : "")),
    call.tool_calls?.length ? toolCalls(call.tool_calls) : null);
}

function toolCalls(calls) {
  return calls.map((t) => h("div", { class: "msg tool-call", "data-tool-call": t.name },
    h("div", { class: "role" }, `tool call ${t.id ?? ""}`), h("pre", {}, `${t.name}(${t.arguments})`)));
}
