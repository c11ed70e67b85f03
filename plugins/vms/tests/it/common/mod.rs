//! Helpers shared by the integration tests: the compose crate's fixture (a
//! project in a temporary directory and a hermetic environment), and its
//! `holos config` output.

#[path = "../../../compose/tests/it/common.rs"]
pub mod fixture;

pub use fixture::*;

/// `holos config` output, which the compose crate's tests cannot produce.
pub trait ConfigOutput {
    fn config(&self) -> String;
}

impl ConfigOutput for Fixture {
    /// `holos config` output, with the fixture directory shown as `DIR`.
    fn config(&self) -> String {
        let command = holo_vms::cli::HolosCommand::Config {
            file_args: holo_vms::cli::FileArgs::default(),
            resolved: false,
            format: holo_vms::cli::Format::Yaml,
        };
        match holo_vms::holos::run(&command, &self.options()) {
            Ok(text) => text.replace(&self.path().display().to_string(), "DIR"),
            Err(errors) => panic!("config failed:\n{}", render(&errors, self.path())),
        }
    }
}
