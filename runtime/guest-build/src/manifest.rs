//! Reads what the build needs from a guest crate's `Cargo.toml`: its package name and the name of
//! the library artifact cargo writes (`[lib] name`, else the package name with `-` as `_`).
//! A small line reader for plain `name = "..."` keys, not a TOML parser: guest manifests are simple.

/// The names found in one manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrateNames {
    /// `[package] name`.
    pub package: String,
    /// The stem of the `.wasm` file: `[lib] name` if set, else `package` with `-` replaced by `_`.
    pub artifact: String,
}

/// Reads the package and artifact names from manifest text; `None` when `[package]` has no plain
/// `name = "..."`.
pub fn crate_names(manifest: &str) -> Option<CrateNames> {
    let mut table = String::new();
    let mut package = None;
    let mut lib = None;
    for raw in manifest.lines() {
        let line = strip_comment(raw).trim();
        if let Some(header) = line.strip_prefix('[') {
            table = header.trim_start_matches('[').trim_end_matches(']').trim().to_string();
            continue;
        }
        let Some(value) = key_value(line, "name") else { continue };
        match table.as_str() {
            "package" if package.is_none() => package = Some(value),
            "lib" if lib.is_none() => lib = Some(value),
            _ => {}
        }
    }
    let package = package?;
    let artifact = lib.unwrap_or_else(|| package.clone()).replace('-', "_");
    Some(CrateNames { package, artifact })
}

/// The string value of `key = "value"` (or `'value'`) on this line, if that is what the line says.
fn key_value(line: &str, key: &str) -> Option<String> {
    let (left, right) = line.split_once('=')?;
    if left.trim() != key {
        return None;
    }
    let right = right.trim();
    let quote = right.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let inner = &right[1..];
    let end = inner.find(quote)?;
    let value = &inner[..end];
    (!value.is_empty()).then(|| value.to_string())
}

/// The line without a trailing `# comment` (a `#` inside a quoted string is kept).
fn strip_comment(line: &str) -> &str {
    let mut quote = None;
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (None, '#') => return &line[..i],
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            _ => {}
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(manifest: &str) -> Option<(String, String)> {
        crate_names(manifest).map(|n| (n.package, n.artifact))
    }

    #[test]
    fn package_name_gives_the_artifact_with_underscores() {
        let manifest = "[package]\nname = \"math-agent\"\nversion = \"0.1.0\"\n\n[lib]\ncrate-type = [\"cdylib\"]\n";
        assert_eq!(names(manifest), Some(("math-agent".into(), "math_agent".into())));
    }

    #[test]
    fn lib_name_overrides_the_artifact() {
        let manifest = "[lib]\nname = \"custom-lib\"\n[package]\nname = \"pkg\"\n";
        assert_eq!(names(manifest), Some(("pkg".into(), "custom_lib".into())));
    }

    #[test]
    fn names_in_other_tables_are_ignored() {
        let manifest = "[[bin]]\nname = \"tool\"\n[package]\nname = \"real\"\n[package.metadata.x]\nname = \"meta\"\n\
                        [dependencies]\nname = \"dep\"\n";
        assert_eq!(names(manifest), Some(("real".into(), "real".into())));
    }

    #[test]
    fn spacing_quotes_and_comments_are_tolerated() {
        let manifest = "# a guest\n[ package ]   # the package\n  name='probe'   # its name\n";
        assert_eq!(names(manifest), Some(("probe".into(), "probe".into())));
        assert_eq!(
            names("[package]\nname = \"has#hash\" # c\n"),
            Some(("has#hash".into(), "has#hash".into()))
        );
    }

    #[test]
    fn similar_keys_are_not_the_name() {
        let manifest = "[package]\nname-suffix = \"x\"\nnames = \"y\"\nname = \"z\"\n";
        assert_eq!(names(manifest), Some(("z".into(), "z".into())));
    }

    #[test]
    fn no_plain_package_name_is_none() {
        assert_eq!(names("[workspace]\n"), None);
        assert_eq!(names("[package]\nname.workspace = true\n"), None);
        assert_eq!(names("[package]\nname = \"\"\n"), None);
        assert_eq!(names("[lib]\nname = \"only-lib\"\n"), None);
    }
}
