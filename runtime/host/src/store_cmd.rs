//! `agl-host store`: a LightningStore (in memory, or kept in the database `--db` names) served
//! over HTTP until Ctrl-C or SIGTERM.

use crate::args::StoreArgs;
use crate::inputs::InputError;
use crate::otlp_export::{self, OtlpExport};
use crate::output::stderr_line;
use agl_server::ServerOptions;
use agl_store::{LightningStore, StoreOptions};
use anyhow::Context;
use std::process::ExitCode;
use std::sync::Arc;

/// Where sandboxed agents reach `store --llm-proxy`'s proxy unless told otherwise.
const DEFAULT_AGENTS_PORT: u16 = 4749;

pub async fn run(args: StoreArgs) -> anyhow::Result<ExitCode> {
    let db = args.db.parse::<agl_store_db::DbUrl>()?;
    let upstreams = match (args.llm_proxy, args.llm.is_configured()) {
        (true, _) => Some(crate::llm::proxy_upstreams(&args.llm, &args.proxy)?),
        (false, true) => {
            return Err(InputError(
                "--llm-endpoint, --llm-script and --llm-simulate are the LLM proxy's: add --llm-proxy".into(),
            )
            .into());
        }
        (false, false) => None,
    };
    // Without the proxy this process records no span: runners export their own.
    let otlp = match (args.llm_proxy, &args.otlp.otlp_endpoint) {
        (true, _) => OtlpExport::from_flags(&args.otlp)?,
        (false, Some(_)) => {
            return Err(InputError(
                "--otlp-endpoint exports the spans this process records, the LLM proxy's: add --llm-proxy (runners \
                 export their own: `agl-host runner --otlp-endpoint URL`)"
                    .into(),
            )
            .into());
        }
        (false, None) => None,
    };
    let (token_ids, train_temperature, val_temperature) = (
        args.proxy.llm_token_ids,
        args.proxy.llm_train_temperature,
        args.proxy.llm_val_temperature,
    );
    // The agents' port: the one asked for, else 4749 (any free one when --port is 0 or 4749 is
    // taken).
    let (agents_port, agents_port_given) = match (args.llm_proxy_port, args.port) {
        (Some(port), _) => (port, true),
        (None, 0) => (0, false),
        (None, _) => (DEFAULT_AGENTS_PORT, false),
    };
    let options = server_options(args)?;
    let site = options.site.clone();
    if !options.host.is_loopback() && options.token.is_none() {
        stderr_line(&format!(
            "warning: serving on {} without --token: anyone who can reach it can use the store",
            options.host
        ));
    }
    // Without --dashboard-dir, agl-host's own dashboard is served at /.
    let embedded_dashboard = options.site.is_none();
    let mut interrupts = crate::signals::Interrupts::register()?;
    let backend = agl_store_db::open(&db, StoreOptions::default())?;
    let store: Arc<dyn LightningStore> = backend.clone();
    let proxy = upstreams.map(|upstreams| {
        let mut config = agl_proxy::ProxyConfig::new(upstreams);
        config.token_ids = token_ids;
        config.train_temperature = train_temperature;
        config.val_temperature = val_temperature;
        config.max_body_bytes = options.max_body_bytes;
        config.body_read_timeout = options.body_read_timeout;
        config.span_export = otlp.as_ref().map(OtlpExport::span_export);
        agl_proxy::Proxy::new(store.clone(), config)
    });
    // Sandboxed agents reach the proxy on a listener of their own, only through their attempt's
    // capability; the operator's routes stay on the store's port, under its token.
    let agents_options = ServerOptions {
        port: agents_port,
        token: None,
        site: None,
        ..options.clone()
    };
    let handle = crate::dashboard_cmd::serve(backend.clone(), options, proxy.as_ref(), false)
        .await
        .context("starting the store server")?;
    let agents_listener = match &proxy {
        Some(proxy) => Some(
            match crate::proxy_capabilities::serve(proxy, agents_options.clone(), None).await {
                Err(_) if !agents_port_given && agents_options.port != 0 => {
                    let any = ServerOptions {
                        port: 0,
                        ..agents_options
                    };
                    crate::proxy_capabilities::serve(proxy, any, None).await?
                }
                served => served?,
            },
        ),
        None => None,
    };
    if embedded_dashboard {
        stderr_line(&format!(
            "agl-host store: dashboard at {}",
            crate::dashboard_cmd::url(&handle, None)
        ));
    }
    if let (Some(proxy), Some(agents)) = (&proxy, &agents_listener) {
        stderr_line(&format!(
            "agl-host store: LLM proxy (-> {}) at {url}/v1 and per attempt {url}/rollout/ROLLOUT_ID/attempt/ATTEMPT_ID/v1 \
             for clients with the store's access; sandboxed agents at {} only, each through its attempt's capability \
             (agl-host runner puts it in their proxy_llm resources)",
            proxy.describe(),
            agents.url(),
            url = handle.url()
        ));
    }
    if let Some(agl_server::Site::Dir(dir)) = &site {
        stderr_line(&format!(
            "agl-host store: dashboard at {}/ (from {})",
            handle.url(),
            dir.display()
        ));
    }
    stderr_line(&format!(
        "agl-host store: listening on {} (store: {}; Ctrl-C to stop)",
        handle.url(),
        db.redacted()
    ));
    interrupts.wait().await;
    stderr_line("agl-host store: stopping");
    handle.shutdown().await;
    if let Some(agents) = agents_listener {
        agents.shutdown().await;
    }
    otlp_export::finish(otlp).await;
    // A database's write-ahead log folded into its file: one file holds the whole store.
    if let Err(error) = backend.checkpoint().await {
        stderr_line(&format!("agl-host store: could not compact {}: {error}", db.redacted()));
    }
    Ok(ExitCode::SUCCESS)
}

/// The server's options from the flags: sizes and durations parsed, each error naming its flag.
fn server_options(args: StoreArgs) -> Result<ServerOptions, InputError> {
    let max_body = agl_wasm::policy::parse_size(&args.max_body).map_err(|e| InputError(format!("--max-body: {e}")))?;
    let duration = |flag: &str, value: &str| {
        agl_wasm::policy::parse_duration(value).map_err(|e| InputError(format!("{flag}: {e}")))
    };
    Ok(args.edge.allow(ServerOptions {
        host: args.host,
        port: args.port,
        token: args.token,
        max_body_bytes: usize::try_from(max_body).unwrap_or(usize::MAX),
        header_read_timeout: duration("--header-timeout", &args.header_timeout)?,
        body_read_timeout: duration("--body-timeout", &args.body_timeout)?,
        max_connections: usize::try_from(args.max_connections).unwrap_or(usize::MAX),
        site: args
            .dashboard_dir
            .map(agl_server::Site::dir)
            .transpose()
            .map_err(|e| InputError(format!("--dashboard-dir {e}")))?,
        ..ServerOptions::default()
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::{Cli, Command};
    use clap::Parser;
    use std::time::Duration;

    fn store_args(flags: &[&str]) -> StoreArgs {
        let cli = Cli::try_parse_from(["agl-host", "store"].iter().chain(flags)).expect("flags parse");
        match cli.command {
            Command::Store(args) => args,
            _ => panic!("not the store command"),
        }
    }

    #[test]
    fn the_defaults_are_the_servers_defaults() {
        let options = server_options(store_args(&[])).expect("valid");
        assert_eq!(options, ServerOptions::default());
    }

    #[test]
    fn limits_come_from_their_flags() {
        let options = server_options(store_args(&[
            "--max-body",
            "1MiB",
            "--header-timeout",
            "5s",
            "--body-timeout",
            "1500ms",
            "--max-connections",
            "7",
        ]))
        .expect("valid");
        assert_eq!(options.max_body_bytes, 1 << 20);
        assert_eq!(options.header_read_timeout, Duration::from_secs(5));
        assert_eq!(options.body_read_timeout, Duration::from_millis(1500));
        assert_eq!(options.max_connections, 7);
    }

    #[test]
    fn a_dashboard_dir_without_index_html_is_refused_naming_the_flag() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
        let error = server_options(store_args(&["--dashboard-dir", dir])).expect_err("invalid");
        assert!(error.0.starts_with("--dashboard-dir "), "{}", error.0);
        assert!(
            error.0.ends_with("has no index.html (it must hold a built web app)"),
            "{}",
            error.0
        );
    }

    #[test]
    fn allowed_hosts_and_origins_come_from_their_repeated_flags() {
        let options = server_options(store_args(&[
            "--allowed-host",
            "store.lan",
            "--allowed-host",
            "10.0.0.5:4747",
            "--allowed-origin",
            "https://dash.example.com/",
        ]))
        .expect("valid");
        assert_eq!(options.allowed_hosts, ["store.lan", "10.0.0.5:4747"]);
        assert_eq!(options.allowed_origins, ["https://dash.example.com"]);
        for bad in [
            ["--allowed-host", "http://store.lan"],
            ["--allowed-origin", "dash.example.com"],
            ["--allowed-origin", "https://dash.example.com/app"],
        ] {
            assert!(
                Cli::try_parse_from(["agl-host", "store"].iter().chain(&bad)).is_err(),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn a_bad_limit_names_its_flag() {
        let error = server_options(store_args(&["--body-timeout", "soon"])).expect_err("invalid");
        assert!(error.0.starts_with("--body-timeout:"), "{}", error.0);
        assert!(Cli::try_parse_from(["agl-host", "store", "--max-connections", "0"]).is_err());
    }
}
