//! What a rollout's spans say, without parsing them: the [`Host`] methods of the WIT `adapter`
//! interface (Agent-lightning's adapters, run by the host). `attempt_id: None` means the rollout's
//! latest attempt.

use crate::bindings::agl::agent::adapter as wit;
use crate::{Error, Host, Message, Result, TaskView, Triplet};

fn adapter_error(call: &str) -> impl FnOnce(String) -> Error + '_ {
    move |why| Error::new(format!("adapter.{call}: {why}"))
}

impl Host {
    /// The final reward of the attempt: its last primary reward, if any (`None` for an attempt
    /// that emitted none, e.g. one that failed first).
    pub fn final_reward(&self, rollout_id: &str, attempt_id: Option<&str>) -> Result<Option<f64>> {
        wit::final_reward(rollout_id, attempt_id).map_err(adapter_error("final-reward"))
    }

    /// The attempt's LLM calls, in order, as (prompt, response, reward) triplets; the final reward
    /// is credited to the last call.
    pub fn triplets(&self, rollout_id: &str, attempt_id: Option<&str>) -> Result<Vec<Triplet>> {
        wit::triplets(rollout_id, attempt_id).map_err(adapter_error("triplets"))
    }

    /// The conversation of each of the attempt's LLM calls: its prompt messages followed by the
    /// assistant's answer, one list per call, in order.
    pub fn messages(&self, rollout_id: &str, attempt_id: Option<&str>) -> Result<Vec<Vec<Message>>> {
        wit::messages(rollout_id, attempt_id).map_err(adapter_error("messages"))
    }

    /// One attempt of a task as an algorithm that learns from text (GEPA) reads it: its input,
    /// output (the last LLM answer), final reward, the agent's feedback texts (`ctx.feedback`) and
    /// its LLM transcript, with the failure reason when it failed.
    pub fn task(&self, rollout_id: &str, attempt_id: Option<&str>) -> Result<TaskView> {
        wit::task(rollout_id, attempt_id).map_err(adapter_error("task"))
    }
}
