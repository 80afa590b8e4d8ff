//! The glue between the WIT export and the algorithm function: parse the config JSON into the
//! function's config type, build the [`Host`], call the function, and write its summary as JSON
//! (or its error as the WIT `err(string)`). [`export_algorithm!`](crate::export_algorithm) expands
//! to a call of [`run_algorithm`].

use std::fmt::Display;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{Datasets, Host};

/// Runs the algorithm function `run`; what the exported `run` returns.
pub fn run_algorithm<C, S, E, F>(config_json: &str, data: Datasets, run: F) -> Result<String, String>
where
    C: DeserializeOwned,
    S: Serialize,
    E: Display,
    F: FnOnce(C, Datasets, &Host) -> Result<S, E>,
{
    let config = parse_config::<C>(config_json)?;
    let host = Host::new();
    let summary = run(config, data, &host).map_err(|err| err.to_string())?;
    write_summary(&summary)
}

/// Parses the algorithm config, a JSON object, into the function's config type, naming the type
/// when it does not fit. Empty text counts as `{}` (the host sends `{}` when the user gave none).
pub(crate) fn parse_config<C: DeserializeOwned>(config_json: &str) -> Result<C, String> {
    let mismatch = |err: &dyn Display| format!("algorithm config does not match {}: {err}", std::any::type_name::<C>());
    let text = if config_json.trim().is_empty() {
        "{}"
    } else {
        config_json
    };
    let value: Value = serde_json::from_str(text).map_err(|err| mismatch(&err))?;
    if !value.is_object() {
        return Err(mismatch(&"the config must be a JSON object"));
    }
    serde_json::from_value(value).map_err(|err| mismatch(&err))
}

/// The summary as JSON text.
pub(crate) fn write_summary<S: Serialize>(summary: &S) -> Result<String, String> {
    serde_json::to_string(summary).map_err(|err| format!("the algorithm's summary is not valid JSON: {err}"))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Deserialize;
    use serde_json::json;

    use super::*;
    use crate::Error;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Config {
        #[serde(default = "three")]
        rounds: u32,
    }

    fn three() -> u32 {
        3
    }

    fn data() -> Datasets {
        Datasets {
            train: vec![r#"{"q": 1}"#.into()],
            val: vec![],
        }
    }

    #[test]
    fn an_empty_config_is_an_empty_object() {
        assert_eq!(parse_config::<Config>("{}"), Ok(Config { rounds: 3 }));
        assert_eq!(parse_config::<Config>(""), Ok(Config { rounds: 3 }));
        assert_eq!(parse_config::<Config>(" \n"), Ok(Config { rounds: 3 }));
        assert_eq!(parse_config::<Config>(r#"{"rounds": 5}"#), Ok(Config { rounds: 5 }));
    }

    #[test]
    fn an_unknown_key_is_named() {
        let err = parse_config::<Config>(r#"{"rounds": 1, "round": 2}"#).unwrap_err();
        assert!(
            err.starts_with(
                "algorithm config does not match agl_algorithm_sdk::run::tests::Config: unknown field `round`"
            ),
            "{err}"
        );
        let err = parse_config::<Config>("not json").unwrap_err();
        assert!(err.starts_with("algorithm config does not match"), "{err}");
    }

    #[test]
    fn the_function_sees_config_and_data_and_its_summary_is_json() {
        let result = run_algorithm(
            r#"{"rounds": 2}"#,
            data(),
            |config: Config, data: Datasets, _: &Host| {
                Ok::<_, Error>(json!({"rounds": config.rounds, "train": data.train.len()}))
            },
        );
        assert_eq!(result, Ok(r#"{"rounds":2,"train":1}"#.to_string()));
    }

    #[test]
    fn any_serializable_summary_and_unit_work() {
        let map = run_algorithm("{}", data(), |_: Config, _: Datasets, _: &Host| {
            Ok::<_, String>(BTreeMap::from([("a", 1.5)]))
        });
        assert_eq!(map, Ok(r#"{"a":1.5}"#.to_string()));
        let unit = run_algorithm("{}", data(), |_: Config, _: Datasets, _: &Host| Ok::<_, String>(()));
        assert_eq!(unit, Ok("null".to_string()));
    }

    #[test]
    fn errors_become_the_wit_err_string() {
        let result = run_algorithm("{}", data(), |_: Config, _: Datasets, _: &Host| {
            Err::<(), _>(Error::new("no val split"))
        });
        assert_eq!(result, Err("no val split".to_string()));
    }

    #[test]
    fn a_bad_config_never_reaches_the_function() {
        let result = run_algorithm("[]", data(), |_: Config, _: Datasets, _: &Host| -> Result<(), Error> {
            panic!("must not be called")
        });
        assert!(result.unwrap_err().ends_with("the config must be a JSON object"));
    }

    #[test]
    fn an_unserializable_summary_is_an_error() {
        let summary = BTreeMap::from([((1, 2), "tuple keys are not JSON")]);
        let err = write_summary(&summary).unwrap_err();
        assert!(err.starts_with("the algorithm's summary is not valid JSON"), "{err}");
    }
}
