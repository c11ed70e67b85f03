//! holo-vms: the `holos` command line and the holo plugin, on the compose
//! model of holos-compose and the VM runtime of holos-runtime.
//!
//! `cli` holds the clap types and the entry point shared by the `holos` and
//! `holo-vms` binaries (one program, chosen by `argv[0]`); `commands` the
//! handlers of the runtime commands; `install` those of `install` and
//! `uninstall`; `import` turns libvirt domains into a compose file; `plugin` the holo plugin on the SDK.

pub mod cli;
pub mod commands;
pub mod entry;
pub mod holos;
pub mod import;
pub mod install;
pub mod plugin;
pub mod run;
