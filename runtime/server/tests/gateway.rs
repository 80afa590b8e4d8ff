//! The contract of Agent-lightning 1.0's gateway API as agl-host serves it (`src/routes/gateway/`),
//! driven over loopback against the real server with the LLM proxy mounted beside it (as
//! `agl-host store --llm-proxy` does) and the mock OpenAI endpoint behind the proxy: every route,
//! its shapes and status codes, the key, and hostile inputs.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a test: a failed step panics and fails it"
)]

use agl_llm::{OpenAiConfig, ScriptedBackend};
use agl_proxy::{Proxy, ProxyConfig, Upstream, Upstreams};
use agl_server::{ServerHandle, ServerOptions, serve_with};
use agl_store::{InMemoryLightningStore, LightningStore, SpanQuery};
use serde_json::{Value, json};
use std::sync::Arc;

const KEY: &str = "gateway-key";

/// The mock model server's one answer, with vLLM's token ids and logprobs.
const RULES: &str = r#"{"model": "served", "rules": [], "fallback": {"reply": "4",
    "usage": {"input_tokens": 3, "output_tokens": 1},
    "tokens": {"prompt_token_ids": [11, 12, 13], "response_token_ids": [21],
               "logprobs": [{"token": "4", "logprob": -0.125, "top_logprobs": []}]}}}"#;

/// A dashboard's files beside the API: its `GET`s are public, the gateway's are not.
#[tokio::test]
async fn a_public_site_beside_the_api_leaves_the_gateway_behind_the_key() {
    let dir = std::env::temp_dir().join(format!("agl-gateway-site-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("index.html"), "<p>site</p>").unwrap();
    let store: Arc<dyn LightningStore> = Arc::new(InMemoryLightningStore::new());
    let options = ServerOptions {
        port: 0,
        token: Some(KEY.to_owned()),
        site: Some(agl_server::Site::dir(&dir).unwrap()),
        ..ServerOptions::default()
    };
    let server = agl_server::serve(store, options).await.unwrap();
    let get = |path: &'static str| reqwest::get(format!("{}{path}", server.url()));
    assert_eq!(get("/index.html").await.unwrap().status().as_u16(), 200);
    assert_eq!(get("/healthz").await.unwrap().status().as_u16(), 200);
    for path in [
        "/api/rollouts?state_in=queuing",
        "/api/models",
        "/api/rollouts/x/events",
        "/api/nope",
    ] {
        assert_eq!(get(path).await.unwrap().status().as_u16(), 401, "{path}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

struct Gateway {
    store: Arc<dyn LightningStore>,
    _server: ServerHandle,
    /// The proxy's own upstream.
    llm: agl_testkit::llm_server::ServerHandle,
    base: String,
    client: reqwest::Client,
}

struct Answer {
    status: u16,
    body: Value,
}

impl Gateway {
    async fn start() -> Self {
        let store: Arc<dyn LightningStore> = Arc::new(InMemoryLightningStore::new());
        let backend = Arc::new(ScriptedBackend::from_json_str(RULES).expect("rules"));
        let llm = agl_testkit::llm_server::serve(backend, "127.0.0.1:0".parse().unwrap())
            .await
            .expect("mock LLM server");
        let upstream = Upstream::openai(OpenAiConfig::new(llm.base_url(), "served")).unwrap();
        let mut config = ProxyConfig::new(Upstreams::new(vec![upstream]).unwrap());
        config.token_ids = true;
        let proxy = Proxy::new(store.clone(), config);
        let options = ServerOptions {
            port: 0,
            token: Some(KEY.to_owned()),
            ..ServerOptions::default()
        };
        let server = serve_with(store.clone(), options, proxy.router())
            .await
            .expect("server");
        Gateway {
            base: server.url(),
            store,
            _server: server,
            llm,
            client: reqwest::Client::builder()
                .timeout(std::time::Duration::from_secs(60))
                .build()
                .unwrap(),
        }
    }

    async fn send(&self, method: &str, path: &str, body: Option<&str>, headers: &[(&str, &str)]) -> Answer {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut request = self.client.request(method, format!("{}{path}", self.base));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        if let Some(body) = body {
            request = request.header("content-type", "application/json").body(body.to_owned());
        }
        let response = request.send().await.expect("answered");
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{status} not JSON ({e}): {text}"))
        };
        Answer { status, body }
    }

    /// With the key.
    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> Answer {
        let text = body.map(|b| b.to_string());
        let bearer = format!("Bearer {KEY}");
        self.send(method, path, text.as_deref(), &[("authorization", &bearer)])
            .await
    }

    async fn ok(&self, method: &str, path: &str, body: Option<Value>, status: u16) -> Value {
        let answer = self.call(method, path, body).await;
        assert_eq!(answer.status, status, "{method} {path}: {}", answer.body);
        answer.body
    }

    /// A runner takes the next queued rollout (0.3.0's dequeue): (rollout id, attempt id).
    async fn dequeue(&self) -> (String, String) {
        let taken = self
            .ok(
                "POST",
                "/v1/agl/queues/rollouts/dequeue",
                Some(json!({"limit": 1})),
                200,
            )
            .await;
        let taken = &taken[0];
        (
            taken["rollout_id"].as_str().unwrap().to_owned(),
            taken["attempt"]["attempt_id"].as_str().unwrap().to_owned(),
        )
    }

    async fn create(&self, items: Value) -> Vec<Value> {
        let created = self.ok("POST", "/api/rollouts", Some(items), 201).await;
        created.as_array().unwrap().clone()
    }
}

fn ids(rollouts: &Value) -> Vec<String> {
    rollouts
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rollout_id"].as_str().unwrap().to_owned())
        .collect()
}

fn detail(answer: &Answer, status: u16) -> String {
    assert_eq!(answer.status, status, "{}", answer.body);
    answer.body["detail"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", answer.body))
        .to_owned()
}

#[tokio::test]
async fn healthz_is_public_and_every_other_route_wants_the_key_as_bearer_or_x_api_key() {
    let gateway = Gateway::start().await;
    let health = gateway.send("GET", "/healthz", None, &[]).await;
    assert_eq!((health.status, health.body), (200, json!({"status": "ok"})));

    let path = "/api/rollouts?state_in=queuing";
    detail(&gateway.send("GET", path, None, &[]).await, 401);
    detail(
        &gateway
            .send("GET", path, None, &[("authorization", "Bearer nope")])
            .await,
        401,
    );
    detail(&gateway.send("GET", path, None, &[("x-api-key", "nope")]).await, 401);
    detail(&gateway.send("GET", "/api/models", None, &[]).await, 401);
    let bearer = format!("Bearer {KEY}");
    assert_eq!(
        gateway
            .send("GET", path, None, &[("authorization", &bearer)])
            .await
            .status,
        200
    );
    assert_eq!(gateway.send("GET", path, None, &[("x-api-key", KEY)]).await.status, 200);
    // 1.0's header is not taken on 0.3.0's routes, which keep their bearer token.
    detail(
        &gateway
            .send("GET", "/v1/agl/statistics", None, &[("x-api-key", KEY)])
            .await,
        401,
    );
    let proxy = "/proxy/rollout/r/attempt/a/mode/train/openai/v1/chat/completions";
    detail(&gateway.send("POST", proxy, Some("{}"), &[]).await, 401);
}

#[tokio::test]
async fn create_answers_1_0_rollouts_and_a_chosen_id_is_idempotent() {
    let gateway = Gateway::start().await;
    let created = gateway
        .create(json!([
            {"input": {"data_id": "d1", "q": "2+2"}, "rollout_id": "chosen-1",
             "config": {"timeout_seconds": 60, "local": {"agent_class": "a.B", "env_map": {"K": "V"}}},
             "metadata": {"batch_idx": 3, "extra": "x"}},
            {"input": null, "is_train": false}
        ]))
        .await;
    assert_eq!(created.len(), 2);
    let first = &created[0];
    assert_eq!(first["rollout_id"], "chosen-1");
    assert_eq!(first["input"], json!({"data_id": "d1", "q": "2+2"}));
    assert_eq!(first["is_train"], true);
    assert_eq!(
        first["config"],
        json!({"timeout_seconds": 60, "local": {"agent_class": "a.B", "env_map": {"K": "V"}}, "k8s": null})
    );
    assert_eq!(
        first["metadata"],
        json!({"batch_idx": 3, "sample_idx_in_batch": null, "extra": "x"})
    );
    let status = &first["status"];
    assert_eq!(status["state"], "queuing");
    assert_eq!(status["version"], 1);
    assert_eq!(status["last_attempt_id"], Value::Null);
    assert!(status["created_at"].as_f64().unwrap() > 0.0);
    let second = &created[1];
    assert!(second["rollout_id"].as_str().unwrap().starts_with("ro-"));
    assert_eq!(second["is_train"], false);
    assert_eq!(second["config"]["timeout_seconds"], 3600);

    // Again, as a retrying client sends it: the same rollout, nothing new queued.
    let again = gateway
        .create(json!([{"input": {"other": true}, "rollout_id": "chosen-1"}]))
        .await;
    assert_eq!(again[0]["rollout_id"], "chosen-1");
    assert_eq!(again[0]["input"], json!({"data_id": "d1", "q": "2+2"}));
    let queued = gateway.ok("GET", "/api/rollouts?state_in=queuing", None, 200).await;
    assert_eq!(queued.as_array().unwrap().len(), 2);

    // A rollout made here is one our runners take: its timeout is the watchdog's.
    let (rollout_id, _) = gateway.dequeue().await;
    assert_eq!(rollout_id, "chosen-1");
    let ours = gateway.store.get_rollout_by_id("chosen-1").await.unwrap().unwrap();
    assert_eq!(ours.rollout.config.timeout_seconds, Some(60.0));
    assert_eq!(ours.rollout.mode, Some(agl_store::Mode::Train));
    // Created again once running: still the one rollout, now with its attempt.
    let again = gateway.create(json!([{"input": 1, "rollout_id": "chosen-1"}])).await;
    assert_eq!(again[0]["status"]["state"], "running");

    let bad_ids = [json!(""), json!("a/b"), json!("x".repeat(300)), json!("tab\there")];
    for bad in bad_ids {
        let answer = gateway
            .call("POST", "/api/rollouts", Some(json!([{"input": 1, "rollout_id": bad}])))
            .await;
        detail(&answer, 400);
    }
}

#[tokio::test]
async fn list_filters_by_state_and_limit() {
    let gateway = Gateway::start().await;
    gateway.create(json!([{"input": 1}, {"input": 2}, {"input": 3}])).await;
    let (running, _) = gateway.dequeue().await;
    let list = |query: &'static str| gateway.ok("GET", query, None, 200);
    assert_eq!(
        list("/api/rollouts?state_in=queuing").await.as_array().unwrap().len(),
        2
    );
    assert_eq!(ids(&list("/api/rollouts?state_in=running").await), [running]);
    assert_eq!(
        list("/api/rollouts?state_in=queuing&state_in=running")
            .await
            .as_array()
            .unwrap()
            .len(),
        3
    );
    assert_eq!(
        list("/api/rollouts?state_in=queuing&state_in=running&limit=1")
            .await
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert!(
        list("/api/rollouts?state_in=succeeded")
            .await
            .as_array()
            .unwrap()
            .is_empty()
    );
    detail(&gateway.call("GET", "/api/rollouts", None).await, 422);
    detail(
        &gateway.call("GET", "/api/rollouts?state_in=preparing", None).await,
        422,
    );
    detail(
        &gateway
            .call("GET", "/api/rollouts?state_in=queuing&limit=-1", None)
            .await,
        422,
    );
    detail(
        &gateway
            .call("GET", "/api/rollouts?state_in=queuing&limit=x", None)
            .await,
        422,
    );
}

#[tokio::test]
async fn get_gives_the_rollout_and_its_attempt_ids() {
    let gateway = Gateway::start().await;
    let created = gateway.create(json!([{"input": {"q": 1}}])).await;
    let id = created[0]["rollout_id"].as_str().unwrap().to_owned();
    let got = gateway.ok("GET", &format!("/api/rollouts/{id}"), None, 200).await;
    assert_eq!(got["attempts"], json!([]));
    assert_eq!(got["rollout"], created[0]);

    let (_, attempt_id) = gateway.dequeue().await;
    let got = gateway.ok("GET", &format!("/api/rollouts/{id}"), None, 200).await;
    assert_eq!(got["attempts"], json!([attempt_id]));
    assert_eq!(got["rollout"]["status"]["state"], "running");
    assert_eq!(got["rollout"]["status"]["last_attempt_id"], json!(attempt_id));

    let missing = gateway.call("GET", "/api/rollouts/ro-nope", None).await;
    assert_eq!(detail(&missing, 404), "Rollout not found: ro-nope");
}

#[tokio::test]
async fn patch_follows_1_0s_transitions_and_bumps_the_version() {
    let gateway = Gateway::start().await;
    let id = gateway.create(json!([{"input": 1}])).await[0]["rollout_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = format!("/api/rollouts/{id}");
    let unchanged = gateway.ok("PATCH", &path, Some(json!({})), 200).await;
    assert_eq!(unchanged["status"]["version"], 1);

    let running = gateway
        .ok(
            "PATCH",
            &path,
            Some(json!({"status": {"state": "running", "k8s_job_name": "job-1"}})),
            200,
        )
        .await;
    assert_eq!(running["status"]["state"], "running");
    assert_eq!(running["status"]["k8s_job_name"], "job-1");
    assert_eq!(running["status"]["version"], 2);

    let back = gateway
        .call("PATCH", &path, Some(json!({"status": {"state": "queuing"}})))
        .await;
    assert_eq!(
        detail(&back, 409),
        format!("Rollout {id}: cannot transition running -> queuing")
    );
    let done = gateway
        .ok(
            "PATCH",
            &path,
            Some(json!({"status": {"state": "succeeded", "error_message": "none"}})),
            200,
        )
        .await;
    assert_eq!(done["status"]["state"], "succeeded");
    assert_eq!(done["status"]["error_message"], "none");
    assert_eq!(done["status"]["version"], 3);
    let ours = gateway.store.get_rollout_by_id(&id).await.unwrap().unwrap();
    assert_eq!(ours.rollout.status, agl_store::RolloutStatus::Succeeded);
    detail(
        &gateway
            .call("PATCH", &path, Some(json!({"status": {"state": "failed"}})))
            .await,
        409,
    );
    // 1.0's status patch forbids other keys; states are its four.
    detail(
        &gateway
            .call("PATCH", &path, Some(json!({"status": {"colour": "red"}})))
            .await,
        422,
    );
    detail(
        &gateway
            .call("PATCH", &path, Some(json!({"status": {"state": "cancelled"}})))
            .await,
        422,
    );
    detail(
        &gateway
            .call(
                "PATCH",
                "/api/rollouts/ro-nope",
                Some(json!({"status": {"state": "failed"}})),
            )
            .await,
        404,
    );
}

#[tokio::test]
async fn delete_hides_the_rollout_cancels_it_and_is_idempotent() {
    let gateway = Gateway::start().await;
    let id = gateway.create(json!([{"input": 1}])).await[0]["rollout_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = format!("/api/rollouts/{id}");
    assert_eq!(gateway.call("DELETE", &path, None).await.status, 204);
    detail(&gateway.call("GET", &path, None).await, 404);
    detail(&gateway.call("GET", &format!("{path}/events"), None).await, 404);
    assert_eq!(gateway.call("DELETE", &path, None).await.status, 204);
    assert_eq!(gateway.call("DELETE", "/api/rollouts/ro-nope", None).await.status, 204);
    assert!(
        gateway
            .ok("GET", "/api/rollouts?state_in=queuing&state_in=failed", None, 200)
            .await
            .as_array()
            .unwrap()
            .is_empty()
    );
    // Kept in the store (a run's record), cancelled: no runner takes it.
    let ours = gateway.store.get_rollout_by_id(&id).await.unwrap().unwrap();
    assert_eq!(ours.rollout.status, agl_store::RolloutStatus::Cancelled);
    let taken = gateway
        .ok(
            "POST",
            "/v1/agl/queues/rollouts/dequeue",
            Some(json!({"limit": 1})),
            200,
        )
        .await;
    assert_eq!(taken, json!([]));
}

#[tokio::test]
async fn the_terminal_cursor_pages_finished_rollouts_in_completion_order() {
    let gateway = Gateway::start().await;
    let created = gateway
        .create(json!([
            {"input": {"data_id": "a"}}, {"input": {"instance_id": 7}}, {"input": "c", "is_train": false}
        ]))
        .await;
    let id = |i: usize| created[i]["rollout_id"].as_str().unwrap().to_owned();
    for (i, end) in [(1, "succeeded"), (0, "failed"), (2, "succeeded")] {
        let path = format!("/api/rollouts/{}", id(i));
        if end == "succeeded" {
            gateway
                .ok("PATCH", &path, Some(json!({"status": {"state": "running"}})), 200)
                .await;
        }
        gateway
            .ok("PATCH", &path, Some(json!({"status": {"state": end}})), 200)
            .await;
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let page = gateway
        .ok("GET", "/api/rollouts/terminal?after=0&limit=2", None, 200)
        .await;
    assert_eq!(
        page,
        json!({
            "items": [
                {"rollout_id": id(1), "state": "succeeded", "data_id": "7", "is_train": true},
                {"rollout_id": id(0), "state": "failed", "data_id": "a", "is_train": true},
            ],
            "next_after": 2,
            "total_terminal": 3,
        })
    );
    let page = gateway.ok("GET", "/api/rollouts/terminal?after=2", None, 200).await;
    assert_eq!(
        page["items"],
        json!([{"rollout_id": id(2), "state": "succeeded", "data_id": "", "is_train": false}])
    );
    assert_eq!(page["next_after"], 3);
    let page = gateway.ok("GET", "/api/rollouts/terminal?after=3", None, 200).await;
    assert_eq!(
        (page["items"].clone(), page["next_after"].clone()),
        (json!([]), json!(3))
    );
    // Out-of-range values are clamped as 1.0 does; non-integers are refused.
    let page = gateway
        .ok("GET", "/api/rollouts/terminal?after=-5&limit=0", None, 200)
        .await;
    assert_eq!(page["items"].as_array().unwrap().len(), 1);
    detail(&gateway.call("GET", "/api/rollouts/terminal?after=x", None).await, 422);
}

#[tokio::test]
async fn models_register_list_and_delete_with_versions_as_proxy_llm_resources() {
    let gateway = Gateway::start().await;
    assert_eq!(gateway.ok("GET", "/api/models", None, 200).await, json!([]));
    let registered = gateway
        .ok(
            "POST",
            "/api/models",
            Some(json!([{"model": "policy", "endpoint": "http://vllm-0:8000/v1"}])),
            201,
        )
        .await;
    assert_eq!(
        registered,
        json!([{"model": "policy", "endpoint": "http://vllm-0:8000/v1", "version": 0}])
    );
    let before = gateway.create(json!([{"input": "before"}])).await[0]["rollout_id"]
        .as_str()
        .unwrap()
        .to_owned();

    // A new version of the same server replaces it; another server joins; newest first.
    gateway
        .ok(
            "POST",
            "/api/models",
            Some(
                json!([{"model": "policy", "endpoint": "http://vllm-0:8000/v1", "version": 5},
                         {"model": "policy", "endpoint": "http://vllm-1:8000/v1", "version": 5}]),
            ),
            201,
        )
        .await;
    let listed = gateway.ok("GET", "/api/models", None, 200).await;
    assert_eq!(
        listed,
        json!([{"model": "policy", "endpoint": "http://vllm-0:8000/v1", "version": 5},
               {"model": "policy", "endpoint": "http://vllm-1:8000/v1", "version": 5}])
    );
    // Each registration is a resources version whose first proxy_llm names the model.
    let latest = gateway.ok("GET", "/v1/agl/resources/latest", None, 200).await;
    let first = latest["resources"]
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap()
        .clone();
    assert_eq!(first["resource_type"], "proxy_llm");
    assert_eq!(first["model"], "policy");
    // The first registered server is also `llm`, the resource agents look up.
    assert_eq!(latest["resources"]["llm"]["endpoint"], "http://vllm-0:8000/v1");
    assert_eq!(latest["resources"]["llm"]["resource_type"], "proxy_llm");
    let after = gateway.create(json!([{"input": "after"}])).await[0]["rollout_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let resources_of = |id: String| {
        let store = gateway.store.clone();
        async move {
            store
                .get_rollout_by_id(&id)
                .await
                .unwrap()
                .unwrap()
                .rollout
                .resources_id
        }
    };
    assert_ne!(resources_of(before).await, resources_of(after).await);

    let deleted = gateway.ok("DELETE", "/api/models", None, 200).await;
    assert_eq!(deleted, json!({"status": "ok"}));
    assert_eq!(gateway.ok("GET", "/api/models", None, 200).await, json!([]));
    let latest = gateway.ok("GET", "/v1/agl/resources/latest", None, 200).await;
    assert!(latest["resources"].get("llm").is_none(), "{latest}");
    detail(
        &gateway
            .call("POST", "/api/models", Some(json!([{"model": "", "endpoint": "x"}])))
            .await,
        422,
    );
    for endpoint in [
        "vllm:8000",
        "ftp://h/v1",
        "http:///v1",
        "http://user:pw@h/v1",
        "http://h/v1?x=1",
    ] {
        let answer = gateway
            .call(
                "POST",
                "/api/models",
                Some(json!([{"model": "m", "endpoint": endpoint}])),
            )
            .await;
        assert!(detail(&answer, 422).contains("API root"), "{endpoint}");
    }
    detail(
        &gateway.call("POST", "/api/models", Some(json!({"model": "m"}))).await,
        422,
    );
}

#[tokio::test]
async fn a_proxied_call_is_the_attempts_llm_span_and_its_model_request_event_in_both_formats() {
    let gateway = Gateway::start().await;
    // The trainer's model server, registered: the rollout's calls go there, not to the proxy's
    // own upstream.
    let backend = Arc::new(ScriptedBackend::from_json_str(RULES).expect("rules"));
    let registered = agl_testkit::llm_server::serve(backend, "127.0.0.1:0".parse().unwrap())
        .await
        .expect("registered model server");
    let endpoint = registered.base_url();
    gateway
        .ok(
            "POST",
            "/api/models",
            Some(json!([{"model": "policy", "endpoint": endpoint, "version": 7}])),
            201,
        )
        .await;
    let id = gateway.create(json!([{"input": {"q": "2+2"}}])).await[0]["rollout_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let events_path = format!("/api/rollouts/{id}/events");
    assert_eq!(gateway.ok("GET", &events_path, None, 200).await, json!([]));
    let (_, attempt) = gateway.dequeue().await;

    let proxy = format!("/proxy/rollout/{id}/attempt/{attempt}/mode/train/openai/v1/chat/completions");
    let answer = gateway
        .ok(
            "POST",
            &proxy,
            Some(json!({"messages": [{"role": "user", "content": "2+2?"}]})),
            200,
        )
        .await;
    assert_eq!(answer["choices"][0]["message"]["content"], "4");
    assert_eq!(
        (registered.chat_requests(), gateway.llm.chat_requests()),
        (1, 0),
        "the registered server answered, not the proxy's upstream"
    );
    assert_eq!(
        registered.last_body().map(|body| body["model"].clone()),
        Some(json!("policy"))
    );
    let spans = gateway
        .store
        .query_spans(&SpanQuery::for_rollout(id.clone()).attempt(attempt.clone()))
        .await
        .unwrap();
    assert_eq!(spans.items.len(), 1);
    assert!(agl_adapter::is_llm_call(&spans.items[0]));

    // The agent reports its reward and something of its own, as 1.0's runners post them.
    let attempt_events = format!("/api/rollouts/{id}/attempt/{attempt}/events");
    let posted = gateway
        .ok(
            "POST",
            &attempt_events,
            Some(json!({"event_type": "reward", "data": {"value": 0.75, "source": "agent", "message": "ok"}})),
            200,
        )
        .await;
    assert_eq!(posted["event_type"], "reward");
    assert_eq!(posted["attempt_id"], json!(attempt));
    gateway
        .ok(
            "POST",
            &attempt_events,
            Some(json!({"event_type": "tool_call", "data": {"name": "calc"}})),
            200,
        )
        .await;
    // Our adapter reads the posted reward as the attempt's final reward.
    let spans = gateway
        .store
        .query_spans(&SpanQuery::for_rollout(id.clone()).attempt(attempt.clone()))
        .await
        .unwrap();
    assert_eq!(agl_adapter::final_reward(&spans.items), Some(0.75));

    let raw = gateway.ok("GET", &events_path, None, 200).await;
    let kinds: Vec<&str> = raw
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event_type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["model_request", "reward", "tool_call"]);
    let call = &raw[0];
    assert_eq!(call["rollout_id"], json!(id));
    assert_eq!(call["attempt_id"], json!(attempt));
    let data = &call["data"];
    assert_eq!(data["model"], "policy");
    assert_eq!(data["model_version"], 7);
    assert_eq!(data["status"], "ok");
    assert_eq!(data["http_status"], 200);
    assert_eq!(data["retry_count"], 0);
    assert_eq!(
        data["request"]["messages"],
        json!([{"role": "user", "content": "2+2?"}])
    );
    assert_eq!(data["response"]["prompt_token_ids"], json!([11, 12, 13]));
    assert_eq!(data["response"]["choices"][0]["token_ids"], json!([21]));
    assert_eq!(data["response"]["choices"][0]["message"]["content"], "4");
    assert_eq!(data["server"]["version"], 7);
    assert_eq!(
        raw[1]["data"],
        json!({"value": 0.75, "source": "agent", "message": "ok"})
    );
    assert_eq!(raw[2]["data"], json!({"name": "calc"}));

    // What 1.0's verl rollout manager asks for: the triplet view.
    let triplet = gateway
        .ok("GET", &format!("{events_path}?format=triplet"), None, 200)
        .await;
    assert_eq!(
        triplet[0]["data"],
        json!({"prompt_token_ids": [11, 12, 13], "response_token_ids": [21], "response_log_probs": [-0.125],
               "server": {"model": "policy", "version": 7}, "http_status": 200, "status": "ok"})
    );
    assert_eq!(triplet[1]["data"], json!({"value": 0.75, "source": "agent"}));
    let rewards = gateway
        .ok("GET", &format!("{events_path}?event_type=reward"), None, 200)
        .await;
    assert_eq!(rewards.as_array().unwrap().len(), 1);
    let without = gateway
        .ok("GET", &format!("{events_path}?include_routed_experts=false"), None, 200)
        .await;
    assert_eq!(without, raw);
    detail(
        &gateway
            .call("GET", &format!("{events_path}?include_routed_experts=maybe"), None)
            .await,
        422,
    );
    let same = gateway.ok("GET", &attempt_events, None, 200).await;
    assert_eq!(same, raw);

    // An attempt that is not the rollout's, a rollout that does not exist, a bad event.
    detail(
        &gateway
            .call(
                "POST",
                &format!("/api/rollouts/{id}/attempt/at-nope/events"),
                Some(json!({"event_type": "x"})),
            )
            .await,
        404,
    );
    detail(
        &gateway
            .call(
                "POST",
                "/api/rollouts/ro-nope/attempt/a/events",
                Some(json!({"event_type": "x"})),
            )
            .await,
        404,
    );
    detail(
        &gateway
            .call("POST", &attempt_events, Some(json!({"event_type": ""})))
            .await,
        422,
    );
    detail(
        &gateway.call("POST", &attempt_events, Some(json!({"data": {}}))).await,
        422,
    );
    let bad_mode = proxy.replace("/mode/train/", "/mode/eval/");
    assert_eq!(gateway.call("POST", &bad_mode, Some(json!({}))).await.status, 404);
}

#[tokio::test]
async fn hostile_bodies_get_json_errors() {
    let gateway = Gateway::start().await;
    let bearer = format!("Bearer {KEY}");
    let auth = [("authorization", bearer.as_str())];
    for (method, path) in [
        ("POST", "/api/rollouts"),
        ("POST", "/api/models"),
        ("PATCH", "/api/rollouts/x"),
    ] {
        for body in ["{", "[1, 2]", "\"text\"", ""] {
            let answer = gateway.send(method, path, Some(body), &auth).await;
            assert!(
                matches!(answer.status, 404 | 422),
                "{method} {path} {body}: {} {}",
                answer.status,
                answer.body
            );
            assert!(answer.body["detail"].is_string(), "{}", answer.body);
        }
    }
    // Bodies past the server's limit are refused before they are read.
    let huge = format!(
        "[{{\"input\": \"{}\"}}]",
        "x".repeat(agl_server::DEFAULT_MAX_BODY_BYTES + 1)
    );
    detail(&gateway.send("POST", "/api/rollouts", Some(&huge), &auth).await, 413);
    // A rollout id that is not a path segment is refused, and so is our reserved metadata key.
    detail(
        &gateway
            .call(
                "POST",
                "/api/rollouts",
                Some(json!([{"input": 1, "metadata": {"agl.gateway": {}}}])),
            )
            .await,
        422,
    );
    detail(
        &gateway
            .call(
                "POST",
                "/api/rollouts",
                Some(json!([{"input": 1, "config": {"timeout_seconds": -1}}])),
            )
            .await,
        422,
    );
    assert_eq!(gateway.call("PUT", "/api/rollouts", None).await.status, 405);
}
