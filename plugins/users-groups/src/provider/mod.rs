//! The shadow tools: their command lines (`shadow.rs`), the account
//! databases they change (`passwd.rs`), and how a command is carried out:
//! run, or in test mode printed as a `MOCK:` line as Holo 3 does.

pub mod passwd;
pub mod shadow;

use std::path::PathBuf;

use holo_plugin::process::Command;
use holo_plugin::{Env, Error, Result};

/// In test mode, run the real tools on the root (`--prefix ROOT`) instead
/// of printing `MOCK:` lines.
pub const REAL_TOOLS_VARIABLE: &str = "HOLO_USERS_GROUPS_REAL_TOOLS";

/// How the shadow tools are carried out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tools {
    /// Test mode: print `MOCK: COMMAND`, change nothing.
    Mock,
    /// Run them; with a prefix, on the account files below that directory.
    Real { prefix: Option<PathBuf> },
}

impl Tools {
    pub fn for_env(env: &Env) -> Result<Tools> {
        if !env.test_mode {
            return Ok(Tools::Real { prefix: None });
        }
        if std::env::var_os(REAL_TOOLS_VARIABLE).is_none_or(|value| value != "1") {
            return Ok(Tools::Mock);
        }
        let prefix = std::fs::canonicalize(&env.root)
            .map_err(|err| Error::io("resolve the root directory", &env.root, &err))?;
        Ok(Tools::Real {
            prefix: Some(prefix),
        })
    }

    /// Carries out `argv` (program first); a failure names the command and
    /// its status, after the tool's own messages.
    pub fn run(&self, argv: &[String]) -> Result<()> {
        let Tools::Real { prefix } = self else {
            holo_plugin::command::mock(argv);
            return Ok(());
        };
        let Some((program, args)) = argv.split_first() else {
            return Ok(());
        };
        let mut command = Command::new(program);
        if let Some(prefix) = prefix {
            command = command.arg("--prefix").arg(prefix);
        }
        command.args(args).run_forwarded_checked()
    }
}
