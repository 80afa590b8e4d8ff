//! The SDK's error: a readable message that becomes the WIT `err(string)` of a failed attempt.
//! `From` conversions for the errors an agent meets (LLM, JSON, formatting, I/O, plain strings)
//! keep `?` short; the message is all the host ever sees, so make it say what went wrong.

use std::fmt;

use crate::LlmError;

/// `Result` with the SDK's [`Error`] as its default error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An agent failure: one message, reported to the host as the attempt's failure reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    message: String,
}

impl Error {
    /// An error saying `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Error {
            message: message.into(),
        }
    }

    /// The message the host will record.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The message, owned.
    pub fn into_message(self) -> String {
        self.message
    }

    /// Prefixes the message with what was being done: `context: message`.
    pub fn context(self, context: impl fmt::Display) -> Self {
        Error {
            message: format!("{context}: {}", self.message),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl LlmError {
    /// A readable sentence for this error (the generated `Display` only shows the variant).
    pub fn message(&self) -> String {
        match self {
            LlmError::ModelNotAllowed(model) => {
                format!("LLM call refused: model `{model}` is not allowed for this agent")
            }
            LlmError::BudgetExceeded(what) => format!("LLM budget of this attempt exceeded: {what}"),
            LlmError::Timeout => "LLM call timed out: the backend did not answer within the host's limit".to_string(),
            LlmError::InvalidRequest(why) => format!("invalid LLM request: {why}"),
            LlmError::Backend(why) => format!("LLM backend failed: {why}"),
        }
    }
}

impl From<LlmError> for Error {
    fn from(err: LlmError) -> Self {
        Error::new(err.message())
    }
}

impl From<serde_json::Error> for Error {
    fn from(err: serde_json::Error) -> Self {
        Error::new(format!("JSON error: {err}"))
    }
}

impl From<std::fmt::Error> for Error {
    fn from(_: std::fmt::Error) -> Self {
        Error::new("formatting failed")
    }
}

impl From<std::io::Error> for Error {
    fn from(err: std::io::Error) -> Self {
        Error::new(format!("I/O error: {err}"))
    }
}

impl From<String> for Error {
    fn from(message: String) -> Self {
        Error::new(message)
    }
}

impl From<&str> for Error {
    fn from(message: &str) -> Self {
        Error::new(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llm_errors_read_as_sentences() {
        let cases = [
            (
                LlmError::ModelNotAllowed("gpt-x".into()),
                "LLM call refused: model `gpt-x` is not allowed for this agent",
            ),
            (
                LlmError::BudgetExceeded("calls (10)".into()),
                "LLM budget of this attempt exceeded: calls (10)",
            ),
            (
                LlmError::InvalidRequest("no messages".into()),
                "invalid LLM request: no messages",
            ),
            (LlmError::Backend("HTTP 503".into()), "LLM backend failed: HTTP 503"),
        ];
        for (err, expected) in cases {
            assert_eq!(Error::from(err).message(), expected);
        }
        assert!(
            Error::from(LlmError::Timeout)
                .message()
                .starts_with("LLM call timed out")
        );
    }

    #[test]
    fn strings_json_and_fmt_errors_convert() {
        assert_eq!(Error::from("plain").to_string(), "plain");
        assert_eq!(Error::from(String::from("owned")).into_message(), "owned");
        assert_eq!(Error::from(std::fmt::Error).message(), "formatting failed");
        let json = serde_json::from_str::<u32>("\"x\"").unwrap_err();
        assert!(Error::from(json).message().starts_with("JSON error: invalid type"));
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "gone");
        assert_eq!(Error::from(io).message(), "I/O error: gone");
    }

    #[test]
    fn context_prefixes_the_message() {
        assert_eq!(
            Error::new("no such file").context("loading rubric").message(),
            "loading rubric: no such file"
        );
    }

    #[test]
    fn question_mark_converts() {
        fn fails() -> Result<()> {
            Err::<(), _>("early")?;
            Ok(())
        }
        assert_eq!(fails().unwrap_err().message(), "early");
    }
}
