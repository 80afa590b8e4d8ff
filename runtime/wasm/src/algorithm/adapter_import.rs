//! `agl:agent/adapter` for algorithms: the attempt's spans from the store, turned into
//! triplets, conversations and the final reward by `agl-adapter`.

use super::bindings::adapter::Host;
use super::state::AlgorithmState;
use crate::bindings::llm::{Message, Role, ToolCall};
use agl_store::{LightningStore, Span, SpanQuery};
use std::sync::Arc;

fn wit_role(role: &str) -> Role {
    match role {
        "system" | "developer" => Role::System,
        "assistant" => Role::Assistant,
        "tool" | "function" => Role::Tool,
        _ => Role::User,
    }
}

fn wit_message(message: &agl_adapter::Message) -> Message {
    Message {
        role: wit_role(&message.role),
        content: message.content.clone(),
        tool_call_id: message.tool_call_id.clone(),
        tool_calls: message
            .tool_calls
            .iter()
            .map(|call| ToolCall {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments_json: call.arguments.clone(),
            })
            .collect(),
    }
}

/// The spans of a rollout's attempt (its latest when `attempt_id` is none), in sequence order.
async fn attempt_spans(
    store: Arc<dyn LightningStore>,
    rollout_id: String,
    attempt_id: Option<String>,
) -> Result<Vec<Arc<Span>>, String> {
    let query = SpanQuery::for_rollout(rollout_id).attempt(attempt_id.unwrap_or_else(|| "latest".to_owned()));
    let page = store.query_spans(&query).await.map_err(|e| e.to_string())?;
    Ok(page.items)
}

impl Host for AlgorithmState {
    async fn triplets(
        &mut self,
        rollout_id: String,
        attempt_id: Option<String>,
    ) -> Result<Vec<super::bindings::adapter::Triplet>, String> {
        let spans = attempt_spans(self.world.store.clone(), rollout_id, attempt_id).await?;
        Ok(agl_adapter::triplets(&spans)
            .iter()
            .map(|t| super::bindings::adapter::Triplet {
                prompt: t.prompt.iter().map(wit_message).collect(),
                response: t.response.clone(),
                reward: t.reward,
                model: t.model.clone(),
            })
            .collect())
    }

    async fn messages(&mut self, rollout_id: String, attempt_id: Option<String>) -> Result<Vec<Vec<Message>>, String> {
        let spans = attempt_spans(self.world.store.clone(), rollout_id, attempt_id).await?;
        Ok(agl_adapter::messages(&spans)
            .iter()
            .map(|call| call.iter().map(wit_message).collect())
            .collect())
    }

    async fn final_reward(&mut self, rollout_id: String, attempt_id: Option<String>) -> Result<Option<f64>, String> {
        let spans = attempt_spans(self.world.store.clone(), rollout_id, attempt_id).await?;
        Ok(agl_adapter::final_reward(&spans))
    }
}
