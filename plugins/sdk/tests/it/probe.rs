//! Batch capture details, driven through the `probe` example plugin:
//! interleaving of stdout and stderr, child processes, errors and panics.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use test_support::plugin_run::PluginRun;

use base64::Engine;
use serde::Deserialize;

/// The example binary that `cargo test` builds beside this test.
fn probe_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target profile dir");
    let path = profile_dir.join("examples/probe");
    assert!(
        path.exists(),
        "{} is missing: run `cargo test -p holo-plugin` without a test filter (it builds the examples) or `cargo build -p holo-plugin --example probe` first",
        path.display()
    );
    path
}

struct Probe {
    dir: tempfile::TempDir,
}

#[derive(Debug, PartialEq)]
struct Run {
    chunks: Vec<(String, String)>,
    exit: i32,
}

#[derive(Deserialize)]
struct Record {
    entity: String,
    output: Vec<(String, String)>,
    exit: i32,
}

impl Probe {
    fn new(resources: &str) -> Probe {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("res")).expect("mkdir");
        std::fs::create_dir_all(dir.path().join("cache")).expect("mkdir");
        std::fs::write(dir.path().join("res/a.toml"), resources).expect("write");
        Probe { dir }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = PluginRun::new(probe_binary(), "probe", &self.dir.path().join("root"))
            .args(args)
            .inherit_env()
            .cache_dir(self.dir.path().join("cache"))
            .resource_dir(self.dir.path().join("res"))
            .fd3_to(self.dir.path().join("fd3"))
            .command();
        command.env_remove("RUST_BACKTRACE");
        command
    }

    /// One process for one entity; stdout and stderr go to one pipe so that
    /// their interleaving is observable.
    fn single(&self, id: &str) -> Run {
        let output = self
            .command(&["apply", id])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .expect("run probe");
        Run {
            chunks: [("out", output.stdout), ("err", output.stderr)]
                .into_iter()
                .filter(|(_, bytes)| !bytes.is_empty())
                .map(|(stream, bytes)| {
                    (
                        stream.to_string(),
                        String::from_utf8_lossy(&bytes).into_owned(),
                    )
                })
                .collect(),
            exit: output.status.code().unwrap_or(-1),
        }
    }

    fn batch(&self, ids: &[&str]) -> Vec<(String, Run)> {
        let mut child = self
            .command(&["apply-batch"])
            .stdin(Stdio::piped())
            .spawn()
            .expect("spawn probe");
        let input: String = ids.iter().map(|id| format!("{id}\n")).collect();
        if let Some(mut stdin) = child.stdin.take() {
            use std::io::Write;
            stdin.write_all(input.as_bytes()).expect("write stdin");
        }
        assert!(child.wait().expect("wait").success());
        let fd3 = std::fs::read_to_string(self.dir.path().join("fd3")).expect("fd3");
        let engine = base64::engine::general_purpose::STANDARD;
        fd3.lines()
            .map(|line| {
                let record: Record = serde_json::from_str(line).expect("record");
                let chunks = record
                    .output
                    .into_iter()
                    .map(|(stream, data)| {
                        let bytes = engine.decode(data).expect("base64");
                        (stream, String::from_utf8_lossy(&bytes).into_owned())
                    })
                    .collect();
                (
                    record.entity,
                    Run {
                        chunks,
                        exit: record.exit,
                    },
                )
            })
            .collect()
    }
}

/// `thread 'main' (1234) panicked` becomes `thread 'main' panicked`.
fn without_thread_ids(run: &Run) -> Run {
    let strip = |text: &str| {
        let mut result = String::new();
        let mut rest = text;
        while let Some(start) = rest.find("' (") {
            let after = &rest[start + 3..];
            match after.find(") ") {
                Some(end) if after[..end].chars().all(|c| c.is_ascii_digit()) => {
                    result.push_str(&rest[..start + 1]);
                    rest = &after[end + 1..];
                }
                _ => {
                    result.push_str(&rest[..start + 3]);
                    rest = after;
                }
            }
        }
        result.push_str(rest);
        result
    };
    Run {
        chunks: run
            .chunks
            .iter()
            .map(|(stream, text)| (stream.clone(), strip(text)))
            .collect(),
        exit: run.exit,
    }
}

fn chunk(stream: &str, text: &str) -> (String, String) {
    (stream.to_string(), text.to_string())
}

#[test]
fn batch_chunks_keep_the_order_of_writes_across_streams_and_children() {
    let probe = Probe::new(
        "[[probe]]\nname = \"mixed\"\nsteps = [\"out:one\", \"sleep\", \"err:two\", \"sleep\", \"child:three\", \"sleep\", \"child-err:four\", \"sleep\", \"out:five\"]\n",
    );
    let records = probe.batch(&["probe:mixed"]);
    assert_eq!(records.len(), 1);
    assert_eq!(
        records[0].1,
        Run {
            chunks: vec![
                chunk("out", "one\n"),
                chunk("err", "two\n"),
                chunk("out", "three\n"),
                chunk("err", "four\n"),
                chunk("out", "five\n"),
            ],
            exit: 0,
        }
    );
}

#[test]
fn errors_and_panics_in_a_batch_match_their_own_process() {
    let probe = Probe::new(
        "[[probe]]\nname = \"fails\"\nsteps = [\"out:before\", \"fail:it broke; fix it\"]\n\n\
         [[probe]]\nname = \"panics\"\nsteps = [\"panic:boom\"]\n\n\
         [[probe]]\nname = \"after\"\nsteps = [\"out:still running\"]\n",
    );
    let ids = ["probe:fails", "probe:panics", "probe:after"];
    let records = probe.batch(&ids);
    let got: Vec<&str> = records.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(got, ids);
    for (id, batch_run) in &records {
        // A panic message names the thread id, which differs between processes.
        assert_eq!(
            without_thread_ids(batch_run),
            without_thread_ids(&probe.single(id)),
            "{id}"
        );
    }
    assert_eq!(
        records[0].1.chunks,
        [
            chunk("out", "before\n"),
            chunk("err", "!! it broke; fix it\n")
        ]
    );
    assert_eq!(records[0].1.exit, 1);
    assert_eq!(records[1].1.exit, 101);
    assert!(
        records[1].1.chunks[0].1.contains("probe panics: boom"),
        "{:?}",
        records[1].1
    );
    assert_eq!(
        records[2].1,
        Run {
            chunks: vec![chunk("out", "still running\n")],
            exit: 0
        }
    );
}
