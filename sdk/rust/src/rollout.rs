//! The glue between the WIT export and the agent function: parse the task JSON into the function's
//! task type, build the [`Ctx`], call the function, and map its result onto the WIT
//! `result<option<f64>, string>`. [`export_agent!`](crate::export_agent) expands to a call of
//! [`run_rollout`].

use std::fmt::Display;

use serde::de::DeserializeOwned;

use crate::{Ctx, RolloutContext};

/// What an agent function may return on success: the rollout's final reward, if any.
///
/// `Option<f64>` is the WIT's own shape; `f64` means `Some(value)`, and `()` means "no final reward"
/// (rewards emitted with [`Ctx::reward`] count).
pub trait FinalReward {
    /// The final reward the host records, or `None` to leave it to emitted rewards.
    fn final_reward(self) -> Option<f64>;
}

impl FinalReward for Option<f64> {
    fn final_reward(self) -> Option<f64> {
        self
    }
}

impl FinalReward for f64 {
    fn final_reward(self) -> Option<f64> {
        Some(self)
    }
}

impl FinalReward for () {
    fn final_reward(self) -> Option<f64> {
        None
    }
}

/// Runs the agent function `rollout` on one attempt; what the exported `rollout` returns.
pub fn run_rollout<T, R, E, F>(context: RolloutContext, task_json: &str, rollout: F) -> Result<Option<f64>, String>
where
    T: DeserializeOwned,
    R: FinalReward,
    E: Display,
    F: FnOnce(T, &Ctx) -> Result<R, E>,
{
    let task = parse_task::<T>(task_json)?;
    let ctx = Ctx::new(context);
    rollout(task, &ctx)
        .map(FinalReward::final_reward)
        .map_err(|err| err.to_string())
}

/// Parses the rollout's input into the agent's task type, naming the type when it does not fit.
pub(crate) fn parse_task<T: DeserializeOwned>(task_json: &str) -> Result<T, String> {
    serde_json::from_str(task_json).map_err(|err| format!("task does not match {}: {err}", std::any::type_name::<T>()))
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;
    use crate::{Error, Mode};

    #[derive(Debug, Deserialize, PartialEq)]
    struct Task {
        question: String,
        answer: String,
    }

    fn context() -> RolloutContext {
        RolloutContext {
            rollout_id: "ro-1".into(),
            attempt_id: "at-1".into(),
            attempt_number: 1,
            mode: Some(Mode::Train),
            resources_id: None,
        }
    }

    #[test]
    fn a_matching_task_is_parsed() {
        let task: Task = parse_task(r#"{"question": "1+1?", "answer": "2", "extra": true}"#).unwrap();
        assert_eq!(
            task,
            Task {
                question: "1+1?".into(),
                answer: "2".into()
            }
        );
    }

    #[test]
    fn a_mismatch_names_the_type_and_the_field() {
        let err = parse_task::<Task>(r#"{"question": "1+1?"}"#).unwrap_err();
        assert!(
            err.starts_with("task does not match agl_sdk::rollout::tests::Task: missing field `answer`"),
            "{err}"
        );
        let err = parse_task::<Task>("not json").unwrap_err();
        assert!(err.starts_with("task does not match"), "{err}");
    }

    #[test]
    fn the_function_sees_the_task_and_the_context() {
        let result = run_rollout(
            context(),
            r#"{"question": "q", "answer": "a"}"#,
            |task: Task, ctx: &Ctx| {
                assert_eq!(ctx.rollout_id(), "ro-1");
                Ok::<_, Error>(if task.answer == "a" { Some(1.0) } else { Some(0.0) })
            },
        );
        assert_eq!(result, Ok(Some(1.0)));
    }

    #[test]
    fn errors_become_the_wit_err_string() {
        let result = run_rollout(context(), r#"{"question": "q", "answer": "a"}"#, |_: Task, _: &Ctx| {
            Err::<Option<f64>, _>(Error::new("model refused"))
        });
        assert_eq!(result, Err("model refused".to_string()));
    }

    #[test]
    fn a_bad_task_never_reaches_the_function() {
        let result = run_rollout(context(), "[]", |_: Task, _: &Ctx| -> Result<f64, Error> {
            panic!("must not be called")
        });
        assert!(result.unwrap_err().starts_with("task does not match"));
    }

    #[test]
    fn plain_and_unit_rewards_are_accepted() {
        let plain = run_rollout(context(), "{}", |_: serde_json::Value, _: &Ctx| Ok::<_, Error>(0.5));
        assert_eq!(plain, Ok(Some(0.5)));
        let unit = run_rollout(context(), "null", |_: serde_json::Value, _: &Ctx| Ok::<_, String>(()));
        assert_eq!(unit, Ok(None));
    }
}
