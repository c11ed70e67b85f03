//! `--PROPERTY-file FILE`: a value read from a file, or from standard input
//! for `-`, so that a secret (`--password`, `--headers`) is never on the
//! command line, where every user sees it in `ps`.

use crate::error::{Error, Result};
use crate::plugin::ValueType;
use std::io::Read;

/// The values read from files by one command line.
#[derive(Default)]
pub(super) struct FileValues {
    /// The flag that read standard input, which gives one value.
    stdin_read_by: Option<String>,
}

impl FileValues {
    /// Whether a property of this type can be read from a file: a string
    /// (a password), a table (headers) or a value of several types.
    pub(super) fn reads(value_type: &ValueType) -> bool {
        matches!(
            value_type,
            ValueType::String | ValueType::Table | ValueType::Any
        )
    }

    /// The value of `--flag PATH` for a property of `value_type`: a string
    /// without its final line break, or a table written as TOML
    /// (`key = "value"` lines or one inline table).
    pub(super) fn read(
        &mut self,
        command: &str,
        flag: &str,
        path: &str,
        value_type: &ValueType,
    ) -> Result<toml::Value> {
        let text = self.text(command, flag, path)?;
        if *value_type != ValueType::Table {
            let text = text.strip_suffix('\n').unwrap_or(&text);
            let text = text.strip_suffix('\r').unwrap_or(text);
            return Ok(toml::Value::String(text.to_string()));
        }
        if let Ok(table) = text.parse::<toml::Table>() {
            return Ok(toml::Value::Table(table));
        }
        value_type.parse_text(text.trim()).map_err(|_| {
            Error::new(format!(
                "{command}: --{flag}: {path} holds no TOML table; write `key = \"value\"` lines"
            ))
        })
    }

    fn text(&mut self, command: &str, flag: &str, path: &str) -> Result<String> {
        let mut text = String::new();
        if path == "-" {
            if let Some(first) = self.stdin_read_by.replace(flag.to_string()) {
                return Err(Error::new(format!(
                    "{command}: --{flag} -: standard input is already read by --{first}; give one of them a file"
                )));
            }
            std::io::stdin().read_to_string(&mut text).map_err(|err| {
                Error::new(format!(
                    "{command}: --{flag}: cannot read standard input: {err}"
                ))
            })?;
            return Ok(text);
        }
        std::fs::File::open(path)
            .and_then(|mut file| file.read_to_string(&mut text))
            .map_err(|err| {
                Error::new(format!(
                    "{command}: --{flag}: cannot read {path}: {}",
                    holo_runlock::errno_text(&err)
                ))
            })?;
        Ok(text)
    }
}
