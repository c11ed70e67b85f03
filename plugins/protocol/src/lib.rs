//! holo-protocol: the wire format between the driver `holo` and plugins
//! written with `holo-plugin`, defined once for both sides (see
//! holo-plugin-interface(7)): the API version, extension names, the FD 3
//! messages, the batch stdin line and the batch record; and the rules
//! both sides apply: the apply order and its cycle message, how an entity
//! is printed, the durations of the environment variables, Go's lexical
//! path cleaning, and the names of the facts templates see.
//!
//! It owns formats only; it runs nothing and prints nothing.

pub mod duration;
pub mod entity_text;
pub mod fact_names;
pub mod fast_hash;
pub mod go_path;
pub mod order;
pub mod run_entities;
pub mod session;

use std::borrow::Cow;

use base64::Engine;
use serde::{Deserialize, Serialize};

/// The plugin interface version both sides speak.
pub const API_VERSION: u32 = 3;

/// Extension names, as in `EXTENSIONS=` (info) and `HOLO_EXTENSIONS`.
pub mod extension {
    /// `noop ENTITY`.
    pub const NOOP: &str = "noop";
    /// `REQUIRES:`/`SUBSCRIBES:` scan lines.
    pub const ORDER: &str = "order";
    /// `apply-batch` and friends.
    pub const BATCH: &str = "batch";
    /// Declared by a plugin: its batch understands `requires=`/`subscribes=`
    /// on stdin lines, so the driver does not cut runs at dependencies.
    pub const BATCH_ORDER: &str = "batch-order";
    /// Announced by the driver: it accepts output records (no `exit`) that
    /// stream an entity's output before its final record.
    pub const BATCH_STREAM: &str = "batch-stream";
    /// Declared by a plugin that only reads its resources: without generated
    /// resources its `HOLO_RESOURCE_DIR` is the static directory, uncopied.
    pub const INPLACE: &str = "inplace";
    /// Announced by the driver: after the two paths of `diff`, a plugin may
    /// write a third NUL-terminated field of extended header lines (`old
    /// mode 100644`, `old owner root`, ...) that describe attributes the
    /// files cannot show; they replace the driver's `old mode`/`new mode`.
    pub const DIFF_HEADER: &str = "diff-header";
    /// Announced by the driver: `diff` may name several files, each as three
    /// NUL-terminated fields (desired path, current path, header lines,
    /// which may be empty); the driver renders one file diff for each.
    pub const DIFF_FILES: &str = "diff-files";
    /// Declared by a plugin: it takes the run's lock as
    /// [`RUN_LOCK_FD`](crate::RUN_LOCK_FD) and keeps it from the commands it starts, so
    /// that a later run waits until this plugin has ended, even when holo
    /// itself was killed.
    pub const RUN_LOCK: &str = "run-lock";
    /// Both ways: declared by a plugin, it runs only the health checks of
    /// an entity when `noop` is called with `HOLO_MONITOR_ONLY=1`, and
    /// changes nothing; announced by the driver, the plugin may write one
    /// [`health_check_line`](crate::fd3::health_check_line) per check run.
    pub const MONITOR: &str = "monitor";
    /// What this driver announces in `HOLO_EXTENSIONS`.
    pub const DRIVER: &[&str] = &[
        MONITOR,
        NOOP,
        ORDER,
        BATCH,
        BATCH_ORDER,
        BATCH_STREAM,
        INPLACE,
        DIFF_HEADER,
        DIFF_FILES,
    ];
}

/// The descriptor on which a plugin that declares `run-lock` gets the open
/// lock file of the run (with its shared `flock`), whenever holo holds it.
pub const RUN_LOCK_FD: i32 = 4;

/// The lines a plugin writes on FD 3 after apply.
pub mod fd3 {
    pub const NOT_CHANGED: &str = "not changed";
    pub const REQUIRES_FORCE_OVERWRITE: &str = "requires --force to overwrite";
    pub const REQUIRES_FORCE_RESTORE: &str = "requires --force to restore";
    const HEALTH_CHECK: &str = "health-check ";
    /// The Nagios states a health check line may carry.
    pub const CHECK_STATES: [&str; 4] = ["OK", "WARNING", "CRITICAL", "UNKNOWN"];

    /// The FD 3 line of one health check's result: `health-check STATE NAME`
    /// (the name last, as it may hold spaces).
    pub fn health_check_line(state: &str, name: &str) -> String {
        format!("{HEALTH_CHECK}{state} {name}")
    }

    /// The state and name of a health check line; `None` for other lines.
    pub fn parse_health_check_line(line: &str) -> Option<(&str, &str)> {
        let (state, name) = line.strip_prefix(HEALTH_CHECK)?.split_once(' ')?;
        (CHECK_STATES.contains(&state) && !name.is_empty()).then_some((state, name))
    }
}

/// The `!!` message (without `!! `) for an entity skipped because `required`
/// failed; the driver and a batch print the same text.
pub fn skipped_message(required: &str) -> String {
    format!("skipped: required entity {required} failed in this run")
}

/// One line of a batch's stdin:
/// `ID[<TAB>refresh][<TAB>requires=N,...][<TAB>subscribes=N,...]`, where N
/// are 1-based line numbers of earlier lines of the same batch.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BatchLine<'a> {
    pub id: Cow<'a, str>,
    /// Apply with `HOLO_REFRESH=1` (a subscribed entity outside the batch changed).
    pub refresh: bool,
    /// Earlier lines this entity requires, in the order of its `REQUIRES:`.
    pub requires: Vec<usize>,
    /// Earlier lines this entity subscribes to, in the order of its `SUBSCRIBES:`.
    pub subscribes: Vec<usize>,
}

impl<'a> BatchLine<'a> {
    /// Appends the line, newline included.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.id.as_bytes());
        if self.refresh {
            out.extend_from_slice(b"\trefresh");
        }
        for (key, lines) in [
            ("requires", &self.requires),
            ("subscribes", &self.subscribes),
        ] {
            if lines.is_empty() {
                continue;
            }
            out.push(b'\t');
            out.extend_from_slice(key.as_bytes());
            out.push(b'=');
            let numbers: Vec<String> = lines.iter().map(usize::to_string).collect();
            out.extend_from_slice(numbers.join(",").as_bytes());
        }
        out.push(b'\n');
    }

    /// Parses line `number` (1-based) of a batch's stdin.
    pub fn parse(line: &'a str, number: usize) -> Result<BatchLine<'a>, String> {
        let mut fields = line.split('\t');
        let id = fields.next().unwrap_or_default();
        let mut parsed = BatchLine {
            id: Cow::Borrowed(id),
            ..BatchLine::default()
        };
        let bad = |what: String| {
            format!(
                "batch input line {number}: {what} after entity {id}; expected ID, then optionally \
                 <TAB>refresh, <TAB>requires=N,... and <TAB>subscribes=N,... (N: an earlier line)"
            )
        };
        for field in fields {
            let (list, value) = match field.split_once('=') {
                None if field == "refresh" => {
                    parsed.refresh = true;
                    continue;
                }
                Some(("requires", value)) => (&mut parsed.requires, value),
                Some(("subscribes", value)) => (&mut parsed.subscribes, value),
                _ => return Err(bad(format!("unknown field {field:?}"))),
            };
            for item in value.split(',') {
                match item.parse::<usize>() {
                    Ok(earlier) if earlier >= 1 && earlier < number => list.push(earlier),
                    _ => return Err(bad(format!("{item:?} is not an earlier line number"))),
                }
            }
        }
        Ok(parsed)
    }
}

/// Which of the entity's streams a chunk of output came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stream {
    Out,
    Err,
}

/// One JSON line on FD 3 of a batch. A record with `exit` is the entity's
/// final record; one without (only when the driver announced
/// `batch-stream`) carries output that arrived so far, and more records for
/// the same entity follow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchRecord<'a> {
    #[serde(borrow)]
    pub entity: Cow<'a, str>,
    /// Base64 chunks of stdout and stderr, in the order they were written.
    #[serde(default)]
    pub output: Vec<(Stream, String)>,
    /// The FD 3 lines of the per-entity operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fd3: Option<Vec<Cow<'a, str>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit: Option<i32>,
    /// The entity was skipped because a requirement in the batch failed; its
    /// output holds the `!! skipped: ...` line.
    #[serde(default, skip_serializing_if = "is_false")]
    pub skipped: bool,
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// Encodes a chunk of output for [`BatchRecord::output`].
pub fn encode_chunk(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Decodes a chunk of [`BatchRecord::output`].
pub fn decode_chunk(text: &str) -> Result<Vec<u8>, String> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|err| format!("output chunk is not base64: {err}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn health_check_lines_round_trip() {
        let line = fd3::health_check_line("CRITICAL", "check http");
        assert_eq!(line, "health-check CRITICAL check http");
        assert_eq!(
            fd3::parse_health_check_line(&line),
            Some(("CRITICAL", "check http"))
        );
        for other in ["not changed", "health-check BAD x", "health-check OK "] {
            assert_eq!(fd3::parse_health_check_line(other), None, "{other}");
        }
    }

    #[test]
    fn batch_lines_round_trip() {
        let line = BatchLine {
            id: "file:/etc/a".into(),
            refresh: true,
            requires: vec![1, 2],
            subscribes: vec![2],
        };
        let mut bytes = Vec::new();
        line.write(&mut bytes);
        assert_eq!(bytes, b"file:/etc/a\trefresh\trequires=1,2\tsubscribes=2\n");
        let text = std::str::from_utf8(&bytes).unwrap().trim_end();
        assert_eq!(BatchLine::parse(text, 3), Ok(line));
        let plain = BatchLine::parse("file:/etc/b", 1).unwrap();
        assert_eq!((plain.refresh, plain.requires.len()), (false, 0));
    }

    #[test]
    fn batch_lines_reject_unknown_fields_and_later_lines() {
        let err = BatchLine::parse("a:b\tbogus", 4).unwrap_err();
        assert!(err.contains("line 4") && err.contains("\"bogus\""), "{err}");
        let err = BatchLine::parse("a:b\trequires=4", 4).unwrap_err();
        assert!(err.contains("\"4\" is not an earlier line"), "{err}");
        assert!(BatchLine::parse("a:b\trequires=0", 4).is_err());
        assert!(BatchLine::parse("a:b\tsubscribes=", 4).is_err());
    }

    #[test]
    fn records_of_the_first_batch_version_still_parse() {
        let old = r#"{"entity":"demo:a","output":[["out","aGk="]],"fd3":["not changed"],"exit":0}"#;
        let record: BatchRecord = serde_json::from_str(old).unwrap();
        assert_eq!(record.exit, Some(0));
        assert_eq!(record.fd3.unwrap(), ["not changed"]);
        assert_eq!(decode_chunk(&record.output[0].1).unwrap(), b"hi");
        let chunk: BatchRecord =
            serde_json::from_str(r#"{"entity":"demo:a","output":[["err","aGk="]]}"#).unwrap();
        assert_eq!((chunk.exit, chunk.skipped), (None, false));
    }

    #[test]
    fn final_records_serialize_compactly() {
        let record = BatchRecord {
            entity: "demo:a".into(),
            output: vec![(Stream::Out, encode_chunk(b"hi"))],
            fd3: Some(vec![fd3::NOT_CHANGED.into()]),
            exit: Some(0),
            skipped: false,
        };
        assert_eq!(
            serde_json::to_string(&record).unwrap(),
            r#"{"entity":"demo:a","output":[["out","aGk="]],"fd3":["not changed"],"exit":0}"#
        );
    }
}
