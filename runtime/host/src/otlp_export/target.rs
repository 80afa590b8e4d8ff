//! Where the spans go: `--otlp-endpoint URL`, else the standard variables
//! (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as is, `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`), and
//! how they are encoded (`OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL`: http/protobuf or http/json). A
//! bad value is an input error naming the flag or variable; the headers, timeout and batch
//! variables are opentelemetry-otlp's and the SDK's to read.

use crate::inputs::InputError;
use clap::Args;
use opentelemetry_otlp::Protocol;

/// The path OTLP/HTTP collectors take traces at, appended to a base endpoint.
const TRACES_PATH: &str = "/v1/traces";

const ENDPOINT_VAR: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
const TRACES_ENDPOINT_VAR: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
const PROTOCOL_VAR: &str = "OTEL_EXPORTER_OTLP_PROTOCOL";
const TRACES_PROTOCOL_VAR: &str = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL";
const SDK_DISABLED_VAR: &str = "OTEL_SDK_DISABLED";
const TRACES_EXPORTER_VAR: &str = "OTEL_TRACES_EXPORTER";

/// The export flag of the commands that record spans: `run`, `dev` and `runner` (the agents' and
/// the algorithm's), `store --llm-proxy` (the proxy's).
#[derive(Debug, Clone, Default, PartialEq, Eq, Args)]
pub struct OtlpArgs {
    /// Also send every span the host records to this OpenTelemetry collector (OTLP/HTTP,
    /// protobuf), e.g. http://127.0.0.1:4318: to URL/v1/traces, or to URL itself when it ends in
    /// /v1/traces. Without it, $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (as is) or
    /// $OTEL_EXPORTER_OTLP_ENDPOINT (+ /v1/traces) turn the export on, unless
    /// $OTEL_SDK_DISABLED=true or $OTEL_TRACES_EXPORTER=none; $OTEL_EXPORTER_OTLP_HEADERS,
    /// _TIMEOUT, _PROTOCOL (http/protobuf or http/json) and $OTEL_BSP_* apply. Spans that cannot
    /// be sent are dropped and counted, never slowing a rollout; the count is reported at the end.
    /// (`store`: the LLM proxy's spans, with --llm-proxy.)
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
}

/// Where spans go and how they are encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtlpTarget {
    /// The full traces URL the requests are posted to.
    pub url: String,
    pub protocol: Protocol,
}

impl OtlpTarget {
    /// From `--otlp-endpoint`, else the standard variables (read through `env`); `None` when
    /// neither asks for an export.
    pub fn resolve(flag: Option<&str>, env: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, InputError> {
        let env = |name: &str| env(name).filter(|value| !value.trim().is_empty());
        let (given, source, is_base) = match (flag, env(TRACES_ENDPOINT_VAR), env(ENDPOINT_VAR)) {
            (Some(flag), _, _) => (flag.trim().to_owned(), "--otlp-endpoint", true),
            (None, Some(url), _) => (url.trim().to_owned(), TRACES_ENDPOINT_VAR, false),
            (None, None, Some(base)) => (base.trim().to_owned(), ENDPOINT_VAR, true),
            (None, None, None) => return Ok(None),
        };
        if flag.is_none() && turned_off(&env) {
            return Ok(None);
        }
        if !is_http_url(&given) {
            return Err(InputError(format!(
                "{source}: '{given}' is not an http:// or https:// URL with a host (e.g. http://127.0.0.1:4318)"
            )));
        }
        let url = if is_base { with_traces_path(&given) } else { given };
        let asked = [TRACES_PROTOCOL_VAR, PROTOCOL_VAR]
            .into_iter()
            .find_map(|var| env(var).map(|name| (var, name)));
        let protocol = match asked.as_ref().map(|(var, name)| (*var, name.trim())) {
            None | Some((_, "http/protobuf")) => Protocol::HttpBinary,
            Some((_, "http/json")) => Protocol::HttpJson,
            Some((var, name)) => {
                return Err(InputError(format!(
                    "{var}={name}: agl-host exports over OTLP/HTTP only; use http/protobuf (the default) or http/json"
                )));
            }
        };
        Ok(Some(Self { url, protocol }))
    }
}

/// Whether the standard variables turn the SDK's traces off (`OTEL_SDK_DISABLED=true`,
/// `OTEL_TRACES_EXPORTER=none`): then an endpoint from the variables exports nothing; the flag
/// still does.
fn turned_off(env: &impl Fn(&str) -> Option<String>) -> bool {
    let is = |name: &str, value: &str| env(name).is_some_and(|v| v.trim().eq_ignore_ascii_case(value));
    is(SDK_DISABLED_VAR, "true") || is(TRACES_EXPORTER_VAR, "none")
}

/// A base endpoint with the traces path appended (kept when already there).
fn with_traces_path(base: &str) -> String {
    let base = base.trim().trim_end_matches('/');
    if base.ends_with(TRACES_PATH) {
        base.to_owned()
    } else {
        format!("{base}{TRACES_PATH}")
    }
}

/// An absolute http(s) URL with a host.
fn is_http_url(url: &str) -> bool {
    url.parse::<http::Uri>().is_ok_and(|uri| {
        matches!(uri.scheme_str(), Some("http" | "https")) && uri.host().is_some_and(|host| !host.is_empty())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn resolve(flag: Option<&str>, vars: &[(&str, &str)]) -> Result<Option<OtlpTarget>, InputError> {
        let vars: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        OtlpTarget::resolve(flag, |name| vars.get(name).cloned())
    }

    fn url(flag: Option<&str>, vars: &[(&str, &str)]) -> String {
        resolve(flag, vars).expect("valid").expect("an export").url
    }

    #[test]
    fn nothing_set_means_no_export() {
        assert_eq!(resolve(None, &[]).expect("valid"), None);
        assert_eq!(
            resolve(None, &[(ENDPOINT_VAR, " ")]).expect("valid"),
            None,
            "blank is unset"
        );
    }

    #[test]
    fn a_base_endpoint_gets_the_traces_path_and_a_traces_endpoint_is_taken_as_is() {
        assert_eq!(url(Some("http://h:4318"), &[]), "http://h:4318/v1/traces");
        assert_eq!(url(Some("http://h:4318/"), &[]), "http://h:4318/v1/traces");
        assert_eq!(url(Some("http://h:4318/v1/traces"), &[]), "http://h:4318/v1/traces");
        assert_eq!(
            url(None, &[(ENDPOINT_VAR, "https://c/otlp")]),
            "https://c/otlp/v1/traces"
        );
        assert_eq!(
            url(None, &[(TRACES_ENDPOINT_VAR, "http://c/ingest")]),
            "http://c/ingest"
        );
    }

    #[test]
    fn the_standard_off_switches_silence_the_variables_but_not_the_flag() {
        for off in [(SDK_DISABLED_VAR, "true"), (TRACES_EXPORTER_VAR, "none")] {
            let vars = [(ENDPOINT_VAR, "http://g"), off];
            assert_eq!(resolve(None, &vars).expect("valid"), None, "{off:?}");
            assert_eq!(url(Some("http://flag"), &vars), "http://flag/v1/traces", "{off:?}");
        }
        assert_eq!(
            url(None, &[(ENDPOINT_VAR, "http://g"), (TRACES_EXPORTER_VAR, "otlp")]),
            "http://g/v1/traces"
        );
    }

    #[test]
    fn the_flag_beats_the_traces_variable_which_beats_the_general_one() {
        let both = [(TRACES_ENDPOINT_VAR, "http://t/x"), (ENDPOINT_VAR, "http://g")];
        assert_eq!(url(Some("http://flag"), &both), "http://flag/v1/traces");
        assert_eq!(url(None, &both), "http://t/x");
    }

    #[test]
    fn a_bad_url_is_one_line_naming_where_it_came_from() {
        for (flag, vars, source) in [
            (Some("not a url"), vec![], "--otlp-endpoint"),
            (Some("ftp://h:21"), vec![], "--otlp-endpoint"),
            (Some("127.0.0.1:4318"), vec![], "--otlp-endpoint"),
            (None, vec![(ENDPOINT_VAR, "localhost")], ENDPOINT_VAR),
            (None, vec![(TRACES_ENDPOINT_VAR, "http://")], TRACES_ENDPOINT_VAR),
        ] {
            let error = resolve(flag, &vars).expect_err("refused").0;
            let given = flag.or(vars.first().map(|(_, v)| *v)).unwrap_or_default();
            assert!(
                error.starts_with(&format!("{source}: '{given}' is not an http")),
                "{error}"
            );
            assert!(
                error.contains("e.g. http://127.0.0.1:4318") && !error.contains('\n'),
                "{error}"
            );
        }
    }

    #[test]
    fn protobuf_by_default_json_when_asked_grpc_refused() {
        let endpoint = Some("http://h");
        assert_eq!(
            resolve(endpoint, &[]).expect("ok").expect("some").protocol,
            Protocol::HttpBinary
        );
        let json = [(PROTOCOL_VAR, "http/json")];
        assert_eq!(
            resolve(endpoint, &json).expect("ok").expect("some").protocol,
            Protocol::HttpJson
        );
        let traces_wins = [(PROTOCOL_VAR, "http/json"), (TRACES_PROTOCOL_VAR, "http/protobuf")];
        assert_eq!(
            resolve(endpoint, &traces_wins).expect("ok").expect("some").protocol,
            Protocol::HttpBinary
        );
        let error = resolve(endpoint, &[(PROTOCOL_VAR, "grpc")]).expect_err("refused").0;
        assert!(
            error.contains("OTEL_EXPORTER_OTLP_PROTOCOL=grpc") && error.contains("http/protobuf"),
            "{error}"
        );
    }
}
