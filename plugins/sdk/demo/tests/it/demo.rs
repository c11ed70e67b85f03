//! Runs the holo-demo plugin through every operation the SDK dispatches, and
//! proves that a batch gives the same bytes as one process per entity.

use std::path::{Path, PathBuf};
use test_support::plugin_run::PluginRun;

use base64::Engine;
use serde::Deserialize;

/// What one plugin invocation produced.
#[derive(Debug, PartialEq)]
struct Run {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    fd3: Vec<u8>,
    code: i32,
}

/// A test root with a demo resource directory and a cache directory.
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new(resources: &str) -> Fixture {
        let dir = tempfile::tempdir().expect("tempdir");
        let fixture = Fixture { dir };
        std::fs::create_dir_all(fixture.resources()).expect("mkdir resources");
        std::fs::create_dir_all(fixture.cache()).expect("mkdir cache");
        std::fs::write(fixture.resources().join("00-demo.toml"), resources).expect("write");
        fixture
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    fn resources(&self) -> PathBuf {
        self.root().join("usr/share/holo/demo")
    }

    fn cache(&self) -> PathBuf {
        self.dir.path().join("cache")
    }

    fn target(&self, name: &str) -> PathBuf {
        self.root().join("var/lib/holo-demo").join(name)
    }

    fn command(&self, args: &[&str]) -> assert_cmd::Command {
        let run = PluginRun::new(
            assert_cmd::cargo::cargo_bin!("holo-demo"),
            "demo",
            &self.root(),
        )
        .args(args)
        .cache_dir(self.cache())
        .resource_dir(self.resources())
        .extensions("noop,order,batch")
        .fd3_to(self.dir.path().join("fd3"));
        assert_cmd::Command::from_std(run.command())
    }

    fn run_with(&self, mut command: assert_cmd::Command) -> Run {
        let output = command.output().expect("run holo-demo");
        let fd3 = std::fs::read(self.dir.path().join("fd3")).unwrap_or_default();
        Run {
            stdout: output.stdout,
            stderr: output.stderr,
            fd3,
            code: output.status.code().unwrap_or(-1),
        }
    }

    fn run(&self, args: &[&str]) -> Run {
        self.run_with(self.command(args))
    }

    fn run_batch(&self, operation: &str, input: &str) -> Run {
        let mut command = self.command(&[operation]);
        command.write_stdin(input);
        self.run_with(command)
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

const TWO_DEMOS: &str = "[[demo]]\nname = \"a\"\nvalue = \"alpha\"\nrequire = \"demo#b\"\n\n[[demo]]\nname = \"b\"\nvalue = \"beta\"\nannounce = \"b was written\"\n";

#[test]
fn info_declares_versions_and_extensions() {
    let fixture = Fixture::new("");
    let run = fixture.run(&["info"]);
    assert_eq!(
        text(&run.stdout),
        "MIN_API_VERSION=3\nMAX_API_VERSION=3\nEXTENSIONS=noop,order,batch,inplace,batch-order,run-lock,monitor\n"
    );
    assert_eq!(run.code, 0);
}

#[test]
fn scan_reports_entities_with_order_lines_only_when_announced() {
    let fixture = Fixture::new(TWO_DEMOS);
    let source = fixture.resources().join("00-demo.toml");
    let source = source.display();
    let run = fixture.run(&["scan"]);
    assert_eq!(run.code, 0, "{}", text(&run.stderr));
    assert_eq!(
        text(&run.stdout),
        format!(
            "ENTITY: demo:a\nSOURCE: {source}\nfound in: {source}\nREQUIRES: demo:b\n\
             ENTITY: demo:b\nSOURCE: {source}\nfound in: {source}\n"
        )
    );
    let mut command = fixture.command(&["scan"]);
    command.env_remove("HOLO_EXTENSIONS");
    let run = fixture.run_with(command);
    assert!(
        !text(&run.stdout).contains("REQUIRES"),
        "{}",
        text(&run.stdout)
    );
}

#[test]
fn resource_errors_name_the_origin_file_and_line() {
    let fixture = Fixture::new("[[demo]]\nname = \"a\"\nvalu = \"x\"\n");
    let mut command = fixture.command(&["scan"]);
    command.env("HOLO_RESOURCE_ORIGIN", "/usr/share/holo/demo");
    let run = fixture.run_with(command);
    assert_eq!(run.code, 1);
    let stderr = text(&run.stderr);
    assert!(
        stderr.starts_with("!! /usr/share/holo/demo/00-demo.toml:3: unknown property valu in [[demo]]; did you mean value?"),
        "{stderr}"
    );
}

#[test]
fn apply_writes_then_reports_not_changed_and_protects_edits() {
    let fixture = Fixture::new(TWO_DEMOS);
    assert_eq!(fixture.run(&["scan"]).code, 0);

    let run = fixture.run(&["apply", "demo:b"]);
    assert_eq!(
        (run.code, text(&run.fd3)),
        (0, String::new()),
        "{}",
        text(&run.stderr)
    );
    assert_eq!(text(&run.stdout), "b was written\n");
    assert_eq!(
        std::fs::read_to_string(fixture.target("b")).expect("written"),
        "beta"
    );

    let run = fixture.run(&["apply", "demo:b"]);
    assert_eq!(
        (run.code, text(&run.fd3), text(&run.stdout)),
        (0, "not changed\n".into(), String::new())
    );

    std::fs::write(fixture.target("b"), "edited").expect("edit");
    let run = fixture.run(&["apply", "demo:b"]);
    assert_eq!(text(&run.fd3), "requires --force to overwrite\n");
    assert_eq!(
        std::fs::read_to_string(fixture.target("b")).expect("kept"),
        "edited"
    );

    std::fs::remove_file(fixture.target("b")).expect("delete");
    let run = fixture.run(&["apply", "demo:b"]);
    assert_eq!(text(&run.fd3), "requires --force to restore\n");

    let run = fixture.run(&["force-apply", "demo:b"]);
    assert_eq!((run.code, text(&run.fd3)), (0, String::new()));
    assert_eq!(
        std::fs::read_to_string(fixture.target("b")).expect("restored"),
        "beta"
    );
}

#[test]
fn noop_reports_without_changing_anything() {
    let fixture = Fixture::new(TWO_DEMOS);
    let run = fixture.run(&["noop", "demo:a"]);
    assert_eq!(run.code, 0);
    assert_eq!(
        text(&run.stdout),
        format!("Would have written {}\n", fixture.target("a").display())
    );
    assert!(!fixture.target("a").exists());
    fixture.run(&["apply", "demo:a"]);
    let run = fixture.run(&["noop", "demo:a"]);
    assert_eq!(
        (text(&run.fd3), text(&run.stdout)),
        ("not changed\n".into(), String::new())
    );
}

#[test]
fn diff_writes_two_nul_terminated_paths() {
    let fixture = Fixture::new(TWO_DEMOS);
    let run = fixture.run(&["diff", "demo:a"]);
    assert_eq!(run.code, 0, "{}", text(&run.stderr));
    let fd3 = text(&run.fd3);
    let paths: Vec<&str> = fd3.split_terminator('\0').collect();
    assert_eq!(paths.len(), 2, "{fd3:?}");
    assert!(fd3.ends_with('\0'));
    assert_eq!(std::fs::read_to_string(paths[0]).expect("desired"), "alpha");
    assert_eq!(Path::new(paths[1]), fixture.target("a"));
}

#[test]
fn orphans_are_scanned_and_scrubbed() {
    let fixture = Fixture::new(TWO_DEMOS);
    fixture.run(&["apply", "demo:a"]);
    std::fs::write(fixture.resources().join("00-demo.toml"), "").expect("remove resources");
    let run = fixture.run(&["scan"]);
    assert_eq!(
        text(&run.stdout),
        "ENTITY: demo:a\nACTION: Scrubbing (resource was deleted)\n"
    );
    let run = fixture.run(&["apply", "demo:a"]);
    assert_eq!(run.code, 0, "{}", text(&run.stderr));
    assert!(!fixture.target("a").exists());
    assert_eq!(text(&fixture.run(&["scan"]).stdout), "");
    let run = fixture.run(&["diff", "demo:a"]);
    assert_eq!(
        run.code,
        1,
        "a scrubbed entity is unknown: {}",
        text(&run.stderr)
    );
}

#[test]
fn errors_and_unknown_operations_exit_1_with_a_message() {
    let fixture = Fixture::new(TWO_DEMOS);
    let run = fixture.run(&["frobnicate"]);
    assert_eq!(
        (run.code, text(&run.stderr)),
        (1, "!! unknown operation: frobnicate\n".into())
    );
    let run = fixture.run(&["apply", "demo:missing"]);
    assert_eq!(run.code, 1);
    assert!(
        text(&run.stderr).starts_with("!! unknown entity demo:missing"),
        "{}",
        text(&run.stderr)
    );
    let run = fixture.run(&["apply"]);
    assert_eq!(run.code, 1);
    assert!(text(&run.stderr).contains("usage: holo-demo apply ENTITY"));
    let mut command = fixture.command(&["scan"]);
    command.env("HOLO_API_VERSION", "2");
    let run = fixture.run_with(command);
    assert_eq!(run.code, 1);
    assert!(text(&run.stderr).contains("HOLO_API_VERSION=2"));
}

#[test]
fn a_plugin_run_by_hand_scans_first_and_skips_a_closed_fd3() {
    let fixture = Fixture::new(TWO_DEMOS);
    let output = std::process::Command::new(assert_cmd::cargo::cargo_bin!("holo-demo"))
        .args(["apply", "demo:a"])
        .env_clear()
        .env("HOLO_ROOT_DIR", fixture.root())
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(
        std::fs::read_to_string(fixture.target("a")).expect("written"),
        "alpha"
    );
}

#[derive(Deserialize)]
struct Record {
    entity: String,
    output: Vec<(String, String)>,
    fd3: Vec<String>,
    exit: i32,
}

/// Splits a batch's FD 3 into per-entity runs, as the driver renders them.
fn batch_runs(fd3: &[u8]) -> Vec<(String, Run)> {
    let engine = base64::engine::general_purpose::STANDARD;
    text(fd3)
        .lines()
        .map(|line| {
            let record: Record = serde_json::from_str(line).expect("one JSON record per line");
            let mut run = Run {
                stdout: Vec::new(),
                stderr: Vec::new(),
                fd3: Vec::new(),
                code: record.exit,
            };
            for (stream, data) in record.output {
                let bytes = engine.decode(data).expect("base64");
                match stream.as_str() {
                    "out" => run.stdout.extend(bytes),
                    "err" => run.stderr.extend(bytes),
                    other => panic!("unknown stream {other}"),
                }
            }
            for message in record.fd3 {
                run.fd3.extend(message.into_bytes());
                run.fd3.push(b'\n');
            }
            (record.entity, run)
        })
        .collect()
}

/// Entities that cover every outcome: changed with a child's output, not
/// changed, edited by a user, unknown (an error), refreshed, orphaned.
fn mixed_fixture() -> Fixture {
    let big = "x".repeat(100_000);
    let fixture = Fixture::new(&format!(
        "[[demo]]\nname = \"new\"\nvalue = \"1\"\nannounce = \"child output for new\"\n\n\
         [[demo]]\nname = \"same\"\nvalue = \"2\"\n\n\
         [[demo]]\nname = \"edited\"\nvalue = \"3\"\n\n\
         [[demo]]\nname = \"big\"\nvalue = \"4\"\nannounce = \"{big}\"\n"
    ));
    let gone = fixture.resources().join("01-gone.toml");
    std::fs::write(&gone, "[[demo]]\nname = \"gone\"\nvalue = \"5\"\n").expect("write");
    assert_eq!(fixture.run(&["scan"]).code, 0);
    for id in ["demo:same", "demo:edited", "demo:gone"] {
        assert_eq!(fixture.run(&["force-apply", id]).code, 0);
    }
    std::fs::remove_file(gone).expect("remove");
    std::fs::write(fixture.target("edited"), "by hand").expect("edit");
    assert_eq!(fixture.run(&["scan"]).code, 0);
    fixture
}

const MIXED: [&str; 6] = [
    "demo:new",
    "demo:same",
    "demo:edited",
    "demo:nope",
    "demo:big",
    "demo:gone",
];

#[test]
fn batch_output_equals_per_process_output_byte_for_byte() {
    for (operation, batch_operation) in [
        ("apply", "apply-batch"),
        ("noop", "noop-batch"),
        ("force-apply", "force-apply-batch"),
    ] {
        let per_process_fixture = mixed_fixture();
        let per_process: Vec<Run> = MIXED
            .iter()
            .map(|id| per_process_fixture.run(&[operation, id]))
            .collect();
        let batch_fixture = mixed_fixture();
        let input: String = MIXED.iter().map(|id| format!("{id}\n")).collect();
        let run = batch_fixture.run_batch(batch_operation, &input);
        assert_eq!(
            (run.code, text(&run.stdout), text(&run.stderr)),
            (0, String::new(), String::new())
        );
        let records = batch_runs(&run.fd3);
        let ids: Vec<&str> = records.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids, MIXED);
        for ((id, batch), single) in records.iter().zip(&per_process) {
            // Paths in messages differ only by the fixture directory.
            let normalise = |run: &Run, fixture: &Fixture| {
                let root = fixture.dir.path().display().to_string();
                (
                    text(&run.stdout).replace(&root, "ROOT"),
                    text(&run.stderr).replace(&root, "ROOT"),
                    text(&run.fd3),
                    run.code,
                )
            };
            assert_eq!(
                normalise(batch, &batch_fixture),
                normalise(single, &per_process_fixture),
                "{operation} of {id}"
            );
        }
        if operation == "apply" {
            assert_eq!(text(&per_process[0].stdout), "child output for new\n");
            assert_eq!(text(&per_process[1].fd3), "not changed\n");
            assert_eq!(text(&per_process[2].fd3), "requires --force to overwrite\n");
            assert_eq!(per_process[3].code, 1);
            assert_eq!(per_process[4].stdout.len(), 100_001);
        }
    }
}

#[test]
fn batch_refresh_flag_and_bad_lines_are_per_entity() {
    let fixture = Fixture::new(TWO_DEMOS);
    let run = fixture.run_batch("apply-batch", "demo:a\trefresh\ndemo:b\tbogus\n");
    let records = batch_runs(&run.fd3);
    assert_eq!(records.len(), 2);
    assert_eq!(records[0].1.code, 0);
    assert_eq!(records[1].1.code, 1);
    assert!(text(&records[1].1.stderr).contains("unknown field \"bogus\""));
}

#[test]
fn a_batch_of_many_quiet_entities_delivers_every_record_in_order() {
    let count = 1500;
    let resources: String = (0..count)
        .map(|n| format!("[[demo]]\nname = \"e{n:04}\"\nvalue = \"{n}\"\n"))
        .collect();
    let fixture = Fixture::new(&resources);
    std::fs::create_dir_all(fixture.target("")).expect("mkdir");
    for n in 0..count {
        std::fs::write(fixture.target(&format!("e{n:04}")), n.to_string()).expect("write");
    }
    let input: String = (0..count).map(|n| format!("demo:e{n:04}\n")).collect();
    let run = fixture.run_batch("apply-batch", &input);
    assert_eq!(run.code, 0, "{}", text(&run.stderr));
    let records = batch_runs(&run.fd3);
    assert_eq!(records.len(), count);
    for (n, (id, record)) in records.iter().enumerate() {
        assert_eq!(id, &format!("demo:e{n:04}"));
        assert_eq!(
            (text(&record.fd3), record.code),
            ("not changed\n".to_string(), 0)
        );
    }
}

#[test]
fn conditions_and_health_checks_act_around_any_plugin_per_process_and_in_a_batch() {
    let resources = "[[demo]]\nname = \"skipped\"\nvalue = \"x\"\nif = \"lookup('facts.hostname', 'none') == 'elsewhere'\"\n\n\
         [[demo]]\nname = \"checked\"\nvalue = \"y\"\n\
         health_checks = [{ command = \"sh -c 'echo CRITICAL - down; exit 2'\", tries = 2, try_sleep = \"10ms\" }]\n";
    let check_failed = "!! health check sh (\"sh -c 'echo CRITICAL - down; exit 2'\") failed after 2 tries: CRITICAL (exit code 2): CRITICAL - down\n";

    let fixture = Fixture::new(resources);
    let scan = fixture.run(&["scan"]);
    assert!(
        text(&scan.stdout).contains("ENTITY: demo:skipped\nSOURCE: ")
            && text(&scan.stdout)
                .contains("skipped: condition if = \"lookup('facts.hostname', 'none') == 'elsewhere'\" is false\n"),
        "{}{}",
        text(&scan.stdout),
        text(&scan.stderr)
    );
    let skipped = fixture.run(&["apply", "demo:skipped"]);
    assert_eq!(
        (skipped.code, text(&skipped.fd3)),
        (0, "not changed\n".into())
    );
    assert!(!fixture.target("skipped").exists());
    // noop runs no health check; apply runs the plugin, then the check.
    assert_eq!(fixture.run(&["noop", "demo:checked"]).code, 0);
    let checked = fixture.run(&["apply", "demo:checked"]);
    assert_eq!(checked.code, 1);
    assert!(
        text(&checked.stderr).ends_with(check_failed),
        "{}",
        text(&checked.stderr)
    );
    assert!(fixture.target("checked").exists());

    let fixture = Fixture::new(resources);
    assert_eq!(fixture.run(&["scan"]).code, 0);
    let batch = fixture.run_batch("apply-batch", "demo:skipped\ndemo:checked\n");
    let records = batch_runs(&batch.fd3);
    assert_eq!(records.len(), 2);
    assert_eq!(
        (records[0].1.code, text(&records[0].1.fd3)),
        (0, "not changed\n".into())
    );
    assert_eq!(records[1].1.code, 1);
    assert!(text(&records[1].1.stderr).ends_with(check_failed));
    assert!(!fixture.target("skipped").exists());
}

#[test]
fn a_batch_skips_a_dependent_of_a_failed_line_and_refreshes_a_subscriber_of_a_changed_one() {
    let fixture = Fixture::new(
        "[[demo]]\nname = \"x/y\"\nvalue = \"1\"\n\n\
         [[demo]]\nname = \"dep\"\nvalue = \"2\"\nrequire = \"demo#x/y\"\n\n\
         [[demo]]\nname = \"ok\"\nvalue = \"3\"\n\n\
         [[demo]]\nname = \"sub\"\nvalue = \"4\"\nsubscribe = \"demo#ok\"\n",
    );
    // a file where demo:x/y needs a directory makes its apply fail
    std::fs::create_dir_all(fixture.root().join("var/lib/holo-demo")).expect("mkdir");
    std::fs::write(fixture.target("x"), "in the way").expect("write");
    let run = fixture.run_batch(
        "apply-batch",
        "demo:x/y\ndemo:dep\trequires=1\ndemo:ok\ndemo:sub\tsubscribes=3\n",
    );
    assert_eq!(run.code, 0, "{}", text(&run.stderr));
    let records = batch_runs(&run.fd3);
    let ids: Vec<&str> = records.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["demo:x/y", "demo:dep", "demo:ok", "demo:sub"]);
    assert_eq!(records[0].1.code, 1);
    assert_eq!(
        text(&records[1].1.stderr),
        "!! skipped: required entity demo:x/y failed in this run\n"
    );
    assert!(
        !fixture.target("dep").exists(),
        "a skipped entity was applied"
    );
    let lines: Vec<String> = text(&run.fd3).lines().map(str::to_string).collect();
    assert!(lines[1].contains("\"skipped\":true"), "{}", lines[1]);
    assert!(!lines[2].contains("skipped"), "{}", lines[2]);
    assert_eq!(
        text(&records[3].1.stdout),
        "refresh requested for demo:sub\n"
    );
    assert_eq!(text(&records[2].1.stdout), "");
}
