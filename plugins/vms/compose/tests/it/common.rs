//! Helpers shared by the tests: a project in a temporary directory and a
//! hermetic environment, resolved through the library.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use holos_compose::load::Options;
use holos_compose::manifest::Manifest;

pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub env: BTreeMap<String, String>,
    pub files: Vec<PathBuf>,
    pub profiles: Vec<String>,
    pub project_name: Option<String>,
}

impl Fixture {
    /// A project directory holding `files` (path, content).
    pub fn new(files: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().expect("temporary directory");
        for (path, content) in files {
            let full = dir.path().join(path);
            if let Some(parent) = full.parent() {
                std::fs::create_dir_all(parent).expect("create fixture directory");
            }
            std::fs::write(full, content).expect("write fixture file");
        }
        Fixture {
            dir,
            env: BTreeMap::new(),
            files: Vec::new(),
            profiles: Vec::new(),
            project_name: None,
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }

    pub fn file(mut self, path: &str) -> Self {
        self.files.push(PathBuf::from(path));
        self
    }

    pub fn profile(mut self, profile: &str) -> Self {
        self.profiles.push(profile.into());
        self
    }

    pub fn options(&self) -> Options {
        Options {
            files: self.files.clone(),
            project_name: self.project_name.clone(),
            default_name: None,
            profiles: self.profiles.clone(),
            working_dir: self.dir.path().to_path_buf(),
            environment: self.env.clone(),
        }
    }

    pub fn manifest(&self) -> Manifest {
        match holos_compose::resolve(&self.options()) {
            Ok((_, m)) => m,
            Err(errors) => panic!(
                "expected a valid project, got:\n{}",
                render(&errors, self.path())
            ),
        }
    }

    /// The errors, one per line, with the fixture directory shown as `DIR`.
    pub fn errors(&self) -> String {
        match holos_compose::resolve(&self.options()) {
            Ok(_) => panic!("expected errors, the project resolved"),
            Err(errors) => render(&errors, self.path()),
        }
    }
}

pub fn render(errors: &[holos_compose::Diag], dir: &Path) -> String {
    errors
        .iter()
        .map(|e| e.to_string().replace(&dir.display().to_string(), "DIR"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A one-file project.
pub fn project(yaml: &str) -> Fixture {
    Fixture::new(&[("holos.yaml", yaml)])
}

pub const SECRET: &str = "s3cr3t-inline-value";
pub const ENV_SECRET: &str = "s3cr3t-from-the-environment";

/// A project whose service gets configs and secrets of every kind of
/// definition (file, content, environment), one of them unused.
pub fn guest_files_project() -> Fixture {
    Fixture::new(&[
        (
            "holos.yaml",
            &format!(
                "services:\n  app:\n    image: debian\n    configs:\n      - app_conf\n      - source: inline_conf\n        target: /etc/app/inline.conf\n        uid: \"1000\"\n        gid: 1001\n        mode: 0640\n    secrets:\n      - db_password\n      - source: api_token\n        target: token\n      - source: from_env\n        target: /etc/app/env-secret\n        mode: 0440\nconfigs:\n  app_conf:\n    file: ./conf/app.conf\n  inline_conf:\n    content: |\n      port=80\nsecrets:\n  db_password:\n    file: ./db_password.txt\n  api_token:\n    content: {SECRET}\n  from_env:\n    environment: APP_SECRET\n  unused:\n    file: ./does-not-exist\n"
            ),
        ),
        ("conf/app.conf", "a=1\n"),
        ("db_password.txt", "pw-from-a-file\n"),
    ])
    .env("APP_SECRET", ENV_SECRET)
}

/// Three services on two networks: web on front, db on back, app on both
/// with an alias on one and a fixed address and MAC on the other.
pub const THREE_TIERS: &str = "services:\n  web:\n    image: debian\n    networks: [front]\n    dns_search: [example.org]\n  app:\n    image: debian\n    networks:\n      front:\n        aliases: [api]\n      back:\n        ipv4_address: 10.30.0.9\n        mac_address: 52:54:00:aa:bb:cc\n  db:\n    image: debian\n    networks: [back]\nnetworks:\n  front: {}\n  back:\n    ipam:\n      config:\n        - subnet: 10.30.0.0/24\n";
