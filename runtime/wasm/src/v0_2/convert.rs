//! The types of `agl:agent@0.2.0` to and from their 0.3.0 twins: field for field (0.3.0 changed
//! no type the two share; it added functions and one record only 0.3.0 has).

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
            tool_calls: self.tool_calls.convert(),
        }
    }
}

impl Convert<old_llm::Message> for new_llm::Message {
    fn convert(self) -> old_llm::Message {
        old_llm::Message {
            role: self.role.convert(),
            content: self.content,
            tool_call_id: self.tool_call_id,
            tool_calls: self.tool_calls.convert(),
        }
    }
}

impl Convert<new_llm::ToolCall> for old_llm::ToolCall {
    fn convert(self) -> new_llm::ToolCall {
        new_llm::ToolCall {
            id: self.id,
            name: self.name,
            arguments_json: self.arguments_json,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_keeps_its_tool_calls_both_ways() {
        let old = old_llm::Message {
            role: old_llm::Role::Assistant,
            content: String::new(),
            tool_call_id: None,
            tool_calls: vec![old_llm::ToolCall {
                id: "c".into(),
                name: "add".into(),
                arguments_json: "{}".into(),
            }],
        };
        let new: new_llm::Message = old.convert();
        assert_eq!(new.role, new_llm::Role::Assistant);
        assert_eq!(
            (new.tool_calls[0].id.as_str(), new.tool_calls[0].name.as_str()),
            ("c", "add")
        );
        let back: old_llm::Message = new.convert();
        assert_eq!(back.tool_calls.len(), 1);
        assert_eq!(back.tool_calls[0].arguments_json, "{}");
    }

    #[test]
    fn statuses_and_modes_map_case_for_case() {
        let status: old_store::RolloutStatus = new_store::RolloutStatus::Requeuing.convert();
        assert_eq!(format!("{status:?}"), "RolloutStatus::Requeuing");
        let mode: new_types::Mode = old_types::Mode::Val.convert();
        assert_eq!(mode, new_types::Mode::Val);
    }
}
