//! Dockerfile provisioning through `build:` and `dockerfile:`.

use crate::common;
use common::{Fixture, project};
use holos_compose::manifest::GuestCommand as Command;

#[test]
fn build_string_mapping_inline_and_dockerfile_key() {
    let f = Fixture::new(&[
        (
            "holos.yaml",
            "services:\n  s:\n    build: ./app\n    cloud_init: {runcmd: [last]}\n    command: serve\n  m:\n    build: {context: app, dockerfile: Other.df, args: {X: 1}, tags: [t], no_cache: true}\n  i:\n    image: alpine\n    build:\n      dockerfile_inline: |\n        FROM debian\n        RUN echo inline\n  d:\n    dockerfile: app/Dockerfile\n",
        ),
        (
            "app/Dockerfile",
            "FROM debian:bookworm\nCOPY app.conf /etc/app.conf\nRUN echo built\n",
        ),
        ("app/Other.df", "FROM alpine\nRUN echo other\n"),
        ("app/app.conf", "x=1\n"),
    ]);
    let m = f.manifest();
    let s = |n: &str| m.services.iter().find(|s| s.name == n).unwrap().clone();
    let built = s("s");
    assert_eq!(
        built.image.alias.as_deref(),
        Some("debian"),
        "FROM gives the image"
    );
    assert_eq!(
        built.cloud_init.runcmd,
        [
            Command::Shell("echo built".into()),
            Command::Shell("last".into())
        ],
        "Dockerfile steps, then the explicit runcmd"
    );
    assert_eq!(
        built.cloud_init.command.as_deref(),
        Some("serve"),
        "the command runs at every boot, not as a runcmd"
    );
    assert_eq!(built.cloud_init.write_files[0].path, "/etc/app.conf");
    assert_eq!(s("m").image.alias.as_deref(), Some("alpine"));
    assert_eq!(
        s("i").image.alias.as_deref(),
        Some("alpine"),
        "image wins over FROM"
    );
    assert_eq!(
        s("i").cloud_init.runcmd,
        [Command::Shell("echo inline".into())]
    );
    assert_eq!(
        s("d").cloud_init.runcmd,
        [Command::Shell("echo built".into())]
    );
}

#[test]
fn unsupported_instructions_fail_with_the_dockerfile_line() {
    let f = Fixture::new(&[
        ("holos.yaml", "services:\n  s:\n    build: .\n"),
        (
            "Dockerfile",
            "FROM debian\nEXPOSE 80\nHEALTHCHECK CMD true\nCMD [\"x\"]\nENTRYPOINT x\nCOPY ../outside /x\n",
        ),
    ]);
    let errors = f.errors();
    let lines: Vec<&str> = errors.lines().collect();
    assert_eq!(lines.len(), 5, "{errors}");
    assert!(lines[0].starts_with("DIR/holos.yaml:3:12: services.s.build: DIR/Dockerfile:2: unsupported Dockerfile instruction EXPOSE: use services.<name>.ports instead"), "{errors}");
    assert!(lines[1].contains("Dockerfile:3: unsupported Dockerfile instruction HEALTHCHECK: use services.<name>.healthcheck"), "{errors}");
    assert!(lines[2].contains("Dockerfile:4: unsupported Dockerfile instruction CMD: use guest systemd units or cloud_init.runcmd"), "{errors}");
    assert!(
        lines[3].contains("Dockerfile:5: unsupported Dockerfile instruction ENTRYPOINT"),
        "{errors}"
    );
    assert!(
        lines[4].contains("Dockerfile:6: COPY source ../outside"),
        "{errors}"
    );
}

#[test]
fn missing_dockerfile_and_unknown_base() {
    let errors = project("services:\n  s:\n    build: ./nowhere\n").errors();
    assert!(
        errors.contains("services.s.build: cannot read DIR/nowhere/Dockerfile"),
        "{errors}"
    );
    let f = Fixture::new(&[
        ("holos.yaml", "services:\n  s:\n    build: .\n"),
        ("Dockerfile", "FROM node:20\nRUN true\n"),
    ]);
    let errors = f.errors();
    assert!(
        errors.contains("Dockerfile FROM: unknown image alias \"node\""),
        "{errors}"
    );
    let errors = project("services:\n  s:\n    build: {context: ., dockerfle: x}\n").errors();
    assert!(
        errors.contains("services.s.build.dockerfle: unknown key; did you mean \"dockerfile\"?"),
        "{errors}"
    );
}
