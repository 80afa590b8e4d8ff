//! The attempt's LLM calls as triplets and conversations: which spans count, in what order, and
//! where the reward goes — after Agent-lightning 0.3.0's `TracerTraceToTriplet`
//! (`agentlightning/adapter/triplet.py`) with `final_reward` credited to the last call.
//!
//! - A span is an LLM call when its name contains `openai.chat.completion` or it carries
//!   `gen_ai.prompt.*` / `gen_ai.completion.*` attributes, and its status is not `ERROR` (a call
//!   that failed has no answer to learn from; agl-host records refused and failed calls so).
//! - Calls beneath a reward span (an LLM judge inside a reward function) are not the agent's and
//!   are left out, as with `exclude_llm_call_in_reward`.
//! - Duplicates are dropped as with `dedup_llm_call`: a call whose `gen_ai.response.id` was already
//!   seen, and a call without a response id nested beneath another LLM call (two instrumentations
//!   recording the same request).
//! - Order: start time, then sequence id; a span without a start time sorts first.
//! - Reward: the attempt's [`final_reward`](crate::final_reward) on the last call, `None` on the
//!   others. (Agent-lightning's default `first_occurrence` matching would also credit
//!   intermediate rewards to the calls before them; here they are available from
//!   [`rewards`](crate::rewards).)

use crate::llm;
use crate::model::{Message, Triplet};
use crate::reward;
use agl_store::{Span, StatusCode};
use std::borrow::Borrow;
use std::collections::{HashMap, HashSet};

fn start(span: &Span) -> f64 {
    span.start_time.unwrap_or(f64::NEG_INFINITY)
}

fn is_call(span: &Span) -> bool {
    span.status.status_code != StatusCode::Error && llm::looks_like_llm_call(span)
}

/// The attempt's spans indexed by id and by parent.
struct Tree<'a> {
    by_id: HashMap<&'a str, &'a Span>,
    children: HashMap<&'a str, Vec<&'a Span>>,
}

impl<'a> Tree<'a> {
    /// `ordered`: the spans in the order children should be listed.
    fn new(ordered: &[&'a Span]) -> Self {
        let mut by_id = HashMap::with_capacity(ordered.len());
        let mut children: HashMap<&str, Vec<&Span>> = HashMap::new();
        for span in ordered {
            by_id.entry(span.span_id.as_str()).or_insert(*span);
            if let Some(parent) = span.parent_id.as_deref() {
                children.entry(parent).or_default().push(*span);
            }
        }
        Self { by_id, children }
    }

    /// Whether some ancestor of `span` within the attempt satisfies `test`. Parents outside the
    /// attempt end the walk; a parent cycle cannot loop (at most one step per span).
    fn has_ancestor(&self, span: &Span, test: impl Fn(&Span) -> bool) -> bool {
        let mut parent = span.parent_id.as_deref();
        for _ in 0..self.by_id.len() {
            let Some(node) = parent.and_then(|id| self.by_id.get(id)) else {
                return false;
            };
            if test(node) {
                return true;
            }
            parent = node.parent_id.as_deref();
        }
        false
    }

    fn children_of(&self, span: &Span) -> &[&'a Span] {
        self.children.get(span.span_id.as_str()).map_or(&[], Vec::as_slice)
    }
}

/// The attempt's LLM calls as (prompt, response, reward) triplets, in call order; the final reward
/// is credited to the last call. `spans` are one attempt's spans, e.g. as the store returns them.
pub fn triplets<S: Borrow<Span>>(spans: &[S]) -> Vec<Triplet> {
    let mut ordered: Vec<&Span> = spans.iter().map(Borrow::borrow).collect();
    ordered.sort_by(|a, b| start(a).total_cmp(&start(b)).then(a.sequence_id.cmp(&b.sequence_id)));
    let tree = Tree::new(&ordered);
    let mut response_ids = HashSet::new();
    let mut out: Vec<Triplet> = Vec::new();
    for span in &ordered {
        if !is_call(span) || tree.has_ancestor(span, reward::is_reward_scope) {
            continue;
        }
        let fresh = match llm::response_id(span) {
            Some(id) => response_ids.insert(id),
            None => !tree.has_ancestor(span, is_call),
        };
        if fresh {
            out.push(llm::read_call(span, tree.children_of(span)));
        }
    }
    if let Some(last) = out.last_mut() {
        last.reward = reward::final_reward(spans);
    }
    out
}

/// The conversation of each LLM call, in call order: its prompt messages followed by the
/// assistant's answer (text and tool calls).
pub fn messages<S: Borrow<Span>>(spans: &[S]) -> Vec<Vec<Message>> {
    triplets(spans).iter().map(Triplet::conversation).collect()
}
