//! `agl-host export --format tokens` end to end: `examples/tool-agent` run by `agl-host dev`
//! against a scripted model that reports token ids and logprobs as vLLM would (the rules'
//! `tokens`), its lookups not granted (each tool call answers `error: ...`, the observation the
//! second call's prompt carries). Per attempt: calls whose prompt tokens continue the last call's
//! are one row with the observation masked, a call that does not continue starts a row, a call
//! without token ids is a row saying so (and a warning on stderr); the same lines come from
//! `agl-host store`'s `GET /v1/agl/export/tokens`.

use serde_json::{Value, json};
use std::ffi::OsString;
use std::path::Path;

use crate::agents::*;
use crate::support::ServerProcess;

/// The rules: each country's first call asks for the tool, its second answers after the tool's
/// error. Australia's second prompt continues its first call's tokens (6, 7, 8: the observation),
/// Canada's does not (99 where 23 was), Japan's second call reports no token ids.
fn scripted_rules() -> Value {
    let tool_call = |country: &str| json!([{"name": "lookup_capital", "arguments": {"country": country}}]);
    let after_tool = |country: &str| json!([{"role": "tool", "last": true, "matches": "^error: "}, {"role": "user", "contains": country}]);
    let logprobs = |values: &[f64]| -> Value { values.iter().map(|x| json!({"token": "t", "logprob": x})).collect() };
    json!({
        "model": "policy-v1",
        "rules": [
            {"when": after_tool("Australia"), "reply": "The capital is Canberra.",
             "tokens": {"prompt_token_ids": [1, 2, 3, 4, 5, 6, 7, 8], "response_token_ids": [9, 10],
                        "logprobs": logprobs(&[-0.5, -0.25])}},
            {"when": after_tool("Canada"), "reply": "Ottawa.",
             "tokens": {"prompt_token_ids": [20, 21, 22, 99, 24], "response_token_ids": [25]}},
            {"when": after_tool("Japan"), "reply": "I could not look it up."},
            {"when": [{"role": "user", "contains": "capital of Australia"}], "tool_calls": tool_call("Australia"),
             "tokens": {"prompt_token_ids": [1, 2, 3], "response_token_ids": [4, 5],
                        "logprobs": logprobs(&[-0.125, -0.0625])}},
            {"when": [{"role": "user", "contains": "capital of Canada"}], "tool_calls": tool_call("Canada"),
             "tokens": {"prompt_token_ids": [20, 21, 22], "response_token_ids": [23]}},
            {"when": [{"role": "user", "contains": "capital of Japan"}], "tool_calls": tool_call("Japan"),
             "tokens": {"prompt_token_ids": [30], "response_token_ids": [31]}}
        ]
    })
}

/// Runs the tool agent on three questions, kept in `dir/run.db`.
fn run(dir: &Path) -> String {
    let example = repo().join("examples/tool-agent");
    let rules = dir.join("rules.json");
    std::fs::write(&rules, scripted_rules().to_string()).expect("rules written");
    let train = dir.join("train.jsonl");
    let tasks: String = [("Australia", "Canberra"), ("Canada", "Ottawa"), ("Japan", "Tokyo")]
        .iter()
        .map(|(country, capital)| {
            format!(
                "{}\n",
                json!({"question": format!("What is the capital of {country}?"), "answer": capital})
            )
        })
        .collect();
    std::fs::write(&train, tasks).expect("tasks written");
    let db = format!("sqlite:{}", dir.join("run.db").display());
    let mut args: Vec<OsString> = vec!["dev".into(), "--agent".into(), example.clone().into()];
    args = with_files(args, &example, &[("--resources", "initial-resources.json")]);
    args.extend([
        "--train".into(),
        train.into(),
        "--llm-script".into(),
        rules.into(),
        "--db".into(),
        db.clone().into(),
        "--output".into(),
        dir.join("results.json").into(),
    ]);
    let ran = agl_host(&args);
    assert!(ran.status.success(), "{}", text(&ran));
    db
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect()
}

/// `agl-host export ARGS --format tokens`: the lines and stderr.
fn export_tokens(args: &[&str]) -> (Vec<Value>, String) {
    let mut all = vec!["export"];
    all.extend_from_slice(args);
    all.extend(["--format", "tokens"]);
    let exported = agl_host(&all);
    assert!(exported.status.success(), "{}", text(&exported));
    (
        json_lines(&String::from_utf8_lossy(&exported.stdout)),
        String::from_utf8_lossy(&exported.stderr).into_owned(),
    )
}

/// The rows of the attempt whose question names `country`.
fn rows_about<'a>(lines: &'a [Value], country: &str) -> Vec<&'a Value> {
    lines
        .iter()
        .filter(|line| line["input"]["question"].as_str().is_some_and(|q| q.contains(country)))
        .collect()
}

/// A row's token fields, for comparing with what the rules say.
fn tokens_of(row: &Value) -> Value {
    json!({
        "calls": row["calls"], "prompt_token_ids": row["prompt_token_ids"],
        "response_token_ids": row["response_token_ids"], "loss_mask": row["loss_mask"],
        "logprobs": row["logprobs"], "missing_token_ids": row["missing_token_ids"],
    })
}

#[test]
fn token_rows_merge_continuing_calls_mask_observations_and_report_missing_ids() {
    let dir = scratch("agl-export-tokens", "rows");
    let db = run(&dir);
    let (lines, said) = export_tokens(&["--db", &db]);
    assert_eq!(lines.len(), 5, "{lines:#?}");
    assert!(
        said.contains("warning: 1 LLM call of 1 attempt recorded no token ids"),
        "{said}"
    );

    let australia = rows_about(&lines, "Australia");
    assert_eq!(australia.len(), 1, "the two calls merge: {australia:#?}");
    let row = australia[0];
    assert_eq!(
        tokens_of(row),
        json!({
            "calls": [0, 1], "prompt_token_ids": [1, 2, 3],
            "response_token_ids": [4, 5, 6, 7, 8, 9, 10],
            "loss_mask": [0, 0, 0, 1, 1, 0, 0, 0, 1, 1],
            "logprobs": [-0.125, -0.0625, 0.0, 0.0, 0.0, -0.5, -0.25],
            "missing_token_ids": false,
        })
    );
    assert_eq!(row["reward"], 1.0, "{row:#}");
    assert_eq!(row["rewards"], json!([{"name": "primary", "value": 1.0}]), "{row:#}");
    assert_eq!(row["model"], "policy-v1", "{row:#}");
    assert!(row["resources_id"].is_string(), "the resources version: {row:#}");
    assert_eq!(row["index"], 0);
    assert_eq!(row["span_ids"].as_array().map(Vec::len), Some(2), "{row:#}");

    let canada: Vec<Value> = rows_about(&lines, "Canada").into_iter().map(tokens_of).collect();
    assert_eq!(
        canada,
        [
            json!({"calls": [0], "prompt_token_ids": [20, 21, 22], "response_token_ids": [23],
                   "loss_mask": [0, 0, 0, 1], "logprobs": null, "missing_token_ids": false}),
            json!({"calls": [1], "prompt_token_ids": [20, 21, 22, 99, 24], "response_token_ids": [25],
                   "loss_mask": [0, 0, 0, 0, 0, 1], "logprobs": null, "missing_token_ids": false}),
        ],
        "the second prompt does not continue the first call's tokens: two rows"
    );

    let japan = rows_about(&lines, "Japan");
    let japan_tokens: Vec<Value> = japan.iter().map(|row| tokens_of(row)).collect();
    assert_eq!(
        japan_tokens,
        [
            json!({"calls": [0], "prompt_token_ids": [30], "response_token_ids": [31],
                   "loss_mask": [0, 1], "logprobs": null, "missing_token_ids": false}),
            json!({"calls": [1], "prompt_token_ids": [], "response_token_ids": [],
                   "loss_mask": [], "logprobs": null, "missing_token_ids": true}),
        ]
    );
    assert_eq!((&japan[0]["reward"], &japan[1]["index"]), (&json!(0.0), &json!(1)));
}

#[test]
fn the_store_serves_the_same_token_rows_over_http() {
    let dir = scratch("agl-export-tokens", "served");
    let db = run(&dir);
    let (from_file, _) = export_tokens(&["--db", &db]);
    let store = ServerProcess::agl_host_store(&["--db", &db, "--token", "secret"]);
    let (over_cli, _) = export_tokens(&["--store", &store.url, "--token", "secret"]);
    let client = reqwest::blocking::Client::new();
    let get = |query: &str| {
        client
            .get(format!("{}/v1/agl/export/tokens{query}", store.url))
            .bearer_auth("secret")
            .send()
            .expect("the store answers")
    };
    let response = get("");
    assert_eq!(response.status(), 200);
    let header = |name: &str| response.headers()[name].to_str().expect("text").to_owned();
    assert_eq!(header("content-type"), "application/x-ndjson");
    assert_eq!(
        (header("x-agl-export-lines"), header("x-agl-missing-token-ids")),
        ("5".into(), "1".into())
    );
    let over_http = json_lines(&response.text().expect("a body"));
    assert_eq!(over_http, over_cli, "the route's lines are `export --store`'s");
    assert_eq!(over_http.len(), from_file.len());
    for (http, file) in over_http.iter().zip(&from_file) {
        assert_eq!(http["run_id"], Value::Null);
        let mut http = http.clone();
        http["run_id"] = file["run_id"].clone();
        assert_eq!(&http, file);
    }

    // The command's filters: the attempts rewarded 1 (Australia's row, Canada's two).
    let rewarded = json_lines(
        &get("?min_reward=1&status=succeeded,failed&mode=train")
            .text()
            .expect("a body"),
    );
    let (filtered, _) = export_tokens(&["--store", &store.url, "--token", "secret", "--min-reward", "1"]);
    assert_eq!(rewarded.len(), 3, "{rewarded:#?}");
    assert_eq!(rewarded, filtered);
    for (query, status) in [
        ("?min_reward=lots", 422),
        ("?mode=eval", 422),
        ("?resources_version=rs-nope", 404),
    ] {
        assert_eq!(get(query).status(), status, "{query}");
    }
}
