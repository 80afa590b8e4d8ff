//! `agl:agent/adapter` for algorithms: the attempt's spans from the store, turned into
//! triplets, conversations, the final reward and the task view (input, output, reward, feedback,
//! transcript) by `agl-adapter`.

use super::bindings::adapter::{Host, TaskView};
use super::convert::attempt_failure;
use super::state::AlgorithmState;
use crate::bindings::llm::{Message, Role, ToolCall};
use agl_store::{AttemptQuery, LightningStore, Span, SpanQuery};
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

    async fn task(&mut self, rollout_id: String, attempt_id: Option<String>) -> Result<TaskView, String> {
        let store = self.world.store.clone();
        let view = store
            .get_rollout_by_id(&rollout_id)
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("no rollout {rollout_id}"))?;
        let attempt = match &attempt_id {
            None => view.attempt,
            Some(id) => {
                let attempts = store
                    .query_attempts(&rollout_id, &AttemptQuery::default())
                    .await
                    .map_err(|e| e.to_string())?;
                let found = attempts.items.into_iter().find(|a| &a.attempt_id == id);
                Some(found.ok_or_else(|| format!("rollout {rollout_id} has no attempt {id}"))?)
            }
        };
        let spans = match &attempt {
            Some(attempt) => attempt_spans(store, rollout_id.clone(), Some(attempt.attempt_id.clone())).await?,
            None => Vec::new(),
        };
        let task = agl_adapter::task_view(view.rollout.input, &spans);
        Ok(TaskView {
            rollout_id,
            attempt_id: attempt.as_ref().map(|a| a.attempt_id.clone()),
            input_json: task.input.to_string(),
            output: task.output,
            reward: task.reward,
            feedback: task.feedback,
            transcript: task.transcript.iter().map(wit_message).collect(),
            failure: attempt.as_ref().and_then(attempt_failure),
        })
    }
}
