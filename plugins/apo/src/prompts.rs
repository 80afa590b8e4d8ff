//! APO's meta-prompts, compiled in from `plugins/apo/prompts/` (overridable by config).

/// Critique variants: one is drawn per critique, so the textual gradients differ in focus.
pub const CRITIQUES: [&str; 3] = [
    include_str!("../prompts/critique-failures.md"),
    include_str!("../prompts/critique-contrast.md"),
    include_str!("../prompts/critique-format.md"),
];

/// Turns a template and a critique into a new template.
pub const APPLY_EDIT: &str = include_str!("../prompts/apply-edit.md");
