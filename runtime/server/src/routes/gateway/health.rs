//! `GET /healthz`: 1.0's liveness probe, answered without the key.

use crate::json::Json;
use serde_json::{Value, json};

pub(crate) async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}
