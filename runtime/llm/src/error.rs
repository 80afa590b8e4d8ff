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
    without_user_info(&text)
}

/// `text` with the user info (`user:key@`) of every URL in it replaced by `***` (an HTTP
/// client's error names the URL it was sending to, key and all).
pub(crate) fn without_user_info(text: &str) -> String {
    let mut shown = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (before, after) = rest.split_at(at + 3);
        shown.push_str(before);
        let end = after
            .find(|c: char| matches!(c, '/' | '?' | '#') || c.is_whitespace() || c == ')')
            .unwrap_or(after.len());
        match after[..end].rfind('@') {
            Some(user) => {
                shown.push_str("***");
                shown.push_str(&after[user..end]);
            }
            None => shown.push_str(&after[..end]),
        }
        rest = &after[end..];
    }
    shown.push_str(rest);
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_user_info() {
        assert_eq!(
            without_user_info("error sending request for url (http://u:KEY@h:1/v1/chat/completions): refused"),
            "error sending request for url (http://***@h:1/v1/chat/completions): refused"
        );
        assert_eq!(
            without_user_info("a@b http://h/x@y and https://k@h"),
            "a@b http://h/x@y and https://***@h"
        );
        assert_eq!(without_user_info("no url"), "no url");
    }

    #[test]
    fn excerpt_cuts_on_char_boundaries_and_collapses_whitespace() {
        assert_eq!(excerpt("a  b\n c", 10), "a b c");
        assert_eq!(excerpt("ééééé", 3), "ééé...");
        assert_eq!(excerpt("", 3), "");
    }
}
