//! The value type of each property of a resource struct, for the flags of
//! `ensure`: each field is asked to deserialize from a probe, which
//! records what it asks for. The field names are `resources.rs`'s.

use crate::plugin::ValueType;
use crate::resources::Resource;
use serde::de::{self, Visitor};
use std::fmt;

/// The value types of the properties of `[[R::KIND]]`, found by asking each
/// field of the struct to deserialize from a probe. Empty for a type that is
/// not a plain struct.
pub fn property_types<R: Resource>() -> Vec<(&'static str, ValueType)> {
    let Some(fields) = crate::resources::struct_fields::<R>() else {
        return Vec::new();
    };
    fields
        .iter()
        .map(|field| {
            let mut found = None;
            let _ = R::deserialize(StructProbe {
                only: field,
                found: &mut found,
            });
            (*field, found.unwrap_or(ValueType::Any))
        })
        .collect()
}

#[derive(Debug)]
struct ProbeDone;

impl fmt::Display for ProbeDone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("type probe")
    }
}

impl std::error::Error for ProbeDone {}

impl de::Error for ProbeDone {
    fn custom<T: fmt::Display>(_: T) -> Self {
        ProbeDone
    }
}

/// Deserializes as a struct that holds only the field `only`.
struct StructProbe<'a> {
    only: &'static str,
    found: &'a mut Option<ValueType>,
}

impl<'de> de::Deserializer<'de> for StructProbe<'_> {
    type Error = ProbeDone;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> std::result::Result<V::Value, ProbeDone> {
        Err(ProbeDone)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> std::result::Result<V::Value, ProbeDone> {
        visitor.visit_map(OneField {
            key: Some(self.only),
            found: self.found,
        })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

struct OneField<'a> {
    key: Option<&'static str>,
    found: &'a mut Option<ValueType>,
}

impl<'de> de::MapAccess<'de> for OneField<'_> {
    type Error = ProbeDone;

    fn next_key_seed<K: de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> std::result::Result<Option<K::Value>, ProbeDone> {
        match self.key.take() {
            Some(key) => seed
                .deserialize(de::value::BorrowedStrDeserializer::new(key))
                .map(Some),
            None => Ok(None),
        }
    }

    fn next_value_seed<V: de::DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> std::result::Result<V::Value, ProbeDone> {
        seed.deserialize(ValueProbe(self.found))
    }
}

/// Records the type a value asks for, then stops the deserialization.
struct ValueProbe<'a>(&'a mut Option<ValueType>);

impl ValueProbe<'_> {
    fn found<T>(self, value_type: ValueType) -> std::result::Result<T, ProbeDone> {
        *self.0 = Some(value_type);
        Err(ProbeDone)
    }
}

macro_rules! probe_as {
    ($value_type:expr => $($method:ident)*) => {
        $(fn $method<V: Visitor<'de>>(self, _: V) -> std::result::Result<V::Value, ProbeDone> {
            self.found($value_type)
        })*
    };
}

impl<'de> de::Deserializer<'de> for ValueProbe<'_> {
    type Error = ProbeDone;

    probe_as!(ValueType::Table => deserialize_map);
    probe_as!(ValueType::Any => deserialize_any deserialize_ignored_any
        deserialize_f32 deserialize_f64 deserialize_bytes deserialize_byte_buf deserialize_unit);
    probe_as!(ValueType::String => deserialize_str deserialize_string deserialize_char
        deserialize_identifier);
    probe_as!(ValueType::Bool => deserialize_bool);
    probe_as!(ValueType::Integer => deserialize_i8 deserialize_i16 deserialize_i32
        deserialize_i64 deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32
        deserialize_u64 deserialize_u128);

    fn deserialize_option<V: Visitor<'de>>(
        self,
        visitor: V,
    ) -> std::result::Result<V::Value, ProbeDone> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> std::result::Result<V::Value, ProbeDone> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(
        self,
        visitor: V,
    ) -> std::result::Result<V::Value, ProbeDone> {
        let mut element = None;
        let _ = visitor.visit_seq(OneElement(Some(&mut element)));
        self.found(ValueType::Array(Box::new(
            element.unwrap_or(ValueType::Any),
        )))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        variants: &'static [&'static str],
        _: V,
    ) -> std::result::Result<V::Value, ProbeDone> {
        self.found(ValueType::OneOf(variants))
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: V,
    ) -> std::result::Result<V::Value, ProbeDone> {
        self.found(ValueType::Any)
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _: usize,
        _: V,
    ) -> std::result::Result<V::Value, ProbeDone> {
        self.found(ValueType::Any)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        _: V,
    ) -> std::result::Result<V::Value, ProbeDone> {
        self.found(ValueType::Any)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        _: V,
    ) -> std::result::Result<V::Value, ProbeDone> {
        self.found(ValueType::Any)
    }
}

struct OneElement<'a>(Option<&'a mut Option<ValueType>>);

impl<'de> de::SeqAccess<'de> for OneElement<'_> {
    type Error = ProbeDone;

    fn next_element_seed<T: de::DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> std::result::Result<Option<T::Value>, ProbeDone> {
        match self.0.take() {
            Some(found) => seed.deserialize(ValueProbe(found)).map(Some),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oneoff::test_demo::Demo;

    #[test]
    fn property_types_are_probed_from_the_struct() {
        assert_eq!(
            property_types::<Demo>(),
            vec![
                ("name", ValueType::String),
                ("ensure", ValueType::String),
                ("mode", ValueType::Any),
                ("force", ValueType::Bool),
                ("returns", ValueType::Array(Box::new(ValueType::Integer))),
                ("data", ValueType::Table),
                ("timeout", ValueType::Integer),
                ("owner", ValueType::String),
                ("group", ValueType::String),
                ("enable", ValueType::Bool),
                ("post", ValueType::Array(Box::new(ValueType::Table))),
            ]
        );
    }
}
