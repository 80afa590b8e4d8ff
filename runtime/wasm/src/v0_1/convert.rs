//! The types of `agl:agent@0.1.0` to and from their 0.3.0 twins: field for field, except that a
//! 0.1.0 message has no tool calls (none going up; dropped coming down).

use super::agent::{llm as old_llm, resources as old_resources, trace as old_trace, types as old_types};
use super::algorithm::{adapter as old_adapter, store as old_store};
use crate::algorithm::bindings::{adapter as new_adapter, store as new_store};
use crate::bindings::{llm as new_llm, resources as new_resources, trace as new_trace, types as new_types};

use crate::older::Convert;

crate::older::convert_common_types!();

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
