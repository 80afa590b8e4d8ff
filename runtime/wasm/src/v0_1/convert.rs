//! The types of `agl:agent@0.1.0` to and from their 0.3.0 twins: field for field, except that a
//! 0.1.0 message has no tool calls (none going up; dropped coming down).

use super::agent::{llm as old_llm, resources as old_resources, trace as old_trace, types as old_types};
use super::algorithm::{adapter as old_adapter, store as old_store};
use crate::algorithm::bindings::{adapter as new_adapter, store as new_store};
use crate::bindings::{llm as new_llm, resources as new_resources, trace as new_trace, types as new_types};

/// A conversion between the two versions of one WIT type (`From` cannot be used for `Vec` and
/// `Option` of generated types: both are foreign).
pub(super) trait Convert<T> {
    fn convert(self) -> T;
}

impl<A: Convert<B>, B> Convert<Vec<B>> for Vec<A> {
    fn convert(self) -> Vec<B> {
        self.into_iter().map(Convert::convert).collect()
    }
}

impl<A: Convert<B>, B> Convert<Option<B>> for Option<A> {
    fn convert(self) -> Option<B> {
        self.map(Convert::convert)
    }
}

/// Enums and variants without payloads: the same case names on both sides.
macro_rules! same_cases {
    ($from:ident :: $ty:ident => $to:ident, $($case:ident),+) => {
        impl Convert<$to::$ty> for $from::$ty {
            fn convert(self) -> $to::$ty {
                match self {
                    $($from::$ty::$case => $to::$ty::$case),+
                }
            }
        }
    };
}

same_cases!(old_types::Mode => new_types, Train, Val, Test);
same_cases!(new_types::Mode => old_types, Train, Val, Test);
same_cases!(old_llm::Role => new_llm, System, User, Assistant, Tool);
same_cases!(new_llm::Role => old_llm, System, User, Assistant, Tool);
same_cases!(old_trace::Level => new_trace, Trace, Debug, Info, Warn, Error);
same_cases!(old_store::RolloutStatus => new_store, Queuing, Preparing, Running, Failed, Succeeded, Cancelled, Requeuing);
same_cases!(new_store::RolloutStatus => old_store, Queuing, Preparing, Running, Failed, Succeeded, Cancelled, Requeuing);

impl Convert<new_llm::Message> for old_llm::Message {
    fn convert(self) -> new_llm::Message {
        new_llm::Message {
            role: self.role.convert(),
            content: self.content,
            tool_call_id: self.tool_call_id,
            tool_calls: Vec::new(),
        }
    }
}

impl Convert<old_llm::Message> for new_llm::Message {
    fn convert(self) -> old_llm::Message {
        old_llm::Message {
            role: self.role.convert(),
            content: self.content,
            tool_call_id: self.tool_call_id,
        }
    }
}

impl Convert<new_llm::Tool> for old_llm::Tool {
    fn convert(self) -> new_llm::Tool {
        new_llm::Tool {
            name: self.name,
            description: self.description,
            parameters_json: self.parameters_json,
        }
    }
}

impl Convert<new_llm::ChatRequest> for old_llm::ChatRequest {
    fn convert(self) -> new_llm::ChatRequest {
        new_llm::ChatRequest {
            messages: self.messages.convert(),
            model: self.model,
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            stop: self.stop,
            tools: self.tools.convert(),
        }
    }
}

impl Convert<old_llm::ToolCall> for new_llm::ToolCall {
    fn convert(self) -> old_llm::ToolCall {
        old_llm::ToolCall {
            id: self.id,
            name: self.name,
            arguments_json: self.arguments_json,
        }
    }
}

impl Convert<old_llm::ChatResponse> for new_llm::ChatResponse {
    fn convert(self) -> old_llm::ChatResponse {
        old_llm::ChatResponse {
            content: self.content,
            tool_calls: self.tool_calls.convert(),
            finish_reason: self.finish_reason,
            usage: old_llm::Usage {
                input_tokens: self.usage.input_tokens,
                output_tokens: self.usage.output_tokens,
            },
            model: self.model,
        }
    }
}

impl Convert<old_llm::LlmError> for new_llm::LlmError {
    fn convert(self) -> old_llm::LlmError {
        match self {
            new_llm::LlmError::ModelNotAllowed(m) => old_llm::LlmError::ModelNotAllowed(m),
            new_llm::LlmError::BudgetExceeded(m) => old_llm::LlmError::BudgetExceeded(m),
            new_llm::LlmError::Timeout => old_llm::LlmError::Timeout,
            new_llm::LlmError::InvalidRequest(m) => old_llm::LlmError::InvalidRequest(m),
            new_llm::LlmError::Backend(m) => old_llm::LlmError::Backend(m),
        }
    }
}

impl Convert<old_resources::LlmEndpoint> for new_resources::LlmEndpoint {
    fn convert(self) -> old_resources::LlmEndpoint {
        old_resources::LlmEndpoint {
            endpoint: self.endpoint,
            model: self.model,
            sampling_parameters_json: self.sampling_parameters_json,
        }
    }
}

impl Convert<old_resources::Resource> for new_resources::Resource {
    fn convert(self) -> old_resources::Resource {
        match self {
            new_resources::Resource::PromptTemplate(t) => {
                old_resources::Resource::PromptTemplate(old_resources::PromptTemplate {
                    template: t.template,
                    engine: t.engine,
                })
            }
            new_resources::Resource::Llm(e) => old_resources::Resource::Llm(e.convert()),
            new_resources::Resource::ProxyLlm(e) => old_resources::Resource::ProxyLlm(e.convert()),
        }
    }
}

impl Convert<new_store::NewRollout> for old_store::NewRollout {
    fn convert(self) -> new_store::NewRollout {
        new_store::NewRollout {
            input_json: self.input_json,
            mode: self.mode.convert(),
            resources_id: self.resources_id,
            config_json: self.config_json,
            metadata_json: self.metadata_json,
        }
    }
}

impl Convert<old_store::Rollout> for new_store::Rollout {
    fn convert(self) -> old_store::Rollout {
        old_store::Rollout {
            rollout_id: self.rollout_id,
            input_json: self.input_json,
            mode: self.mode.convert(),
            resources_id: self.resources_id,
            status: self.status.convert(),
            attempts: self.attempts,
            failure: self.failure,
            start_time: self.start_time,
            end_time: self.end_time,
        }
    }
}

impl Convert<old_store::ResourcesVersion> for new_store::ResourcesVersion {
    fn convert(self) -> old_store::ResourcesVersion {
        old_store::ResourcesVersion {
            resources_id: self.resources_id,
            resources_json: self.resources_json,
        }
    }
}

impl Convert<old_adapter::Triplet> for new_adapter::Triplet {
    fn convert(self) -> old_adapter::Triplet {
        old_adapter::Triplet {
            prompt: self.prompt.convert(),
            response: self.response,
            reward: self.reward,
            model: self.model,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_keeps_its_fields_across_versions_and_tool_calls_drop_going_down() {
        let old = old_llm::Message {
            role: old_llm::Role::Tool,
            content: "42".into(),
            tool_call_id: Some("call-1".into()),
        };
        let new: new_llm::Message = old.convert();
        assert_eq!(new.role, new_llm::Role::Tool);
        assert_eq!(
            (new.content.as_str(), new.tool_call_id.as_deref()),
            ("42", Some("call-1"))
        );
        assert!(new.tool_calls.is_empty());
        let with_calls = new_llm::Message {
            role: new_llm::Role::Assistant,
            content: String::new(),
            tool_call_id: None,
            tool_calls: vec![new_llm::ToolCall {
                id: "c".into(),
                name: "add".into(),
                arguments_json: "{}".into(),
            }],
        };
        let down: old_llm::Message = with_calls.convert();
        assert_eq!(down.role, old_llm::Role::Assistant);
        assert!(down.content.is_empty());
    }

    #[test]
    fn statuses_and_modes_map_case_for_case() {
        let statuses = [
            new_store::RolloutStatus::Queuing,
            new_store::RolloutStatus::Requeuing,
            new_store::RolloutStatus::Cancelled,
        ];
        let names: Vec<String> = statuses
            .into_iter()
            .map(|s| format!("{:?}", Convert::<old_store::RolloutStatus>::convert(s)))
            .collect();
        assert_eq!(
            names,
            [
                "RolloutStatus::Queuing",
                "RolloutStatus::Requeuing",
                "RolloutStatus::Cancelled"
            ]
        );
        let mode: new_types::Mode = old_types::Mode::Val.convert();
        assert_eq!(mode, new_types::Mode::Val);
    }
}
