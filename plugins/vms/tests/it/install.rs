//! `holos install` and `holos uninstall` in test mode: the unit goes below
//! `HOLO_ROOT_DIR`, `systemctl --root` enables it there, and
//! `systemd-analyze verify` reads it. The project lives in a directory with
//! a hostile name, and `holos` runs from one, so that the unit's escaping
//! is what makes systemd find the program.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Quotes, `$VAR`, `%` specifiers, a backslash, a semicolon and spaces.
const HOSTILE: &str = "x \"q\" $HOME %n \\ ; 'y'";
/// What systemd accepts in a program's path: no quotes or backslashes.
const HOSTILE_BIN: &str = "b $HOME %n ;";

struct Setup {
    dir: tempfile::TempDir,
    bin: PathBuf,
}

impl Setup {
    fn new(project_dir_name: &str, bin_dir_name: &str) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join(project_dir_name);
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(
            project.join("holos.yaml"),
            "name: my-app\nservices:\n  web:\n    image: ./base.qcow2\n    stop_grace_period: 20s\n",
        )
        .unwrap();
        // holos itself from a directory with a name systemd has to be told.
        let bin = dir.path().join(bin_dir_name);
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::copy(env!("CARGO_BIN_EXE_holos"), bin.join("holos")).unwrap();
        // A copy this process wrote is "text file busy" while another test
        // thread forks; the copy run is written by a process of its own.
        test_support::make_executable(&bin.join("holos"));
        Setup {
            dir,
            bin: bin.join("holos"),
        }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    fn project(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn holos(&self, project_dir_name: &str, args: &[&str]) -> Output {
        Command::new(&self.bin)
            .args(args)
            .current_dir(self.project(project_dir_name))
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", self.dir.path().join("home"))
            .env("HOLO_ROOT_DIR", self.root())
            .output()
            .unwrap()
    }

    fn unit_path(&self) -> PathBuf {
        self.root()
            .join("etc/systemd/system/holos-my\\x2dapp.service")
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn ok(out: Output) -> (String, String) {
    assert!(out.status.success(), "{}", text(&out.stderr));
    (text(&out.stdout), text(&out.stderr))
}

/// The files below `dir`, relative, sorted.
fn files_below(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() && !path.is_symlink() {
                stack.push(path);
            } else {
                found.push(path.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    found.sort();
    found
}

#[test]
fn install_writes_an_escaped_unit_and_enables_it_below_the_root() {
    let s = Setup::new(HOSTILE, HOSTILE_BIN);
    let (stdout, stderr) = ok(s.holos(HOSTILE, &["install", "--system", "--dry-run", "--enable"]));
    assert!(!s.root().exists(), "--dry-run writes nothing");
    assert!(
        stderr.contains(&format!("would write {}", s.unit_path().display()))
            && stderr.contains("would run: systemctl --root="),
        "{stderr}"
    );
    let dir = s.dir.path().display().to_string();
    // Inside the quotes: \" and \\ for systemd's C unescaping, %% and $$ so
    // that nothing is expanded.
    let escaped = "x \\\"q\\\" $$HOME %%n \\\\ ; 'y'";
    let program = format!("\"{dir}/b $HOME %%n ;/holos\"");
    let file = format!("\"{dir}/{escaped}/holos.yaml\"");
    let expected = format!(
        "# Written by `holos install`; `holos uninstall` removes it.
[Unit]
Description=holos project my-app
Documentation=man:holos(1)
Wants=network-online.target
After=network-online.target

[Service]
Type=oneshot
RemainAfterExit=yes
WorkingDirectory={dir}/x \"q\" $HOME %%n \\ ; 'y'
Environment=\"HOLOS_STATE_DIR={root}/var/lib/holos\"
ExecStart={program} \"-p\" \"my-app\" \"-f\" {file} \"up\" \"--quiet\"
ExecStop={program} \"-p\" \"my-app\" \"-f\" {file} \"stop\"
TimeoutStartSec=30min
TimeoutStopSec=120

[Install]
WantedBy=multi-user.target
",
        root = s.root().display()
    );
    assert_eq!(stdout, expected);

    let (_, stderr) = ok(s.holos(HOSTILE, &["install", "--system", "--enable"]));
    assert!(
        stderr.contains("enabled holos-my\\x2dapp.service"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(s.unit_path()).unwrap(), expected);
    assert_eq!(
        files_below(&s.root()),
        [
            "etc/systemd/system/holos-my\\x2dapp.service",
            "etc/systemd/system/multi-user.target.wants/holos-my\\x2dapp.service",
        ],
        "systemctl --root enabled it below the root, and nothing else was written"
    );

    let (_, stderr) = ok(s.holos(HOSTILE, &["uninstall", "--dry-run"]));
    assert!(stderr.contains("would remove"), "{stderr}");
    assert!(s.unit_path().exists());
    ok(s.holos(HOSTILE, &["uninstall"]));
    assert_eq!(files_below(&s.root()), Vec::<String>::new());
    let out = s.holos(HOSTILE, &["uninstall"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("nothing to uninstall"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
#[ignore = "needs systemd-analyze"]
fn systemd_analyze_verify_accepts_the_unit_and_finds_the_hostile_program() {
    test_support::require_tools(&["systemd-analyze"], "systemd");
    let s = Setup::new(HOSTILE, HOSTILE_BIN);
    ok(s.holos(HOSTILE, &["install", "--system"]));
    let verify = |unit: &Path| {
        Command::new("systemd-analyze")
            .args(["verify", "--man=no"])
            .arg(unit)
            .output()
            .unwrap()
    };
    let out = verify(&s.unit_path());
    let messages = text(&out.stderr);
    assert!(out.status.success(), "{messages}");
    assert!(
        !messages.contains("my\\x2dapp.service"),
        "no complaint about the unit: {messages}"
    );
    // The check is real: with the escaping undone, systemd looks for
    // another program and refuses the unit.
    let unit = std::fs::read_to_string(s.unit_path()).unwrap();
    std::fs::write(s.unit_path(), unit.replace("%%n ;/holos", "%n ;/holos")).unwrap();
    let out = verify(&s.unit_path());
    assert!(!out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn a_program_path_systemd_refuses_is_refused_before_writing() {
    let s = Setup::new("plain", "q\"uote");
    let out = s.holos("plain", &["install", "--system"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("systemd refuses a program path with '\"'"),
        "{}",
        text(&out.stderr)
    );
    assert!(!s.root().exists());
}

#[test]
fn a_unit_from_the_holo_vms_binary_runs_its_holos_subcommand() {
    let s = Setup::new("plain", "bin");
    let plugin = s.dir.path().join("bin/holo-vms");
    std::fs::rename(&s.bin, &plugin).unwrap();
    let out = Command::new(&plugin)
        .args(["holos", "install", "--system", "--dry-run"])
        .current_dir(s.project("plain"))
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOLO_ROOT_DIR", s.root())
        .output()
        .unwrap();
    let (stdout, _) = ok(out);
    assert!(
        stdout.contains(&format!(
            "\nExecStart=\"{}\" \"holos\" \"-p\" \"my-app\" ",
            plugin.display()
        )),
        "{stdout}"
    );
}

#[test]
fn a_newline_in_the_project_path_is_refused_and_nothing_is_written() {
    let name = "a\nExecStartPre=touch %h-owned";
    let s = Setup::new(name, "bin");
    let out = s.holos(name, &["install", "--system"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("contains a control character") && stderr.contains("move the project"),
        "{stderr}"
    );
    assert!(!s.root().exists());
}

#[test]
fn a_user_unit_goes_to_the_users_config_and_is_wanted_by_default_target() {
    let s = Setup::new("plain", "bin");
    let (stdout, stderr) = ok(s.holos("plain", &["install", "--user", "--dry-run", "--enable"]));
    assert!(stdout.contains("\nWantedBy=default.target\n"), "{stdout}");
    assert!(!stdout.contains("network-online"), "{stdout}");
    // In test mode the user's unit directory is below the root too.
    let home = s.dir.path().join("home");
    let user_dir = s
        .root()
        .join(home.strip_prefix("/").unwrap())
        .join(".config/systemd/user");
    let unit = user_dir.join("holos-my\\x2dapp.service");
    assert!(
        stderr.contains(&format!("would write {}", unit.display()))
            && stderr.contains("would run: systemctl --user enable")
            && stderr.contains("loginctl enable-linger"),
        "{stderr}"
    );
    assert!(!s.root().exists() && !home.exists());
    let (_, stderr) = ok(s.holos("plain", &["install", "--user", "--enable"]));
    assert!(unit.is_file());
    assert!(
        stderr.contains("test mode (HOLO_ROOT_DIR): not running systemctl --user enable"),
        "{stderr}"
    );
    assert!(!home.exists(), "nothing outside the root");
    ok(s.holos("plain", &["uninstall", "--user"]));
    assert!(!unit.exists());
    let out = s.holos("plain", &["install", "--user", "--system"]);
    assert_eq!(out.status.code(), Some(2));
}
