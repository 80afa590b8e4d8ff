//! Secrets kept out of the run record: the command line a run keeps (`agl-host show`, `runs
//! --json`, the dashboard's `/v1/agl-host/run`) with the password of every URL, the secret
//! values of a URL's query, the value of every flag named for a secret (token, key, password,
//! secret, ...) and the values of `--agent-env NAME=VALUE` replaced by [`MARK`]. `--resume` asks
//! for the hidden values again ([`restore`]).

use crate::args::Cli;
use crate::inputs::InputError;
use clap::CommandFactory;
use std::ffi::OsString;

/// What stands in for a hidden value.
pub const MARK: &str = "***";

/// Words in a flag's name that say its value is a secret.
const SECRET_WORDS: [&str; 8] = [
    "token",
    "key",
    "password",
    "passwd",
    "secret",
    "credential",
    "auth",
    "cookie",
];

/// The flag whose values are environment assignments (`NAME=VALUE`).
const ENV_FLAG: &str = "agent-env";

/// `argv` (the subcommand first, the program's name left out) as the run record keeps it.
pub fn command_line(argv: impl IntoIterator<Item = OsString>) -> Vec<String> {
    let words: Vec<String> = argv.into_iter().map(|a| a.to_string_lossy().into_owned()).collect();
    let subcommand = words.first().cloned().unwrap_or_default();
    let mut kept = Vec::with_capacity(words.len());
    let mut rest = words.into_iter().peekable();
    while let Some(word) = rest.next() {
        let Some(flag) = word.strip_prefix("--").filter(|f| !f.is_empty()) else {
            kept.push(hide_in_url(&word));
            continue;
        };
        if let Some((name, value)) = flag.split_once('=') {
            kept.push(format!("--{name}={}", hide_value(name, value)));
            continue;
        }
        let takes_value = rest
            .peek()
            .is_some_and(|next| !next.starts_with("--") && takes_value(&subcommand, flag, next));
        kept.push(word.clone());
        if takes_value && let Some(value) = rest.next() {
            kept.push(hide_value(flag, &value));
        }
    }
    kept
}

/// Whether `--flag` of `subcommand` takes a value (`next` is it); a flag the command line does
/// not know takes `next` unless it looks like a flag.
fn takes_value(subcommand: &str, flag: &str, next: &str) -> bool {
    let mut cli = Cli::command();
    cli.build();
    let known = cli
        .find_subcommand(subcommand)
        .into_iter()
        .flat_map(|sub| sub.get_arguments())
        .chain(cli.get_arguments())
        .find(|arg| arg.get_long() == Some(flag))
        .map(|arg| arg.get_num_args().is_none_or(|n| n.takes_values()));
    known.unwrap_or(!next.starts_with('-'))
}

/// Whether a flag named `name` (without its dashes) holds a secret. A flag naming an environment
/// variable (`--llm-api-key-env NAME`) does not.
fn is_secret_flag(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    !name.ends_with("-env") && SECRET_WORDS.iter().any(|word| name.contains(word))
}

/// The value of `--name` as kept.
fn hide_value(name: &str, value: &str) -> String {
    if name == ENV_FLAG {
        return match value.split_once('=') {
            Some((variable, _)) => format!("{variable}={MARK}"),
            None => value.to_owned(),
        };
    }
    if is_secret_flag(name) {
        return MARK.to_owned();
    }
    hide_in_url(value)
}

/// `text` with, if it is a URL, its password and the secret values of its query hidden:
/// `http://user:KEY@host/v1?api_key=K` → `http://user:***@host/v1?api_key=***`.
fn hide_in_url(text: &str) -> String {
    let Some((scheme, rest)) = text.split_once("://") else {
        return text.to_owned();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((user_info, host)) => match user_info.split_once(':') {
            Some((user, _password)) => format!("{user}:{MARK}@{host}"),
            None => authority.to_owned(),
        },
        None => authority.to_owned(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let (query, fragment) = match query.split_once('#') {
                Some((query, fragment)) => (query, Some(fragment)),
                None => (query, None),
            };
            let query: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((name, _)) if is_secret_flag(name) || name.eq_ignore_ascii_case("sig") => {
                        format!("{name}={MARK}")
                    }
                    _ => pair.to_owned(),
                })
                .collect();
            let fragment = fragment.map_or_else(String::new, |f| format!("#{f}"));
            format!("{path}?{}{fragment}", query.join("&"))
        }
        None => tail.to_owned(),
    };
    format!("{scheme}://{authority}{tail}")
}

/// For `--resume`: the recorded command line `words` with each hidden value given again in
/// `given` (the flags written beside `--resume RUN`, as `--flag VALUE` or `--flag=VALUE`).
/// Refuses a flag given whose value was not hidden, and names those still hidden.
pub fn restore(run_id: &str, words: &mut [String], given: &[String]) -> Result<(), InputError> {
    let mut offered = pairs(given)?;
    let mut missing = Vec::new();
    for at in 0..words.len() {
        if !words[at].contains(MARK) {
            continue;
        }
        // `--name=VALUE`, or `--name` then VALUE.
        let (name, inline) = match words[at].strip_prefix("--").and_then(|f| f.split_once('=')) {
            Some((name, _)) => (name.to_owned(), true),
            None => match at.checked_sub(1).and_then(|before| words[before].strip_prefix("--")) {
                Some(name) if !name.contains('=') => (name.to_owned(), false),
                _ => continue,
            },
        };
        let hidden = if inline {
            words[at].split_once('=').map_or("", |(_, value)| value).to_owned()
        } else {
            words[at].clone()
        };
        let variable = (name == ENV_FLAG).then(|| hidden.split_once('=').map_or("", |(v, _)| v).to_owned());
        let found = offered.iter().position(|(flag, value)| {
            *flag == name
                && variable
                    .as_deref()
                    .is_none_or(|v| value.split_once('=').is_some_and(|(w, _)| w == v))
        });
        match found {
            Some(index) => {
                let (_, value) = offered.remove(index);
                words[at] = if inline { format!("--{name}={value}") } else { value };
            }
            None => missing.push(match variable {
                Some(variable) => format!("--{name} {variable}=VALUE"),
                None => format!("--{name} VALUE"),
            }),
        }
    }
    if let Some((flag, _)) = offered.first() {
        return Err(InputError(format!(
            "--resume takes the run's own flags from its record; only a value it hides may be given again, \
             and --{flag} is not one"
        )));
    }
    if !missing.is_empty() {
        return Err(InputError(format!(
            "run {run_id} was recorded with its secrets hidden; give them again: --resume {run_id} {}",
            missing.join(" ")
        )));
    }
    Ok(())
}

/// `--flag VALUE` and `--flag=VALUE` words as (flag, value) pairs.
fn pairs(given: &[String]) -> Result<Vec<(String, String)>, InputError> {
    let mut pairs = Vec::new();
    let mut words = given.iter();
    while let Some(word) = words.next() {
        let Some(flag) = word.strip_prefix("--") else {
            return Err(InputError(format!(
                "--resume takes the run's own flags from its record; `{word}` is not a flag"
            )));
        };
        match flag.split_once('=') {
            Some((name, value)) => pairs.push((name.to_owned(), value.to_owned())),
            None => {
                let value = words
                    .next()
                    .ok_or_else(|| InputError(format!("--{flag} needs a value")))?;
                pairs.push((flag.to_owned(), value.clone()));
            }
        }
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(words: &[&str]) -> Vec<String> {
        command_line(words.iter().map(OsString::from))
    }

    #[test]
    fn urls_keep_their_user_and_lose_their_password_and_secret_query_values() {
        let words = kept(&[
            "run",
            "--llm-endpoint",
            "http://user:sk-KEY@llm.example/v1?api_key=K2&model=m",
            "--db=postgres://agl:pw@db/agl",
            "--otlp-endpoint",
            "http://collector:4318",
        ]);
        assert_eq!(
            words,
            [
                "run",
                "--llm-endpoint",
                "http://user:***@llm.example/v1?api_key=***&model=m",
                "--db=postgres://agl:***@db/agl",
                "--otlp-endpoint",
                "http://collector:4318",
            ]
        );
    }

    #[test]
    fn secret_flags_and_environment_values_are_hidden_but_not_what_names_them() {
        let words = kept(&[
            "run",
            "--token",
            "T0KEN",
            "--store-password=pw",
            "--agent-env",
            "API_KEY=sk-1",
            "--agent-env=HOME",
            "--llm-api-key-env",
            "MY_KEY",
            "--llm-proxy",
            "--llm-token-ids",
            "--runners",
            "2",
            "-v",
        ]);
        assert_eq!(
            words,
            [
                "run",
                "--token",
                "***",
                "--store-password=***",
                "--agent-env",
                "API_KEY=***",
                "--agent-env=HOME",
                "--llm-api-key-env",
                "MY_KEY",
                "--llm-proxy",
                "--llm-token-ids",
                "--runners",
                "2",
                "-v",
            ]
        );
    }

    #[test]
    fn resume_takes_each_hidden_value_again_and_only_those() {
        let mut words = kept(&[
            "run",
            "--token",
            "T",
            "--agent-env",
            "A=1",
            "--agent-env=B=2",
            "--llm-endpoint=http://u:k@h/v1",
        ]);
        let given: Vec<String> = [
            "--agent-env=B=two",
            "--token",
            "T2",
            "--agent-env",
            "A=one",
            "--llm-endpoint",
            "http://u:k2@h/v1",
        ]
        .map(String::from)
        .to_vec();
        restore("run-1", &mut words, &given).expect("every hidden value given");
        assert_eq!(
            words,
            [
                "run",
                "--token",
                "T2",
                "--agent-env",
                "A=one",
                "--agent-env=B=two",
                "--llm-endpoint=http://u:k2@h/v1",
            ]
        );
        let mut words = kept(&["run", "--token", "T", "--runners", "2"]);
        let error = restore("run-1", &mut words.clone(), &[]).expect_err("the token is missing");
        assert!(
            error.0.contains("give them again: --resume run-1 --token VALUE"),
            "{}",
            error.0
        );
        let extra = ["--runners", "3"].map(String::from);
        let error = restore("run-1", &mut words, &extra).expect_err("not hidden");
        assert!(error.0.contains("--runners is not one"), "{}", error.0);
    }
}
