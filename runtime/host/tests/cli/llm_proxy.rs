//! The LLM proxy of `agl-host store --llm-proxy`, end to end: the real binary in front of a real
//! OpenAI-compatible server on loopback (`agl_testkit::llm_server::serve`, which also streams), driven over HTTP.
//! One test per row: a call under an attempt lands as an LLM span of that attempt (and only
//! there); a stream is passed on event by event and recorded as one span; the store's token is
//! required and the upstream's key never leaves the host; errors keep their status in OpenAI's
//! shape; retries, pausing, token ids, model swaps through resources and pinning by rollout.

use crate::support;

use agl_llm::ScriptedBackend;
use agl_testkit::llm_server::{Fault, Faults, ServerHandle};
use reqwest::blocking::{Client, Response};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::ServerProcess;

/// An OpenAI-compatible server answering from `rules` (a scripted backend), misbehaving as
/// `faults` says, on a runtime of its own.
struct Llm {
    runtime: tokio::runtime::Runtime,
    server: Option<ServerHandle>,
}

const ECHO_RULES: &str = r#"{"model": "m", "rules": [
    {"when": [{"role": "user", "matches": "^say (.*)$"}], "reply": "{1}", "usage": {"input_tokens": 7, "output_tokens": 3}}
], "fallback": {"reply": "ok"}}"#;

impl Llm {
    fn serve(faults: Faults) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let answers = ScriptedBackend::from_json_str(ECHO_RULES).expect("rules");
        let server = runtime
            .block_on(agl_testkit::llm_server::serve_with_faults(
                Arc::new(answers),
                "127.0.0.1:0".parse().expect("address"),
                faults,
            ))
            .expect("the LLM serves");
        Self {
            runtime,
            server: Some(server),
        }
    }

    fn handle(&self) -> &ServerHandle {
        self.server.as_ref().expect("serving")
    }

    fn url(&self) -> String {
        self.handle().base_url()
    }
}

impl Drop for Llm {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            self.runtime.block_on(server.shutdown());
        }
    }
}

/// `agl-host store --llm-proxy --llm-endpoint LLM --llm-model m EXTRA...`.
fn proxy_store(llm: &Llm, extra: &[&str]) -> ServerProcess {
    let url = llm.url();
    let mut args = vec!["--llm-proxy", "--llm-endpoint", url.as_str(), "--llm-model", "m"];
    args.extend_from_slice(extra);
    ServerProcess::agl_host_store(&args)
}

/// A client of the store and its proxy, with the store's token when it has one.
struct Api {
    client: Client,
    url: String,
    token: Option<String>,
}

impl Api {
    fn new(server: &ServerProcess, token: Option<&str>) -> Self {
        Api {
            client: Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .expect("client"),
            url: server.url.clone(),
            token: token.map(str::to_owned),
        }
    }

    fn post(&self, path: &str, body: &Value) -> Response {
        let mut request = self.client.post(format!("{}{path}", self.url)).json(body);
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        request.send().expect("the store answers")
    }

    fn get(&self, path: &str) -> Response {
        let mut request = self.client.get(format!("{}{path}", self.url));
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        request.send().expect("the store answers")
    }

    /// A running rollout (through the store's API): its id and its attempt's.
    fn start_rollout(&self, mode: &str, resources_id: Option<&str>) -> (String, String) {
        let mut body = json!({"input": {"task": 1}, "mode": mode});
        if let Some(id) = resources_id {
            body["resources_id"] = json!(id);
        }
        let started: Value = self
            .post("/v1/agl/rollouts", &body)
            .json()
            .expect("an attempted rollout");
        let rollout = started["rollout_id"].as_str().expect("rollout_id").to_owned();
        let attempt = started["attempt"]["attempt_id"]
            .as_str()
            .expect("attempt_id")
            .to_owned();
        (rollout, attempt)
    }

    fn spans(&self, rollout_id: &str) -> Vec<Value> {
        let page: Value = self
            .get(&format!("/v1/agl/spans?rollout_id={rollout_id}"))
            .json()
            .expect("a page of spans");
        page["items"].as_array().cloned().unwrap_or_default()
    }

    /// `/rollout/R/attempt/A/v1/chat/completions` with one user message.
    fn chat(&self, rollout_id: &str, attempt_id: &str, text: &str) -> Response {
        self.post(
            &format!("/rollout/{rollout_id}/attempt/{attempt_id}/v1/chat/completions"),
            &json!({"model": "m", "messages": [{"role": "user", "content": text}]}),
        )
    }
}

fn ok_json(response: Response) -> Value {
    let status = response.status();
    let text = response.text().expect("a body");
    assert!(status.is_success(), "HTTP {status}: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

fn error_of(response: Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let text = response.text().expect("a body");
    (
        status,
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}")),
    )
}

#[test]
fn a_call_under_an_attempt_is_recorded_as_an_llm_span_of_that_attempt() {
    let llm = Llm::serve(Faults::default());
    let store = proxy_store(&llm, &[]);
    let api = Api::new(&store, None);
    let (r1, a1) = api.start_rollout("train", None);
    let (r2, a2) = api.start_rollout("val", None);

    let answer = ok_json(api.chat(&r1, &a1, "say hello"));
    assert_eq!(answer["choices"][0]["message"]["content"], "hello");
    assert_eq!(answer["usage"]["prompt_tokens"], 7);
    ok_json(api.chat(&r2, &a2, "say bye"));
    // Outside any attempt, on a store without a token: refused (the host's key, no record).
    let (status, body) = error_of(api.post(
        "/v1/chat/completions",
        &json!({"messages": [{"role": "user", "content": "say plain"}]}),
    ));
    assert_eq!(
        (status, body["error"]["type"].as_str()),
        (403, Some("permission_error")),
        "{body}"
    );
    assert!(
        body["error"]["message"].as_str().is_some_and(|m| m.contains("--token")),
        "{body}"
    );
    assert_eq!(error_of(api.get("/v1/models")).0, 403);

    for (rollout, attempt, text, mode) in [(&r1, &a1, "hello", "train"), (&r2, &a2, "bye", "val")] {
        let spans = api.spans(rollout);
        assert_eq!(spans.len(), 1, "one span per call, on its own rollout: {spans:?}");
        let span = &spans[0];
        assert_eq!(span["name"], "openai.chat.completion");
        assert_eq!(span["attempt_id"], attempt.as_str());
        assert_eq!(span["status"]["status_code"], "OK");
        let attributes = &span["attributes"];
        assert_eq!(attributes["gen_ai.request.model"], "m");
        assert_eq!(attributes["gen_ai.prompt.0.role"], "user");
        assert_eq!(attributes["gen_ai.prompt.0.content"], format!("say {text}"));
        assert_eq!(attributes["gen_ai.completion.0.content"], text);
        assert_eq!(attributes["gen_ai.usage.input_tokens"], 7);
        assert_eq!(attributes["gen_ai.usage.output_tokens"], 3);
        assert_eq!(attributes["agl.llm.proxy.mode"], mode);
        assert_eq!(attributes["agl.llm.proxy.stream"], false);
        assert!(
            attributes["gen_ai.response.id"]
                .as_str()
                .is_some_and(|id| !id.is_empty()),
            "{attributes}"
        );
    }
    // Agent-lightning 1.0's spelling of the route, with the mode in it.
    let (r3, a3) = api.start_rollout("train", None);
    ok_json(api.post(
        &format!("/proxy/rollout/{r3}/attempt/{a3}/mode/val/openai/v1/chat/completions"),
        &json!({"messages": [{"role": "user", "content": "say one"}]}),
    ));
    let spans = api.spans(&r3);
    assert_eq!(spans[0]["attributes"]["agl.llm.proxy.mode"], "val");
    assert_eq!(spans[0]["attributes"]["gen_ai.completion.0.content"], "one");
}

/// The `data:` payloads of a server-sent-events body, each with when it arrived.
fn read_events(response: Response) -> Vec<(Instant, String)> {
    let mut events = Vec::new();
    for line in BufReader::new(response).lines() {
        let line = line.expect("a line of the stream");
        if let Some(data) = line.strip_prefix("data: ") {
            events.push((Instant::now(), data.to_owned()));
        }
    }
    events
}

#[test]
fn a_stream_is_passed_on_event_by_event_and_recorded_as_one_span() {
    let gap = Duration::from_millis(150);
    let llm = Llm::serve(Faults::default().with_stream_gap(gap));
    let store = proxy_store(&llm, &[]);
    let api = Api::new(&store, None);
    let (rollout, attempt) = api.start_rollout("train", None);

    let response = api.post(
        &format!("/rollout/{rollout}/attempt/{attempt}/v1/chat/completions"),
        &json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "say one two three four"}]}),
    );
    assert_eq!(response.status().as_u16(), 200);
    assert!(
        response
            .headers()
            .get("content-type")
            .is_some_and(|v| v.to_str().unwrap_or("").starts_with("text/event-stream"))
    );
    let events = read_events(response);
    assert_eq!(events.last().map(|(_, data)| data.as_str()), Some("[DONE]"));
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|(_, data)| serde_json::from_str(data).expect("a JSON chunk"))
        .collect();
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "one two three four");
    assert!(
        chunks
            .iter()
            .all(|c| c["choices"].as_array().is_some_and(|a| !a.is_empty())),
        "the usage chunk the proxy asked for is not passed on to a client that did not: {chunks:?}"
    );
    // 8 events 150 ms apart upstream: the first reached the client long before the last.
    let spread = events.last().expect("events").0 - events[0].0;
    assert!(
        spread >= gap * 4,
        "events arrived together ({spread:?}): buffered, not passed on"
    );

    let spans = api.spans(&rollout);
    assert_eq!(spans.len(), 1, "{spans:?}");
    let attributes = &spans[0]["attributes"];
    assert_eq!(attributes["gen_ai.completion.0.content"], "one two three four");
    assert_eq!(attributes["gen_ai.usage.input_tokens"], 7);
    assert_eq!(attributes["gen_ai.usage.output_tokens"], 3);
    assert_eq!(attributes["agl.llm.proxy.stream"], true);
    assert_eq!(attributes["gen_ai.response.finish_reasons"], json!(["stop"]));

    // A client that asks for the usage gets its chunk.
    let response = api.post(
        &format!("/rollout/{rollout}/attempt/{attempt}/v1/chat/completions"),
        &json!({"stream": true, "stream_options": {"include_usage": true}, "messages": [{"role": "user", "content": "say x"}]}),
    );
    let events = read_events(response);
    let usage: Vec<Value> = events
        .iter()
        .filter_map(|(_, data)| serde_json::from_str::<Value>(data).ok())
        .filter(|c| c["usage"].is_object())
        .collect();
    assert_eq!(usage.len(), 1, "{events:?}");
    assert_eq!(usage[0]["usage"]["completion_tokens"], 3);
}

#[test]
fn a_scripted_backend_answers_plain_and_streamed_calls() {
    let rules = support::Scratch::new("proxy-rules");
    let path = rules.path("rules.json");
    std::fs::write(&path, ECHO_RULES).expect("rules file");
    let path = path.display().to_string();
    let store = ServerProcess::agl_host_store(&["--llm-proxy", "--llm-script", &path]);
    let api = Api::new(&store, None);
    let (rollout, attempt) = api.start_rollout("train", None);
    let answer = ok_json(api.chat(&rollout, &attempt, "say scripted"));
    assert_eq!(answer["choices"][0]["message"]["content"], "scripted");
    let events = read_events(api.post(
        &format!("/rollout/{rollout}/attempt/{attempt}/v1/chat/completions"),
        &json!({"stream": true, "messages": [{"role": "user", "content": "say streamed"}]}),
    ));
    assert_eq!(events.last().map(|(_, d)| d.as_str()), Some("[DONE]"));
    let spans = api.spans(&rollout);
    let completions: Vec<&Value> = spans
        .iter()
        .map(|s| &s["attributes"]["gen_ai.completion.0.content"])
        .collect();
    assert_eq!(completions, [&json!("scripted"), &json!("streamed")]);
    let ids: std::collections::HashSet<&str> = spans
        .iter()
        .filter_map(|s| s["attributes"]["gen_ai.response.id"].as_str())
        .collect();
    assert_eq!(ids.len(), 2, "each call has its own completion id: {spans:?}");
}

#[test]
fn the_token_is_required_and_the_upstream_key_stays_on_the_host() {
    const KEY: &str = "sk-upstream-secret-4711";
    let llm = Llm::serve(Faults::default());
    let url = llm.url();
    // The key comes from the environment (the variable --llm-api-key-env names).
    let args = [
        "--llm-proxy",
        "--llm-endpoint",
        url.as_str(),
        "--llm-model",
        "m",
        "--llm-api-key-env",
        "AGL_TEST_PROXY_KEY",
        "--token",
        "store-token",
        "-vv",
    ];
    let store = ServerProcess::agl_host_store_with_env(&args, &[("AGL_TEST_PROXY_KEY", KEY)]);
    let anonymous = Api::new(&store, None);
    let (status, _) = error_of(anonymous.post(
        "/v1/chat/completions",
        &json!({"messages": [{"role": "user", "content": "hi"}]}),
    ));
    assert_eq!(status, 401);
    let api = Api::new(&store, Some("store-token"));
    let (rollout, attempt) = api.start_rollout("train", None);
    let (status, _) = error_of(anonymous.chat(&rollout, &attempt, "say hi"));
    assert_eq!(status, 401, "the per-attempt routes need the token too");
    let (status, _) = error_of(anonymous.post("/proxy/pause", &json!({})));
    assert_eq!(status, 401, "so does pausing the proxy");
    assert_eq!(ok_json(api.get("/proxy/state"))["paused"], false);
    ok_json(api.chat(&rollout, &attempt, "say hi"));
    // Outside any attempt, under the token: answered, recorded nowhere.
    let plain = ok_json(api.post(
        "/v1/chat/completions",
        &json!({"messages": [{"role": "user", "content": "say plain"}]}),
    ));
    assert_eq!(plain["choices"][0]["message"]["content"], "plain");
    assert_eq!(ok_json(api.get("/v1/models"))["data"][0]["id"], "m");
    assert_eq!(api.spans(&rollout).len(), 1, "the plain call is recorded nowhere");
    assert_eq!(
        llm.handle().last_authorization().as_deref(),
        Some(format!("Bearer {KEY}").as_str()),
        "the upstream gets the host's key, not the store's token"
    );
    let spans = serde_json::to_string(&api.spans(&rollout)).expect("spans as JSON");
    assert!(spans.contains("openai.chat.completion"));
    assert!(!spans.contains(KEY), "the key is in a span: {spans}");
    assert!(!spans.contains("store-token"), "the token is in a span: {spans}");
    assert!(!store.log().contains(KEY), "the key is in the log:\n{}", store.log());
}

#[test]
fn errors_keep_their_status_in_openais_shape() {
    let llm = Llm::serve(
        Faults::default()
            .then(Fault::status(400).with_message("model m does not exist"))
            .then_times(2, Fault::status(503).with_message("overloaded")),
    );
    let store = proxy_store(&llm, &["--llm-retries", "1", "--max-body", "4KiB"]);
    let api = Api::new(&store, None);
    let (rollout, attempt) = api.start_rollout("train", None);

    // The upstream's 400 is relayed as it was, at once.
    let (status, body) = error_of(api.chat(&rollout, &attempt, "say a"));
    assert_eq!(
        (status, body["error"]["message"].as_str()),
        (400, Some("model m does not exist"))
    );
    // A 503 past the retries (1) is relayed with its status.
    let (status, body) = error_of(api.chat(&rollout, &attempt, "say b"));
    assert_eq!((status, body["error"]["message"].as_str()), (503, Some("overloaded")));
    assert_eq!(llm.handle().chat_requests(), 3, "400 once, 503 twice (one retry)");
    // Both failures are recorded on the attempt as ERROR spans naming the upstream's answer.
    let spans = api.spans(&rollout);
    assert_eq!(spans.len(), 2, "{spans:?}");
    for (span, needle) in spans
        .iter()
        .zip(["HTTP 400: model m does not exist", "HTTP 503: overloaded"])
    {
        assert_eq!(span["status"]["status_code"], "ERROR");
        let why = span["attributes"]["error.type"].as_str().unwrap_or_default();
        assert!(why.contains(needle), "{why}");
    }

    // The proxy's own refusals.
    let (status, body) = error_of(api.chat("ro-nowhere", "at-nowhere", "say c"));
    assert_eq!((status, body["error"]["type"].as_str()), (404, Some("not_found_error")));
    let (status, body) = error_of(api.chat(&rollout, "at-other", "say c"));
    assert_eq!((status, body["error"]["type"].as_str()), (404, Some("not_found_error")));
    let (status, body) = error_of(
        api.client
            .post(format!(
                "{}/rollout/{rollout}/attempt/{attempt}/v1/chat/completions",
                api.url
            ))
            .header("content-type", "application/json")
            .body("{not json")
            .send()
            .expect("answered"),
    );
    assert_eq!(
        (status, body["error"]["type"].as_str()),
        (400, Some("invalid_request_error"))
    );
    let long = "x".repeat(8 << 10);
    let (status, body) = error_of(api.chat(&rollout, &attempt, &long));
    assert_eq!(
        (status, body["error"]["type"].as_str()),
        (413, Some("invalid_request_error"))
    );

    // An upstream that is not there: 502 once the retries are spent.
    drop(llm);
    let (status, body) = error_of(api.chat(&rollout, &attempt, "say d"));
    assert_eq!((status, body["error"]["type"].as_str()), (502, Some("upstream_error")));
}

#[test]
fn a_rate_limited_call_is_retried_and_a_paused_proxy_answers_429() {
    let llm = Llm::serve(Faults::default().then(Fault::status(429).with_retry_after(0)));
    let store = proxy_store(&llm, &[]);
    let api = Api::new(&store, None);
    let (rollout, attempt) = api.start_rollout("train", None);
    ok_json(api.chat(&rollout, &attempt, "say later"));
    let spans = api.spans(&rollout);
    assert_eq!(spans[0]["attributes"]["agl.llm.proxy.retries"], 1);

    let state = ok_json(api.post(
        "/proxy/pause",
        &json!({"retry_after_seconds": 3, "reason": "new weights"}),
    ));
    assert_eq!(state["paused"], true);
    let response = api.chat(&rollout, &attempt, "say now");
    assert_eq!(response.status().as_u16(), 429);
    assert_eq!(
        response.headers().get("retry-after").and_then(|v| v.to_str().ok()),
        Some("3")
    );
    let (_, body) = error_of(response);
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("new weights")),
        "{body}"
    );
    assert_eq!(ok_json(api.get("/proxy/state"))["paused"], true);
    ok_json(api.post("/proxy/resume", &json!({})));
    ok_json(api.chat(&rollout, &attempt, "say now"));
}

#[test]
fn token_ids_are_asked_in_train_mode_and_recorded() {
    let vllm_answer = json!({
        "id": "chatcmpl-vllm-1", "model": "m", "prompt_token_ids": [1, 2, 3],
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "four"}, "finish_reason": "stop",
                     "token_ids": [4], "logprobs": {"content": [{"token": "four", "logprob": -0.25}]}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1}
    });
    let llm = Llm::serve(Faults::default().then(Fault::status(200).with_body(vllm_answer.to_string())));
    let store = proxy_store(&llm, &["--llm-token-ids", "--llm-train-temperature", "1.0"]);
    let api = Api::new(&store, None);
    let (rollout, attempt) = api.start_rollout("train", None);
    let train = format!("/proxy/rollout/{rollout}/attempt/{attempt}/mode/train/openai/v1/chat/completions");
    let answer = ok_json(api.post(
        &train,
        &json!({"temperature": 0.1, "messages": [{"role": "user", "content": "2+2?"}]}),
    ));
    assert_eq!(
        answer["prompt_token_ids"],
        json!([1, 2, 3]),
        "the upstream's answer is relayed whole"
    );
    let sent = llm.handle().last_body().expect("a body");
    assert_eq!(sent["temperature"], 1.0, "train mode's temperature: {sent}");
    assert_eq!(
        (sent["return_token_ids"].clone(), sent["logprobs"].clone()),
        (json!(true), json!(true))
    );
    let spans = api.spans(&rollout);
    let attributes = &spans[0]["attributes"];
    assert_eq!(attributes["prompt_token_ids"], json!([1, 2, 3]));
    assert_eq!(attributes["response_token_ids"], json!([4]));
    assert!(
        attributes["logprobs.content"]
            .as_str()
            .is_some_and(|l| l.contains("-0.25"))
    );
    // Our adapter reads the span as it reads the host's own LLM spans.
    let spans: Vec<agl_store::Span> = spans
        .into_iter()
        .map(|span| serde_json::from_value(span).expect("a store span"))
        .collect();
    let triplets = agl_adapter::triplets(&spans);
    assert_eq!(triplets.len(), 1, "{triplets:?}");
    assert_eq!(triplets[0].response, "four");
    assert_eq!(triplets[0].prompt[0].content, "2+2?");
    assert_eq!(
        (
            triplets[0].prompt_token_ids.clone(),
            triplets[0].response_token_ids.clone()
        ),
        (vec![1, 2, 3], vec![4])
    );

    let val = format!("/proxy/rollout/{rollout}/attempt/{attempt}/mode/val/openai/v1/chat/completions");
    ok_json(api.post(&val, &json!({"messages": [{"role": "user", "content": "say v"}]})));
    let sent = llm.handle().last_body().expect("a body");
    assert_eq!(sent["return_token_ids"], true);
    assert!(sent.get("logprobs").is_none(), "no logprobs asked in val mode: {sent}");
}

#[test]
fn the_model_follows_the_rollouts_resources_and_rollouts_are_pinned() {
    let (first, second) = (Llm::serve(Faults::default()), Llm::serve(Faults::default()));
    let replica = second.url();
    let store = proxy_store(&first, &["--llm-replica", &replica]);
    let api = Api::new(&store, None);
    let resources = |model: &str| {
        let added: Value = api
            .post(
                "/v1/agl/resources",
                &json!({"llm": {"resource_type": "proxy_llm", "endpoint": format!("{}/v1", api.url), "model": model,
                                "sampling_parameters": {"temperature": 0.25, "top_p": 0.5}}}),
            )
            .json()
            .expect("a resources update");
        added["resources_id"].as_str().expect("resources_id").to_owned()
    };
    let (v1, v2) = (resources("model-a"), resources("model-b"));
    let sent_model = || {
        [&first, &second]
            .iter()
            .filter_map(|l| l.handle().last_body())
            .map(|b| b["model"].as_str().unwrap_or_default().to_owned())
            .collect::<Vec<_>>()
    };
    let (r1, a1) = api.start_rollout("train", Some(&v1));
    ok_json(api.post(
        &format!("/rollout/{r1}/attempt/{a1}/v1/chat/completions"),
        &json!({"model": "m", "temperature": 0.9, "messages": [{"role": "user", "content": "say a"}]}),
    ));
    assert!(sent_model().contains(&"model-a".to_owned()), "{:?}", sent_model());
    // The resource's sampling parameters fill what the request leaves unset.
    let sent = [&first, &second]
        .iter()
        .find_map(|l| l.handle().last_body().filter(|b| b["model"] == "model-a"))
        .expect("the call reached an upstream");
    assert_eq!(
        (sent["temperature"].clone(), sent["top_p"].clone()),
        (json!(0.9), json!(0.5))
    );
    // A new resources version: the next rollouts use its model, nothing restarted.
    let (r2, a2) = api.start_rollout("train", Some(&v2));
    ok_json(api.chat(&r2, &a2, "say b"));
    assert_eq!(api.spans(&r2)[0]["attributes"]["gen_ai.request.model"], "model-b");

    // Each rollout's calls all go to one upstream; rollouts spread over both.
    let counts = || (first.handle().chat_requests(), second.handle().chat_requests());
    let mut used = [false, false];
    for _ in 0..8 {
        let (rollout, attempt) = api.start_rollout("train", None);
        let before = counts();
        for _ in 0..3 {
            ok_json(api.chat(&rollout, &attempt, "say x"));
        }
        let after = counts();
        let delta = (after.0 - before.0, after.1 - before.1);
        assert!(
            delta == (3, 0) || delta == (0, 3),
            "a rollout's calls were split: {delta:?}"
        );
        used[usize::from(delta.1 == 3)] = true;
    }
    assert_eq!(used, [true, true], "8 rollouts all went to one upstream");
}

/// Runs `tests/python/SCRIPT --url STORE` in the venv of `tests/python_client.rs` (Agent-lightning
/// 0.3.0 and `openai`) against a store with the proxy before the echo model; it must pass.
fn python_check_passes(script: &str) {
    let llm = Llm::serve(Faults::default());
    let store = proxy_store(&llm, &[]);
    let python = support::prepare_venv();
    let mut child = std::process::Command::new(&python)
        .arg(support::workspace_root().join("tests/python").join(script))
        .args(["--url", &store.url])
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .env("PYTHONUNBUFFERED", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the venv's python starts");
    // Importing agentlightning takes ~15 s on a busy 2-core machine.
    let deadline = Instant::now() + Duration::from_secs(150);
    while child.try_wait().expect("poll python").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let output = child.wait_with_output().expect("python's output");
    assert!(
        output.status.success(),
        "{script} failed ({}):\n{}\n{}\n--- agl-host store stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
        store.log()
    );
    println!("{}", String::from_utf8_lossy(&output.stdout));
}

/// Agent-lightning 0.3.0's `TracerTraceToTriplet` turns the proxy's spans into triplets, its
/// `ProxyLLM` resource names our per-attempt route, and the `openai` client (plain and streamed)
/// talks to the proxy: `tests/python/proxy_triplets.py`.
#[test]
fn agentlightning_reads_the_proxys_spans_as_triplets() {
    python_check_passes("proxy_triplets.py");
}

/// A plain Python agent — the `openai` package at the URL its rollout's `ProxyLLM` resource
/// gives, dequeued and finished with Agent-lightning's `LightningStoreClient`, no tracing code —
/// has its LLM calls recorded as spans of its attempts, and `TracerTraceToTriplet` turns each
/// attempt into (prompt, response, reward): `tests/python/proxy_agent_loop.py`.
#[test]
fn a_plain_python_agent_through_the_proxy_yields_triplets_with_its_rewards() {
    python_check_passes("proxy_agent_loop.py");
}

/// `agl-host run --llm-proxy` serves the proxy with the run's store and publishes it as the
/// `proxy_llm` resource `llm` (the math agent's resources have none), which the results keep.
#[test]
fn run_serves_the_proxy_and_publishes_it_as_a_proxy_llm_resource() {
    let math = agl_guest_build::repo_root().join("examples/math-agent");
    let scratch = support::Scratch::new("proxy-run");
    let out = scratch.path("results.json");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agl-host"))
        .env("AGL_DB", "memory")
        .env(
            "AGL_CACHE_DIR",
            agl_guest_build::repo_root().join("target/agl-cache-tests"),
        )
        .arg("run")
        .arg("--agent")
        .arg(&math)
        .args(["--algo", "baseline", "--llm-proxy", "--no-progress"])
        .arg("--train")
        .arg(math.join("data/val.jsonl"))
        .arg("--resources")
        .arg(math.join("initial-resources.json"))
        .arg("--llm-script")
        .arg(math.join("rules.json"))
        .arg("--output")
        .arg(&out)
        .output()
        .expect("agl-host runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("LLM proxy at http://127.0.0.1:"), "{stderr}");
    let results: Value = serde_json::from_str(&std::fs::read_to_string(&out).expect("results")).expect("JSON");
    let llm = &results["best"]["resources"]["llm"];
    assert_eq!(llm["resource_type"], "proxy_llm", "{results:#}");
    let endpoint = llm["endpoint"].as_str().unwrap_or_default();
    assert!(
        endpoint.starts_with("http://127.0.0.1:") && endpoint.ends_with("/v1"),
        "{endpoint}"
    );
    assert_eq!(results["total"]["failed"], 0, "{results:#}");

    // With --store the proxy belongs to that store's process.
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agl-host"))
        .args([
            "run",
            "--store",
            "http://127.0.0.1:9",
            "--algo",
            "baseline",
            "--llm-proxy",
        ])
        .arg("--train")
        .arg(math.join("data/val.jsonl"))
        .arg("--llm-script")
        .arg(math.join("rules.json"))
        .output()
        .expect("agl-host runs");
    assert_eq!(
        output.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stderr).contains("agl-host store --llm-proxy"));
}

/// A client that leaves in the middle of a stream: the upstream is let go, and the call is an
/// ERROR span saying so, with what the stream had brought.
#[test]
fn a_stream_the_client_leaves_is_recorded_with_what_it_brought() {
    let llm = Llm::serve(Faults::default().with_stream_gap(Duration::from_millis(200)));
    let store = proxy_store(&llm, &[]);
    let api = Api::new(&store, None);
    let (rollout, attempt) = api.start_rollout("train", None);
    let response = api.post(
        &format!("/rollout/{rollout}/attempt/{attempt}/v1/chat/completions"),
        &json!({"stream": true, "messages": [{"role": "user", "content": "say a b c d e f g h"}]}),
    );
    let mut lines = BufReader::new(response).lines();
    let mut data = 0;
    while data < 3 {
        let line = lines.next().expect("a line").expect("readable");
        data += usize::from(line.starts_with("data: "));
    }
    drop(lines);
    let deadline = Instant::now() + Duration::from_secs(10);
    let span = loop {
        if let Some(span) = api.spans(&rollout).pop() {
            break span;
        }
        assert!(Instant::now() < deadline, "no span recorded");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(span["status"]["status_code"], "ERROR");
    assert!(
        span["attributes"]["error.type"]
            .as_str()
            .is_some_and(|e| e.contains("client closed")),
        "{span}"
    );
    let partial = span["attributes"]["gen_ai.completion.0.content"]
        .as_str()
        .unwrap_or_default();
    assert!(partial.starts_with("a b") && !partial.contains('h'), "{partial:?}");
}

/// An upstream slower than `--llm-proxy-timeout`: 504 in OpenAI's shape, an ERROR span.
#[test]
fn a_slow_upstream_is_a_504() {
    let llm = Llm::serve(Faults::default().with_delay(Duration::from_secs(3)));
    let store = proxy_store(&llm, &["--llm-proxy-timeout", "300ms", "--llm-retries", "0"]);
    let api = Api::new(&store, None);
    let (rollout, attempt) = api.start_rollout("train", None);
    let started = Instant::now();
    let (status, body) = error_of(api.chat(&rollout, &attempt, "say late"));
    assert_eq!(
        (status, body["error"]["type"].as_str()),
        (504, Some("timeout")),
        "{body}"
    );
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    let spans = api.spans(&rollout);
    assert_eq!(spans[0]["status"]["status_code"], "ERROR");
    assert_eq!(spans[0]["attributes"]["http.response.status_code"], 504);
}

/// Many agents at once, plain and streamed calls mixed: every span lands on its own attempt,
/// with its own prompt and answer.
#[test]
fn concurrent_calls_of_many_attempts_land_each_on_its_own() {
    let llm = Llm::serve(Faults::default());
    let store = proxy_store(&llm, &[]);
    let api = Api::new(&store, None);
    let rollouts: Vec<(String, String)> = (0..8).map(|_| api.start_rollout("train", None)).collect();
    std::thread::scope(|scope| {
        for (i, (rollout, attempt)) in rollouts.iter().enumerate() {
            let api = &api;
            scope.spawn(move || {
                for call in 0..4 {
                    let text = format!("say r{i}c{call}");
                    if call % 2 == 0 {
                        ok_json(api.chat(rollout, attempt, &text));
                    } else {
                        let events = read_events(api.post(
                            &format!("/rollout/{rollout}/attempt/{attempt}/v1/chat/completions"),
                            &json!({"stream": true, "messages": [{"role": "user", "content": text}]}),
                        ));
                        assert_eq!(events.last().map(|(_, d)| d.as_str()), Some("[DONE]"));
                    }
                }
            });
        }
    });
    for (i, (rollout, attempt)) in rollouts.iter().enumerate() {
        let spans = api.spans(rollout);
        let answers: Vec<&str> = spans
            .iter()
            .map(|s| {
                assert_eq!(s["attempt_id"], attempt.as_str());
                s["attributes"]["gen_ai.completion.0.content"]
                    .as_str()
                    .unwrap_or_default()
            })
            .collect();
        let expected: Vec<String> = (0..4).map(|call| format!("r{i}c{call}")).collect();
        assert_eq!(answers, expected, "rollout {i}'s spans, in call order");
    }
}

/// `agl-host run --llm-proxy` of `tests/guests/proxy-agent` on `tasks`, the proxy on a free port
/// granted to the agent (and nothing else), kept in a SQLite file: the run's output, and
/// `show --json` over that file.
struct ProxyAgentRun {
    output: std::process::Output,
    db: String,
    port: u16,
    _scratch: support::Scratch,
}

impl ProxyAgentRun {
    fn start(name: &str, tasks: &[Value], extra: &[&str]) -> Self {
        let agent = agl_guest_build::build_guest("tests/guests/proxy-agent").expect("the proxy agent builds");
        Self::start_agent(name, &agent, free_port(), tasks, extra)
    }

    /// The same with another agent (a component or a guest folder), the proxy on `port`.
    fn start_agent(name: &str, agent: &std::path::Path, port: u16, tasks: &[Value], extra: &[&str]) -> Self {
        let scratch = support::Scratch::new(name);
        let (rules, train, db) = (
            scratch.path("rules.json"),
            scratch.path("train.jsonl"),
            scratch.path("run.db"),
        );
        std::fs::write(&rules, ECHO_RULES).expect("rules");
        let lines: String = tasks.iter().map(|t| format!("{t}\n")).collect();
        std::fs::write(&train, lines).expect("tasks");
        let db = format!("sqlite:{}", db.display());
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_agl-host"))
            .env(
                "AGL_CACHE_DIR",
                agl_guest_build::repo_root().join("target/agl-cache-tests"),
            )
            .arg("run")
            .arg("--agent")
            .arg(agent)
            .args(["--algo", "baseline", "--llm-proxy", "--no-progress", "--db", &db])
            .args(["--port", &port.to_string()])
            .args(["--agent-http", &format!("http://127.0.0.1:{port}")])
            .arg("--train")
            .arg(&train)
            .arg("--llm-script")
            .arg(&rules)
            .args(extra)
            .output()
            .expect("agl-host runs");
        ProxyAgentRun {
            output,
            db,
            port,
            _scratch: scratch,
        }
    }

    fn show(&self, args: &[&str]) -> Value {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_agl-host"))
            .args(["show", "--db", &self.db, "--json"])
            .args(args)
            .output()
            .expect("agl-host show runs");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        serde_json::from_slice(&output.stdout).expect("JSON")
    }

    /// Each rollout's record (`show RUN ROLLOUT`), in the run's order.
    fn records(&self) -> Vec<Value> {
        let run = self.show(&[]);
        let rollouts = run["rollouts"].as_array().cloned().unwrap_or_default();
        rollouts
            .iter()
            .map(|row| {
                let id = row["rollout"]["rollout_id"]
                    .as_str()
                    .unwrap_or_else(|| panic!("no rollout_id: {row}"));
                self.show(&[id])
            })
            .collect()
    }
}

/// A port free now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// The messages an attempt's agent logged.
fn logged(record: &Value) -> Vec<String> {
    record["spans"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| {
            s["attributes"]["agentlightning.message.body"]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

/// A sandboxed agent that calls the LLM over HTTP through the proxy `agl-host run --llm-proxy`
/// serves (`tests/guests/proxy-agent`, granted the proxy's address only): its calls are answered
/// by the run's LLM through the capability its `proxy_llm` resource names, and recorded as LLM
/// spans of its attempt, beside the host's span of its HTTP request.
#[test]
fn a_sandboxed_agent_calls_the_llm_through_the_runs_proxy() {
    sandboxed_agents_call_through_their_capabilities("proxy-agent", &[]);
}

/// The same with runner processes (`--strategy client-server`): each asks the run's proxy for
/// its attempts' capabilities over HTTP, with the operator token the run gave it.
#[test]
fn a_sandboxed_agent_of_a_runner_process_calls_the_llm_through_the_runs_proxy() {
    sandboxed_agents_call_through_their_capabilities(
        "proxy-agent-processes",
        &["--strategy", "client-server", "--runners", "2"],
    );
}

fn sandboxed_agents_call_through_their_capabilities(name: &str, extra: &[&str]) {
    let in_process = !extra.contains(&"client-server");
    let tasks: Vec<Value> = (0..3)
        .map(|i| json!({"question": format!("say {i}"), "answer": i.to_string()}))
        .collect();
    let run = ProxyAgentRun::start(name, &tasks, extra);
    let stderr = String::from_utf8_lossy(&run.output.stderr);
    assert!(run.output.status.success(), "{stderr}");
    let records = run.records();
    assert_eq!(records.len(), 3);
    for record in records {
        assert_eq!(record["final_reward"], 1.0, "{record:#}");
        let attempt = record["attempts"][0]["attempt_id"].as_str().expect("an attempt");
        let spans = record["spans"].as_array().cloned().unwrap_or_default();
        let llm: Vec<&Value> = spans.iter().filter(|s| s["name"] == "openai.chat.completion").collect();
        assert_eq!(llm.len(), 1, "one LLM span, the proxy's: {spans:#?}");
        assert_eq!(llm[0]["attempt_id"], attempt);
        assert_eq!(llm[0]["attributes"]["agl.llm.proxy.mode"], "train");
        assert!(
            spans.iter().any(|s| s["name"] == "agl.http.request"),
            "the agent's request is a span too: {spans:#?}"
        );
        // In one process, the attempt's LLM calls count the proxy's: one LLM budget.
        if in_process {
            let root = spans
                .iter()
                .find(|s| s["name"] == "agentlightning.rollout")
                .expect("a root span");
            assert_eq!(root["attributes"]["agl.llm.calls"], 1, "{root:#}");
        }
    }
    // Each attempt replays identically with no proxy: its exchange with the proxy is answered from
    // the record (the proxy's own LLM spans are not the agent's to make again).
    let replayed = std::process::Command::new(env!("CARGO_BIN_EXE_agl-host"))
        .env(
            "AGL_CACHE_DIR",
            agl_guest_build::repo_root().join("target/agl-cache-tests"),
        )
        .args(["replay", "--db", &run.db])
        .output()
        .expect("agl-host replay runs");
    let said = String::from_utf8_lossy(&replayed.stdout);
    assert_eq!(
        replayed.status.code(),
        Some(0),
        "{said}{}",
        String::from_utf8_lossy(&replayed.stderr)
    );
    assert!(said.contains("3 attempt(s) replayed: 3 identical"), "{said}");
}

/// An agent granted the proxy's port is an attacker: the port serves it nothing but LLM calls
/// of its own running attempt, under that attempt's LLM policy — not the store API, not calls
/// outside an attempt or naming one by its ids, not the pause switch; not models, calls or
/// request sizes its policy refuses; and its capability dies with its attempt.
#[test]
fn an_agent_reaches_only_its_own_attempts_llm_calls_through_the_proxy() {
    agent_reaches_only_its_own_calls("proxy-attacker", &[]);
}

/// The same for agents of runner processes, whose capabilities come over HTTP.
#[test]
fn an_agent_of_a_runner_process_reaches_only_its_own_attempts_llm_calls() {
    agent_reaches_only_its_own_calls("proxy-attacker-processes", &["--strategy", "client-server"]);
}

fn agent_reaches_only_its_own_calls(name: &str, strategy: &[&str]) {
    let probe = |method: &str, path: &str| json!({"method": method, "path": path, "body": {}});
    let probes = vec![
        probe("GET", "/v1/agl/rollouts"),
        probe("GET", "/v1/agl/statistics"),
        probe("POST", "/v1/agl/queues/rollouts/dequeue"),
        probe("POST", "/v1/agl/resources"),
        probe("GET", "/metrics"),
        json!({"method": "POST", "path": "/v1/chat/completions", "body": {"model": "m", "messages": [{"role": "user", "content": "say free"}]}}),
        json!({"method": "POST", "path": "/rollout/ro-x/attempt/at-x/v1/chat/completions", "body": {"messages": [{"role": "user", "content": "say x"}]}}),
        probe("POST", "/proxy/pause"),
        probe("GET", "/proxy/state"),
        probe(
            "GET",
            "/agent/0000000000000000000000000000000000000000000000000000000000000000/v1/models",
        ),
    ];
    let tasks = [
        json!({"question": "say 0", "answer": "0", "probes": probes, "calls": 3}),
        json!({"question": "say 1", "answer": "1", "calls": 1, "model": "gpt-expensive"}),
        json!({"question": "say 2", "answer": "2", "calls": 1, "pad": 100_000}),
    ];
    let mut extra = vec!["--agent-llm-calls", "3", "--agent-llm-max-request", "64KiB"];
    extra.extend_from_slice(strategy);
    let run = ProxyAgentRun::start(name, &tasks, &extra);
    let stderr = String::from_utf8_lossy(&run.output.stderr);
    assert!(run.output.status.success(), "{stderr}");
    let records = run.records();
    let logs: Vec<Vec<String>> = records.iter().map(logged).collect();
    let find = |rollout: usize, start: &str| -> String {
        logs[rollout]
            .iter()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no `{start}` in {:#?}", logs[rollout]))
            .clone()
    };
    for probe in &probes {
        let line = find(
            0,
            &format!(
                "probe {} {}:",
                probe["method"].as_str().unwrap_or_default(),
                probe["path"].as_str().unwrap_or_default()
            ),
        );
        // 404: not served; 401: the operator's route, under a token the agent does not have
        // (runner processes ask for capabilities with it).
        assert!(
            line.ends_with(": 404") || line.ends_with(": 401"),
            "the proxy's port serves agents nothing else: {line}"
        );
    }
    // The budget is 3 calls: the first call and two more; the third more is refused.
    assert!(find(0, "call 1:").starts_with("call 1: 200"), "{:#?}", logs[0]);
    assert!(find(0, "call 2:").starts_with("call 2: 200"), "{:#?}", logs[0]);
    let refused = find(0, "call 3:");
    assert!(
        refused.starts_with("call 3: 403") && refused.contains("budget"),
        "{refused}"
    );
    // The model is the one the operator's proxy_llm resource names, whatever the agent asks.
    let model = find(1, "call 1:");
    assert!(model.starts_with("call 1: 200"), "{model}");
    let asked: Vec<&Value> = records[1]["spans"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["name"] == "openai.chat.completion")
        .map(|s| &s["attributes"]["gen_ai.request.model"])
        .collect();
    assert_eq!(asked, [&json!("m"), &json!("m")], "{:#?}", records[1]);
    let big = find(2, "call 1:");
    assert!(big.starts_with("call 1: 400"), "{big}");
    // Each refusal is a span of the attempt; the accepted calls are its LLM spans.
    let llm_spans = |record: &Value| -> Vec<Value> {
        record["spans"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|s| s["name"] == "openai.chat.completion")
            .cloned()
            .collect()
    };
    let first = llm_spans(&records[0]);
    assert_eq!(first.len(), 4, "3 answered, 1 refused: {first:#?}");
    let refused: Vec<&Value> = first.iter().filter(|s| s["status"]["status_code"] == "ERROR").collect();
    assert_eq!(refused.len(), 1, "{first:#?}");
    // Named as the host names its own refusals, with the flag that allows more.
    assert_eq!(
        refused[0]["attributes"]["agl.sandbox.grant"], "--agent-llm-calls",
        "{refused:#?}"
    );
    // The capability the agent was given is its own, on the proxy's port (that it dies with its
    // attempt is `agl-proxy`'s tests/capabilities.rs).
    let capability = find(0, "capability ").trim_start_matches("capability ").to_owned();
    assert!(
        capability.starts_with(&format!("http://127.0.0.1:{}/agent/", run.port)),
        "{capability}"
    );
}

/// `agl-host store --llm-proxy` with a token, `agl-host runner` against it: the runner asks the
/// store for each attempt's capability (`POST /proxy/grants` with the store's token) and its
/// agent, granted only the proxy's port for agents (`--llm-proxy-port`), calls through it; the
/// store's own port is not the agent's to use. The calls are spans of their attempts.
#[test]
fn a_remote_runners_agent_calls_through_the_capability_the_store_gives() {
    let agent = agl_guest_build::build_guest("tests/guests/proxy-agent").expect("the proxy agent builds");
    let scratch = support::Scratch::new("proxy-remote");
    let (rules, train, resources) = (
        scratch.path("rules.json"),
        scratch.path("train.jsonl"),
        scratch.path("resources.json"),
    );
    std::fs::write(&rules, ECHO_RULES).expect("rules");
    let agents_port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let store = ServerProcess::agl_host_store(&[
        "--llm-proxy",
        "--llm-script",
        &rules.display().to_string(),
        "--token",
        "t0k",
        "--llm-proxy-port",
        &agents_port.to_string(),
    ]);
    let probes = [json!({"method": "GET", "path": "/v1/agl/rollouts"})];
    let tasks: String = (0..2)
        .map(|i| {
            format!(
                "{}\n",
                json!({"question": format!("say {i}"), "answer": i.to_string(), "probes": probes})
            )
        })
        .collect();
    std::fs::write(&train, tasks).expect("tasks");
    std::fs::write(
        &resources,
        json!({"llm": {"resource_type": "proxy_llm", "endpoint": format!("http://127.0.0.1:{agents_port}/v1"), "model": "m"}})
            .to_string(),
    )
    .expect("resources");
    let mut runner = std::process::Command::new(env!("CARGO_BIN_EXE_agl-host"))
        .env(
            "AGL_CACHE_DIR",
            agl_guest_build::repo_root().join("target/agl-cache-tests"),
        )
        .args(["runner", "--store", &store.url, "--token", "t0k", "--agent"])
        .arg(&agent)
        .args(["--agent-http", &format!("http://127.0.0.1:{agents_port}")])
        .args(["--llm-script", &rules.display().to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the runner starts");
    let out = scratch.path("results.json");
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_agl-host"))
        .args([
            "run",
            "--store",
            &store.url,
            "--token",
            "t0k",
            "--algo",
            "baseline",
            "--no-progress",
        ])
        .arg("--train")
        .arg(&train)
        .arg("--resources")
        .arg(&resources)
        .arg("--output")
        .arg(&out)
        .output()
        .expect("agl-host run");
    let _ = runner.kill();
    let _ = runner.wait();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let results: Value = serde_json::from_str(&std::fs::read_to_string(&out).expect("results")).expect("JSON");
    assert_eq!(results["splits"]["train"]["succeeded"], 2, "{results:#}");
    assert_eq!(results["splits"]["train"]["mean_reward"], 1.0, "{results:#}");
    let api = Api::new(&store, Some("t0k"));
    let rollouts = ok_json(api.get("/v1/agl/rollouts"));
    for rollout in rollouts["items"].as_array().into_iter().flatten() {
        let id = rollout["rollout_id"].as_str().expect("an id");
        let spans = api.spans(id);
        let llm: Vec<&Value> = spans.iter().filter(|s| s["name"] == "openai.chat.completion").collect();
        assert_eq!(llm.len(), 1, "{spans:#?}");
        let logs: Vec<&str> = spans
            .iter()
            .filter_map(|s| s["attributes"]["agentlightning.message.body"].as_str())
            .collect();
        assert!(
            logs.contains(&"probe GET /v1/agl/rollouts: 404"),
            "the agents' port serves no store: {logs:?}"
        );
        assert!(
            logs.iter()
                .any(|l| l.starts_with(&format!("capability http://127.0.0.1:{agents_port}/agent/"))),
            "{logs:?}"
        );
    }
}

/// Python and JavaScript agents granted the port of `run --llm-proxy` (their SDKs' HTTP clients,
/// `ctx.http()` and `fetch`) find no store and no operator's route there.
#[test]
fn python_and_javascript_agents_granted_the_proxy_port_reach_no_store() {
    for (name, folder) in [
        ("proxy-py", "tests/guests/probe-py"),
        ("proxy-js", "tests/guests/probe-js"),
    ] {
        let port = free_port();
        let paths = [
            "/v1/agl/rollouts",
            "/v1/agl/statistics",
            "/v1/models",
            "/proxy/state",
            "/metrics",
        ];
        let tasks: Vec<Value> = paths
            .iter()
            .map(|path| json!({"do": "http_get", "url": format!("http://127.0.0.1:{port}{path}")}))
            .collect();
        let agent = agl_guest_build::repo_root().join(folder);
        let run = ProxyAgentRun::start_agent(name, &agent, port, &tasks, &[]);
        assert!(
            run.output.status.success(),
            "{}",
            String::from_utf8_lossy(&run.output.stderr)
        );
        let records = run.records();
        assert_eq!(records.len(), paths.len());
        for record in &records {
            let logs = logged(record);
            assert!(
                logs.iter().any(|l| l.starts_with("http_get: allowed: status 404")),
                "{name}: {logs:#?}"
            );
        }
    }
}

/// An upstream on a free loopback port that answers every request with a stream of `total`
/// bytes of answer text (64 KiB a chunk), then `[DONE]`.
fn endless_stream(total: usize) -> std::net::SocketAddr {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                // The request: its head, then as much body as it declares.
                let mut seen = Vec::new();
                let mut buf = [0u8; 8192];
                while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                }
                let head_end = seen.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or(0) + 4;
                let head = String::from_utf8_lossy(&seen[..head_end]).to_ascii_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                let mut body = seen.len() - head_end;
                while body < length {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => body += n,
                    }
                }
                let text = "x".repeat(64 * 1024);
                let event = format!(
                    "data: {}\n\n",
                    json!({"id": "c-1", "model": "m", "choices": [{"index": 0, "delta": {"content": text}}]})
                );
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
                if stream.write_all(head.as_bytes()).is_err() {
                    return;
                }
                let mut sent = 0;
                while sent < total {
                    if stream.write_all(event.as_bytes()).is_err() {
                        return;
                    }
                    sent += text.len();
                }
                let _ = stream.write_all(b"data: [DONE]\n\n");
            });
        }
    });
    addr
}

/// The `VmHWM` (peak resident memory) or `VmRSS` of a process, in bytes.
fn memory_of(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc/PID/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("a memory figure")
        * 1024
}

/// A stream of 256 MiB passes through the proxy while the proxy keeps only what the call's span
/// keeps: its peak memory grows by far less than the stream (it grew by about the stream's size
/// when the whole text was assembled), and the span holds the answer clipped.
#[test]
fn a_long_stream_is_held_in_memory_only_as_far_as_its_span_keeps_it() {
    const STREAM: usize = 256 << 20;
    let upstream = endless_stream(STREAM);
    let url = format!("http://{upstream}/v1");
    let store = ServerProcess::agl_host_store(&[
        "--llm-proxy",
        "--llm-endpoint",
        &url,
        "--llm-model",
        "m",
        "--llm-retries",
        "0",
    ]);
    let api = Api::new(&store, None);
    let (rollout, attempt) = api.start_rollout("train", None);
    let before = memory_of(store.pid(), "VmRSS:");
    let mut response = api.post(
        &format!("/rollout/{rollout}/attempt/{attempt}/v1/chat/completions"),
        &json!({"stream": true, "messages": [{"role": "user", "content": "say it all"}]}),
    );
    let mut read = 0u64;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match std::io::Read::read(&mut response, &mut buf) {
            Ok(0) => break,
            Ok(n) => read += n as u64,
            Err(e) => panic!("the stream broke after {read} bytes: {e}"),
        }
    }
    assert!(read > STREAM as u64, "the whole stream came through: {read} bytes");
    let peak = memory_of(store.pid(), "VmHWM:");
    let grown = peak.saturating_sub(before);
    eprintln!(
        "a {} MiB stream: the proxy's peak memory grew by {} KiB",
        STREAM >> 20,
        grown >> 10
    );
    assert!(
        grown < (STREAM as u64) / 4,
        "a {} MiB stream grew the proxy's peak memory by {} MiB",
        STREAM >> 20,
        grown >> 20
    );
    let spans = api.spans(&rollout);
    let text = spans[0]["attributes"]["gen_ai.completion.0.content"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.len() <= 64 * 1024 + 64 && text.starts_with("xxxx"),
        "{} bytes kept",
        text.len()
    );
}
