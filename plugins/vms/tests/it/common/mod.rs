//! Helpers shared by the integration tests: a project in a temporary
//! directory and a hermetic environment.

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

    /// `holos config` output, with the fixture directory shown as `DIR`.
    pub fn config(&self) -> String {
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
