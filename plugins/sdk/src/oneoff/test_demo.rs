//! A resource type for the one-off's unit tests.

use crate::resources::Resource;
use serde::Deserialize;

#[derive(Deserialize)]
#[allow(dead_code)]
pub(crate) struct Demo {
    name: String,
    ensure: Option<String>,
    mode: Option<ModeValue>,
    force: Option<bool>,
    #[serde(default)]
    returns: Vec<i64>,
    #[serde(default)]
    data: toml::Table,
    timeout: Option<u32>,
    owner: Option<String>,
    group: Option<String>,
    enable: Option<bool>,
    #[serde(default)]
    post: Vec<toml::Table>,
}

#[derive(Deserialize)]
#[serde(untagged)]
#[allow(dead_code)]
pub(crate) enum ModeValue {
    Text(String),
    Integer(i64),
}

impl Resource for Demo {
    const KIND: &'static str = "demo";
    fn entity_id(&self) -> String {
        format!("demo:{}", self.name)
    }
}
