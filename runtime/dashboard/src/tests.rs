//! The embedded site is whole: every file the page or a module refers to is embedded, every
//! file of `site/` is (tests aside), and the JavaScript unit tests pass under `node --test`.

use super::*;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn site_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("site")
}

fn text(path: &str) -> &'static str {
    let bytes = file(path).unwrap_or_else(|| panic!("{path} is not embedded"));
    std::str::from_utf8(bytes).unwrap_or_else(|_| panic!("{path} is not UTF-8"))
}

/// The values of `attribute="..."` in `html`.
fn attribute_values<'a>(html: &'a str, attribute: &str) -> Vec<&'a str> {
    let needle = format!("{attribute}=\"");
    html.match_indices(&needle)
        .filter_map(|(at, _)| {
            let rest = &html[at + needle.len()..];
            rest.find('"').map(|end| &rest[..end])
        })
        .collect()
}

/// The relative module paths a JavaScript file imports (`from "./x.js"`), resolved against its folder.
fn imports(path: &str) -> Vec<String> {
    let dir = Path::new(path).parent().unwrap_or(Path::new(""));
    text(path)
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("import ").map(|_| line))
        .filter_map(|line| line.split('"').nth(1))
        .map(|target| normalise(&dir.join(target)))
        .collect()
}

fn normalise(path: &Path) -> String {
    let mut parts: Vec<String> = Vec::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                parts.pop();
            }
            std::path::Component::Normal(name) => parts.push(name.to_string_lossy().into_owned()),
            _ => {}
        }
    }
    parts.join("/")
}

#[test]
fn index_html_refers_only_to_embedded_files() {
    let html = text("index.html");
    let mut referred: Vec<&str> = attribute_values(html, "src");
    referred.extend(
        attribute_values(html, "href")
            .into_iter()
            .filter(|h| !h.starts_with('#')),
    );
    assert!(
        referred.contains(&"js/app.js") && referred.contains(&"style.css"),
        "{referred:?}"
    );
    for path in referred {
        assert!(!path.contains("//"), "index.html refers outside the site: {path}");
        assert!(
            file(path).is_some(),
            "index.html refers to {path}, which is not embedded"
        );
    }
}

#[test]
fn every_module_imported_is_embedded() {
    let mut seen = BTreeSet::new();
    let mut pending = vec!["js/app.js".to_owned()];
    while let Some(path) = pending.pop() {
        if !seen.insert(path.clone()) {
            continue;
        }
        for target in imports(&path) {
            assert!(
                file(&target).is_some(),
                "{path} imports {target}, which is not embedded"
            );
            pending.push(target);
        }
    }
    let modules: BTreeSet<String> = FILES
        .iter()
        .map(|(name, _)| (*name).to_owned())
        .filter(|name| name.ends_with(".js"))
        .collect();
    assert_eq!(seen, modules, "every embedded module is reached from js/app.js");
}

#[test]
fn every_file_of_the_site_is_embedded() {
    let mut on_disk = BTreeSet::new();
    let mut dirs = vec![site_dir()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("site/ is readable") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "test") {
                    dirs.push(path);
                }
            } else if let Ok(relative) = path.strip_prefix(site_dir()) {
                on_disk.insert(normalise(relative));
            }
        }
    }
    // For node only (the .js files are ES modules), not served.
    on_disk.remove("package.json");
    let embedded: BTreeSet<String> = FILES.iter().map(|(name, _)| (*name).to_owned()).collect();
    assert_eq!(on_disk, embedded);
}

#[test]
fn nothing_is_fetched_from_another_origin() {
    for (name, bytes) in FILES {
        let body = String::from_utf8_lossy(bytes);
        for scheme in ["http://", "https://"] {
            let outside = body
                .match_indices(scheme)
                .any(|(at, _)| !body[at..].starts_with("http://www.w3.org/2000/svg"));
            assert!(
                !outside,
                "{name} names an absolute URL ({scheme}...): the dashboard must work offline"
            );
        }
    }
}

/// Every embedded module parses (`node --check`: a syntax error in one view would blank the page,
/// and only some modules are imported by the unit tests).
#[test]
fn every_module_parses() {
    for (name, _) in FILES.iter().filter(|(name, _)| name.ends_with(".js")) {
        let output = std::process::Command::new("node")
            .arg("--check")
            .arg(site_dir().join(name))
            .output()
            .expect("node is installed (the dashboard's modules are checked with `node --check`)");
        assert!(
            output.status.success(),
            "{name} does not parse:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// The pure modules (span tree, line diff, run aggregates, filters, routes) under Node's own
/// test runner. Node is required (CI installs it for the JavaScript guests).
#[test]
fn javascript_unit_tests_pass_under_node() {
    let tests = site_dir().join("js/test");
    let output = std::process::Command::new("node")
        .arg("--test")
        .arg(&tests)
        .output()
        .expect("node is installed (the dashboard's unit tests run under `node --test`)");
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "node --test failed:\n{report}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(report.contains("# pass") && !report.contains("# pass 0"), "{report}");
}
