//! The entities of the driver's run (holo-protocol's `run_entities`): every
//! entity the scan found, with where it was declared, which the driver
//! names in `HOLO_RUN_ENTITIES` for diff and apply. A plugin that removes
//! what it did not write checks it, so that it never removes a path
//! another entity of the run manages.

use crate::{Error, Result};

pub use holo_protocol::run_entities::RunEntity;

/// The run's entities; none when the driver names no list (Holo 3's
/// driver, a scan, the one-off `ensure`, whose run is the entity alone).
pub fn of_this_run() -> Result<Vec<RunEntity>> {
    let Some(path) = std::env::var_os(holo_protocol::run_entities::VARIABLE) else {
        return Ok(Vec::new());
    };
    let text = std::fs::read_to_string(&path).map_err(|err| {
        Error::new(format!(
            "cannot read the run's entities from {} ({}): {err}",
            std::path::Path::new(&path).display(),
            holo_protocol::run_entities::VARIABLE
        ))
    })?;
    Ok(holo_protocol::run_entities::decode(&text))
}
