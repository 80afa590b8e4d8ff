//! Versioned resources: query, add (201, a bare named-resources object), the latest (`null` when
//! none), get by id (`null` when unknown), upsert by id.

use super::{AppState, Created, created};
use crate::error::ApiResult;
use crate::extract::{JsonBody, PathParams};
use crate::json::Json;
use crate::query_string::{self, QuerySpec};
use agl_store::{NamedResources, Paginated, ResourcesQuery, ResourcesUpdate};
use axum::extract::{RawQuery, State};

const QUERY: QuerySpec = QuerySpec {
    lists: &[],
    integers: &["limit", "offset"],
};

/// `GET /v1/agl/resources?resources_id_contains=..&sort_by=..` → a page.
pub(crate) async fn query(
    State(state): State<AppState>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Paginated<ResourcesUpdate>>> {
    let query: ResourcesQuery = query_string::parse(raw.as_deref(), &QUERY)?;
    Ok(Json(state.store.query_resources(&query).await?))
}

/// `POST /v1/agl/resources` → 201 with the new version (it becomes the latest).
pub(crate) async fn add(
    State(state): State<AppState>,
    JsonBody(resources): JsonBody<NamedResources>,
) -> ApiResult<Created<ResourcesUpdate>> {
    Ok(created(state.store.add_resources(resources).await?))
}

/// `GET /v1/agl/resources/latest` → the latest version, or `null`.
pub(crate) async fn latest(State(state): State<AppState>) -> ApiResult<Json<Option<ResourcesUpdate>>> {
    Ok(Json(state.store.get_latest_resources().await?))
}

/// `GET /v1/agl/resources/{resources_id}` → that version, or `null`.
pub(crate) async fn get(
    State(state): State<AppState>,
    PathParams(resources_id): PathParams<String>,
) -> ApiResult<Json<Option<ResourcesUpdate>>> {
    Ok(Json(state.store.get_resources_by_id(&resources_id).await?))
}

/// `POST /v1/agl/resources/{resources_id}`: creates or replaces that id (version + 1).
pub(crate) async fn update(
    State(state): State<AppState>,
    PathParams(resources_id): PathParams<String>,
    JsonBody(resources): JsonBody<NamedResources>,
) -> ApiResult<Json<ResourcesUpdate>> {
    Ok(Json(state.store.update_resources(&resources_id, resources).await?))
}

/// `POST /v1/agl/resources/latest`: the upsert of the id literally named `latest`.
pub(crate) async fn update_named_latest(
    State(state): State<AppState>,
    JsonBody(resources): JsonBody<NamedResources>,
) -> ApiResult<Json<ResourcesUpdate>> {
    Ok(Json(state.store.update_resources("latest", resources).await?))
}
