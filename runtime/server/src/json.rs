//! JSON answers: [`Json`] serialises straight into one `Vec` sized from a hint and hands it to
//! hyper as a single buffer (axum's own `Json` grows a `BytesMut` from 128 bytes through a
//! writer, which showed up as a tenth of the server's CPU under load).

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use std::cell::Cell;

/// A value answered as `application/json`.
pub(crate) struct Json<T>(pub T);

thread_local! {
    /// The size of the last answer serialised on this thread: the next buffer starts there, so
    /// a server answering similar pages allocates once per answer.
    static LAST_LENGTH: Cell<usize> = const { Cell::new(256) };
}

/// Serialises `value` compactly; the buffer starts at the thread's last answer size.
pub(crate) fn to_json_bytes<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<Vec<u8>> {
    let hint = LAST_LENGTH.with(Cell::get);
    let mut buffer = Vec::with_capacity(hint.clamp(256, 1 << 20));
    serde_json::to_writer(&mut buffer, value)?;
    LAST_LENGTH.with(|last| last.set(buffer.len()));
    Ok(buffer)
}

impl<T: Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        match to_json_bytes(&self.0) {
            Ok(bytes) => json_response(StatusCode::OK, bytes),
            // Our models always serialise (string keys, finite-or-null floats); should one ever
            // not, the client gets a JSON 500 rather than a dropped connection.
            Err(error) => json_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                serde_json::json!({ "detail": format!("cannot encode the answer: {error}") })
                    .to_string()
                    .into_bytes(),
            ),
        }
    }
}

/// A response with `status`, `content-type: application/json` and `bytes` as its whole body.
pub(crate) fn json_response(status: StatusCode, bytes: Vec<u8>) -> Response {
    let mut response = Response::new(Body::from(bytes));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn answers_compact_json_with_its_content_type() {
        let response = Json(serde_json::json!({"a": [1, 2.5, null], "b": "x\"y"})).into_response();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
        let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
        assert_eq!(&body[..], br#"{"a":[1,2.5,null],"b":"x\"y"}"#);
    }

    #[tokio::test]
    async fn a_value_that_cannot_be_encoded_is_a_json_500() {
        let mut map = std::collections::BTreeMap::new();
        map.insert(vec![1u8], 1); // a non-string key: serde_json refuses it
        let response = Json(map).into_response();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
        let detail: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert!(
            detail["detail"]
                .as_str()
                .unwrap()
                .starts_with("cannot encode the answer")
        );
    }
}
