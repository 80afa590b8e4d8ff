//! Every request and response body captured from Agent-lightning 0.3.0 (client ↔ server,
//! `tests/fixtures/agentlightning-0.3/exchanges.jsonl`) parses into our types and serializes back
//! without loss. Responses must come back identical; requests identical up to `null` ≡ absent
//! (0.3.0's client sends some optional keys as `null` and leaves others out).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a test: a failed step panics and fails it"
)]

use agl_store::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

const EXCHANGES: &str = include_str!("fixtures/agentlightning-0.3/exchanges.jsonl");

/// Equality where a key holding `null` equals a missing key, at every depth.
fn same_up_to_nulls(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter()
                .all(|k| same_up_to_nulls(x.get(k).unwrap_or(&Value::Null), y.get(k).unwrap_or(&Value::Null)))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_up_to_nulls(p, q))
        }
        _ => a == b,
    }
}

fn round_trip<T: DeserializeOwned + Serialize>(body: &str, exact: bool) -> Result<(), String> {
    let original: Value = serde_json::from_str(body).map_err(|e| format!("not JSON: {e}"))?;
    let typed: T = serde_json::from_value(original.clone())
        .map_err(|e| format!("does not parse as {}: {e}", std::any::type_name::<T>()))?;
    let back = serde_json::to_value(&typed).map_err(|e| e.to_string())?;
    let same = if exact {
        back == original
    } else {
        same_up_to_nulls(&back, &original)
    };
    if same {
        Ok(())
    } else {
        Err(format!(
            "{} lost information:\n  sent: {original}\n  back: {back}",
            std::any::type_name::<T>()
        ))
    }
}

type Check = fn(&str, bool) -> Result<(), String>;

/// The request and response types of a route; `None` where the body is not JSON or is empty.
fn route_types(method: &str, path: &str) -> Option<(Option<Check>, Check)> {
    let path = path.split('?').next().unwrap_or(path);
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let tail: Vec<&str> = match parts.as_slice() {
        ["v1", "agl", rest @ ..] => rest.to_vec(),
        ["v1", "traces"] => return Some((None, |_, _| Ok(()))),
        _ => return None,
    };
    Some(match (method, tail.as_slice()) {
        ("GET", ["health"]) => (None, round_trip::<HealthResponse>),
        ("GET", ["statistics"]) => (None, round_trip::<Statistics>),
        ("POST", ["resources"]) | ("POST", ["resources", _]) => {
            (Some(round_trip::<NamedResources>), round_trip::<ResourcesUpdate>)
        }
        ("GET", ["resources"]) => (None, round_trip::<Paginated<ResourcesUpdate>>),
        ("GET", ["resources", _]) => (None, round_trip::<Option<ResourcesUpdate>>),
        ("POST", ["queues", "rollouts", "enqueue"]) => {
            (Some(round_trip::<EnqueueManyRequest>), round_trip::<Vec<Rollout>>)
        }
        ("POST", ["queues", "rollouts", "dequeue"]) => {
            (Some(round_trip::<DequeueRequest>), round_trip::<Vec<AttemptedRollout>>)
        }
        ("POST", ["rollouts"]) => (Some(round_trip::<StartRolloutRequest>), round_trip::<AttemptedRollout>),
        ("POST", ["rollouts", "search"]) => (Some(round_trip::<RolloutQuery>), round_trip::<Paginated<RolloutView>>),
        ("GET", ["rollouts", _]) => (None, round_trip::<Option<RolloutView>>),
        ("POST", ["rollouts", _]) => (Some(round_trip::<RolloutUpdate>), round_trip::<Rollout>),
        ("POST", ["rollouts", _, "attempts"]) => {
            (Some(round_trip::<StartAttemptRequest>), round_trip::<AttemptedRollout>)
        }
        ("POST", ["rollouts", _, "attempts", "search"]) => {
            (Some(round_trip::<AttemptQuery>), round_trip::<Paginated<Attempt>>)
        }
        ("GET", ["rollouts", _, "attempts", "latest"]) => (None, round_trip::<Option<Attempt>>),
        ("POST", ["rollouts", _, "attempts", _]) => (Some(round_trip::<AttemptUpdate>), round_trip::<Attempt>),
        ("POST", ["spans"]) => (Some(round_trip::<Span>), round_trip::<Option<Span>>),
        ("POST", ["spans", "next"]) => (
            Some(round_trip::<NextSequenceIdRequest>),
            round_trip::<NextSequenceIdResponse>,
        ),
        ("POST", ["spans", "search"]) => (Some(round_trip::<SpanQuery>), round_trip::<Paginated<Span>>),
        ("POST", ["workers", "search"]) => (Some(round_trip::<WorkerQuery>), round_trip::<Paginated<Worker>>),
        ("GET", ["workers", _]) => (None, round_trip::<Option<Worker>>),
        ("POST", ["workers", _]) => (Some(round_trip::<WorkerUpdate>), round_trip::<Worker>),
        ("POST", ["waits", "rollouts"]) => (Some(round_trip::<WaitForRolloutsRequest>), round_trip::<Vec<Rollout>>),
        _ => return None,
    })
}

#[test]
fn every_captured_body_round_trips_through_our_types() {
    let mut failures = Vec::new();
    let mut checked = 0;
    let mut skipped_truncated = 0;
    for (line_no, line) in EXCHANGES.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let exchange: Value = serde_json::from_str(line).expect("fixture lines are JSON");
        let method = exchange["method"].as_str().unwrap_or_default();
        let path = exchange["path"].as_str().unwrap_or_default();
        let status = exchange["status"].as_u64().unwrap_or_default();
        let Some((request_check, response_check)) = route_types(method, path) else {
            failures.push(format!("line {}: no type for {method} {path}", line_no + 1));
            continue;
        };
        let response_check: Check = if status >= 400 {
            round_trip::<ErrorBody>
        } else {
            response_check
        };
        let request_body = exchange["req_body"].as_str().unwrap_or_default();
        let response_body = exchange["resp_body"].as_str().unwrap_or_default();
        if let Some(check) = request_check.filter(|_| !request_body.is_empty()) {
            checked += 1;
            if let Err(e) = check(request_body, false) {
                failures.push(format!("line {} request of {method} {path}: {e}", line_no + 1));
            }
        }
        // 0.3.0's 500 answers carry a Python traceback that the capture cut short: not JSON.
        let truncated_5xx = status >= 500 && serde_json::from_str::<Value>(response_body).is_err();
        if truncated_5xx {
            skipped_truncated += 1;
        } else if !response_body.is_empty() && path != "/v1/traces" {
            checked += 1;
            if let Err(e) = response_check(response_body, true) {
                failures.push(format!("line {} response of {method} {path}: {e}", line_no + 1));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} bodies failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(skipped_truncated <= 4, "{skipped_truncated} unreadable 5xx bodies");
    assert!(
        checked >= 76,
        "only {checked} bodies were checked: is the fixture complete?"
    );
}

#[test]
fn span_keys_unknown_to_the_model_are_kept() {
    let body = r#"{"rollout_id":"ro-1","attempt_id":"at-1","sequence_id":1,"trace_id":"t","span_id":"s",
        "parent_id":null,"name":"n","status":{"status_code":"OK","description":null,"x":1},"attributes":{},
        "events":[{"name":"e","attributes":{},"timestamp":null,"dropped":2}],"links":[],"start_time":null,
        "end_time":null,"context":null,"parent":null,"resource":{"attributes":{},"schema_url":""},
        "custom_field":{"nested":[1,2]}}"#;
    round_trip::<Span>(body, true).unwrap();
    let span: Span = serde_json::from_str(body).unwrap();
    assert_eq!(span.extra["custom_field"]["nested"][1], 2);
}

#[test]
fn update_bodies_distinguish_null_from_absent() {
    let update: RolloutUpdate = serde_json::from_str(r#"{"metadata": null, "input": null}"#).unwrap();
    assert_eq!(update.metadata, Some(None));
    assert_eq!(update.input, Some(Value::Null));
    assert_eq!(update.mode, None);
    let update: RolloutUpdate = serde_json::from_str(r#"{"status": "cancelled"}"#).unwrap();
    assert_eq!(update.status, Some(RolloutStatus::Cancelled));
    assert_eq!(update.metadata, None);
}

#[test]
fn a_bad_status_or_resource_type_is_a_parse_error_not_a_panic() {
    assert!(serde_json::from_str::<AttemptUpdate>(r#"{"status": "exploded"}"#).is_err());
    assert!(serde_json::from_str::<NamedResources>(r#"{"p": {"resource_type": "banana"}}"#).is_err());
    assert!(serde_json::from_str::<RolloutConfig>(r#"{"max_attempts": -1}"#).is_err());
}
