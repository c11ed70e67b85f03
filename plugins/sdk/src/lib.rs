//! holo-plugin: the SDK that every holo plugin is written with.
//!
//! It owns what the plugins share: the `HOLO_*` environment and test mode,
//! operation dispatch and the noop/order/batch extensions, the scan report and
//! FD 3 writers, TOML resources, atomic writes, owners, state records, facts,
//! data and templates.

pub mod data;
pub mod facts;
pub mod template;
