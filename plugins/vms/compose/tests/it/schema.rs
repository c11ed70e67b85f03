//! `share/holos.schema.json` and the parser agree: on the field lists, and
//! on a corpus of good and bad files (checked with the `jsonschema` crate).

use crate::common;
use common::Fixture;
use holos_compose::keys;
use std::path::Path;

fn schema() -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../share/holos.schema.json");
    let text = std::fs::read_to_string(&path).expect("share/holos.schema.json exists");
    serde_json::from_str(&text).expect("the schema is JSON")
}

#[test]
fn schema_lists_exactly_the_parsers_fields() {
    let schema = schema();
    let mut schema_keys: Vec<&str> = schema["$defs"]["service"]["properties"]
        .as_object()
        .expect("service properties")
        .keys()
        .map(String::as_str)
        .collect();
    let mut parser_keys: Vec<&str> = keys::SERVICE_MAPPED
        .iter()
        .chain(keys::SERVICE_METADATA)
        .copied()
        .collect();
    schema_keys.sort_unstable();
    parser_keys.sort_unstable();
    assert_eq!(schema_keys, parser_keys);
    let mut top: Vec<&str> = schema["properties"]
        .as_object()
        .expect("top")
        .keys()
        .map(String::as_str)
        .collect();
    let mut want: Vec<&str> = keys::TOP_LEVEL.to_vec();
    top.sort_unstable();
    want.sort_unstable();
    assert_eq!(top, want);
    for (name, list) in [
        ("vm", keys::VM),
        ("cloud_init", keys::CLOUD_INIT),
        ("healthcheck", keys::HEALTHCHECK),
    ] {
        let mut got: Vec<&str> = schema["$defs"]["service"]["properties"][name]["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("{name} properties"))
            .keys()
            .map(String::as_str)
            .collect();
        let mut want = list.to_vec();
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want, "{name}");
    }
}

const GOOD: &[&str] = &[
    "services:\n  web:\n    image: alpine\n",
    "name: x\nversion: \"3.9\"\nx-top: {any: thing}\nservices:\n  web:\n    image: ubuntu:noble\n    x-note: 1\n    replicas: 2\n    ports: [\"8080:80\", 9000, {target: 81, published: \"8100\"}]\n    environment: [A=1]\n    labels: {a: b}\n    healthcheck: {test: [CMD, \"true\"], interval: 2s}\n    vm: {vcpu: 2, memory_mb: 1024, uefi: true}\n    restart: always\n    cloud_init: {packages: [nginx], runcmd: [x, [ls]]}\n",
    "services:\n  db:\n    image: debian\n    volumes: [\"data:/d:ro\", {type: tmpfs, target: /t}]\n    depends_on: {x: {condition: service_healthy}}\n  x: {image: alpine, cpus: 0.5, mem_limit: 1.5G, stop_grace_period: 1m30s}\nvolumes:\n  data: {size: 20G}\n",
    "services:\n  a:\n    image: alpine\n    replicas: ${N:-1}\n    devices: [{pci: \"01:00.0\"}, /dev/kvm]\n    extra_hosts: {gw: 10.0.0.1}\n    post_start: [{command: [touch, /x]}]\n",
    "services:\n  a: {image: alpine}\nnetworks: {front: {}}\nsecrets: {s: {file: ./s}}\n",
];

const BAD: &[&str] = &[
    "services:\n  web:\n    image: alpine\n    prots: []\n",
    "servics: {}\n",
    "services:\n  web:\n    image: alpine\n    vm: {vcpus: 2}\n",
    "services:\n  web:\n    image: alpine\n    replicas: many\n",
    "services:\n  web:\n    image: alpine\n    ports: [{target: 80, protocol: sctp}]\n",
    "services:\n  web:\n    image: alpine\n    image_os: windows\n",
    "services:\n  web:\n    image: alpine\n    cloud_init: {pakages: []}\n",
    "services:\n  web:\n    image: alpine\n    healthcheck: {test: [CMD, x], interval: soon}\n",
    "services:\n  web:\n    image: alpine\n    depends_on: {db: {condition: ready}}\n  db: {image: alpine}\n",
    "services:\n  web:\n    image: alpine\n    environment: 5\n",
    "services:\n  web:\n    image: alpine\n    mem_limit: lots\n",
    "services:\n  web:\n    image: alpine\nvolumes:\n  v: {sise: 1G}\n",
    "services:\n  web:\n    image: alpine\n    env_file: [{path: a.env, format: json}]\n",
    "services:\n  web:\n    image: alpine\n    volumes: [{type: weird, target: /x}]\n",
];

fn parser_accepts(yaml: &str) -> bool {
    holos_compose::resolve(&Fixture::new(&[("holos.yaml", yaml)]).options()).is_ok()
}

fn schema_accepts(validator: &jsonschema::Validator, yaml: &str) -> bool {
    let node =
        holos_compose::yaml::parse_str(yaml, Path::new("corpus.yaml")).expect("corpus YAML parses");
    validator.is_valid(&node.to_json())
}

#[test]
fn schema_and_parser_agree_on_the_corpus() {
    let validator = jsonschema::validator_for(&schema()).expect("the schema compiles");
    for yaml in GOOD {
        assert!(parser_accepts(yaml), "parser rejects a good file:\n{yaml}");
        assert!(
            schema_accepts(&validator, yaml),
            "schema rejects a good file:\n{yaml}"
        );
    }
    for yaml in BAD {
        assert!(!parser_accepts(yaml), "parser accepts a bad file:\n{yaml}");
        assert!(
            !schema_accepts(&validator, yaml),
            "schema accepts a bad file:\n{yaml}"
        );
    }
}

#[test]
fn schema_accepts_every_example() {
    let validator = jsonschema::validator_for(&schema()).expect("the schema compiles");
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../share/examples/compose");
    let mut count = 0;
    for entry in std::fs::read_dir(&examples).expect("examples") {
        let dir = entry.expect("entry").path();
        for file in ["holos.yaml", "common/base.yaml", "common/monitoring.yaml"] {
            let path = dir.join(file);
            if let Ok(text) = std::fs::read_to_string(&path) {
                let node = holos_compose::yaml::parse_str(&text, &path).expect("example parses");
                let errors: Vec<String> = validator
                    .iter_errors(&node.to_json())
                    .map(|e| e.to_string())
                    .collect();
                assert!(errors.is_empty(), "{}: {errors:?}", path.display());
                count += 1;
            }
        }
    }
    assert!(count >= 10);
}
