//! The `[[exec]]` resource: its properties as written, and their validation
//! into the [`ExecSpec`] that scan caches for apply. Errors here are plain
//! text; the caller prefixes the resource file and line.

use std::time::Duration;

use holo_plugin::common::parse_duration;
use holo_plugin::resources::Resource;
use serde::{Deserialize, Serialize};

use crate::provider::{self, Provider};

/// One `[[exec]]` table as written (`subscribe`, `require`, `if`, `unless`,
/// `alias` and `health_checks` are the SDK's common properties).
#[derive(Debug, Clone, Deserialize)]
pub struct ExecResource {
    pub name: String,
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub environment: Vec<String>,
    #[serde(default)]
    pub path: Option<PathList>,
    #[serde(default)]
    pub returns: Option<Vec<i64>>,
    #[serde(default)]
    pub timeout: Option<String>,
    #[serde(default)]
    pub creates: Option<String>,
    #[serde(default)]
    pub onlyif: Option<String>,
    #[serde(default)]
    pub unless_command: Option<String>,
    #[serde(default)]
    pub refresh_only: bool,
    #[serde(default)]
    pub logoutput: bool,
    #[serde(default)]
    pub provider: Option<String>,
}

/// `path` as CCM writes it (`"/usr/bin:/bin"`) or as a list.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum PathList {
    Joined(String),
    List(Vec<String>),
}

impl Resource for ExecResource {
    const KIND: &'static str = "exec";
    const ALIASES: &'static [(&'static str, &'static str)] = &[("refreshonly", "refresh_only")];
    fn entity_id(&self) -> String {
        format!("exec:{}", self.name)
    }
}

/// The validated resource: what apply needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecSpec {
    /// The command string (`command`, else `name`).
    pub command: String,
    pub provider: Provider,
    /// The working directory as declared (below the root in test mode).
    pub cwd: Option<String>,
    pub environment: Vec<(String, String)>,
    pub path: Option<Vec<String>>,
    /// Exit codes that count as success.
    pub returns: Vec<i32>,
    pub timeout: Option<Duration>,
    /// A file whose existence means the command has done its work (below the
    /// root in test mode).
    pub creates: Option<String>,
    /// Run only if this command succeeds.
    pub onlyif: Option<String>,
    /// Run only if this command fails.
    pub unless_command: Option<String>,
    pub refresh_only: bool,
    pub logoutput: bool,
    /// Whether the resource subscribes to anything (for scan's reason).
    pub subscribes: bool,
    /// The `subscribe` entries as written, for the line that says why a
    /// refresh ran the command.
    #[serde(default)]
    pub subscribe: Vec<String>,
}

impl ExecResource {
    /// Checks every property; `subscribes` says whether `subscribe` is set.
    /// An error names the property whose line it points at (`""` for the
    /// table's line).
    pub fn validate(&self, subscribes: bool) -> Result<ExecSpec, (&'static str, String)> {
        let spec = self
            .validate_all_but_timeout(subscribes)
            .map_err(|m| ("", m))?;
        let timeout = match &self.timeout {
            None => None,
            Some(text) => Some(positive_duration(text).map_err(|m| ("timeout", m))?),
        };
        Ok(ExecSpec { timeout, ..spec })
    }

    fn validate_all_but_timeout(&self, subscribes: bool) -> Result<ExecSpec, String> {
        if self.name.trim().is_empty() || self.name.contains('\n') {
            return Err("name must be one non-empty line".into());
        }
        let command = self.command.clone().unwrap_or_else(|| self.name.clone());
        let provider = match self.provider.as_deref() {
            None | Some("posix") => Provider::Posix,
            Some("shell") => Provider::Shell,
            Some(other) => {
                return Err(format!(
                    "provider {other:?} is unknown; use \"posix\" (the default) or \"shell\""
                ));
            }
        };
        for text in [
            Some(&command),
            self.onlyif.as_ref(),
            self.unless_command.as_ref(),
        ]
        .into_iter()
        .flatten()
        {
            provider::command(provider, text)?;
        }
        for (property, value) in [("cwd", &self.cwd), ("creates", &self.creates)] {
            if let Some(path) = value
                && !path.starts_with('/')
            {
                return Err(format!(
                    "{property} {path:?} is not an absolute path; write it from /"
                ));
            }
        }
        if self.refresh_only && !subscribes {
            return Err(
                "refresh_only = true without subscribe never runs; add subscribe = [\"ENTITY\"] or remove refresh_only"
                    .into(),
            );
        }
        let environment = environment_pairs(&self.environment)?;
        let path = search_path(self.path.as_ref())?;
        let returns = exit_codes(self.returns.as_deref())?;
        Ok(ExecSpec {
            command,
            provider,
            cwd: self.cwd.clone(),
            environment,
            path,
            returns,
            timeout: None,
            creates: self.creates.clone(),
            onlyif: self.onlyif.clone(),
            unless_command: self.unless_command.clone(),
            refresh_only: self.refresh_only,
            logoutput: self.logoutput,
            subscribes,
            subscribe: Vec::new(),
        })
    }
}

/// `environment`: `KEY=value` entries, both non-empty, the key a variable
/// name.
fn environment_pairs(entries: &[String]) -> Result<Vec<(String, String)>, String> {
    entries
        .iter()
        .map(|entry| match entry.split_once('=') {
            Some((key, _)) if !key.is_empty() && !is_variable_name(key) => Err(format!(
                "environment entry {entry:?}: {key:?} is not a variable name; use ASCII letters, digits and _, not starting with a digit"
            )),
            Some((key, value)) if !key.is_empty() && !value.is_empty() => {
                Ok((key.to_string(), value.to_string()))
            }
            _ => Err(format!(
                "environment entry {entry:?} is not KEY=value (both non-empty)"
            )),
        })
        .collect()
}

/// `path`: absolute directories, as a list or joined with `:`.
fn search_path(path: Option<&PathList>) -> Result<Option<Vec<String>>, String> {
    let dirs: Vec<String> = match path {
        None => return Ok(None),
        Some(PathList::Joined(joined)) => joined.split(':').map(str::to_string).collect(),
        Some(PathList::List(list)) => list.clone(),
    };
    for dir in &dirs {
        if !dir.starts_with('/') {
            return Err(format!(
                "path entry {dir:?} is not an absolute directory; path only takes directories from /"
            ));
        }
    }
    Ok(Some(dirs))
}

/// `returns`: the exit codes that mean success, 0 without it.
fn exit_codes(codes: Option<&[i64]>) -> Result<Vec<i32>, String> {
    match codes {
        None => Ok(vec![0]),
        Some([]) => Err("returns is empty; list the exit codes that mean success, like [0]".into()),
        Some(codes) => codes
            .iter()
            .map(|code| {
                i32::try_from(*code)
                    .ok()
                    .filter(|code| (0..=255).contains(code))
                    .ok_or_else(|| format!("returns: {code} is not an exit code (0 to 255)"))
            })
            .collect(),
    }
}

/// True when `key` is a name a shell can use as a variable:
/// `[A-Za-z_][A-Za-z0-9_]*`.
fn is_variable_name(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `timeout`: a duration above zero (zero would kill the command at once).
fn positive_duration(text: &str) -> Result<Duration, String> {
    match parse_duration(text) {
        None => Err(format!(
            "timeout {text:?} is not a duration; write it like \"30s\" or \"5m\""
        )),
        Some(limit) if limit.is_zero() => Err(format!(
            "timeout {text:?} must be positive; write it like \"30s\" or \"5m\", or leave it out for no limit"
        )),
        Some(limit) => Ok(limit),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(name: &str) -> ExecResource {
        ExecResource {
            name: name.into(),
            command: None,
            cwd: None,
            environment: Vec::new(),
            path: None,
            returns: None,
            timeout: None,
            creates: None,
            onlyif: None,
            unless_command: None,
            refresh_only: false,
            logoutput: false,
            provider: None,
        }
    }

    #[test]
    fn defaults_follow_the_seed() {
        let spec = resource("/usr/bin/myapp --config /etc/myapp.conf")
            .validate(false)
            .expect("valid");
        assert_eq!(spec.command, "/usr/bin/myapp --config /etc/myapp.conf");
        assert_eq!(spec.provider, Provider::Posix);
        assert_eq!(spec.returns, [0]);
        assert_eq!(spec.timeout, None);
    }

    #[test]
    fn properties_are_read() {
        let mut exec = resource("build");
        exec.command = Some("make build".into());
        exec.environment = vec!["CC=gcc".into(), "CFLAGS=-O2 -g".into()];
        exec.path = Some(PathList::Joined("/usr/local/bin:/usr/bin:/bin".into()));
        exec.returns = Some(vec![0, 2]);
        exec.timeout = Some("5m".into());
        exec.provider = Some("shell".into());
        let spec = exec.validate(true).expect("valid");
        assert_eq!(spec.environment[1], ("CFLAGS".into(), "-O2 -g".into()));
        assert_eq!(
            spec.path.as_deref(),
            Some(
                &[
                    "/usr/local/bin".to_string(),
                    "/usr/bin".into(),
                    "/bin".into()
                ][..]
            )
        );
        assert_eq!(spec.returns, [0, 2]);
        assert_eq!(spec.timeout, Some(Duration::from_secs(300)));
        assert_eq!(spec.provider, Provider::Shell);
    }

    #[test]
    fn refresh_only_with_subscribe_and_variable_names_are_accepted() {
        let mut exec = resource("x");
        exec.refresh_only = true;
        exec.environment = vec!["_A1=a b".into(), "lower_case=1".into()];
        assert!(exec.validate(true).is_ok());
    }

    #[test]
    fn invalid_properties_say_what_to_do() {
        type Change = fn(&mut ExecResource);
        let cases: Vec<(Change, &str)> = vec![
            (
                |e| e.command = Some("echo 'open".into()),
                "unbalanced quotes",
            ),
            (|e| e.onlyif = Some("test \"x".into()), "unbalanced quotes"),
            (|e| e.provider = Some("bash".into()), "use \"posix\""),
            (|e| e.environment = vec!["CC=".into()], "KEY=value"),
            (|e| e.environment = vec!["=x".into()], "KEY=value"),
            (|e| e.environment = vec!["PLAIN".into()], "KEY=value"),
            (
                |e| e.path = Some(PathList::Joined("/bin:bin".into())),
                "absolute directory",
            ),
            (|e| e.returns = Some(vec![]), "returns is empty"),
            (|e| e.returns = Some(vec![256]), "0 to 255"),
            (|e| e.timeout = Some("30".into()), "like \"30s\""),
            (|e| e.timeout = Some("0s".into()), "must be positive"),
            (
                |e| e.creates = Some("relative/file".into()),
                "absolute path",
            ),
            (|e| e.cwd = Some("tmp".into()), "absolute path"),
            (|e| e.command = Some("  ".into()), "no command specified"),
            (|e| e.refresh_only = true, "without subscribe never runs"),
            (
                |e| e.environment = vec!["A B=1".into()],
                "not a variable name",
            ),
            (
                |e| e.environment = vec!["Ä=1".into()],
                "not a variable name",
            ),
            (
                |e| e.environment = vec!["1X=1".into()],
                "not a variable name",
            ),
        ];
        for (change, expected) in cases {
            let mut exec = resource("x");
            change(&mut exec);
            let (_, err) = exec.validate(false).expect_err(expected);
            assert!(err.contains(expected), "{err} should contain {expected}");
        }
        let mut shell = resource("x");
        shell.provider = Some("shell".into());
        shell.command = Some("echo 'open".into());
        assert!(
            shell.validate(false).is_ok(),
            "the shell reports its own syntax errors"
        );
    }
}
