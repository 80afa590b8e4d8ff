//! End-to-end: `agl-host run --algo gepa` on the math agent under the scripted LLM of
//! `plugins/gepa/examples/math-rules.json`, in which the seed prompt scores 0.5 on val (half the
//! answers end with a stray number) and the reflection model, shown a minibatch with a zero
//! reward, answers with the instruction that fixes it ("final answer as a number on the last
//! line"), except for a minibatch with the apples question, which gets a malformed answer.

use serde_json::{Value, json};

use crate::agents::{agl_host, read_results, repo, scratch, text};

/// `agl-host run --agent examples/math-agent --algo gepa` with `config`; the results file.
fn run_gepa(name: &str, config: &Value) -> Value {
    let dir = scratch("agl-cli-gepa", name);
    let math = repo().join("examples/math-agent");
    let (config_file, out) = (dir.join("config.json"), dir.join("results.json"));
    std::fs::write(&config_file, config.to_string()).expect("config");
    let mut args = vec!["run".into(), "--agent".into(), math.clone().into_os_string()];
    args.extend(["--algo".into(), "gepa".into()]);
    for (flag, path) in [
        ("--train", math.join("data/train.jsonl")),
        ("--val", math.join("data/val.jsonl")),
        ("--resources", math.join("apo/seed-resources.json")),
        ("--llm-script", repo().join("plugins/gepa/examples/math-rules.json")),
        ("--algo-config", config_file),
        ("--output", out.clone()),
    ] {
        args.push(flag.into());
        args.push(path.into_os_string());
    }
    args.extend(["--runners".into(), "2".into()]);
    let output = agl_host(&args);
    assert!(output.status.success(), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("GEPA: best candidate"),
        "the report is printed: {stdout}"
    );
    read_results(&out)
}

#[test]
fn gepa_accepts_a_reflective_mutation_that_raises_val_and_keeps_its_lineage_front_and_budgets() {
    let config = json!({"seed": 42, "max_rollouts": 90, "max_reflection_calls": 4, "use_merge": true});
    let first = run_gepa("a", &config);
    assert_eq!(first["status"], "completed", "{first:#}");
    let summary = &first["algorithm_summary"];

    // The seed, then an accepted mutation of `prompt` that raised the val score 0.5 -> 1.0.
    assert_eq!(summary["components"], json!(["prompt"]));
    let candidates = summary["candidates"].as_array().expect("candidates");
    assert_eq!(candidates[0]["origin"]["kind"], "seed");
    assert_eq!(summary["seed_candidate"]["score"].as_f64(), Some(0.5), "{summary:#}");
    let mutated = candidates
        .iter()
        .find(|c| c["origin"]["kind"] == "mutation")
        .unwrap_or_else(|| panic!("an accepted mutation: {summary:#}"));
    assert_eq!(mutated["origin"]["component"], "prompt");
    let parent = candidates
        .iter()
        .find(|c| c["resources_id"] == mutated["parents"][0])
        .expect("its parent is a candidate");
    assert!(
        mutated["val_score"].as_f64() > parent["val_score"].as_f64(),
        "the mutation raised the val score: {summary:#}"
    );
    assert_eq!(summary["best"]["score"].as_f64(), Some(1.0), "{summary:#}");
    let best_prompt = summary["best"]["components"]["prompt"].as_str().expect("best prompt");
    assert!(
        best_prompt.contains("final answer as a number on the last line"),
        "{best_prompt}"
    );
    assert!(best_prompt.contains("{question}"), "placeholders kept: {best_prompt}");
    // The host's best is GEPA's, with its resources version.
    assert_eq!(first["best"]["resources_id"], summary["best"]["resources_id"]);
    assert_eq!(first["best"]["resources"]["prompt"]["template"], best_prompt);

    // The lineage: the accepted proposal names its parent, component, minibatch and scores.
    let proposals = summary["proposals"].as_array().expect("proposals");
    let accepted = proposals
        .iter()
        .find(|p| p["resources_id"] == mutated["resources_id"])
        .expect("the accepted proposal");
    assert_eq!(accepted["accepted"], true);
    assert_eq!(
        (accepted["kind"].as_str(), accepted["split"].as_str()),
        (Some("mutation"), Some("train"))
    );
    assert_eq!(accepted["parents"], mutated["parents"]);
    assert_eq!(accepted["minibatch"].as_array().map(Vec::len), Some(3));
    let sum = |v: &Value| {
        v.as_array()
            .expect("scores")
            .iter()
            .filter_map(Value::as_f64)
            .sum::<f64>()
    };
    assert!(
        sum(&accepted["scores"]) > sum(&accepted["parent_scores"][0]),
        "{accepted:#}"
    );
    assert_eq!(accepted["val_score"], mutated["val_score"]);

    // The front: every val task's best is 1.0, held by the mutated candidate.
    let front = summary["pareto_front"].as_array().expect("front");
    assert_eq!(front.len(), 8);
    for task in front {
        assert_eq!(task["score"].as_f64(), Some(1.0), "{task}");
        assert!(
            task["candidates"]
                .as_array()
                .expect("ids")
                .contains(&mutated["resources_id"]),
            "{task}"
        );
    }

    // Budgets: within the limits, and what the run counted.
    let budget = &summary["budget"];
    let rollouts = budget["rollouts_used"].as_u64().expect("rollouts used");
    assert!(rollouts <= 90, "{budget}");
    let ran = first["splits"]["train"]["rollouts"].as_u64().unwrap_or(0)
        + first["splits"]["val"]["rollouts"].as_u64().unwrap_or(0);
    assert_eq!(ran, rollouts, "every rollout counted");
    let reflections = budget["reflection_calls_used"].as_u64().expect("reflections used");
    assert!((1..=4).contains(&reflections), "{budget}");
    // The reflection calls are the algorithm's LLM calls, not the agent's.
    assert_eq!(first["algorithm_llm_calls"].as_u64(), Some(reflections), "{first:#}");
    assert!(
        summary["stopped_because"]
            .as_str()
            .is_some_and(|s| s.contains("budget") || s.contains("already solved")),
        "{summary:#}"
    );
    // With one component there is nothing to merge: the merge found none and the run went on.
    assert!(summary["skipped"]["no_merge_found"].as_u64() >= Some(1), "{summary:#}");

    // The same seed, the same run.
    let second = run_gepa("b", &config);
    for key in [
        "best",
        "candidates",
        "proposals",
        "pareto_front",
        "budget",
        "skipped",
        "iterations",
    ] {
        assert_eq!(
            first["algorithm_summary"][key], second["algorithm_summary"][key],
            "{key} differs"
        );
    }
}

#[test]
fn gepa_skips_a_malformed_reflection_answer_within_its_budget() {
    // Seed 9 draws the apples question into the first minibatch it reflects on: the answer has no
    // fence and no `{question}`, a malformed answer, counted against the budget and skipped; the
    // next reflection gives the accepted mutation.
    let config = json!({"seed": 9, "max_rollouts": 60, "max_reflection_calls": 3});
    let results = run_gepa("malformed", &config);
    let summary = &results["algorithm_summary"];
    let budget = &summary["budget"];
    assert_eq!(summary["skipped"]["malformed_answers"], 1, "{summary:#}");
    assert_eq!(budget["reflection_calls_used"], 2, "{budget}");
    assert!(budget["rollouts_used"].as_u64() <= Some(60), "{budget}");
    let proposals = summary["proposals"].as_array().expect("proposals");
    assert_eq!(proposals.len(), 1, "the malformed answer made no proposal: {summary:#}");
    assert_eq!(proposals[0]["accepted"], true);
    assert_eq!(summary["best"]["score"].as_f64(), Some(1.0), "{summary:#}");
    assert_eq!(results["algorithm_llm_calls"], 2);
}

/// `agl-host run --agent examples/gepa-two-prompts --algo gepa` with the example's data, seed
/// resources and config, results into `out`; the LLM is `llm` (`--llm-script FILE` or
/// `--llm-endpoint URL --llm-model scripted`).
pub(crate) fn two_prompts_args(out: &std::path::Path, llm: &[std::ffi::OsString]) -> Vec<std::ffi::OsString> {
    let example = repo().join("examples/gepa-two-prompts");
    let mut args: Vec<std::ffi::OsString> = vec!["run".into(), "--agent".into(), example.clone().into()];
    args.extend(["--algo".into(), "gepa".into()]);
    for (flag, path) in [
        ("--train", example.join("data/train.jsonl")),
        ("--val", example.join("data/val.jsonl")),
        ("--resources", example.join("seed-resources.json")),
        ("--algo-config", example.join("gepa-config.json")),
        ("--output", out.to_path_buf()),
    ] {
        args.push(flag.into());
        args.push(path.into_os_string());
    }
    args.extend(llm.iter().cloned());
    args
}

/// The example's rules file, as `--llm-script` arguments.
pub fn two_prompts_script() -> Vec<std::ffi::OsString> {
    vec![
        "--llm-script".into(),
        repo().join("examples/gepa-two-prompts/rules.json").into_os_string(),
    ]
}

#[test]
fn gepa_mutates_each_of_two_prompts_and_merges_their_fixes() {
    // examples/gepa-two-prompts: the `format` fix and the `system` fix each solve a different
    // third of the val tasks; seed 10 mutates each from the seed, then merges them.
    let dir = scratch("agl-cli-gepa", "two-prompts");
    let out = dir.join("results.json");
    let db = format!("sqlite:{}", dir.join("run.db").display());
    let mut args = two_prompts_args(&out, &two_prompts_script());
    args.extend(["--db".into(), db.clone().into()]);
    let run = agl_host(args);
    assert!(run.status.success(), "{}", text(&run));
    let results = read_results(&out);
    // Every rollout GEPA ran replays identically from its recording.
    let rollouts = results["total"]["rollouts"].as_u64().expect("a count");
    crate::python_agents::assert_every_attempt_replays_identically(&db, usize::try_from(rollouts).unwrap_or(0));
    let summary = &results["algorithm_summary"];
    assert_eq!(summary["components"], json!(["format", "system"]));
    let candidates = summary["candidates"].as_array().expect("candidates");
    let by_id = |id: &Value| {
        candidates
            .iter()
            .find(|c| &c["resources_id"] == id)
            .unwrap_or_else(|| panic!("candidate {id}: {summary:#}"))
    };
    let seed = &candidates[0];
    assert_eq!(seed["origin"]["kind"], "seed");
    assert_eq!(seed["val_score"].as_f64(), Some(2.0 / 6.0), "{summary:#}");

    // Both components were mutated, each from the seed, each by the fix its feedback named.
    let mutation_of = |component: &str| {
        candidates
            .iter()
            .find(|c| c["origin"]["kind"] == "mutation" && c["origin"]["component"] == component)
            .unwrap_or_else(|| panic!("an accepted mutation of `{component}`: {summary:#}"))
    };
    let (format, system) = (mutation_of("format"), mutation_of("system"));
    for (child, fix) in [
        (format, "a number alone on the last line"),
        (system, "Answer in the unit the question asks for"),
    ] {
        assert_eq!(child["parents"], json!([seed["resources_id"]]), "{child:#}");
        let component = child["origin"]["component"].as_str().expect("component");
        let text = child["components"][component].as_str().expect("text");
        assert!(text.contains(fix), "{text}");
        // The other component is the seed's.
        let other = if component == "format" { "system" } else { "format" };
        assert_eq!(child["components"][other], seed["components"][other]);
    }
    assert!(
        format["components"]["format"]
            .as_str()
            .is_some_and(|t| t.contains("{question}")),
        "placeholder kept"
    );
    // Each wins val tasks the other loses: both stay on the front.
    let scores = |c: &Value| -> Vec<f64> {
        c["val_scores"]
            .as_array()
            .expect("val scores")
            .iter()
            .filter_map(Value::as_f64)
            .collect()
    };
    let (f, s) = (scores(format), scores(system));
    assert!(
        f.iter().zip(&s).any(|(a, b)| a > b) && s.iter().zip(&f).any(|(a, b)| a > b),
        "{f:?} {s:?}"
    );

    // The merge over the seed takes each parent's fix and beats both on val.
    let merged = candidates
        .iter()
        .find(|c| c["origin"]["kind"] == "merge")
        .unwrap_or_else(|| panic!("an accepted merge: {summary:#}"));
    assert_eq!(merged["origin"]["ancestor"], seed["resources_id"]);
    let mut parents: Vec<&Value> = merged["parents"].as_array().expect("parents").iter().collect();
    parents.sort_by_key(|id| by_id(id)["index"].as_u64());
    assert_eq!(parents, [&format["resources_id"], &system["resources_id"]]);
    assert_eq!(merged["components"]["format"], format["components"]["format"]);
    assert_eq!(merged["components"]["system"], system["components"]["system"]);
    assert_eq!(merged["val_score"].as_f64(), Some(1.0), "{summary:#}");
    for parent in [format, system] {
        assert!(
            merged["val_score"].as_f64() > parent["val_score"].as_f64(),
            "{summary:#}"
        );
    }
    let proposal = summary["proposals"]
        .as_array()
        .expect("proposals")
        .iter()
        .find(|p| p["kind"] == "merge" && p["accepted"] == true)
        .expect("the merge's proposal");
    assert_eq!(proposal["resources_id"], merged["resources_id"]);
    assert_eq!(proposal["split"], "val");
    let sums: Vec<f64> = proposal["parent_scores"]
        .as_array()
        .expect("parent scores")
        .iter()
        .map(|s| s.as_array().expect("scores").iter().filter_map(Value::as_f64).sum())
        .collect();
    let merged_sum: f64 = proposal["scores"]
        .as_array()
        .expect("scores")
        .iter()
        .filter_map(Value::as_f64)
        .sum();
    assert!(sums.iter().all(|&p| merged_sum > p), "{proposal:#}");
    // The merge's full val run reused the outcomes of its val subsample (the evaluation cache).
    let subsample = proposal["minibatch"].as_array().expect("subsample").len() as u64;
    assert!(
        summary["cache_hits"].as_u64() >= Some(subsample),
        "{subsample} cached: {}",
        summary["cache_hits"]
    );

    // The best is the merge; the front holds it on every val task, beside each task's other bests.
    assert_eq!(summary["best"]["resources_id"], merged["resources_id"]);
    assert_eq!(results["best"]["resources_id"], merged["resources_id"]);
    let front = summary["pareto_front"].as_array().expect("front");
    assert_eq!(front.len(), 6);
    for (t, task) in front.iter().enumerate() {
        assert_eq!(task["score"].as_f64(), Some(1.0), "{task}");
        let ids = task["candidates"].as_array().expect("ids");
        assert!(ids.contains(&merged["resources_id"]), "{task}");
        // The format fix's tasks are the system fix's losses, and the reverse.
        assert_eq!(ids.contains(&format["resources_id"]), f[t] == 1.0, "{task}");
        assert_eq!(ids.contains(&system["resources_id"]), s[t] == 1.0, "{task}");
    }
    let budget = &summary["budget"];
    assert!(
        budget["rollouts_used"].as_u64() <= budget["max_rollouts"].as_u64(),
        "{budget}"
    );
    assert_eq!(budget["reflection_calls_used"], 2, "one reflection per fix: {budget}");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.contains("merge over v0"), "{stdout}");
}
