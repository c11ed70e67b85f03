//! Every error path: the message, the key path and the file:line:column.

use crate::common;
use common::project;

/// Asserts the full error list of a one-file project.
fn assert_errors(yaml: &str, expected: &[&str]) {
    let got = project(yaml).errors();
    let got: Vec<&str> = got.lines().collect();
    assert_eq!(got, expected, "for:\n{yaml}");
}

#[test]
fn unknown_keys_give_position_path_and_suggestion() {
    assert_errors(
        "services:\n  web:\n    image: alpine\n    prots: [\"80\"]\n    x-note: fine\n    cloud_init:\n      pakages: [nginx]\nvolumnes: {}\n",
        &[
            "DIR/holos.yaml:4:5: services.web.prots: unknown key; did you mean \"ports\"?",
            "DIR/holos.yaml:7:7: services.web.cloud_init.pakages: unknown key; did you mean \"packages\"?",
            "DIR/holos.yaml:8:1: volumnes: unknown key; did you mean \"volumes\"?",
        ],
    );
}

#[test]
fn unknown_key_without_a_close_match_suggests_the_extension_prefix() {
    assert_errors(
        "services:\n  web:\n    image: alpine\n    frobnicate: 1\n",
        &[
            "DIR/holos.yaml:4:5: services.web.frobnicate: unknown key; remove it or prefix it with x- to keep it as an extension",
        ],
    );
}

#[test]
fn validate_lists_every_error_not_just_the_first() {
    let errors = project(
        "services:\n  a:\n    image: nosuch\n    replicas: many\n  b:\n    image: alpine\n    ports: [\"53:53/sctp\"]\n    vm: {vcpu: -1}\n",
    )
    .errors();
    assert_eq!(errors.lines().count(), 4, "{errors}");
    assert!(
        errors.contains("holos.yaml:3:12: services.a.image: unknown image alias \"nosuch\""),
        "{errors}"
    );
    assert!(
        errors.contains("holos.yaml:4:15: services.a.replicas: must be an integer, found \"many\""),
        "{errors}"
    );
    assert!(errors.contains("holos.yaml:7:13: services.b.ports[0]: protocol sctp in \"53:53/sctp\": holos supports TCP and UDP over IPv4 only"), "{errors}");
    assert!(
        errors
            .contains("holos.yaml:8:16: services.b.vm.vcpu: must be between 1 and 1024, found -1"),
        "{errors}"
    );
}

#[test]
fn yaml_syntax_errors_have_positions() {
    let errors = project("services:\n  web:\n    image: [alpine\n").errors();
    assert!(
        errors.starts_with("DIR/holos.yaml:4:1: invalid YAML"),
        "{errors}"
    );
    let errors = project("a: 1\na: 2\n").errors();
    assert_eq!(
        errors,
        "DIR/holos.yaml:2:1: duplicate key \"a\"; remove one of the two"
    );
    let errors = project("services: *nothing\n").errors();
    assert!(
        errors.contains("holos.yaml:1:11") && errors.contains("anchor"),
        "{errors}"
    );
    let errors = project("services: !custom {}\n").errors();
    assert!(errors.contains("unknown YAML tag !custom"), "{errors}");
}

#[test]
fn type_errors_name_what_was_found() {
    assert_errors(
        "services:\n  web:\n    image: alpine\n    environment: oops\n    ports: {a: 1}\n",
        &[
            "DIR/holos.yaml:4:18: services.web.environment: must be a mapping or a list of KEY=VALUE strings",
            "DIR/holos.yaml:5:12: services.web.ports: must be a list, found a mapping",
        ],
    );
    assert_errors(
        "- a\n",
        &["DIR/holos.yaml:1:1: the top level must be a mapping, found a list"],
    );
}

#[test]
fn missing_required_variable_quotes_the_message() {
    assert_errors(
        "services:\n  web:\n    image: ${IMAGE:?set IMAGE to an alias}\n",
        &[
            "DIR/holos.yaml:3:12: services.web.image: required variable IMAGE is unset: set IMAGE to an alias; set it in the environment or in .env",
        ],
    );
    assert_errors(
        "services:\n  web:\n    image: alpine\n    command: echo $1\n",
        &[
            "DIR/holos.yaml:4:14: services.web.command: invalid interpolation format in \"echo $1\": write $$ for a literal $",
        ],
    );
}

#[test]
fn unknown_image_alias_lists_the_known_ones() {
    let errors = project("services:\n  web:\n    image: ubuntoo\n").errors();
    assert!(
        errors.contains("unknown image alias \"ubuntoo\"; did you mean \"ubuntu\"? use one of ubuntu, debian, alpine, arch, fedora, almalinux, rocky, centos-stream"),
        "{errors}"
    );
    let errors = project("services:\n  web:\n    image: ./disk.vhd\n").errors();
    assert!(errors.contains("set image_format"), "{errors}");
    let errors = project("services:\n  web: {}\n").errors();
    assert!(errors.contains("services.web: needs image:"), "{errors}");
}

#[test]
fn port_errors() {
    for (spec, message) in [
        (
            "\"[::1]:80:80\"",
            "holos supports TCP and UDP over IPv4 only",
        ),
        ("\"::1:80:80\"", "holos supports TCP and UDP over IPv4 only"),
        (
            "\"80:80/sctp\"",
            "holos supports TCP and UDP over IPv4 only",
        ),
        (
            "{target: 80, protocol: sctp}",
            "holos supports TCP and UDP over IPv4 only",
        ),
        (
            "{target: 80, host_ip: \"::\"}",
            "holos supports TCP and UDP over IPv4 only",
        ),
        ("\"8080-8081:80\"", "same length"),
        ("\"70000:80\"", "not a port number"),
        ("{published: 80}", "needs target:"),
    ] {
        let errors = project(&format!(
            "services:\n  web:\n    image: alpine\n    ports: [{spec}]\n"
        ))
        .errors();
        assert!(errors.contains(message), "{spec}: {errors}");
        assert!(errors.contains("holos.yaml:4:"), "{spec}: {errors}");
    }
}

#[test]
fn overlapping_host_ports_name_both() {
    let errors = project(
        "services:\n  a:\n    image: alpine\n    replicas: 2\n    ports: [\"8080:80\"]\n  b:\n    image: alpine\n    ports: [\"0.0.0.0:8081:81\"]\n",
    )
    .errors();
    assert_eq!(
        errors,
        "DIR/holos.yaml:8:12: services.b.ports: service b replica 0 (guest port 81) and service a replica 1 (guest port 80) both publish 0.0.0.0:8081; change one host port"
    );
}

#[test]
fn volume_errors() {
    let errors = project("services:\n  db:\n    image: alpine\n    volumes:\n      - pgdat:/data\n      - data\n      - x:/y:z\n      - {type: weird, target: /t}\nvolumes:\n  pgdata: {}\n").errors();
    let lines: Vec<&str> = errors.lines().collect();
    assert_eq!(lines.len(), 4, "{errors}");
    assert!(lines[0].contains(":5:9: services.db.volumes[0]: volume \"pgdat\" is not declared; did you mean \"pgdata\"?"), "{errors}");
    assert!(
        lines[1].contains(":6:9:")
            && lines[1].contains("target \"data\" must be an absolute path in the guest; an anonymous volume is a path such as /app/node_modules"),
        "{errors}"
    );
    assert!(
        lines[2].contains(":7:9:") && lines[2].contains("use ro or rw"),
        "{errors}"
    );
    assert!(
        lines[3].contains("unknown volume type \"weird\""),
        "{errors}"
    );
    let errors =
        project("services:\n  db:\n    image: alpine\nvolumes:\n  data: {size: lots}\n").errors();
    assert!(
        errors.contains("holos.yaml:5:16: volumes.data.size: \"lots\" is not a size"),
        "{errors}"
    );
}

#[test]
fn depends_on_errors() {
    let errors = project(
        "services:\n  web:\n    image: alpine\n    depends_on: [bd]\n  db:\n    image: alpine\n",
    )
    .errors();
    assert_eq!(
        errors,
        "DIR/holos.yaml:2:3: services.web.depends_on: depends on undefined service \"bd\"; did you mean \"db\"? define it or remove the dependency"
    );
    let errors = project("services:\n  a:\n    image: alpine\n    depends_on: [b]\n  b:\n    image: alpine\n    depends_on: [c]\n  c:\n    image: alpine\n    depends_on: [a]\n").errors();
    assert_eq!(
        errors,
        "DIR/holos.yaml:2:3: services.a.depends_on: depends_on cycle: a -> b -> c -> a; remove one of these dependencies"
    );
    let errors = project("services:\n  a:\n    image: alpine\n    depends_on:\n      b: {condition: service_ready}\n  b:\n    image: alpine\n").errors();
    assert!(
        errors.contains("unknown condition \"service_ready\""),
        "{errors}"
    );
}

#[test]
fn too_many_instances() {
    let errors = project("services:\n  a:\n    image: alpine\n    replicas: 200\n  b:\n    image: alpine\n    replicas: 54\n").errors();
    assert!(
        errors.contains("the project has 254 instances but 10.10.0.0/24 holds only 253"),
        "{errors}"
    );
}

#[test]
fn replica_sources_must_agree() {
    let errors =
        project("services:\n  a:\n    image: alpine\n    replicas: 2\n    deploy: {replicas: 3}\n")
            .errors();
    assert_eq!(
        errors,
        "DIR/holos.yaml:5:24: services.a.deploy.replicas: 3 conflicts with services.a.replicas: 2; keep one of them"
    );
}

#[test]
fn env_file_errors() {
    let errors =
        project("services:\n  a:\n    image: alpine\n    env_file: missing.env\n").errors();
    assert!(
        errors.contains(
            "holos.yaml:4:15: services.a.env_file: DIR/missing.env: cannot read env file"
        ),
        "{errors}"
    );
    let errors = project(
        "services:\n  a:\n    image: alpine\n    env_file: [{path: a.env, format: json}]\n",
    )
    .errors();
    assert!(
        errors.contains("format \"json\" is not supported; use raw"),
        "{errors}"
    );
}

#[test]
fn healthcheck_and_duration_errors() {
    let errors = project("services:\n  a:\n    image: alpine\n    healthcheck: {test: [CMD, x], interval: soon}\n    stop_grace_period: 1y\n").errors();
    assert!(
        errors.contains("services.a.healthcheck.interval: \"soon\" is not a duration"),
        "{errors}"
    );
    assert!(
        errors.contains("holos.yaml:5:24: services.a.stop_grace_period: \"1y\" is not a duration"),
        "{errors}"
    );
}

#[test]
fn memory_and_cpu_errors() {
    let errors =
        project("services:\n  a:\n    image: alpine\n    mem_limit: 12q\n    cpus: lots\n")
            .errors();
    assert!(
        errors.contains("services.a.mem_limit: \"12q\" is not a size"),
        "{errors}"
    );
    assert!(
        errors.contains("services.a.cpus: must be a number"),
        "{errors}"
    );
    let errors = project("services:\n  a:\n    image: fedora\n    vm: {memory_mb: 256}\n").errors();
    assert!(
        errors.contains("256 MB is below the 1024 MB this image needs"),
        "{errors}"
    );
}

#[test]
fn the_minimum_memory_applies_whichever_field_sets_it() {
    let errors = project(
        "services:\n  a:\n    image: alpine\n    mem_limit: 64m\n  b:\n    image: ./disk.qcow2\n    deploy:\n      resources:\n        limits: {memory: 1k}\n  c:\n    image: alpine\n    vm: {memory_mb: 512}\n    mem_limit: 1m\n",
    )
    .errors();
    assert_eq!(
        errors,
        "DIR/holos.yaml:4:16: services.a.mem_limit: 64 MB is below the 256 MB this image needs; raise it\n\
         DIR/holos.yaml:9:26: services.b.deploy.resources.limits.memory: 1 MB is below the 64 MB a Linux guest needs to boot; raise it"
    );
}

#[test]
fn bad_devices_and_image_os() {
    let errors = project("services:\n  a:\n    image: ./x.qcow2\n    image_os: windows\n    devices: [{pci: \"1:0.0\"}]\n").errors();
    assert!(
        errors.contains("services.a.image_os: must be systemd or openrc"),
        "{errors}"
    );
    assert!(errors.contains("is not a PCI address"), "{errors}");
}

#[test]
fn project_name_without_letters() {
    let errors = project("name: \"--\"\nservices: {}\n").errors();
    assert!(
        errors.contains("holos.yaml:1:7: name: project name \"--\" has no letters or digits"),
        "{errors}"
    );
}

#[test]
fn missing_compose_file() {
    let fixture = common::Fixture::new(&[]);
    let errors = fixture.errors();
    assert!(errors.starts_with("DIR: no compose file found"), "{errors}");
}

#[test]
fn positions_survive_includes_merge_keys_and_interpolation() {
    let f = common::Fixture::new(&[
        ("holos.yaml", "include: [inc.yaml]\nx-base: &base\n  image: alpine\n  vm: {vcpus: 2}\nservices:\n  a:\n    <<: *base\n  b:\n    image: alpine\n    replicas: ${N}\n"),
        ("inc.yaml", "services:\n  c:\n    image: alpine\n    prots: []\n"),
    ])
    .env("N", "lots");
    let errors = f.errors();
    let lines: Vec<&str> = errors.lines().collect();
    assert_eq!(
        lines,
        [
            "DIR/holos.yaml:4:8: services.a.vm.vcpus: unknown key; did you mean \"vcpu\"?",
            "DIR/holos.yaml:10:15: services.b.replicas: must be an integer, found \"lots\"",
            "DIR/inc.yaml:4:5: services.c.prots: unknown key; did you mean \"ports\"?",
        ]
    );
}

#[test]
fn bad_dotenv_lines_are_reported_with_their_line() {
    let f = common::Fixture::new(&[("holos.yaml", "services: {}\n"), (".env", "A=1\n9B=2\n")]);
    assert_eq!(
        f.errors(),
        "DIR/.env:2:1: invalid variable name \"9B\"; use KEY=VALUE"
    );
}

#[test]
fn long_extends_chains_are_refused_not_overflowed() {
    let mut yaml = String::from("services:\n  s0: {image: alpine}\n");
    for i in 1..100 {
        yaml.push_str(&format!("  s{i}: {{extends: s{}}}\n", i - 1));
    }
    let errors = project(&yaml).errors();
    assert!(
        errors.contains("extends chain longer than 64 services"),
        "{}",
        &errors[..200.min(errors.len())]
    );
}
