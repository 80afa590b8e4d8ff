//! Request bytes → `ExportTraceServiceRequest`: the media type picks the format (protobuf or
//! OTLP/JSON), the content encoding says whether to gunzip first.

use crate::error::OtlpError;
use crate::json;
use flate2::read::MultiGzDecoder;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;
use std::borrow::Cow;
use std::io::Read;

pub const PROTOBUF_CONTENT_TYPE: &str = "application/x-protobuf";
pub const JSON_CONTENT_TYPE: &str = "application/json";

/// The most bytes a gzip body may inflate to unless the caller gives its own limit (the `_within`
/// functions; the server passes its body limit).
pub const MAX_DECOMPRESSED_BYTES: usize = 128 << 20;

/// The two OTLP/HTTP encodings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Protobuf,
    Json,
}

impl Format {
    /// The format of a `Content-Type` header (parameters such as `charset` are ignored).
    pub fn from_content_type(content_type: Option<&str>) -> Result<Self, OtlpError> {
        let media = media_type(content_type.unwrap_or_default());
        if media.eq_ignore_ascii_case(PROTOBUF_CONTENT_TYPE) {
            Ok(Self::Protobuf)
        } else if media.eq_ignore_ascii_case(JSON_CONTENT_TYPE) {
            Ok(Self::Json)
        } else {
            Err(OtlpError::UnsupportedContentType(media.to_owned()))
        }
    }

    /// The format a response to this request uses: JSON for a JSON request, protobuf otherwise
    /// (an unsupported content type is answered in protobuf, as 0.3.0 does).
    pub fn for_response(content_type: Option<&str>) -> Self {
        Self::from_content_type(content_type).unwrap_or(Self::Protobuf)
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Self::Protobuf => PROTOBUF_CONTENT_TYPE,
            Self::Json => JSON_CONTENT_TYPE,
        }
    }
}

/// The media type of a header value: before any `;`, trimmed.
fn media_type(content_type: &str) -> &str {
    content_type.split(';').next().unwrap_or_default().trim()
}

/// Undoes `Content-Encoding`: none / `identity` as is, `gzip` (or `x-gzip`) inflated, to at most
/// [`MAX_DECOMPRESSED_BYTES`].
pub fn decompress<'a>(content_encoding: Option<&str>, body: &'a [u8]) -> Result<Cow<'a, [u8]>, OtlpError> {
    decompress_within(content_encoding, body, MAX_DECOMPRESSED_BYTES)
}

/// [`decompress`] inflating to at most `limit` bytes: the inflater stops one byte past the limit,
/// so a gzip bomb costs `limit` bytes of memory, never what it would inflate to.
pub fn decompress_within<'a>(
    content_encoding: Option<&str>,
    body: &'a [u8],
    limit: usize,
) -> Result<Cow<'a, [u8]>, OtlpError> {
    let encoding = content_encoding.unwrap_or_default().trim();
    if encoding.is_empty() || encoding.eq_ignore_ascii_case("identity") {
        return Ok(Cow::Borrowed(body));
    }
    if !(encoding.eq_ignore_ascii_case("gzip") || encoding.eq_ignore_ascii_case("x-gzip")) {
        return Err(OtlpError::BadEncoding(format!(
            "unsupported Content-Encoding '{encoding}', expected 'gzip' or none"
        )));
    }
    let mut inflated = Vec::with_capacity(body.len().saturating_mul(4).min(limit));
    MultiGzDecoder::new(body)
        .take((limit as u64).saturating_add(1))
        .read_to_end(&mut inflated)
        .map_err(|e| OtlpError::BadEncoding(format!("unable to gunzip the body: {e}")))?;
    if inflated.len() > limit {
        return Err(OtlpError::BodyTooLarge { limit });
    }
    Ok(Cow::Owned(inflated))
}

/// Decodes a request body of the given content type and encoding. An empty body is an empty
/// request (as in 0.3.0), in either format.
pub fn decode_request(
    content_type: Option<&str>,
    content_encoding: Option<&str>,
    body: &[u8],
) -> Result<ExportTraceServiceRequest, OtlpError> {
    decode_request_within(content_type, content_encoding, body, MAX_DECOMPRESSED_BYTES)
}

/// [`decode_request`] with a gzip body inflated to at most `max_decompressed` bytes.
pub fn decode_request_within(
    content_type: Option<&str>,
    content_encoding: Option<&str>,
    body: &[u8],
    max_decompressed: usize,
) -> Result<ExportTraceServiceRequest, OtlpError> {
    let format = Format::from_content_type(content_type)?;
    let body = decompress_within(content_encoding, body, max_decompressed)?;
    if body.is_empty() {
        return Ok(ExportTraceServiceRequest::default());
    }
    match format {
        Format::Protobuf => ExportTraceServiceRequest::decode(body.as_ref())
            .map_err(|e| OtlpError::Decode(format!("Unable to parse OTLP traces payload: {e}"))),
        Format::Json => json::decode(&body),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::Compression;
    use flate2::write::GzEncoder;
    use std::io::Write;

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut encoder = GzEncoder::new(Vec::new(), Compression::fast());
        encoder.write_all(bytes).ok();
        encoder.finish().unwrap_or_default()
    }

    #[test]
    fn media_types_ignore_parameters_and_case() {
        let of = Format::from_content_type;
        assert_eq!(of(Some("application/x-protobuf")).ok(), Some(Format::Protobuf));
        assert_eq!(of(Some("Application/JSON; charset=utf-8")).ok(), Some(Format::Json));
        assert!(matches!(of(Some("text/plain")), Err(OtlpError::UnsupportedContentType(t)) if t == "text/plain"));
        assert!(matches!(of(None), Err(OtlpError::UnsupportedContentType(t)) if t.is_empty()));
        assert_eq!(Format::for_response(Some("text/plain")), Format::Protobuf);
        assert_eq!(Format::for_response(Some("application/json")), Format::Json);
    }

    #[test]
    fn encodings() {
        assert_eq!(decompress(None, b"abc").ok().as_deref(), Some(&b"abc"[..]));
        assert_eq!(decompress(Some("identity"), b"abc").ok().as_deref(), Some(&b"abc"[..]));
        assert_eq!(
            decompress(Some("GZIP"), &gzip(b"abc")).ok().as_deref(),
            Some(&b"abc"[..])
        );
        let two_members = [gzip(b"ab"), gzip(b"c")].concat();
        assert_eq!(
            decompress(Some("gzip"), &two_members).ok().as_deref(),
            Some(&b"abc"[..])
        );
        assert!(matches!(
            decompress(Some("gzip"), b"plain"),
            Err(OtlpError::BadEncoding(_))
        ));
        assert!(matches!(decompress(Some("br"), b"abc"), Err(OtlpError::BadEncoding(_))));
    }

    #[test]
    fn a_given_limit_holds_to_the_byte() {
        let body = gzip(&[7u8; 100]);
        assert_eq!(
            decompress_within(Some("gzip"), &body, 100).ok().map(|b| b.len()),
            Some(100)
        );
        assert!(matches!(
            decompress_within(Some("gzip"), &body, 99),
            Err(OtlpError::BodyTooLarge { limit: 99 })
        ));
        assert!(
            decompress_within(None, &[7u8; 100], 1).is_ok(),
            "a plain body is the server's to bound"
        );
    }

    #[test]
    fn a_gzip_bomb_is_refused() {
        let zeros = vec![0u8; MAX_DECOMPRESSED_BYTES + 1];
        let bomb = gzip(&zeros);
        drop(zeros);
        assert!(matches!(
            decompress(Some("gzip"), &bomb),
            Err(OtlpError::BodyTooLarge { .. })
        ));
    }

    #[test]
    fn an_empty_body_is_an_empty_request() {
        for content_type in [PROTOBUF_CONTENT_TYPE, JSON_CONTENT_TYPE] {
            let request = decode_request(Some(content_type), None, b"");
            assert_eq!(request.ok(), Some(ExportTraceServiceRequest::default()));
        }
    }
}
