//! Each field's syntax variants and each loading feature, observed through
//! the resolved manifest or the normalised `holos config` output.

use crate::common;
use common::{Fixture, project};
use holos_compose::manifest::{GuestCommand as Command, MountKind};
use std::net::Ipv4Addr;

fn service<'m>(m: &'m holos_compose::Manifest, name: &str) -> &'m holos_compose::manifest::Service {
    m.services
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no service {name}"))
}

#[test]
fn include_is_merged_under_the_main_file() {
    let f = Fixture::new(&[
        (
            "holos.yaml",
            "include:\n  - inc/base.yaml\n  - path: [inc/extra.yaml]\n    project_directory: inc/data\nservices:\n  web:\n    image: ubuntu:noble\n    labels: {from: main}\n",
        ),
        (
            "inc/base.yaml",
            "services:\n  web:\n    image: alpine\n    labels: {from: include, kept: yes}\n  cache:\n    image: alpine\n    env_file: cache.env\n",
        ),
        ("inc/cache.env", "FROM_INCLUDE_DIR=1\n"),
        (
            "inc/extra.yaml",
            "services:\n  worker:\n    image: alpine\n    env_file: worker.env\n",
        ),
        ("inc/data/worker.env", "FROM_PROJECT_DIRECTORY=1\n"),
    ]);
    let m = f.manifest();
    let web = service(&m, "web");
    assert_eq!(web.image.alias.as_deref(), Some("ubuntu"), "main file wins");
    assert_eq!(web.labels["from"], "main");
    assert_eq!(
        web.labels["kept"], "yes",
        "included keys the main file does not set stay"
    );
    assert_eq!(service(&m, "cache").environment["FROM_INCLUDE_DIR"], "1");
    assert_eq!(
        service(&m, "worker").environment["FROM_PROJECT_DIRECTORY"],
        "1"
    );
}

#[test]
fn include_cycles_are_errors() {
    let f = Fixture::new(&[
        ("holos.yaml", "include: [a.yaml]\nservices: {}\n"),
        ("a.yaml", "include: [b.yaml]\n"),
        ("b.yaml", "include: [a.yaml]\n"),
    ]);
    let errors = f.errors();
    assert!(errors.contains("DIR/b.yaml:1:11: include: include cycle: DIR/holos.yaml -> DIR/a.yaml -> DIR/b.yaml -> DIR/a.yaml"), "{errors}");
    let errors = Fixture::new(&[("holos.yaml", "include: [nope.yaml]\n")]).errors();
    assert!(
        errors.contains("included file DIR/nope.yaml does not exist"),
        "{errors}"
    );
}

#[test]
fn interpolation_uses_env_then_dotenv_and_keeps_dollar_escapes() {
    let f = Fixture::new(&[
        ("holos.yaml", "name: ${NAME}\nservices:\n  web:\n    image: ${IMAGE:-alpine}\n    replicas: ${N}\n    ports: [\"${PORT}:80\"]\n    environment:\n      LITERAL: $$HOME\n      EMPTY_DEFAULT: ${EMPTY:-fallback}\n      EMPTY_DASH: ${EMPTY-fallback}\n      ALT: ${NAME:+set}\n"),
        (".env", "NAME=fromdotenv\nN=2\nPORT=9000\nEMPTY=\n"),
    ])
    .env("PORT", "7000");
    let m = f.manifest();
    assert_eq!(m.project, "fromdotenv");
    let web = service(&m, "web");
    assert_eq!(web.replicas, 2);
    assert_eq!(web.image.alias.as_deref(), Some("alpine"));
    assert_eq!(
        web.instances[1].ports[0].host_port,
        Some(7001),
        "the shell wins over .env"
    );
    assert_eq!(web.environment["LITERAL"], "$HOME");
    assert_eq!(web.environment["EMPTY_DEFAULT"], "fallback");
    assert_eq!(web.environment["EMPTY_DASH"], "");
    assert_eq!(web.environment["ALT"], "set");
}

#[test]
fn env_file_precedence() {
    let f = Fixture::new(&[
        ("holos.yaml", "services:\n  web:\n    image: alpine\n    env_file:\n      - a.env\n      - path: b.env\n      - path: raw.env\n        format: raw\n      - path: missing.env\n        required: false\n    environment:\n      - INLINE=wins\n      - FROM_SHELL\n      - UNSET_VAR\n"),
        ("a.env", "A=1\nSHARED=a\nINLINE=a\n"),
        ("b.env", "SHARED=b\nQUOTED=\"x # y\"\n"),
        ("raw.env", "RAW='kept $verbatim'\n"),
    ])
    .env("FROM_SHELL", "shell");
    let m = f.manifest();
    let env = &service(&m, "web").environment;
    assert_eq!(env["A"], "1");
    assert_eq!(env["SHARED"], "b", "later env files win");
    assert_eq!(env["INLINE"], "wins", "inline environment wins");
    assert_eq!(env["QUOTED"], "x # y");
    assert_eq!(env["RAW"], "'kept $verbatim'");
    assert_eq!(env["FROM_SHELL"], "shell");
    assert!(!env.contains_key("UNSET_VAR"), "unset entries are omitted");
}

#[test]
fn labels_from_files_lists_and_maps() {
    let f = Fixture::new(&[
        (
            "holos.yaml",
            "services:\n  a:\n    image: alpine\n    label_file: [l.txt]\n    labels: [\"tier=web\", flag]\n  b:\n    image: alpine\n    labels: {tier: db}\n",
        ),
        ("l.txt", "tier=file\nowner=me\n"),
    ]);
    let m = f.manifest();
    let a = &service(&m, "a").labels;
    assert_eq!(
        (a["tier"].as_str(), a["owner"].as_str(), a["flag"].as_str()),
        ("web", "me", "")
    );
    assert_eq!(service(&m, "b").labels["tier"], "db");
}

#[test]
fn extends_within_and_across_files() {
    let f = Fixture::new(&[
        (
            "holos.yaml",
            "services:\n  base:\n    image: alpine\n    environment: {A: base, B: base}\n    cloud_init: {packages: [curl]}\n  mid:\n    extends: base\n    environment: {B: mid}\n  top:\n    extends: {service: mid}\n    cloud_init: {packages: [jq]}\n  remote:\n    extends: {service: shared, file: lib/shared.yaml}\n",
        ),
        (
            "lib/shared.yaml",
            "services:\n  shared:\n    image: debian\n    env_file: shared.env\n",
        ),
        ("lib/shared.env", "FROM_SHARED=1\n"),
    ]);
    let m = f.manifest();
    let top = service(&m, "top");
    assert_eq!(top.environment["A"], "base");
    assert_eq!(top.environment["B"], "mid");
    assert_eq!(top.cloud_init.packages, ["curl", "jq"]);
    let remote = service(&m, "remote");
    assert_eq!(remote.image.alias.as_deref(), Some("debian"));
    assert_eq!(
        remote.environment["FROM_SHARED"], "1",
        "paths resolve against the extended file"
    );
}

#[test]
fn extends_errors() {
    let errors =
        project("services:\n  a:\n    image: alpine\n    extends: b\n  b:\n    extends: a\n")
            .errors();
    assert!(errors.contains("extends cycle: a -> b -> a"), "{errors}");
    let errors =
        project("services:\n  a:\n    image: alpine\n    extends: {service: nope}\n").errors();
    assert!(
        errors.contains("holos.yaml:4:14: services.a.extends: extends unknown service \"nope\""),
        "{errors}"
    );
}

#[test]
fn profiles_select_services() {
    let yaml = "services:\n  web:\n    image: alpine\n  debug:\n    image: alpine\n    profiles: [debug]\n  tools:\n    image: alpine\n    profiles: [tools]\n    depends_on: [debug]\n";
    let names = |f: &Fixture| {
        f.manifest()
            .services
            .iter()
            .map(|s| s.name.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&project(yaml)), ["web"]);
    assert_eq!(names(&project(yaml).profile("debug")), ["debug", "web"]);
    assert_eq!(
        names(&project(yaml).env("COMPOSE_PROFILES", "debug,tools")),
        ["debug", "tools", "web"]
    );
    let errors = project(yaml).profile("tools").errors();
    assert!(
        errors.contains("depends on \"debug\", which its profiles disable"),
        "{errors}"
    );
    // Inactive services are still validated.
    let errors =
        project("services:\n  off:\n    image: alpine\n    profiles: [x]\n    prots: []\n")
            .errors();
    assert!(
        errors.contains("services.off.prots: unknown key"),
        "{errors}"
    );
}

#[test]
fn files_merge_in_order_with_reset_and_override() {
    let f = Fixture::new(&[
        (
            "holos.yaml",
            "services:\n  web:\n    image: alpine\n    ports: [\"8080:80\"]\n    environment: [A=1, B=1]\n    command: [a, b]\n    labels: {x: \"1\"}\n    volumes: [\"data:/data\"]\nvolumes: {data: {}, other: {}}\n",
        ),
        (
            "holos.override.yaml",
            "services:\n  web:\n    ports: !override [\"9090:90\"]\n    environment: {B: \"2\"}\n    command: [c]\n    labels: !reset {}\n    volumes: [\"other:/data:ro\"]\n",
        ),
    ]);
    let m = f.manifest();
    let web = service(&m, "web");
    assert_eq!(web.ports.len(), 1);
    assert_eq!(web.ports[0].host_port, Some(9090));
    assert_eq!(
        (web.environment["A"].as_str(), web.environment["B"].as_str()),
        ("1", "2")
    );
    assert_eq!(
        web.cloud_init.command.as_deref(),
        Some("c"),
        "commands are replaced"
    );
    assert!(web.labels.is_empty());
    assert_eq!(web.mounts.len(), 1, "volumes merge by target");
    assert_eq!(
        (web.mounts[0].source.as_str(), web.mounts[0].read_only),
        ("other", true)
    );
    // The same with explicit -f files, in the other order.
    let g = Fixture::new(&[
        (
            "one.yaml",
            "services:\n  web: {image: alpine, ports: [\"1:1\"]}\n",
        ),
        (
            "two.yaml",
            "services:\n  web: {image: debian, ports: [\"2:2\"]}\n",
        ),
    ])
    .file("two.yaml")
    .file("one.yaml");
    let m = g.manifest();
    let web = service(&m, "web");
    assert_eq!(web.image.alias.as_deref(), Some("alpine"));
    assert_eq!(web.ports.len(), 2, "port lists append");
}

#[test]
fn anchors_aliases_and_merge_keys() {
    let m = project("x-vm: &vm {vcpu: 2, memory_mb: 1024}\nx-svc: &svc\n  image: alpine\n  vm: *vm\nservices:\n  a:\n    <<: *svc\n  b:\n    <<: [*svc]\n    image: debian\n").manifest();
    assert_eq!(service(&m, "a").vm.vcpu, 2);
    assert_eq!(
        service(&m, "b").image.alias.as_deref(),
        Some("debian"),
        "explicit keys win over <<"
    );
    assert_eq!(service(&m, "b").vm.memory_mb, 1024);
}

#[test]
fn project_name_sources_and_normalisation() {
    let m = project("name: My_Project.1\nservices: {a: {image: alpine}}\n").manifest();
    assert_eq!(m.project, "my_project1");
    let mut f = project("services: {a: {image: alpine}}\n");
    f.project_name = Some("-CLI-Name".into());
    assert_eq!(f.manifest().project, "cli-name");
    let f = project("services: {a: {image: alpine}}\n");
    let dir_name = f
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_lowercase()
        .replace('.', "");
    assert_eq!(
        f.manifest().project,
        dir_name.trim_start_matches(['_', '-'])
    );
}

#[test]
fn discovers_compose_yaml_and_its_override() {
    let f = Fixture::new(&[
        ("compose.yaml", "services:\n  a: {image: alpine}\n"),
        ("compose.override.yaml", "services:\n  a: {replicas: 3}\n"),
    ]);
    assert_eq!(f.manifest().services[0].replicas, 3);
}

#[test]
fn replicas_ports_ips_and_macs() {
    let m = project("name: net\nservices:\n  web:\n    image: alpine\n    scale: 2\n    depends_on: [db]\n    ports: [\"8080:80\", \"8090:90\", \"9000\"]\n  db:\n    image: alpine\n").manifest();
    let db = service(&m, "db");
    let web = service(&m, "web");
    assert_eq!(m.services[0].name, "db", "dependencies first");
    assert_eq!(db.instances[0].ip, Ipv4Addr::new(10, 10, 0, 2));
    assert_eq!(web.instances[1].ip, Ipv4Addr::new(10, 10, 0, 4));
    assert_eq!(web.instances[1].mac_internal, "52:54:00:0a:0a:04");
    assert_eq!(web.instances[1].mac_user, "52:54:01:0a:0a:04");
    let hosts: Vec<Option<u16>> = web.instances[1].ports.iter().map(|p| p.host_port).collect();
    assert_eq!(hosts, [Some(8081), Some(8091), None]);
    assert_eq!(m.hosts[1].names, ["web-0", "web"]);
    assert_eq!(m.hosts[2].names, ["web-1"]);
    assert_eq!(
        m.network.multicast_group,
        holos_compose::network::multicast_for("net").0
    );
}

#[test]
fn long_port_syntax() {
    let m = project("services:\n  a:\n    image: alpine\n    ports:\n      - target: 80\n        published: \"8000-8001\"\n        host_ip: 0.0.0.0\n        protocol: tcp\n        app_protocol: http\n        mode: host\n        name: web\n").manifest();
    let ports = &service(&m, "a").ports;
    assert_eq!(ports.len(), 2);
    assert_eq!((ports[1].host_port, ports[1].guest_port), (Some(8001), 80));
    assert_eq!(ports[0].host_ip, Ipv4Addr::UNSPECIFIED);
    assert_eq!(ports[0].name.as_deref(), Some("web"));
}

#[test]
fn resources_from_compose_fields() {
    let m = project("services:\n  a: {image: alpine, cpus: 0.5, mem_limit: 1.5G}\n  b:\n    image: alpine\n    deploy: {replicas: 2, resources: {limits: {cpus: \"2.1\", memory: 2g}}}\n  c: {image: alpine, vm: {vcpu: 4, memory_mb: 300}, cpus: 1, mem_limit: 4g}\n  d: {image: fedora}\n").manifest();
    let vm = |n: &str| (service(&m, n).vm.vcpu, service(&m, n).vm.memory_mb);
    assert_eq!(vm("a"), (1, 1536));
    assert_eq!(vm("b"), (3, 2048));
    assert_eq!(service(&m, "b").replicas, 2);
    assert_eq!(vm("c"), (4, 300), "vm fields win");
    assert_eq!(vm("d"), (1, 1024), "image minimum memory");
    assert_eq!(service(&m, "a").vm.cpu_model, None);
    assert_eq!(service(&m, "a").vm.machine, "q35");
}

#[test]
fn volumes_bind_named_and_noop() {
    let f = Fixture::new(&[(
        "holos.yaml",
        "services:\n  a:\n    image: alpine\n    volumes:\n      - ./src:/src:ro\n      - data:/data\n      - {type: bind, source: ./b, target: /b}\n      - {type: volume, source: data, target: /d2, read_only: true}\n      - {type: tmpfs, target: /tmp}\nvolumes:\n  data: {size: 1.5G, driver: local}\n",
    )]);
    let m = f.manifest();
    let mounts = &service(&m, "a").mounts;
    assert_eq!(mounts.len(), 4);
    assert_eq!(mounts[0].kind, MountKind::Bind);
    assert_eq!(mounts[0].source, f.path().join("src").display().to_string());
    assert!(mounts[0].read_only);
    assert_eq!(mounts[1].kind, MountKind::Volume);
    assert_eq!(mounts[2].source, f.path().join("b").display().to_string());
    assert!(service(&m, "a").metadata.contains_key("volumes_ignored"));
    assert_eq!(m.volumes[0].size_bytes, Some(3 << 29));
    assert_eq!(m.volumes[0].metadata["driver"], "local");
}

#[test]
fn commands_hooks_and_cloud_init_order() {
    let m = project("services:\n  a:\n    image: alpine\n    entrypoint: [\"/bin/app\", \"--flag\"]\n    command: [\"serve\", \"a b\"]\n    working_dir: /srv\n    user: app\n    hostname: box\n    domainname: example.org\n    post_start:\n      - command: [touch, /started]\n        user: root\n    pre_stop:\n      - command: systemctl stop app\n    cloud_init:\n      runcmd: [explicit, [ls, -l]]\n      bootcmd: [early]\n").manifest();
    let a = service(&m, "a");
    assert_eq!(
        a.cloud_init.runcmd,
        [
            Command::Shell("explicit".into()),
            Command::Exec(vec!["ls".into(), "-l".into()]),
        ]
    );
    assert_eq!(
        a.cloud_init.command.as_deref(),
        Some("cd /srv && /bin/app --flag serve 'a b'")
    );
    assert_eq!(
        a.cloud_init.post_start,
        [Command::Shell(
            "runuser -u root -- sh -c 'touch /started'".into()
        )]
    );
    assert_eq!(a.cloud_init.user, "app");
    assert_eq!(a.cloud_init.hostname.as_deref(), Some("box"));
    assert_eq!(a.cloud_init.fqdn.as_deref(), Some("box.example.org"));
    assert_eq!(a.instances[0].hostname, "box");
    assert_eq!(
        a.pre_stop[0].command,
        Command::Shell("systemctl stop app".into())
    );
    let m = project("services:\n  a:\n    image: alpine\n    user: app\n    cloud_init: {user: admin, hostname: ci}\n    hostname: ignored\n").manifest();
    assert_eq!(
        service(&m, "a").cloud_init.user,
        "admin",
        "cloud_init.user wins"
    );
    assert_eq!(service(&m, "a").cloud_init.hostname.as_deref(), Some("ci"));
    let m = project("services:\n  a: {image: alpine}\n  b: {image: ./x.qcow2}\n").manifest();
    assert_eq!(
        service(&m, "a").cloud_init.user,
        "alpine",
        "image default user"
    );
    assert_eq!(service(&m, "b").cloud_init.user, "ubuntu", "fallback user");
}

#[test]
fn healthcheck_forms() {
    let m = project("services:\n  list: {image: alpine, healthcheck: {test: [pg_isready, -U, pg], interval: 2s, retries: 30, start_period: 10s, timeout: 3s, start_interval: 1s}}\n  cmd: {image: alpine, healthcheck: {test: [CMD, \"true\"]}}\n  shell: {image: alpine, healthcheck: {test: [CMD-SHELL, \"curl -f x\"]}}\n  string: {image: alpine, healthcheck: {test: \"curl -f x\"}}\n  none: {image: alpine, healthcheck: {test: [NONE]}}\n  off: {image: alpine, healthcheck: {test: [CMD, x], disable: true}}\n").manifest();
    let h = |n: &str| service(&m, n).healthcheck.clone();
    let list = h("list").unwrap();
    assert_eq!(list.test, ["pg_isready", "-U", "pg"]);
    assert_eq!(
        (
            list.interval_ms,
            list.timeout_ms,
            list.retries,
            list.start_period_ms,
            list.start_interval_ms
        ),
        (2000, 3000, 30, 10000, 1000)
    );
    assert_eq!(h("cmd").unwrap().test, ["true"]);
    assert_eq!(h("shell").unwrap().test, ["sh", "-c", "curl -f x"]);
    assert_eq!(h("string").unwrap().test, ["sh", "-c", "curl -f x"]);
    assert_eq!(h("cmd").unwrap().interval_ms, 30_000, "Compose defaults");
    assert!(h("none").is_none() && h("off").is_none());
}

#[test]
fn extra_hosts_depends_on_and_devices() {
    let m = project("services:\n  a:\n    image: ubuntu\n    extra_hosts: [\"gw=10.0.0.1\", \"db:10.0.0.2\"]\n    depends_on:\n      b: {condition: service_healthy, restart: true}\n      c: {condition: service_started, required: false}\n    devices:\n      - pci: \"01:00.0\"\n        rom_file: ./vbios.rom\n      - /dev/kvm:/dev/kvm\n      - nvidia.com/gpu=all\n  b:\n    image: alpine\n    extra_hosts: {gw: 10.0.0.9, multi: [1.1.1.1, 2.2.2.2]}\n").manifest();
    let a = service(&m, "a");
    let hosts: Vec<(String, String)> = a
        .extra_hosts
        .iter()
        .map(|h| (h.names[0].clone(), h.ip.clone()))
        .collect();
    assert_eq!(
        hosts,
        [
            ("gw".into(), "10.0.0.1".into()),
            ("db".into(), "10.0.0.2".into())
        ]
    );
    assert_eq!(service(&m, "b").extra_hosts.len(), 3);
    assert_eq!(
        a.depends_on.len(),
        1,
        "an optional missing dependency is dropped"
    );
    assert_eq!(
        (a.depends_on[0].condition.as_str(), a.depends_on[0].restart),
        ("service_healthy", true)
    );
    assert_eq!(a.devices[0].pci, "01:00.0");
    assert!(
        a.devices[0]
            .rom_file
            .as_deref()
            .unwrap()
            .ends_with("/vbios.rom")
    );
    assert!(a.vm.uefi, "PCI devices turn UEFI on");
    assert_eq!(a.metadata["devices"].as_array().map(Vec::len), Some(2));
}

#[test]
fn metadata_fields_are_kept() {
    let m = project("services:\n  a:\n    image: alpine\n    restart: always\n    privileged: true\n    sysctls: {net.core.somaxconn: 1024}\n    networks: [front]\n    logging: {driver: json-file}\n    develop: {watch: []}\nnetworks: {front: {}}\nsecrets: {s: {file: ./s.txt}}\nconfigs: {c: {content: x, template_driver: golang}}\nmodels: {m: {model: ai/x, context_size: 4096, runtime_flags: [--x]}}\nversion: \"3.9\"\n").manifest();
    let meta = &service(&m, "a").metadata;
    assert_eq!(meta["restart"], "always");
    assert_eq!(meta["privileged"], true);
    assert_eq!(meta["sysctls"]["net.core.somaxconn"], 1024);
    for key in ["networks", "secrets", "configs", "models", "version"] {
        assert!(m.metadata.contains_key(key), "{key}");
    }
}

#[test]
fn images_aliases_paths_and_formats() {
    let f = Fixture::new(&[(
        "holos.yaml",
        "services:\n  a: {image: ubuntu}\n  b: {image: \"debian:trixie\"}\n  c: {image: disk.img, image_os: openrc}\n  d: {image: /abs/disk.bin, image_format: raw}\n  e: {image: alpine, image_format: raw}\n",
    )]);
    let m = f.manifest();
    let img = |n: &str| service(&m, n).image.clone();
    assert_eq!(
        (img("a").tag.as_deref(), img("a").os.as_str()),
        (Some("noble"), "systemd")
    );
    assert_eq!(img("b").tag.as_deref(), Some("trixie"));
    assert_eq!(
        img("c").path,
        Some(f.path().join("disk.img").display().to_string())
    );
    assert_eq!(
        (img("c").format.as_str(), img("c").os.as_str()),
        ("raw", "openrc")
    );
    assert_eq!(img("d").format, "raw");
    assert_eq!(img("e").format, "raw", "image_format overrides the table");
}

#[test]
fn later_files_resolve_paths_against_the_project_directory() {
    let f = Fixture::new(&[
        ("holos.yaml", "services:\n  a: {image: alpine}\n"),
        (
            "overrides/extra.yaml",
            "services:\n  a: {env_file: vars.env}\n",
        ),
        ("vars.env", "FROM=project-dir\n"),
    ])
    .file("holos.yaml")
    .file("overrides/extra.yaml");
    assert_eq!(f.manifest().services[0].environment["FROM"], "project-dir");
}

#[test]
fn existing_allocations_survive_a_new_service() {
    let before = project("services:\n  b: {image: alpine}\n  c: {image: alpine}\n").manifest();
    let existing = before
        .services
        .iter()
        .flat_map(|s| s.instances.iter().map(|i| (i.name.clone(), i.ip)))
        .collect();
    let f =
        project("services:\n  a: {image: alpine}\n  b: {image: alpine}\n  c: {image: alpine}\n");
    let (_, after) =
        holos_compose::resolve_with_allocations(&f.options(), &existing).expect("resolves");
    assert_eq!(
        service(&after, "b").instances[0].ip,
        Ipv4Addr::new(10, 10, 0, 2)
    );
    assert_eq!(
        service(&after, "c").instances[0].ip,
        Ipv4Addr::new(10, 10, 0, 3)
    );
    assert_eq!(
        service(&after, "a").instances[0].ip,
        Ipv4Addr::new(10, 10, 0, 4)
    );
    // Without them, a takes .2, as config shows it.
    assert_eq!(
        service(&f.manifest(), "a").instances[0].ip,
        Ipv4Addr::new(10, 10, 0, 2)
    );
}

#[test]
fn anonymous_volumes_live_on_the_root_overlay() {
    let f = Fixture::new(&[
        (
            "holos.yaml",
            "services:\n  app:\n    image: alpine\n    volumes:\n      - /app/node_modules\n      - {type: volume, target: /cache}\n      - data:/data\nvolumes:\n  data: {}\n",
        ),
        (
            "holos.override.yaml",
            "services:\n  app:\n    volumes: [\"/app/node_modules\"]\n",
        ),
    ]);
    let m = f.manifest();
    let mounts: Vec<(MountKind, &str, &str)> = service(&m, "app")
        .mounts
        .iter()
        .map(|m| (m.kind.clone(), m.source.as_str(), m.target.as_str()))
        .collect();
    assert_eq!(
        mounts,
        [
            (MountKind::Anonymous, "", "/app/node_modules"),
            (MountKind::Anonymous, "", "/cache"),
            (MountKind::Volume, "data", "/data"),
        ]
    );
    let json = serde_json::to_value(&m).expect("json");
    assert_eq!(
        json["services"][0]["mounts"][0],
        serde_json::json!({"kind": "anonymous", "target": "/app/node_modules", "read_only": false})
    );
}
