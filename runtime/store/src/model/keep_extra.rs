//! Decoding of records that keep the keys they do not name (`extra`), without serde's
//! `#[serde(flatten)]`: a flattened map makes the derived decoder buffer every field of the
//! object as an untyped value first and decode the struct from that copy (spans decode 5–10 %
//! faster without it: `cargo bench -p agl-store --bench span_json`). [`deserialize_keeping_extra!`]
//! decodes each named field in place and only the unnamed ones as `serde_json::Value`s, accepting
//! and refusing what the derived decoder did (a JSON object; missing required fields, duplicate
//! fields and mistyped values are errors with serde's own messages). Its struct literal names
//! every field, so a field added to the struct and not to the invocation does not compile.

use serde::de::{Deserialize, Deserializer, Error, Visitor};
use std::borrow::Cow;
use std::fmt;

/// An object key, borrowed from the input where the input allows it.
pub(crate) struct Key<'de>(pub Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object key")
            }

            fn visit_borrowed_str<E: Error>(self, key: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(key)))
            }

            fn visit_str<E: Error>(self, key: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(key.to_owned())))
            }

            fn visit_string<E: Error>(self, key: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(key)))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// Implements `Deserialize` for a struct whose named fields are `required` (an error when
/// missing) or `defaulted` (`Default::default()` when missing), whose `extra: JsonMap` takes
/// every other key in order, and whose `skipped` fields start from their default.
macro_rules! deserialize_keeping_extra {
    (
        $name:ident {
            required: [$($required:ident),* $(,)?],
            defaulted: [$($defaulted:ident),* $(,)?]
            $(, skipped: [$($skipped:ident),* $(,)?])? $(,)?
        }
    ) => {
        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct FieldsVisitor;
                impl<'de> serde::de::Visitor<'de> for FieldsVisitor {
                    type Value = $name;

                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str(concat!("struct ", stringify!($name)))
                    }

                    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<$name, A::Error> {
                        use serde::de::Error as _;
                        $(let mut $required = None;)*
                        $(let mut $defaulted = None;)*
                        let mut extra = $crate::model::JsonMap::new();
                        while let Some($crate::model::keep_extra::Key(key)) = map.next_key()? {
                            match key.as_ref() {
                                $(stringify!($required) => {
                                    if $required.is_some() {
                                        return Err(A::Error::duplicate_field(stringify!($required)));
                                    }
                                    $required = Some(map.next_value()?);
                                })*
                                $(stringify!($defaulted) => {
                                    if $defaulted.is_some() {
                                        return Err(A::Error::duplicate_field(stringify!($defaulted)));
                                    }
                                    $defaulted = Some(map.next_value()?);
                                })*
                                _ => {
                                    let value = map.next_value()?;
                                    extra.insert(key.into_owned(), value);
                                }
                            }
                        }
                        Ok($name {
                            $($required: $required
                                .ok_or_else(|| A::Error::missing_field(stringify!($required)))?,)*
                            $($defaulted: $defaulted.unwrap_or_default(),)*
                            extra,
                            $($($skipped: Default::default(),)*)?
                        })
                    }
                }
                deserializer.deserialize_map(FieldsVisitor)
            }
        }
    };
}

pub(crate) use deserialize_keeping_extra;
