//! holo-vms: the `holos` command line and the holo plugin, on the compose
//! model of holos-compose and the VM runtime of holos-runtime.
//!
//! `entry` is the entry point shared by the `holos` and `holo-vms` binaries
//! (one program, chosen by `argv[0]`); `cli` holds the clap types; `holos`
//! parses the command line and runs `config`, `validate` and `version`;
//! `commands` the handlers of the runtime commands, on the project that
//! `compose_project` resolves; `logs` prints the console logs with their
//! lines' times; `install` those of `install` and `uninstall`;
//! `run` the one-off VMs of `holos run`; `import` turns libvirt domains into
//! a compose file; `plugin` the holo plugin on the SDK.

pub mod cli;
pub mod commands;
pub mod compose_project;
pub mod entry;
pub mod holos;
pub mod import;
pub mod install;
pub mod logs;
pub mod plugin;
pub mod run;
