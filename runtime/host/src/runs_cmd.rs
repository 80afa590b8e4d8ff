//! `agl-host runs [--dir DIR] [--json]`: the runs kept under `.agl/runs/` (or DIR), newest first,
//! one line each from its run record; a file that cannot be read is one line saying why, never
//! an error (the list is `agl_runs::list`'s). Looking into one run is `show_cmd`.

use crate::args::RunsArgs;
use crate::inputs::InputError;
use crate::output::print;
use crate::table::{self, Align, Table};
use agl_runs::list::{Listed, list, short_agent, status_label};
use std::path::Path;
use std::process::ExitCode;

pub async fn run(args: RunsArgs) -> anyhow::Result<ExitCode> {
    let listed = list(&args.dir)
        .await
        .map_err(|e| InputError(format!("cannot list the runs in {}: {e}", args.dir.display())))?;
    if args.json {
        print(&format!("{}\n", serde_json::to_string_pretty(&listed)?));
    } else if listed.is_empty() {
        print(&format!(
            "no kept runs in {}: `agl-host run` and `agl-host dev` keep each run there (in .agl/runs/ of the \
             folder they ran in) unless --db names another store\n",
            args.dir.display()
        ));
    } else {
        print(&render(&listed, table::terminal_width()));
    }
    Ok(ExitCode::SUCCESS)
}

/// `2026-11-24 21:06:20 UTC` as `Nov 24 21:06`: the run id beside it has the year and seconds.
fn short_date(utc: &str) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = utc
        .get(5..7)
        .and_then(|m| m.parse::<usize>().ok())
        .and_then(|m| MONTHS.get(m.wrapping_sub(1)));
    match (month, utc.get(8..10), utc.get(11..16)) {
        (Some(month), Some(day), Some(time)) => format!("{month} {day} {time}"),
        _ => utc.to_owned(),
    }
}

/// The most characters of a run's name the table shows (`--name` allows more).
const SHOWN_NAME_CHARS: usize = 24;

fn render(listed: &[Listed], width: usize) -> String {
    // The name column only when a run has a name.
    let named = listed
        .iter()
        .any(|entry| entry.run.as_ref().is_some_and(|run| run.name.is_some()));
    let mut headers = vec![("run", Align::Left)];
    if named {
        headers.push(("name", Align::Left));
    }
    headers.extend([
        ("started (UTC)", Align::Left),
        ("status", Align::Left),
        ("rollouts", Align::Right),
        ("mean", Align::Right),
        ("best", Align::Right),
        ("algo", Align::Left),
        ("agent", Align::Left),
    ]);
    let mut table = Table::new(&headers);
    let mut unfinished = false;
    for entry in listed {
        let Some(run) = &entry.run else {
            let name = Path::new(&entry.file)
                .file_name()
                .map_or_else(|| entry.file.clone(), |n| n.to_string_lossy().into_owned());
            let reason = entry.error.as_deref().unwrap_or("unreadable");
            table.note(name, format!("cannot be read: {reason}"));
            continue;
        };
        unfinished |= run.finished_at.is_none();
        let results = run.results.as_ref();
        let number = |pointer: &str| results.and_then(|r| r.pointer(pointer)).and_then(|v| v.as_f64());
        let rollouts = results
            .and_then(|r| r.pointer("/total/rollouts"))
            .and_then(|v| v.as_u64())
            .map_or_else(|| "-".to_owned(), |n| n.to_string());
        let mut cells = vec![table::one_line(&run.run_id)];
        if named {
            // The user's text: on one line, control characters escaped, cut short.
            cells.push(
                run.name
                    .as_deref()
                    .map_or_else(|| "-".to_owned(), |name| table::clip_line(name, SHOWN_NAME_CHARS)),
            );
        }
        cells.extend([
            short_date(&table::utc(run.started_at)),
            status_label(run).to_owned(),
            rollouts,
            table::score(number("/total/mean_reward")),
            table::score(number("/best/score")),
            run.algorithm.clone(),
            short_agent(&run.agent).to_owned(),
        ]);
        table.row(cells);
    }
    let mut out = table.render("", width);
    out.push_str(&table::clip_line(
        "mean: mean reward (failed rollouts count 0) · best: the best score the algorithm reported",
        width,
    ));
    out.push('\n');
    if unfinished {
        out.push_str(&table::clip_line(
            "running?: no end recorded: still running, or killed before it could record one",
            width,
        ));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use agl_store::RunRecord;

    #[test]
    fn a_start_reads_as_month_day_and_minute() {
        assert_eq!(short_date("2026-11-24 21:06:20 UTC"), "Nov 24 21:06");
        assert_eq!(short_date("-"), "-");
    }

    #[test]
    fn a_run_without_an_end_is_not_called_running() {
        let mut run: RunRecord = serde_json::from_value(serde_json::json!({
            "run_id": "run-20261124-210620-e352",
            "started_at": 1_795_813_512.0,
            "finished_at": null,
            "status": "running",
            "agent": "a.wasm",
            "algorithm": "apo",
            "command": [],
            "results": null,
        }))
        .expect("a run record");
        let listed = [Listed {
            file: "x.db".into(),
            run: Some(run.clone()),
            error: None,
            when: 0.0,
        }];
        let text = render(&listed, 200);
        assert!(text.contains("running?") && text.contains("killed"), "{text}");
        run.finished_at = Some(1_795_813_600.0);
        run.status = "interrupted".into();
        assert_eq!(status_label(&run), "interrupted");
    }

    #[test]
    fn a_name_is_a_column_only_when_a_run_has_one() {
        let record = |name: Option<&str>| -> RunRecord {
            serde_json::from_value(serde_json::json!({
                "run_id": "run-20261124-210620-e352", "name": name, "started_at": 1_795_813_512.0,
                "finished_at": 1_795_813_600.0, "status": "completed", "agent": "a.wasm", "algorithm": "apo",
                "command": [], "results": null,
            }))
            .expect("a run record")
        };
        let listed = |name: Option<&str>| Listed {
            file: "x.db".into(),
            run: Some(record(name)),
            error: None,
            when: 0.0,
        };
        let unnamed = render(&[listed(None)], 200);
        assert!(!unnamed.contains("name"), "{unnamed}");
        let named = render(&[listed(Some("seed\u{1b}[2J prompt")), listed(None)], 200);
        let header = named.lines().next().unwrap_or_default();
        assert!(header.contains("name"), "{named}");
        assert!(named.contains("seed\\u001b[2J prompt"), "escaped: {named}");
        assert!(!named.contains('\u{1b}'), "{named}");
    }
}
