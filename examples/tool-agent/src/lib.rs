//! Example agent with a tool: it offers the model `lookup_capital`, runs each call the model makes
//! by asking a lookup service over HTTP (`ctx.http()`: the sandbox must grant the service's
//! host), sends the answers back as `tool` messages, and grades the model's final reply: 1.0 when
//! it names the expected answer. Each tool call is an operation span holding its HTTP request's
//! span, so the trace reads llm → tool (http) → llm → reward.
//!
//! The service's base URL is the `LOOKUP_URL` environment variable (grant it with
//! `--agent-env LOOKUP_URL=...`), `http://127.0.0.1:8765` (what `service.py` serves) otherwise.

use agl_sdk::prelude::*;
use serde::Deserialize;

const DEFAULT_SERVICE: &str = "http://127.0.0.1:8765";

/// Used when the rollout's resources have no `prompt` template.
const FALLBACK_PROMPT: &str =
    "Answer the question in one sentence. Look facts up with your tools.\nQuestion: {question}";

/// Tool rounds one rollout may take before the agent gives up on the model.
const MAX_TOOL_ROUNDS: usize = 4;

/// One line of `data/train.jsonl`.
#[derive(Deserialize)]
struct Task {
    question: String,
    answer: String,
}

/// The arguments of `lookup_capital`, as the model writes them.
#[derive(Deserialize)]
struct LookupArgs {
    country: String,
}

fn lookup_tool() -> Tool {
    Tool::new(
        "lookup_capital",
        "The capital city of a country.",
        r#"{"type":"object","properties":{"country":{"type":"string"}},"required":["country"]}"#,
    )
}

fn rollout(task: Task, ctx: &Ctx) -> Result<Option<f64>> {
    let service = std::env::var("LOOKUP_URL").unwrap_or_else(|_| DEFAULT_SERVICE.to_string());
    let prompt = ctx
        .prompt_or("prompt", FALLBACK_PROMPT)?
        .format(&[("question", task.question.as_str())])?;
    let mut request = ChatRequest::user(prompt).with_tool(lookup_tool());
    let mut reply = ctx.llm().chat(request.clone())?;
    let mut rounds = 0;
    while reply.wants_tools() {
        rounds += 1;
        if rounds > MAX_TOOL_ROUNDS {
            return Err(Error::new(format!(
                "the model still calls tools after {MAX_TOOL_ROUNDS} rounds"
            )));
        }
        request = request.with_reply(&reply);
        for call in &reply.tool_calls {
            let result = ctx.operation(&format!("tool:{}", call.name), || Ok(run_tool(ctx, &service, call)))?;
            ctx.info(&format!("{}({}) -> {result}", call.name, call.arguments_json));
            request = request.with_tool_result(&call.id, result);
        }
        reply = ctx.llm().chat(request.clone())?;
    }
    let correct = reply.content.to_lowercase().contains(&task.answer.to_lowercase());
    Ok(Some(if correct { 1.0 } else { 0.0 }))
}

/// Runs one tool call; what it returns (or why it failed, as `error: ...`) goes back to the model.
fn run_tool(ctx: &Ctx, service: &str, call: &ToolCall) -> String {
    if call.name != "lookup_capital" {
        return format!("error: there is no tool called {}", call.name);
    }
    let args: LookupArgs = match call.arguments() {
        Ok(args) => args,
        Err(e) => return format!("error: the arguments are not {{\"country\": string}}: {e}"),
    };
    let url = format!("{service}/capital?country={}", query_value(&args.country));
    match ctx.http().get(&url) {
        Ok(response) if response.is_success() => match response.text() {
            Ok(text) => text.to_string(),
            Err(e) => format!("error: {e}"),
        },
        Ok(response) => format!(
            "error: the lookup service answered {}: {}",
            response.status,
            String::from_utf8_lossy(&response.body)
        ),
        Err(e) => format!("error: {e}"),
    }
}

/// `text` percent-encoded for a URL query value.
fn query_value(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

agl_sdk::export_agent!(rollout);

#[cfg(test)]
mod tests {
    use super::query_value;

    #[test]
    fn query_values_are_percent_encoded() {
        assert_eq!(query_value("France"), "France");
        assert_eq!(query_value("New Zealand"), "New%20Zealand");
        assert_eq!(query_value("Côte d'Ivoire&x=1"), "C%C3%B4te%20d%27Ivoire%26x%3D1");
    }
}
