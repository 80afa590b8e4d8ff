//! One naming rule for built components, whatever the guest's language: the component is named
//! after the guest's package — `[package] name` in `Cargo.toml` (Rust), `[project] name` in
//! `pyproject.toml` (Python), `"name"` in `package.json` (JavaScript) — else after its folder (C,
//! or a manifest without a name); lowercase, each run of other characters than `a`–`z` and `0`–`9`
//! as one `_`, none at either end (`math-agent`, `Math_Agent` and `@me/math agent` all give
//! `math_agent`, `me_math_agent` for the last). Rust's own artifact names follow the same rule,
//! so a crate's component keeps the name cargo gives it. The cache's file is
//! `<name>-<16 hex digits>.wasm`; runs and summaries show `<name>`.

use std::path::Path;

/// The name of the component built from the guest in `folder`, whose manifest names its
/// package `package` (if it does).
pub fn component_name(package: Option<&str>, folder: &Path) -> String {
    package
        .map(normalize)
        .filter(|name| !name.is_empty())
        .or_else(|| {
            folder
                .file_name()
                .map(|name| normalize(&name.to_string_lossy()))
                .filter(|name| !name.is_empty())
        })
        .unwrap_or_else(|| "guest".to_owned())
}

/// `raw` under the rule: lowercase ASCII letters and digits, each run of anything else as one `_`,
/// none at either end.
pub fn normalize(raw: &str) -> String {
    let mut name = String::with_capacity(raw.len());
    for c in raw.chars() {
        if c.is_ascii_alphanumeric() {
            name.push(c.to_ascii_lowercase());
        } else if !name.is_empty() && !name.ends_with('_') {
            name.push('_');
        }
    }
    while name.ends_with('_') {
        name.pop();
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_rule_for_every_language() {
        // The same agent named the way each language's manifests name things.
        for package in ["math-agent", "math_agent", "Math_Agent", "math agent", "-math--agent-"] {
            assert_eq!(
                component_name(Some(package), Path::new("/x/y")),
                "math_agent",
                "{package}"
            );
        }
        // An npm scope, a Python project with dots, non-ASCII letters.
        assert_eq!(normalize("@me/math-agent"), "me_math_agent");
        assert_eq!(normalize("calc.agent.py"), "calc_agent_py");
        assert_eq!(normalize("agënt"), "ag_nt");
        // No name, or one with nothing usable: the folder's, else `guest`.
        assert_eq!(component_name(None, Path::new("/x/probe-js")), "probe_js");
        assert_eq!(component_name(Some("---"), Path::new("/x/C Agent")), "c_agent");
        assert_eq!(component_name(None, Path::new("/")), "guest");
    }

    #[test]
    fn rust_components_keep_the_name_cargo_gives_them() {
        let manifest = "[package]\nname = \"math-agent\"\n[lib]\ncrate-type = [\"cdylib\"]\n";
        let names = crate::crate_names(manifest).expect("names");
        assert_eq!(component_name(Some(&names.package), Path::new("/x")), names.artifact);
    }
}
