//! `holos validate --capacity` and `--network`: the project against this
//! host's CPUs, memory, free disk and listening ports.

use crate::common;
use assert_cmd::Command;
use common::Fixture;

fn validate(f: &Fixture, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::cargo_bin("holos")
        .expect("holos binary")
        .current_dir(f.path())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOLOS_STATE_DIR", f.path().join("state"))
        .arg("validate")
        .args(args)
        .output()
        .expect("run holos");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn capacity_compares_the_project_with_the_host() {
    let f = Fixture::new(&[(
        "holos.yaml",
        "name: cap\nservices:\n  web:\n    image: alpine\n    vm: {vcpu: 1, memory_mb: 256}\n",
    )]);
    let (code, said) = validate(&f, &["-q", "--capacity"]);
    assert_eq!(code, Some(0), "{said}");
    assert!(
        said.contains("capacity: project cap needs 1 vCPUs, 256 MiB of memory"),
        "{said}"
    );
    let (code, said) = validate(&f, &["-q"]);
    assert_eq!(
        (code, said.as_str()),
        (Some(0), ""),
        "no host check unasked"
    );

    let f = Fixture::new(&[(
        "holos.yaml",
        "name: big\nservices:\n  web:\n    image: alpine\n    vm: {vcpu: 1024, memory_mb: 16777216}\nvolumes:\n  data: {size: 1000000T}\n",
    )]);
    let (code, said) = validate(&f, &["-q", "--capacity"]);
    assert_eq!(code, Some(1), "{said}");
    let file = f.path().join("holos.yaml");
    for expected in [
        "service web asks for 1024 vCPUs per instance",
        "the project needs 16777216 MiB of memory",
        "the project's new volumes and grown root disks take up to",
    ] {
        let line = said
            .lines()
            .find(|l| l.contains(expected))
            .unwrap_or_else(|| panic!("no {expected:?} in {said}"));
        assert!(
            line.contains(&file.display().to_string()),
            "names the file: {line}"
        );
    }
}

#[test]
fn network_finds_published_ports_another_program_listens_on() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = listener.local_addr().unwrap().port();
    let free = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let f = Fixture::new(&[(
        "holos.yaml",
        &format!(
            "name: net\nservices:\n  web:\n    image: alpine\n    ports: [\"127.0.0.1:{taken}:80\", \"127.0.0.1:{free}:443\"]\n"
        ),
    )]);
    let (code, said) = validate(&f, &["-q", "--network"]);
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains(&format!(
            "web-0 publishes 127.0.0.1:{taken} (to guest port 80), which another program on the host already listens on"
        )),
        "{said}"
    );
    assert!(!said.contains(&format!(":{free} ")), "{said}");
    drop(listener);
    let (code, said) = validate(&f, &["-q", "--network"]);
    assert_eq!(code, Some(0), "{said}");
    assert!(
        said.contains("network: every published port of project net is free"),
        "{said}"
    );
}
