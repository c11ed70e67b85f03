//! Files that upstream holos accepts: its own fields passed verbatim, its
//! image tags, Dockerfile heredocs, and what `validate` must refuse.

use crate::common;
use common::{ConfigOutput, Fixture, project};
use holos_compose::manifest::GuestCommand;

fn holos(f: &Fixture) -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("holos").expect("holos binary");
    cmd.current_dir(f.path()).env_clear();
    cmd
}

fn stderr_of(out: &std::process::Output, f: &Fixture) -> String {
    String::from_utf8_lossy(&out.stderr).replace(&f.path().display().to_string(), "DIR")
}

#[test]
fn cloud_init_is_passed_verbatim_and_the_rest_interpolated() {
    let f = project(
        "services:\n  web:\n    image: ${IMAGE:-debian}\n    environment:\n      GREETING: hello $WHO\n    cloud_init:\n      runcmd:\n        - echo $HOME $dev\n        - [sh, -c, 'for i in $(seq 1 3); do echo $$i; done']\n      write_files:\n        - path: /etc/motd\n          content: \"${BANNER:?}\"\n",
    )
    .env("WHO", "world")
    .env("HOME", "/root");
    let manifest = f.manifest();
    let web = &manifest.services[0];
    assert_eq!(web.image.reference, "debian");
    assert_eq!(web.environment["GREETING"], "hello world");
    assert_eq!(
        web.cloud_init.runcmd,
        [
            GuestCommand::Shell("echo $HOME $dev".into()),
            GuestCommand::Exec(vec![
                "sh".into(),
                "-c".into(),
                "for i in $(seq 1 3); do echo $$i; done".into()
            ]),
        ]
    );
    assert_eq!(web.cloud_init.write_files[0].content, "${BANNER:?}");
    let out = holos(&f)
        .args(["validate", "-q"])
        .env("WHO", "world")
        .output()
        .expect("run holos");
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out, &f));
    assert_eq!(stderr_of(&out, &f), "");
}

#[test]
fn a_key_named_cloud_init_elsewhere_is_still_interpolated() {
    let f = project(
        "services:\n  web:\n    image: debian\n    labels:\n      cloud_init: $WHO\nx-notes:\n  cloud_init: $WHO\n",
    )
    .env("WHO", "world");
    assert_eq!(f.manifest().services[0].labels["cloud_init"], "world");
    assert!(f.config().contains("cloud_init: world"), "{}", f.config());
}

#[test]
fn validate_refuses_a_local_image_file_that_does_not_exist() {
    let f = project("services:\n  web:\n    image: ./disk.qcow2\n");
    let out = holos(&f)
        .args(["validate", "-q"])
        .output()
        .expect("run holos");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr_of(&out, &f),
        "DIR/holos.yaml:3:12: services.web.image: the image file DIR/disk.qcow2 does not exist; build or copy the image there, or correct image:\nholos: 1 error found\n"
    );
    // `config` prints the model and checks no host files.
    holos(&f).arg("config").assert().success();
    // The signature is enough: validate reads no further.
    std::fs::write(f.path().join("disk.qcow2"), b"QFI\xfb").expect("write image");
    holos(&f)
        .args(["validate", "-q"])
        .assert()
        .success()
        .stderr("");
}

#[test]
fn a_project_without_services_is_refused() {
    for (yaml, place) in [
        ("services: {}\n", "1:11"),
        ("services:\n  x-common: {image: alpine}\n", "2:3"),
    ] {
        let f = project(yaml);
        let out = holos(&f)
            .args(["validate", "-q"])
            .output()
            .expect("run holos");
        assert_eq!(out.status.code(), Some(1), "{yaml}");
        assert_eq!(
            stderr_of(&out, &f),
            format!(
                "DIR/holos.yaml:{place}: services: defines no service; add one, such as services: {{web: {{image: debian:12}}}}\nholos: 1 error found\n"
            ),
            "{yaml}"
        );
    }
}

#[test]
fn config_prints_cloud_init_as_written_and_reads_back_the_same() {
    let yaml = "services:\n  web:\n    image: debian\n    environment:\n      PRICE: $$5\n    cloud_init:\n      runcmd:\n        - echo $HOME $$ $(date)\n";
    let f = project(yaml);
    let config = f.config();
    assert!(config.contains("PRICE: $$5"), "{config}");
    assert!(config.contains("- echo $HOME $$ $(date)"), "{config}");
    let again = project(&config);
    assert_eq!(again.manifest().services, f.manifest().services);
}

#[test]
fn profiles_gate_services_with_a_note_for_each_one_disabled() {
    let f = project(
        "services:\n  web:\n    image: alpine\n  debug:\n    image: alpine\n    profiles: [debug, dev]\n  tools:\n    image: alpine\n    profiles: [tools]\n",
    );
    let out = holos(&f).arg("validate").output().expect("run holos");
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out, &f));
    assert_eq!(
        stderr_of(&out, &f),
        ">> DIR/holos.yaml:4: services.debug: not started: none of its profiles (debug, dev) is enabled; enable one with --profile debug or COMPOSE_PROFILES=debug\n\
         >> DIR/holos.yaml:7: services.tools: not started: none of its profiles (tools) is enabled; enable one with --profile tools or COMPOSE_PROFILES=tools\n"
    );
    let out = holos(&f)
        .args(["--profile", "tools", "validate"])
        .output()
        .expect("run holos");
    assert_eq!(
        stderr_of(&out, &f),
        ">> DIR/holos.yaml:4: services.debug: not started: none of its profiles (debug, dev) is enabled; enable one with --profile debug or COMPOSE_PROFILES=debug\n"
    );
    holos(&f)
        .args(["validate", "--quiet"])
        .assert()
        .success()
        .stderr("");
}

#[test]
fn a_project_whose_services_are_all_disabled_by_profiles_fails() {
    let f = project(
        "services:\n  debug:\n    image: alpine\n    profiles: [debug]\n  tools:\n    image: alpine\n    profiles: [tools, ops]\n",
    );
    let out = holos(&f)
        .args(["validate", "-q"])
        .output()
        .expect("run holos");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr_of(&out, &f),
        "DIR/holos.yaml:2:3: services: every service is disabled by its profiles: debug (debug), tools (tools, ops); enable a profile with --profile NAME or COMPOSE_PROFILES=NAME, or remove profiles: from a service that should always start\nholos: 1 error found\n"
    );
    holos(&f)
        .args(["validate", "-q"])
        .env("COMPOSE_PROFILES", "ops")
        .assert()
        .success();
}

#[test]
#[ignore = "needs qemu-img"]
fn a_version_tag_pulls_into_the_code_names_cache_entry() {
    use crate::runtime_support::{self, ImageMirror, Qemu};
    runtime_support::require_qemu_img();
    let p = runtime_support::Project::new("services:\n  web:\n    image: debian:12\n", Qemu::Fake);
    let mirror = ImageMirror::start();
    mirror.serve("debian", "bookworm", b"a debian cloud image");
    let out = p
        .holos(&["pull", "debian:12"])
        .env("HOLOS_IMAGE_MIRROR", mirror.url())
        .output()
        .expect("run holos");
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains("holos: pulling debian:bookworm from"),
        "{said}"
    );
    let cached: Vec<String> = std::fs::read_dir(p.state().join("images"))
        .expect("image cache")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".qcow2"))
        .collect();
    assert_eq!(cached.len(), 1, "{cached:?}");
    assert!(cached[0].starts_with("debian-bookworm-"), "{cached:?}");
}

#[test]
fn buildkit_heredocs_in_a_dockerfile_run_as_the_shell_would() {
    let work = tempfile::tempdir().expect("temporary directory");
    let dockerfile = format!(
        "# syntax=docker/dockerfile:1\nFROM debian:12\nWORKDIR {}\nRUN <<EOF\nset -e\necho one > out\n\necho two >> out\nEOF\nRUN <<-'EOT'\n\techo \"$PWD\" > where\n\tEOT\nRUN cat > fed <<EOF\nfed through stdin\nEOF\nCOPY <<EOF /etc/app.conf\nport=80\nEOF\n",
        work.path().display()
    );
    let f = Fixture::new(&[
        ("holos.yaml", "services:\n  web:\n    build: .\n"),
        ("Dockerfile", &dockerfile),
    ]);
    holos(&f)
        .args(["validate", "-q"])
        .assert()
        .success()
        .stderr("");
    let web = f.manifest().services[0].clone();
    assert_eq!(web.image.tag.as_deref(), Some("bookworm"));
    assert_eq!(web.cloud_init.write_files[0].path, "/etc/app.conf");
    assert_eq!(web.cloud_init.write_files[0].content, "port=80\n");
    // The runcmd entries, run by a real shell as cloud-init runs them.
    for command in &web.cloud_init.runcmd {
        let GuestCommand::Shell(script) = command else {
            panic!("a shell command: {command:?}")
        };
        let status = std::process::Command::new("sh")
            .args(["-c", script])
            .status()
            .expect("run sh");
        assert!(status.success(), "{script}");
    }
    let read = |name: &str| std::fs::read_to_string(work.path().join(name)).expect("written");
    assert_eq!(read("out"), "one\ntwo\n");
    assert_eq!(read("where"), format!("{}\n", work.path().display()));
    assert_eq!(read("fed"), "fed through stdin\n");
}

#[test]
#[ignore = "needs qemu-img"]
fn an_ephemeral_port_is_picked_at_up_recorded_and_shown() {
    use crate::runtime_support::{self, Qemu};
    runtime_support::require_qemu_img();
    let p = runtime_support::Project::new("", Qemu::Fake);
    // A fixed port the test chose too, so that it can tell the two apart.
    let fixed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    p.write(&format!(
        "name: eph\nservices:\n  web:\n    image: ./base.qcow2\n    stop_grace_period: 0s\n    ports: [\"0:80\", \"{fixed}:8\"]\n"
    ));
    p.ok(&["up", "--no-wait"]);
    let ps = p.ps();
    let ports = ps[0]["ports"].as_array().expect("ports").clone();
    assert_eq!(ports.len(), 2, "{ports:?}");
    assert_eq!(ports[0]["guest_port"], 80);
    let picked = ports[0]["host_port"].as_u64().expect("a host port");
    assert!(picked > 0 && picked != u64::from(fixed), "{ports:?}");
    assert_eq!(ports[1]["host_port"], u64::from(fixed));
    // QEMU forwards it, the state records it, ps and inspect show it.
    let argv = p.recorded_argvs().concat().join(" ");
    assert!(
        argv.contains(&format!("hostfwd=tcp:127.0.0.1:{picked}-:80")),
        "{argv}"
    );
    let record: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(p.state().join("projects/eph.json")).expect("the project record"),
    )
    .expect("JSON");
    assert_eq!(
        record["instances"]["web-0"]["spec"]["forwards"][0]["host_port"], picked,
        "{record}"
    );
    let table = String::from_utf8_lossy(&p.run(&["ps"]).stdout).into_owned();
    assert!(
        table.contains(&format!("127.0.0.1:{picked}->80/tcp")),
        "{table}"
    );
    let inspect = String::from_utf8_lossy(&p.run(&["inspect", "web-0"]).stdout).into_owned();
    assert!(
        inspect.contains(&format!("127.0.0.1:{picked}->80/tcp")),
        "{inspect}"
    );
    // The port stays the instance's across stop and start.
    p.ok(&["stop"]);
    p.ok(&["start"]);
    assert_eq!(p.ps()[0]["state"], "running");
    assert_eq!(p.ps()[0]["ports"][0]["host_port"], picked);
}

/// `qemu-img info`'s virtual size of `image`.
fn virtual_size(image: &std::path::Path) -> u64 {
    let out = std::process::Command::new("qemu-img")
        .args(["info", "--output=json", "-U"])
        .arg(image)
        .output()
        .expect("run qemu-img");
    assert!(out.status.success(), "{out:?}");
    let info: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    info["virtual-size"].as_u64().expect("virtual-size")
}

#[test]
#[ignore = "needs qemu-img"]
fn disk_size_grows_the_root_overlay_and_never_shrinks_the_image() {
    use crate::runtime_support::{self, Qemu};
    runtime_support::require_qemu_img();
    let p = runtime_support::Project::new(
        "name: disk\nservices:\n  big:\n    image: ./base.qcow2\n    stop_grace_period: 0s\n    vm: {disk_size: 1g}\n  same:\n    image: ./base.qcow2\n    stop_grace_period: 0s\n",
        Qemu::Fake,
    );
    p.ok(&["up", "--no-wait"]);
    let instances = p.state().join("instances/disk");
    assert_eq!(virtual_size(&instances.join("big-0/root.qcow2")), 1 << 30);
    assert_eq!(virtual_size(&instances.join("same-0/root.qcow2")), 64 << 20);
    p.ok(&["down"]);

    // Smaller than the 64M base image: refused, naming the service.
    p.write("name: disk\nservices:\n  small:\n    image: ./base.qcow2\n    vm: {disk_size: 64m}\n");
    p.base_image(&p.path().join("base.qcow2"));
    let bigger = std::process::Command::new("qemu-img")
        .args(["resize", "-q"])
        .arg(p.path().join("base.qcow2"))
        .arg("100M")
        .status()
        .expect("run qemu-img");
    assert!(bigger.success());
    let out = p.run(&["up", "--no-wait"]);
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains(&format!(
            "service small: vm.disk_size is 67108864 bytes, smaller than the image {} (104857600 bytes); raise it or remove it",
            p.path().join("base.qcow2").display()
        )),
        "{said}"
    );
}
