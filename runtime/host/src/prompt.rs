//! Prompt templates: f-string style `{name}` placeholders, `{{` and `}}` for literal braces.
//! Used by `resources.format-prompt`; other engines (jinja, poml) are refused with a clear error.

/// The placeholder names of a template, in order of first appearance.
pub fn placeholders(template: &str) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    for piece in parse(template)? {
        if let Piece::Field(name) = piece
            && !names.iter().any(|n| n == name)
        {
            names.push(name.to_owned());
        }
    }
    Ok(names)
}

/// Fills every placeholder from `vars`; a placeholder without a value is an error.
pub fn format(template: &str, vars: &[(String, String)]) -> Result<String, String> {
    let mut out = String::with_capacity(template.len() + 64);
    for piece in parse(template)? {
        match piece {
            Piece::Text(text) => out.push_str(text),
            Piece::Field(name) => {
                let value = vars
                    .iter()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v)
                    .ok_or_else(|| format!("no value for placeholder {{{name}}}"))?;
                out.push_str(value);
            }
        }
    }
    Ok(out)
}

enum Piece<'a> {
    Text(&'a str),
    Field(&'a str),
}

fn parse(template: &str) -> Result<Vec<Piece<'_>>, String> {
    let mut pieces = Vec::new();
    let mut rest = template;
    while let Some(i) = rest.find(['{', '}']) {
        let (before, from) = rest.split_at(i);
        if !before.is_empty() {
            pieces.push(Piece::Text(before));
        }
        if let Some(after) = from.strip_prefix("{{") {
            pieces.push(Piece::Text("{"));
            rest = after;
        } else if let Some(after) = from.strip_prefix("}}") {
            pieces.push(Piece::Text("}"));
            rest = after;
        } else if from.starts_with('}') {
            return Err("single '}' in template (write '}}' for a literal brace)".into());
        } else {
            let end = from.find('}').ok_or("unclosed '{' in template")?;
            let name = from[1..end].trim();
            if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
                return Err(format!("bad placeholder '{}' in template", &from[..=end]));
            }
            pieces.push(Piece::Field(name));
            rest = &from[end + 1..];
        }
    }
    if !rest.is_empty() {
        pieces.push(Piece::Text(rest));
    }
    Ok(pieces)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn fills_placeholders_and_keeps_escaped_braces() {
        let out = format("Q: {question} {{json}} {question}", &vars(&[("question", "2+2?")])).unwrap();
        assert_eq!(out, "Q: 2+2? {json} 2+2?");
        assert_eq!(placeholders("{a} {b} {a}").unwrap(), vec!["a", "b"]);
    }

    #[test]
    fn reports_missing_values_and_malformed_templates() {
        assert!(format("{x}", &[]).unwrap_err().contains("{x}"));
        assert!(format("{x", &[]).is_err());
        assert!(format("x}", &[]).is_err());
        assert!(format("{a b}", &[]).is_err());
    }
}
