//! holo-plugin: the SDK that every holo plugin is written with.
//!
//! It owns what the plugins share: the `HOLO_*` environment and test mode
//! ([`Env`]), operation dispatch with the noop/order/batch extensions
//! ([`run`]), the scan report and FD 3 writers ([`report`]), the scan cache,
//! TOML resources ([`resources`]), file access contained in the root in test
//! mode ([`root_fs`]), atomic writes ([`atomic`]), owners ([`owners`]),
//! state records ([`state`]), the process runner ([`process`]), command
//! lines and mocks ([`command`]), common properties ([`common`]),
//! facts, data and templates, (feature `download`) HTTP(S) downloads and
//! (feature `extract`) safe extraction of archives.
//!
//! A plugin implements [`Plugin`] for one typed resource and hands itself to
//! [`run`]. The SDK runs `info`, `scan`, `apply`, `force-apply`, `diff`,
//! `noop` and the `*-batch` operations. A complete minimal plugin:
//!
//! ```no_run
//! use holo_plugin::resources::{self, Resource};
//! use holo_plugin::{EntityCtx, Env, Mode, Outcome, Plugin, Result, Scanned};
//! use serde::{Deserialize, Serialize};
//!
//! /// One `[[greeting]]` table.
//! #[derive(Deserialize)]
//! struct Greeting {
//!     name: String,
//!     text: String,
//! }
//!
//! impl Resource for Greeting {
//!     const KIND: &'static str = "greeting";
//!     fn entity_id(&self) -> String {
//!         format!("greeting:{}", self.name)
//!     }
//! }
//!
//! /// What scan hands to apply (cached in `$HOLO_CACHE_DIR`).
//! #[derive(Serialize, Deserialize)]
//! struct Spec {
//!     text: String,
//! }
//!
//! struct GreetingPlugin;
//!
//! impl Plugin for GreetingPlugin {
//!     const ID: &'static str = "greeting";
//!     type Spec = Spec;
//!
//!     fn scan(&self, env: &Env) -> Result<Vec<Scanned<Spec>>> {
//!         let mut found = Vec::new();
//!         for declared in resources::load::<Greeting>(env)? {
//!             let spec = Spec { text: declared.resource.text.clone() };
//!             // Entity id, SOURCE, REQUIRES/SUBSCRIBES from the resource.
//!             let scanned = declared.scanned(spec);
//!             found.push(scanned.info("found in", declared.location.path.display().to_string()));
//!         }
//!         // Entities applied earlier but no longer declared get scrubbed.
//!         holo_plugin::state::add_orphans(env, &mut found)?;
//!         Ok(found)
//!     }
//!
//!     fn apply(&self, env: &Env, entity: &EntityCtx<Spec>, mode: Mode) -> Result<Outcome> {
//!         let Some(spec) = &entity.spec else {
//!             holo_plugin::state::remove(env, &entity.id)?;
//!             return Ok(Outcome::Changed);
//!         };
//!         if mode == Mode::Noop {
//!             println!("Would have greeted with {}", spec.text);
//!             return Ok(Outcome::Changed);
//!         }
//!         println!("{}", spec.text);
//!         holo_plugin::state::write(env, &entity.id, spec)?;
//!         Ok(Outcome::Changed)
//!     }
//! }
//!
//! fn main() -> std::process::ExitCode {
//!     holo_plugin::run(GreetingPlugin)
//! }
//! ```
//!
//! Plugins print with `println!`/`eprintln!` (messages on stderr start with
//! `!! ` or `>> `); an `Err` from a trait method is printed as `!! message`
//! and gives exit code 1. In a batch the same handler runs with fds 1 and 2
//! captured, so per-process and batch output are the same bytes.

pub mod atomic;
mod batch;
mod cache;
pub mod command;
pub mod common;
pub(crate) mod data;
mod dispatch;
#[cfg(feature = "download")]
pub mod download;
mod entity;
mod entity_file_name;
pub mod env;
pub mod error;
#[cfg(feature = "extract")]
pub mod extract;
pub mod facts;
pub(crate) mod journal;
pub mod limits;
pub mod oneoff;
pub mod owners;
mod parse_cache;
pub mod pid_record;
pub mod plugin;
pub mod process;
pub mod render_memory;
pub mod report;
pub mod resources;
pub mod root_fs;
pub mod run_entities;
pub mod state;
mod temp_file;
pub mod template;

pub use dispatch::run;
pub use entity::fail;
pub use env::Env;
pub use error::{Error, Result};
pub use plugin::{Action, Diff, EntityCtx, Extension, Mode, Outcome, Plugin, Scanned, StatusTable};
