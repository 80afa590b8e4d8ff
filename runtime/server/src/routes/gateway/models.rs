//! 1.0's model servers (`/api/models`), kept as resources: each registered (model, endpoint) is a
//! `proxy_llm` resource named as `agl_store::registered_model` says, in a new resources version
//! that keeps the latest version's other resources. New rollouts take the latest resources, so the
//! next rollouts use the model just registered, nothing restarted: the LLM proxy sends their calls
//! to its server.

use super::shapes::Model;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::json::Json;
use crate::routes::{AppState, Created, created};
use agl_adapter::events::ServingModel;
use agl_store::{LlmResource, NamedResources, Resource, RolloutView, registered_model};
use axum::extract::State;
use serde_json::{Value, json};

/// The most model servers one registration takes.
const MAX_MODELS: usize = 1024;

/// The model servers registered in `resources`, first the first.
fn registered(resources: &NamedResources) -> Vec<Model> {
    registered_model::all(resources)
        .into_iter()
        .map(|(_, version, llm)| Model {
            model: llm.model.clone(),
            endpoint: llm.endpoint.clone(),
            version,
        })
        .collect()
}

/// `resources` without the registered models, and `models` (first the first) before the rest;
/// the first of `models` is also [`registered_model::ALIAS`] (replacing what had that name), and
/// without models the alias goes if it was the first registered one.
fn with_models(resources: NamedResources, models: &[Model]) -> NamedResources {
    let resource = |model: &Model| LlmResource {
        endpoint: model.endpoint.clone(),
        model: model.model.clone(),
        api_key: None,
        sampling_parameters: Default::default(),
    };
    let previous_first = registered_model::first(&resources).map(|(_, llm)| llm.clone());
    let mut out = NamedResources::new();
    for (index, model) in models.iter().enumerate() {
        out.insert(
            registered_model::name(index, model.version),
            Resource::ProxyLlm(resource(model)),
        );
    }
    if let Some(first) = models.first() {
        out.insert(registered_model::ALIAS.to_owned(), Resource::ProxyLlm(resource(first)));
    }
    for (name, kept) in resources {
        let ours = registered_model::parse(&name).is_some()
            || (name == registered_model::ALIAS
                && (!models.is_empty()
                    || matches!(&kept, Resource::ProxyLlm(llm) if Some(llm) == previous_first.as_ref())));
        if !ours {
            out.insert(name, kept);
        }
    }
    out
}

/// `POST /api/models` `[{model, endpoint, version}]` → 201 with them: registered (a (model,
/// endpoint) already registered is replaced), as a new resources version.
pub(crate) async fn register(
    State(state): State<AppState>,
    JsonBody(body): JsonBody<Vec<Model>>,
) -> ApiResult<Created<Vec<Model>>> {
    if body.len() > MAX_MODELS {
        return Err(ApiError::unprocessable(format!(
            "at most {MAX_MODELS} model servers at once"
        )));
    }
    if let Some(bad) = body
        .iter()
        .find(|m| m.model.trim().is_empty() || m.endpoint.trim().is_empty())
    {
        return Err(ApiError::unprocessable(format!(
            "a model server needs a model and an endpoint, got {:?} at {:?}",
            bad.model, bad.endpoint
        )));
    }
    if let Some(bad) = body.iter().find(|m| !is_api_root(&m.endpoint)) {
        return Err(ApiError::unprocessable(format!(
            "a model server's endpoint is its OpenAI API root, http(s)://HOST[:PORT]/PATH, got {:?}",
            bad.endpoint
        )));
    }
    let latest = state.store.get_latest_resources().await?;
    let resources = latest.map(|l| l.resources).unwrap_or_default();
    // The batch's models first, in its order (the proxy takes the first), then the earlier ones.
    let mut ordered = registered(&resources);
    dedupe_in_request_order(&mut ordered, &body);
    state.store.add_resources(with_models(resources, &ordered)).await?;
    Ok(created(body))
}

/// Whether `endpoint` is an http(s) URL with a host and no user info, query or fragment (the LLM
/// proxy sends the rollouts' calls to `{endpoint}/chat/completions`).
fn is_api_root(endpoint: &str) -> bool {
    let Some(rest) = endpoint
        .strip_prefix("http://")
        .or_else(|| endpoint.strip_prefix("https://"))
    else {
        return false;
    };
    let host = rest.split(['/', ':']).next().unwrap_or_default();
    !host.is_empty() && !endpoint.contains(['@', '?', '#', ' ', '\\']) && !endpoint.chars().any(char::is_control)
}

/// Puts the models of `body` first, in `body`'s order (its last (model, endpoint) winning).
fn dedupe_in_request_order(models: &mut Vec<Model>, body: &[Model]) {
    let key = |m: &Model| (m.model.clone(), m.endpoint.clone());
    let mut first: Vec<Model> = Vec::new();
    for model in body {
        if let Some(existing) = first.iter_mut().find(|m| key(m) == key(model)) {
            *existing = model.clone();
        } else {
            first.push(model.clone());
        }
    }
    let rest: Vec<Model> = models
        .iter()
        .filter(|m| !first.iter().any(|f| key(f) == key(m)))
        .cloned()
        .collect();
    first.extend(rest);
    *models = first;
}

/// `GET /api/models` (agl-host's; 1.0 has none) → the registered model servers, most recent first.
pub(crate) async fn list(State(state): State<AppState>) -> ApiResult<Json<Vec<Model>>> {
    let latest = state.store.get_latest_resources().await?;
    Ok(Json(latest.map(|l| registered(&l.resources)).unwrap_or_default()))
}

/// `DELETE /api/models` → `{"status": "ok"}`: a new resources version without model servers
/// (none when there are none).
pub(crate) async fn delete_all(State(state): State<AppState>) -> ApiResult<Json<Value>> {
    if let Some(latest) = state.store.get_latest_resources().await?
        && !registered(&latest.resources).is_empty()
    {
        state.store.add_resources(with_models(latest.resources, &[])).await?;
    }
    Ok(Json(json!({"status": "ok"})))
}

/// The model server a rollout's calls go to: the first registered in its resources version.
pub(crate) async fn serving(state: &AppState, view: &RolloutView) -> ApiResult<ServingModel> {
    let Some(id) = &view.rollout.resources_id else {
        return Ok(ServingModel::default());
    };
    let resources = state.store.get_resources_by_id(id).await?;
    let first = resources.and_then(|r| registered(&r.resources).into_iter().next());
    Ok(first.map_or_else(ServingModel::default, |m| ServingModel {
        model: Some(m.model),
        endpoint: Some(m.endpoint),
        version: Some(m.version),
    }))
}
