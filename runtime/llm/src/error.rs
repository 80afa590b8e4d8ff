//! The one error type of this crate, [`LlmError`], and the helper that shortens server or user
//! text for inclusion in error messages.

/// Why a chat call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// The request itself is wrong: a 4xx other than 408/429, a malformed request or
    /// configuration, or (scripted backend) no rule matched. Retrying will not help.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The backend failed: 5xx/429/network errors once retries are spent, an unparsable answer.
    #[error("LLM backend error: {0}")]
    Backend(String),
    /// The call took longer than the configured timeout.
    #[error("LLM call timed out")]
    Timeout,
}

/// At most `max_chars` characters of `text` (whitespace runs collapsed), with `...` when cut.
pub(crate) fn excerpt(text: &str, max_chars: usize) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match collapsed.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}...", &collapsed[..cut]),
        None => collapsed,
    }
}

/// An error and its sources, `outer: inner: root` (reqwest's own message hides the cause).
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpt_cuts_on_char_boundaries_and_collapses_whitespace() {
        assert_eq!(excerpt("a  b\n c", 10), "a b c");
        assert_eq!(excerpt("ééééé", 3), "ééé...");
        assert_eq!(excerpt("", 3), "");
    }
}
