//! The run's inputs, read and checked before anything starts: datasets (JSONL, one task per
//! line, errors name the file and line), the initial resources, the algorithm's configuration,
//! and where the components come from (a `.wasm`, a guest folder, a built-in algorithm) —
//! found here, built and loaded later (components.rs), so that a bad input stops the command
//! before anything is built.

use crate::builtin::{self, BuiltinAlgorithm};
use agl_store::NamedResources;
use std::path::{Path, PathBuf};

/// An input problem: exit code 2, one clear line.
#[derive(Debug)]
pub struct InputError(pub String);

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InputError {}

fn read(path: &Path, what: &str) -> Result<String, InputError> {
    std::fs::read_to_string(path).map_err(|e| InputError(format!("cannot read {what} {}: {e}", path.display())))
}

/// The tasks of a JSONL file, each as compact JSON text. Blank lines are skipped.
pub fn read_dataset(path: &Path) -> Result<Vec<String>, InputError> {
    let text = read(path, "dataset")?;
    let mut tasks = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value: serde_json::Value = serde_json::from_str(line)
            .map_err(|e| InputError(format!("{}:{}: not a JSON value: {e}", path.display(), index + 1)))?;
        tasks.push(value.to_string());
    }
    Ok(tasks)
}

pub fn read_resources(path: &Path) -> Result<NamedResources, InputError> {
    let text = read(path, "resources")?;
    serde_json::from_str(&text).map_err(|e| {
        InputError(format!(
            "{}: not valid resources (a JSON object of name -> {{\"resource_type\": \"prompt_template\" | \"llm\" | \"proxy_llm\", ...}}): {e}",
            path.display()
        ))
    })
}

/// The algorithm's configuration: must be a JSON object; `{}` when no file is given.
pub fn read_algorithm_config(path: Option<&Path>) -> Result<String, InputError> {
    let Some(path) = path else {
        return Ok("{}".to_owned());
    };
    let text = read(path, "algorithm config")?;
    match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(value @ serde_json::Value::Object(_)) => Ok(value.to_string()),
        Ok(_) => Err(InputError(format!(
            "{}: the algorithm config must be a JSON object",
            path.display()
        ))),
        Err(e) => Err(InputError(format!("{}: not valid JSON: {e}", path.display()))),
    }
}

/// Where a component comes from: found, not yet built, while the inputs are checked.
#[derive(Debug, Clone)]
pub enum ComponentSource {
    /// A `.wasm` component file.
    File(PathBuf),
    /// A guest folder (Rust, Python or JavaScript), built into a component when it is loaded.
    Folder(PathBuf),
    /// An algorithm built into the binary.
    Builtin(&'static BuiltinAlgorithm),
}

/// The agent of `path`: a `.wasm` file or a guest folder.
pub fn agent_source(path: &Path) -> Result<ComponentSource, InputError> {
    path_source(path, "agent", "")
}

/// The algorithm of `--algo`: a built-in name (`apo`, `baseline`), else a path.
pub fn algorithm_source(spec: &Path) -> Result<ComponentSource, InputError> {
    if let Some(algorithm) = spec.to_str().and_then(builtin::find) {
        return Ok(ComponentSource::Builtin(algorithm));
    }
    let hint = format!(" (the built-in algorithms are {})", builtin::names());
    path_source(spec, "algorithm", &hint)
}

fn path_source(path: &Path, role: &str, hint: &str) -> Result<ComponentSource, InputError> {
    if path.is_file() {
        return Ok(ComponentSource::File(path.to_owned()));
    }
    if agl_guest_build::detect(path).is_some() || crate::c_folder::is_c_folder(path) {
        return Ok(ComponentSource::Folder(path.to_owned()));
    }
    if path.exists() {
        Err(InputError(format!(
            "{role} {}: expected a .wasm component or a guest folder (with Cargo.toml, pyproject.toml or app.py, \
             package.json, or .c files){hint}",
            path.display()
        )))
    } else {
        Err(InputError(format!(
            "{role} {}: no such file or directory{hint}",
            path.display()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch folder for one test, removed when the test ends.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(test: &str) -> Self {
            let dir = std::env::temp_dir().join(format!("agl-cli-{test}-{}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("temp dir");
            Self(dir)
        }

        fn file(&self, name: &str, text: &str) -> PathBuf {
            let path = self.0.join(name);
            std::fs::write(&path, text).expect("write");
            path
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn a_dataset_skips_blank_lines_and_names_a_bad_line() {
        let scratch = Scratch::new("datasets");
        let good = scratch.file("good.jsonl", "{\"a\": 1}\n\n  \n[2]\n");
        assert_eq!(read_dataset(&good).expect("reads"), ["{\"a\":1}", "[2]"]);
        let bad = scratch.file("bad.jsonl", "{\"a\": 1}\n{oops\n");
        let error = read_dataset(&bad).unwrap_err().0;
        assert!(error.contains("bad.jsonl:2: not a JSON value"), "{error}");
    }

    #[test]
    fn the_algorithm_config_must_be_an_object() {
        assert_eq!(read_algorithm_config(None).expect("default"), "{}");
        let scratch = Scratch::new("config");
        let list = scratch.file("list.json", "[1]");
        assert!(
            read_algorithm_config(Some(&list))
                .unwrap_err()
                .0
                .contains("JSON object")
        );
    }

    #[test]
    fn a_missing_component_says_so() {
        let error = agent_source(Path::new("/no/such/agent.wasm")).unwrap_err().0;
        assert_eq!(error, "agent /no/such/agent.wasm: no such file or directory");
    }

    #[test]
    fn an_algorithm_is_a_builtin_name_else_a_path_and_a_bad_one_names_the_builtins() {
        assert!(matches!(
            algorithm_source(Path::new("apo")),
            Ok(ComponentSource::Builtin(BuiltinAlgorithm { name: "apo", .. }))
        ));
        let scratch = Scratch::new("algorithm-path");
        let file = scratch.file("algo.wasm", "not checked here");
        assert!(matches!(algorithm_source(&file), Ok(ComponentSource::File(_))));
        let error = algorithm_source(Path::new("apoo")).unwrap_err().0;
        assert_eq!(
            error,
            "algorithm apoo: no such file or directory (the built-in algorithms are baseline, apo, gepa)"
        );
    }
}
