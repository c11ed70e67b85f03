//! Times resolving a 200-service project (the target is under 20 ms).

// Test code: a failed step fails the test, so the helpers may unwrap as
// well as the #[test] functions (clippy.toml allows those).
#![allow(clippy::unwrap_used, clippy::expect_used)]
use std::collections::BTreeMap;
use std::time::Instant;

fn main() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let mut yaml = String::from("name: bench\nservices:\n");
    for i in 0..200 {
        let deps = if i > 0 {
            format!("    depends_on: [svc{}]\n", i - 1)
        } else {
            String::new()
        };
        yaml.push_str(&format!(
            "  svc{i}:\n    image: ubuntu:noble\n    ports: [\"{}:80\"]\n    environment:\n      INDEX: \"{i}\"\n      HOME_DIR: ${{HOME:-/root}}\n    labels: [\"tier=web\"]\n    healthcheck:\n      test: [\"CMD\", \"true\"]\n      interval: 2s\n    cloud_init:\n      packages: [nginx]\n      runcmd: [\"systemctl restart nginx\"]\n{deps}",
            10000 + i
        ));
    }
    std::fs::write(dir.path().join("holos.yaml"), yaml).expect("write holos.yaml");
    let options = holos_compose::load::Options {
        working_dir: dir.path().to_path_buf(),
        environment: BTreeMap::new(),
        ..Default::default()
    };
    let runs = 50;
    let mut best = f64::MAX;
    let mut total = 0.0;
    for _ in 0..runs {
        let start = Instant::now();
        let (_, manifest) = holos_compose::resolve(&options).expect("bench project resolves");
        let ms = start.elapsed().as_secs_f64() * 1000.0;
        assert_eq!(manifest.services.len(), 200);
        best = best.min(ms);
        total += ms;
    }
    println!(
        "resolve 200 services: best {best:.2} ms, mean {:.2} ms over {runs} runs",
        total / runs as f64
    );
}
