//! Versioned resources: [`Resources`] (Agent-lightning's `NamedResources`, name -> resource JSON,
//! with typed access to prompt templates), [`ResourcesVersion`], and the [`Host`] methods of the
//! WIT `store` interface that publish and read resource versions.

use serde_json::{Map, Value, json};

use crate::bindings::agl::agent::store as wit;
use crate::store::store_error;
use crate::{Error, Host, PromptTemplate, Result};

/// A set of named resources, as the store keeps them: `{"prompt": {"resource_type":
/// "prompt_template", "template": "...", "engine": "f-string"}, ...}`.
///
/// ```
/// # use agl_algorithm_sdk::Resources;
/// let resources = Resources::new().with_prompt_template("prompt", "Solve: {question}");
/// assert_eq!(resources.prompt_template("prompt").unwrap().template, "Solve: {question}");
/// assert_eq!(
///     resources.to_json(),
///     r#"{"prompt":{"engine":"f-string","resource_type":"prompt_template","template":"Solve: {question}"}}"#
/// );
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Resources {
    named: Map<String, Value>,
}

/// One stored resources version.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourcesVersion {
    /// Its id (e.g. "rs-1a2b3c4d5e6f"), for [`NewRollout::with_resources_id`](crate::NewRollout::with_resources_id).
    pub id: String,
    /// Its resources.
    pub resources: Resources,
}

impl Resources {
    /// No resources.
    pub fn new() -> Self {
        Resources::default()
    }

    /// Resources from JSON text; it must be an object of named resources.
    pub fn from_json(text: &str) -> Result<Self> {
        let value: Value =
            serde_json::from_str(text).map_err(|err| Error::new(format!("resources are not JSON: {err}")))?;
        Resources::from_value(value)
    }

    /// Resources from a JSON value; it must be an object of named resources.
    pub fn from_value(value: Value) -> Result<Self> {
        match value {
            Value::Object(named) => Ok(Resources { named }),
            other => Err(Error::new(format!(
                "resources must be a JSON object of named resources, not {}",
                kind_of(&other)
            ))),
        }
    }

    /// The resources as JSON text, as the store takes them.
    pub fn to_json(&self) -> String {
        Value::Object(self.named.clone()).to_string()
    }

    /// The resources as a JSON object.
    pub fn as_map(&self) -> &Map<String, Value> {
        &self.named
    }

    /// The resources as a JSON value.
    pub fn into_value(self) -> Value {
        Value::Object(self.named)
    }

    /// The resource called `name`, as JSON.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.named.get(name)
    }

    /// The names of the resources.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.named.keys().map(String::as_str)
    }

    /// The names of the resources that are prompt templates (in name order).
    pub fn prompt_template_names(&self) -> impl Iterator<Item = &str> {
        self.names().filter(|name| self.prompt_template(name).is_ok())
    }

    /// Whether there are no resources.
    pub fn is_empty(&self) -> bool {
        self.named.is_empty()
    }

    /// Sets the resource called `name` (any resource JSON, with its `resource_type`); returns the
    /// one it replaced.
    pub fn insert(&mut self, name: impl Into<String>, resource: Value) -> Option<Value> {
        self.named.insert(name.into(), resource)
    }

    /// [`Resources::insert`], builder style.
    pub fn with(mut self, name: impl Into<String>, resource: Value) -> Self {
        self.insert(name, resource);
        self
    }

    /// The prompt template called `name`; an error when there is none, it is another kind of
    /// resource, or it lacks its `template` text (a missing `engine` counts as "f-string").
    pub fn prompt_template(&self, name: &str) -> Result<PromptTemplate> {
        let resource = self
            .get(name)
            .ok_or_else(|| Error::new(format!("no resource named `{name}` in these resources")))?;
        let kind = resource.get("resource_type").and_then(Value::as_str);
        if kind != Some("prompt_template") {
            return Err(Error::new(format!(
                "resource `{name}` is {}, not a prompt template",
                kind.map_or_else(|| "without a resource_type".to_string(), |kind| format!("a `{kind}`"))
            )));
        }
        let template = resource
            .get("template")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::new(format!("prompt template `{name}` has no `template` text")))?;
        let engine = resource.get("engine").and_then(Value::as_str).unwrap_or("f-string");
        Ok(PromptTemplate {
            template: template.to_string(),
            engine: engine.to_string(),
        })
    }

    /// Sets the prompt template called `name`.
    pub fn set_prompt_template(&mut self, name: impl Into<String>, template: &PromptTemplate) {
        self.insert(
            name,
            json!({"resource_type": "prompt_template", "template": template.template, "engine": template.engine}),
        );
    }

    /// Sets the prompt template called `name` to `template`, an f-string template (`{name}`
    /// placeholders), builder style.
    pub fn with_prompt_template(mut self, name: impl Into<String>, template: impl Into<String>) -> Self {
        let template = PromptTemplate {
            template: template.into(),
            engine: "f-string".to_string(),
        };
        self.set_prompt_template(name, &template);
        self
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl ResourcesVersion {
    fn from_wit(version: wit::ResourcesVersion) -> Result<Self> {
        let resources = Resources::from_json(&version.resources_json)
            .map_err(|err| err.context(format!("resources version {}", version.resources_id)))?;
        Ok(ResourcesVersion {
            id: version.resources_id,
            resources,
        })
    }
}

impl Host {
    /// Publishes a new resources version; returns its id.
    pub fn add_resources(&self, resources: &Resources) -> Result<String> {
        wit::add_resources(&resources.to_json()).map_err(store_error("add-resources"))
    }

    /// Replaces the resources of the version `resources_id`, or creates it under that id.
    pub fn update_resources(&self, resources_id: &str, resources: &Resources) -> Result<()> {
        wit::update_resources(resources_id, &resources.to_json()).map_err(store_error("update-resources"))
    }

    /// The newest resources version, if any (e.g. the initial resources the user gave).
    pub fn latest_resources(&self) -> Result<Option<ResourcesVersion>> {
        let latest = wit::latest_resources().map_err(store_error("latest-resources"))?;
        latest.map(ResourcesVersion::from_wit).transpose()
    }

    /// The resources version `resources_id`, if the store has it.
    pub fn resources(&self, resources_id: &str) -> Result<Option<ResourcesVersion>> {
        let version = wit::get_resources(resources_id).map_err(store_error("get-resources"))?;
        version.map(ResourcesVersion::from_wit).transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_round_trip_through_json() {
        let mut resources = Resources::new();
        resources.set_prompt_template(
            "prompt",
            &PromptTemplate {
                template: "Hi {name}".into(),
                engine: "jinja".into(),
            },
        );
        let read = Resources::from_json(&resources.to_json()).unwrap();
        assert_eq!(read, resources);
        let template = read.prompt_template("prompt").unwrap();
        assert_eq!(
            (template.template.as_str(), template.engine.as_str()),
            ("Hi {name}", "jinja")
        );
    }

    #[test]
    fn stored_resources_are_read() {
        let text = r#"{"prompt": {"resource_type": "prompt_template", "template": "Q: {q}"},
                       "main": {"resource_type": "llm", "endpoint": "http://x", "model": "m"}}"#;
        let resources = Resources::from_json(text).unwrap();
        assert_eq!(resources.names().collect::<Vec<_>>(), ["main", "prompt"]);
        assert_eq!(resources.prompt_template_names().collect::<Vec<_>>(), ["prompt"]);
        assert_eq!(resources.prompt_template("prompt").unwrap().engine, "f-string");
        assert_eq!(resources.get("main").and_then(|r| r.get("model")), Some(&json!("m")));
    }

    #[test]
    fn wrong_kinds_and_missing_names_are_errors() {
        let resources = Resources::new()
            .with("main", json!({"resource_type": "llm", "endpoint": "e", "model": "m"}))
            .with("odd", json!({"template": "x"}))
            .with("empty", json!({"resource_type": "prompt_template"}));
        let message = |name: &str| resources.prompt_template(name).unwrap_err().into_message();
        assert_eq!(message("main"), "resource `main` is a `llm`, not a prompt template");
        assert_eq!(
            message("odd"),
            "resource `odd` is without a resource_type, not a prompt template"
        );
        assert_eq!(message("empty"), "prompt template `empty` has no `template` text");
        assert_eq!(message("nope"), "no resource named `nope` in these resources");
    }

    #[test]
    fn only_objects_are_resources() {
        assert_eq!(
            Resources::from_json("[1]").unwrap_err().message(),
            "resources must be a JSON object of named resources, not an array"
        );
        assert!(
            Resources::from_json("{")
                .unwrap_err()
                .message()
                .starts_with("resources are not JSON")
        );
        assert!(Resources::from_value(json!({})).unwrap().is_empty());
    }

    #[test]
    fn a_bad_stored_version_names_its_id() {
        let version = wit::ResourcesVersion {
            resources_id: "rs-7".into(),
            resources_json: "null".into(),
        };
        let err = ResourcesVersion::from_wit(version).unwrap_err();
        assert_eq!(
            err.message(),
            "resources version rs-7: resources must be a JSON object of named resources, not null"
        );
    }
}
