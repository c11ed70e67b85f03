//! `holos import` on domain XML as `virsh dumpxml` writes it
//! (`tests/libvirt/`): what each domain becomes, and that `holos validate`
//! accepts the result. `--connect` runs a `virsh` that answers `list` and
//! `dumpxml` as virsh does.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/libvirt")
        .join(name)
}

fn holos(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_holos"))
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env(
            "PATH",
            format!("{}:/usr/bin:/bin", dir.join("bin").display()),
        )
        .env("HOLOS_STATE_DIR", dir.join("state"))
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Imports `xml` into `dir/holos.yaml`, checks that `holos config --resolved` accepts
/// it (validate would also want the disk images, which are the libvirt
/// host's), and returns the file and the warnings printed.
fn import(dir: &Path, xml: &Path) -> (String, String) {
    let out = holos(
        dir,
        &["import", "--xml", xml.to_str().unwrap(), "-o", "holos.yaml"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let file = std::fs::read_to_string(dir.join("holos.yaml")).unwrap();
    let validate = holos(dir, &["config", "--resolved"]);
    assert!(
        validate.status.success(),
        "config refused:\n{file}\n{}",
        text(&validate.stderr)
    );
    (file, text(&out.stderr))
}

fn parse(file: &str) -> saphyr::Yaml<'_> {
    use saphyr::LoadableYamlNode;
    saphyr::Yaml::load_from_str(file).unwrap().remove(0)
}

/// The node at a dotted path (`services.web.ports.0`), if there is one.
fn get<'y>(yaml: &'y saphyr::Yaml<'y>, path: &str) -> Option<&'y saphyr::Yaml<'y>> {
    path.split('.')
        .try_fold(yaml, |node, key| match key.parse::<usize>() {
            Ok(index) => node.as_sequence_get(index),
            Err(_) => node.as_mapping_get(key),
        })
}

fn at<'y>(yaml: &'y saphyr::Yaml<'y>, path: &str) -> &'y saphyr::Yaml<'y> {
    get(yaml, path).unwrap_or_else(|| panic!("no {path} in {yaml:?}"))
}

fn str_at<'y>(yaml: &'y saphyr::Yaml<'y>, path: &str) -> &'y str {
    at(yaml, path)
        .as_str()
        .unwrap_or_else(|| panic!("{path} is not a string in {yaml:?}"))
}

fn int_at(yaml: &saphyr::Yaml<'_>, path: &str) -> i64 {
    at(yaml, path)
        .as_integer()
        .unwrap_or_else(|| panic!("{path} is not an integer in {yaml:?}"))
}

#[test]
fn a_plain_domain_becomes_a_service_on_its_disk_with_its_port_forwards() {
    let dir = tempfile::tempdir().unwrap();
    let (file, warnings) = import(dir.path(), &fixture("plain.xml"));
    let yaml = parse(&file);
    assert_eq!(
        str_at(&yaml, "services.web.image"),
        "/var/lib/libvirt/images/web.qcow2"
    );
    assert_eq!(str_at(&yaml, "services.web.image_format"), "qcow2");
    assert_eq!(int_at(&yaml, "services.web.vm.vcpu"), 2);
    assert_eq!(int_at(&yaml, "services.web.vm.memory_mb"), 2048);
    assert!(get(&yaml, "services.web.vm.uefi").is_none());
    assert!(
        get(&yaml, "services.web.vm.machine").is_none(),
        "q35 is the default"
    );
    assert_eq!(str_at(&yaml, "services.web.ports.0"), "2222:22");
    assert_eq!(str_at(&yaml, "services.web.ports.1"), "8080:80");
    assert!(warnings.contains("the cdrom sda is left out"), "{warnings}");
    let config = holos(dir.path(), &["config", "--resolved", "--format", "json"]);
    let manifest: serde_json::Value = serde_json::from_slice(&config.stdout).unwrap();
    let ports = &manifest["services"][0]["ports"];
    assert_eq!(ports[0]["host_port"], 2222, "{ports}");
    assert_eq!(ports[0]["guest_port"], 22, "{ports}");
}

/// A qcow2 header (version 3, 64 KiB clusters) of `size` virtual bytes.
fn qcow2_header(size: u64) -> Vec<u8> {
    let mut header = b"QFI\xfb".to_vec();
    header.extend(3u32.to_be_bytes());
    header.extend(0u64.to_be_bytes());
    header.extend(0u32.to_be_bytes());
    header.extend(16u32.to_be_bytes());
    header.extend(size.to_be_bytes());
    header.resize(512, 0);
    header
}

#[test]
fn extra_disks_become_named_volumes_of_their_size_and_bridges_are_noted() {
    let dir = tempfile::tempdir().unwrap();
    let images = dir.path().join("images");
    std::fs::create_dir(&images).unwrap();
    std::fs::write(images.join("db-root.qcow2"), qcow2_header(10 << 30)).unwrap();
    std::fs::write(images.join("db-data.qcow2"), qcow2_header(20 << 30)).unwrap();
    let wal = std::fs::File::create(images.join("db-wal.img")).unwrap();
    wal.set_len(512 << 20).unwrap();
    let xml = std::fs::read_to_string(fixture("extra-disks.xml"))
        .unwrap()
        .replace("/var/lib/libvirt/images", images.to_str().unwrap());
    std::fs::write(dir.path().join("db.xml"), xml).unwrap();
    let (file, warnings) = import(dir.path(), &dir.path().join("db.xml"));
    let yaml = parse(&file);
    let service = "services.db-example";
    assert_eq!(
        str_at(&yaml, &format!("{service}.image")),
        images.join("db-root.qcow2").to_str().unwrap()
    );
    assert_eq!(int_at(&yaml, &format!("{service}.vm.vcpu")), 4);
    assert_eq!(int_at(&yaml, &format!("{service}.vm.memory_mb")), 4096);
    assert_eq!(str_at(&yaml, &format!("{service}.vm.machine")), "pc");
    assert_eq!(
        str_at(&yaml, &format!("{service}.volumes.0")),
        "db-example-vdb:/mnt/vdb"
    );
    assert_eq!(
        str_at(&yaml, &format!("{service}.volumes.1")),
        "db-example-vdc:/mnt/vdc"
    );
    assert!(get(&yaml, &format!("{service}.volumes.2")).is_none());
    assert_eq!(str_at(&yaml, "volumes.db-example-vdb.size"), "20G");
    assert_eq!(str_at(&yaml, "volumes.db-example-vdc.size"), "512M");
    assert_eq!(str_at(&yaml, &format!("{service}.ports.0")), "15432:5432");
    assert!(get(&yaml, &format!("{service}.ports.1")).is_none());
    for expected in [
        "NIC 52:54:00:a1:b2:c3 bridged to br0",
        "NIC 52:54:00:a1:b2:c4 on libvirt network default",
        "disk vdd is a libvirt volume disk without a file path",
        "the QEMU forward udp::5353-:53 is left out",
        "its data is not copied",
    ] {
        assert!(warnings.contains(expected), "{expected}: {warnings}");
        assert!(
            file.lines()
                .any(|l| l.starts_with("# warning: ") && l.contains(expected)),
            "{expected} in the file's header: {file}"
        );
    }
}

#[test]
fn a_vfio_domain_keeps_its_pci_devices_and_uefi() {
    let dir = tempfile::tempdir().unwrap();
    let (file, warnings) = import(dir.path(), &fixture("vfio.xml"));
    let yaml = parse(&file);
    let service = "services.gpu-worker";
    assert_eq!(
        at(&yaml, &format!("{service}.vm.uefi")).as_bool(),
        Some(true)
    );
    assert_eq!(int_at(&yaml, &format!("{service}.vm.memory_mb")), 16384);
    assert_eq!(
        str_at(&yaml, &format!("{service}.devices.0.pci")),
        "0000:01:00.0"
    );
    assert_eq!(
        str_at(&yaml, &format!("{service}.devices.0.rom_file")),
        "/usr/share/vgabios/gpu.rom"
    );
    assert_eq!(
        str_at(&yaml, &format!("{service}.devices.1.pci")),
        "0000:01:00.1"
    );
    assert!(get(&yaml, &format!("{service}.devices.2")).is_none());
    assert!(
        warnings.contains("the usb host device is left out"),
        "{warnings}"
    );
}

#[test]
fn connect_reads_every_domain_through_virsh() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    // virsh's answers to the calls holos makes; an unknown domain fails as
    // virsh fails.
    let script = format!(
        "#!/bin/sh\n[ \"$1 $2\" = \"-c test:///x\" ] || {{ echo \"error: failed to connect to the hypervisor\" >&2; exit 1; }}\nshift 2\ncase \"$*\" in\n  'list --all --name') printf 'web\\ngpu-worker\\n\\n';;\n  'dumpxml web') cat '{}';;\n  'dumpxml gpu-worker') cat '{}';;\n  dumpxml*) echo \"error: failed to get domain '$2'\" >&2; exit 1;;\n  *) exit 1;;\nesac\n",
        fixture("plain.xml").display(),
        fixture("vfio.xml").display()
    );
    std::fs::write(bin.join("virsh"), script).unwrap();
    std::fs::set_permissions(bin.join("virsh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = holos(dir.path(), &["import", "--connect", "test:///x"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let file = text(&out.stdout);
    assert!(
        file.starts_with("# Imported by `holos import` from the libvirt domains web, gpu-worker."),
        "{file}"
    );
    std::fs::write(dir.path().join("holos.yaml"), &file).unwrap();
    let validate = holos(dir.path(), &["config", "--resolved"]);
    assert!(validate.status.success(), "{}", text(&validate.stderr));
    let out = holos(dir.path(), &["import", "--connect", "test:///x", "nosuch"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("error: failed to get domain 'nosuch'"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn bad_xml_is_named_with_its_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let xml = dir.path().join("broken.xml");
    std::fs::write(
        &xml,
        "<domain>\n  <name>x</name>\n  <vcpu>2</vcp>\n</domain>\n",
    )
    .unwrap();
    let out = holos(dir.path(), &["import", "--xml", xml.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!("{}:3:", xml.display())),
        "{stderr}"
    );
    let out = holos(dir.path(), &["import"]);
    assert_eq!(out.status.code(), Some(2), "--xml or --connect is required");
}

#[test]
fn deeply_nested_or_huge_xml_is_refused_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let deep = dir.path().join("deep.xml");
    let depth = 200_000;
    let xml = format!(
        "<domain><name>x</name>{}{}</domain>",
        "<a>".repeat(depth),
        "</a>".repeat(depth)
    );
    std::fs::write(&deep, xml).unwrap();
    let out = holos(dir.path(), &["import", "--xml", deep.to_str().unwrap()]);
    let said = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("elements nest deeper than 256 levels"),
        "{said}"
    );

    let huge = dir.path().join("huge.xml");
    let file = std::fs::File::create(&huge).unwrap();
    file.set_len(17 << 20).unwrap();
    let out = holos(dir.path(), &["import", "--xml", huge.to_str().unwrap()]);
    let said = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains(
            "huge.xml is 17.0 MiB; a domain's XML is far smaller (at most 16.0 MiB is read)"
        ),
        "{said}"
    );
}

#[test]
fn import_takes_domains_or_all_from_virshs_default_connection() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    // virsh with its default connection (no -c), as it answers.
    let script = format!(
        "#!/bin/sh\n[ \"$1\" = -c ] && {{ echo \"unexpected -c\" >&2; exit 1; }}\ncase \"$*\" in\n  'list --all --name') printf 'web\\ngpu-worker\\n\\n';;\n  'dumpxml web') cat '{}';;\n  'dumpxml gpu-worker') cat '{}';;\n  dumpxml*) echo \"error: failed to get domain '$2'\" >&2; exit 1;;\n  *) exit 1;;\nesac\n",
        fixture("plain.xml").display(),
        fixture("vfio.xml").display()
    );
    std::fs::write(bin.join("virsh"), script).unwrap();
    std::fs::set_permissions(bin.join("virsh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = holos(dir.path(), &["import", "web"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with("# Imported by `holos import` from the libvirt domain web."),
        "{}",
        text(&out.stdout)
    );
    let out = holos(dir.path(), &["import", "--all"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout)
            .starts_with("# Imported by `holos import` from the libvirt domains web, gpu-worker."),
        "{}",
        text(&out.stdout)
    );
    let out = holos(dir.path(), &["import", "nosuch"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr)
            .contains("virsh dumpxml nosuch failed: error: failed to get domain 'nosuch'"),
        "{}",
        text(&out.stderr)
    );
    let out = holos(dir.path(), &["import"]);
    assert_eq!(out.status.code(), Some(2), "no source is a usage error");
}
