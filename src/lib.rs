//! The `holo` driver: a drop-in replacement for Holo 3's Go driver that
//! speaks plugin interface v3 plus the noop, order and batch extensions.
//!
//! holorc → plugins (`info`) → generators and resources → scan → order →
//! selection → apply, diff or scan output.

pub mod apply;
pub mod cli;
pub mod diff;
pub mod entity_report;
pub mod holorc;
pub mod import_ccm;
pub mod in_root;
pub mod interrupt;
pub mod loading;
pub mod lock;
pub mod order;
pub mod output;
pub mod paths;
pub mod plugin;
pub mod run_dir;
pub mod run_report;
pub mod scan;
pub mod session;
