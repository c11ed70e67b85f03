//! The runtime's pure builders against the example projects: the QEMU argv
//! (golden files in `tests/golden/NAME.argv`, one argument a line),
//! the cloud-init documents parsed back, and the seed ISO read back with an
//! independent ISO 9660 reader. `HOLOS_BLESS=1` rewrites the argv goldens;
//! review the diff.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use holos_compose::load::Options;
use holos_compose::manifest::Manifest;
use holos_runtime::cloud_init::{self, SeedDocuments, SeedInputs};
use holos_runtime::plan::{FirmwareFiles, PlanInputs, PlannedInstance, plan};
use holos_runtime::spec::Accel;
use holos_runtime::state::Layout;
use holos_runtime::{qemu, seed_iso};
use saphyr::{LoadableYamlNode, Yaml};

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../share/examples/compose")
}

fn manifest_of(dir: &Path, files: &[(&str, &str)]) -> Manifest {
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let options = Options {
        working_dir: dir.to_path_buf(),
        environment: BTreeMap::new(),
        ..Options::default()
    };
    match holos_compose::resolve(&options) {
        Ok((_, manifest)) => manifest,
        Err(errors) => panic!("{} does not resolve: {errors:?}", dir.display()),
    }
}

fn firmware() -> FirmwareFiles {
    FirmwareFiles {
        code: "/usr/share/OVMF/OVMF_CODE_4M.fd".into(),
        vars_template: "/usr/share/OVMF/OVMF_VARS_4M.fd".into(),
    }
}

fn planned(manifest: &Manifest, accel: Accel) -> Vec<PlannedInstance> {
    let layout = Layout::new("/var/lib/holos");
    let firmware = firmware();
    let inputs = PlanInputs {
        layout: &layout,
        accel,
        firmware: Some(&firmware),
        previous: None,
        images: &Default::default(),
    };
    let mut next_port = 40000;
    let mut free_port = || {
        next_port += 1;
        Ok(next_port)
    };
    plan(manifest, &inputs, &[], &mut free_port).unwrap()
}

fn argv_text(manifest: &Manifest, accel: Accel) -> String {
    let mut text = String::new();
    for instance in planned(manifest, accel) {
        text.push_str(&format!("# {}\n", instance.spec.name));
        for arg in qemu::argv(&instance.spec) {
            text.push_str(&arg);
            text.push('\n');
        }
    }
    text
}

fn check_golden(name: &str, actual: &str) {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/golden/{name}.argv"));
    if std::env::var_os("HOLOS_BLESS").is_some() {
        std::fs::write(&golden, actual).unwrap();
    }
    let expected = std::fs::read_to_string(&golden)
        .unwrap_or_else(|e| panic!("{}: {e}; run with HOLOS_BLESS=1 once", golden.display()));
    assert_eq!(
        actual,
        expected,
        "{name}: argv differs from {}",
        golden.display()
    );
}

#[test]
fn seed_examples_match_their_argv_goldens() {
    for name in [
        "seed-hello",
        "seed-volumes",
        "seed-gpu",
        "seed-extra-args",
        "full-stack",
    ] {
        let manifest = manifest_of(&examples_dir().join(name), &[]);
        let accel = if name == "seed-gpu" {
            Accel::Kvm
        } else {
            Accel::Tcg
        };
        check_golden(name, &argv_text(&manifest, accel));
    }
}

#[test]
fn argv_follows_the_conventions() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = manifest_of(
        dir.path(),
        &[(
            "holos.yaml",
            "name: conv\nservices:\n  web:\n    image: ./base.qcow2\n    ports: [\"8080:80\", \"127.0.0.2:9000:10.0.2.15:90\"]\n    vm: {vcpu: 2, memory_mb: 1024, uefi: true, extra_args: [\"-kernel\", \"/k,1\"]}\n    devices:\n      - pci: \"01:00.0\"\n        rom_file: /roms/a,b.rom\n",
        )],
    );
    let instances = planned(&manifest, Accel::Tcg);
    let argv = qemu::argv(&instances[0].spec);
    let after = |flag: &str| -> Vec<&str> {
        argv.windows(2)
            .filter(|w| w[0] == flag)
            .map(|w| w[1].as_str())
            .collect()
    };
    assert_eq!(after("-machine"), ["q35,accel=tcg"]);
    assert_eq!(after("-cpu"), ["max,kvm=off"]);
    assert_eq!(after("-smp"), ["2"]);
    assert_eq!(after("-m"), ["1024"]);
    for flag in ["-nodefaults", "-no-user-config"] {
        assert!(argv.iter().any(|a| a == flag), "{flag} missing");
    }
    let netdevs = after("-netdev");
    assert_eq!(
        netdevs[0],
        "user,id=user0,hostfwd=tcp:127.0.0.1:40001-:22,hostfwd=tcp:127.0.0.1:8080-:80,hostfwd=tcp:127.0.0.2:9000-10.0.2.15:90"
    );
    assert!(netdevs[1].starts_with("socket,id=internal0,mcast=239."));
    let devices = after("-device");
    assert!(devices.contains(&"vfio-pci,host=01:00.0,romfile=/roms/a,,b.rom"));
    let drives = after("-drive");
    assert!(
        drives.contains(
            &"if=pflash,format=raw,unit=0,readonly=on,file=/usr/share/OVMF/OVMF_CODE_4M.fd"
        )
    );
    assert!(drives.contains(
        &"if=pflash,format=raw,unit=1,file=/var/lib/holos/instances/conv/web-0/OVMF_VARS.fd"
    ));
    // extra_args come last and are passed through untouched.
    assert_eq!(&argv[argv.len() - 2..], ["-kernel", "/k,1"]);
}

#[test]
fn commas_in_paths_are_doubled() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = manifest_of(
        dir.path(),
        &[(
            "holos.yaml",
            "name: esc\nservices:\n  web:\n    image: ./base.qcow2\n",
        )],
    );
    let layout = Layout::new("/st,ate");
    let inputs = PlanInputs {
        layout: &layout,
        accel: Accel::Kvm,
        firmware: None,
        previous: None,
        images: &Default::default(),
    };
    let spec = &plan(&manifest, &inputs, &[], &mut || Ok(2222)).unwrap()[0].spec;
    let argv = qemu::argv(spec);
    assert!(argv.contains(&"if=none,id=root,file=/st,,ate/instances/esc/web-0/root.qcow2,format=qcow2,discard=unmap".to_string()));
    assert!(argv.contains(&"host".to_string()));
    assert!(argv.contains(&"q35,accel=kvm".to_string()));
}

fn documents(compose: &str) -> (SeedDocuments, Manifest) {
    let dir = tempfile::tempdir().unwrap();
    let manifest = manifest_of(dir.path(), &[("holos.yaml", compose)]);
    let instances = planned(&manifest, Accel::Tcg);
    let first = &instances[0];
    let service = &manifest.services[first.service_index];
    let instance = &service.instances[first.instance_index];
    let hosts = manifest.hosts_for(instance);
    let docs = cloud_init::render(&SeedInputs {
        spec: &first.spec,
        service,
        hostname: &instance.hostname,
        hosts: &hosts,
        public_key: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTests holos@test\n",
    });
    (docs, manifest)
}

fn yaml(text: &str) -> Yaml<'_> {
    Yaml::load_from_str(text)
        .unwrap()
        .into_iter()
        .next()
        .unwrap()
}

fn strings(node: &Yaml) -> Vec<String> {
    node.as_vec()
        .unwrap()
        .iter()
        .map(|n| {
            n.as_str()
                .map(str::to_string)
                .unwrap_or_else(|| format!("{n:?}"))
        })
        .collect()
}

const VOLUMES: &str = "name: demo\nservices:\n  db:\n    image: ubuntu:noble\n    hostname: dbhost\n    environment: {PGDATA: /var/lib/postgresql/data}\n    command: [\"postgres\", \"-D\", \"/x\"]\n    cloud_init:\n      packages: [postgresql]\n      runcmd: [\"echo user-runcmd\"]\n      bootcmd: [\"echo boot\"]\n    volumes:\n      - pgdata:/var/lib/postgresql\n      - snapshots:/mnt/snap shots:ro\n      - /srv/share:/mnt/share\n  web:\n    image: alpine\n    replicas: 2\nvolumes:\n  pgdata:\n  snapshots:\n";

#[test]
fn user_data_is_cloud_config_with_mounts_then_runcmd() {
    let (docs, manifest) = documents(VOLUMES);
    assert!(docs.user_data.starts_with("#cloud-config\n"));
    let doc = yaml(&docs.user_data);
    assert_eq!(doc["hostname"].as_str(), Some("dbhost"));
    assert_eq!(doc["ssh_pwauth"].as_bool(), Some(false));
    assert_eq!(strings(&doc["packages"]), ["postgresql"]);
    let user = &doc["users"][0];
    assert_eq!(
        user["name"].as_str(),
        Some(manifest.services[0].cloud_init.user.as_str())
    );
    assert_eq!(user["sudo"].as_str(), Some("ALL=(ALL) NOPASSWD:ALL"));
    assert_eq!(
        strings(&user["ssh_authorized_keys"]),
        ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTests holos@test"]
    );
    let files = doc["write_files"].as_vec().unwrap();
    let hosts = files
        .iter()
        .find(|f| f["path"].as_str() == Some("/etc/hosts"))
        .unwrap();
    let hosts = hosts["content"].as_str().unwrap();
    for name in ["db-0", "db", "web-0", "web-1", "web"] {
        assert!(
            hosts
                .lines()
                .any(|l| l.split_whitespace().skip(1).any(|n| n == name)),
            "/etc/hosts lacks {name}:\n{hosts}"
        );
    }
    let environment = files
        .iter()
        .find(|f| f["path"].as_str() == Some("/etc/environment"))
        .unwrap();
    assert_eq!(
        environment["content"].as_str(),
        Some("PGDATA=\"/var/lib/postgresql/data\"\n")
    );
    // The host-key repair, growing the read-write volume's file system to
    // its (possibly resized) disk, then the service's own bootcmd.
    let bootcmd = doc["bootcmd"].as_vec().unwrap();
    assert_eq!(bootcmd.len(), 3, "{bootcmd:?}");
    assert_eq!(
        strings(&bootcmd[0]),
        ["sh", "-c", cloud_init::SSH_HOST_KEY_REPAIR]
    );
    let grow = strings(&bootcmd[1]);
    assert_eq!(grow[..2], ["sh", "-c"]);
    assert!(
        grow[2].contains("resize2fs \"$dev\"") && grow[2].contains("virtio-vol-pgdata"),
        "{grow:?}"
    );
    assert_eq!(bootcmd[2].as_str(), Some("echo boot"));

    let runcmd = doc["runcmd"].as_vec().unwrap();
    let texts: Vec<String> = runcmd
        .iter()
        .map(|c| match c.as_str() {
            Some(s) => s.to_string(),
            None => strings(c).join(" "),
        })
        .collect();
    let user_at = texts.iter().position(|t| t == "echo user-runcmd").unwrap();
    let enable_at = texts
        .iter()
        .position(|t| t.contains("systemctl enable holos-service-command.service"))
        .unwrap();
    assert!(
        user_at < enable_at && enable_at == texts.len() - 1,
        "the command is started after the user's runcmd: {texts:#?}"
    );
    assert!(
        !texts.iter().any(|t| t.contains("postgres -D /x")),
        "the command is no first-boot runcmd: {texts:#?}"
    );
    // The mounts come first (the command writes into its volume): two
    // volumes, then the share.
    let mounts = &texts[..3];
    assert!(mounts[0].contains("/dev/disk/by-id/virtio-vol-pgdata"));
    assert!(mounts[0].contains("blkid \"$dev\" >/dev/null 2>&1 || mkfs.ext4"));
    assert!(mounts[0].contains("ext4 defaults,nofail 0 2"));
    assert!(mounts[0].contains("holos: failed to mount volume pgdata at /var/lib/postgresql"));
    assert!(mounts[1].contains("virtio-vol-snapshots"));
    assert!(
        !mounts[1].contains("mkfs"),
        "read-only volumes are never formatted"
    );
    assert!(mounts[1].contains("/mnt/snap\\040shots ext4 ro,nofail 0 2"));
    assert!(mounts[2].contains("holos0 /mnt/share 9p trans=virtio"));
}

/// `command`/`entrypoint` run at every boot: a script that mounts the
/// volumes and shares first, then execs the command, run by a systemd unit
/// (or OpenRC's local.d), enabled and started once by the first boot's
/// runcmd, after the user's runcmd and before post_start.
#[test]
fn the_command_runs_at_every_boot_after_the_mounts() {
    let (docs, _) = documents(
        "name: demo\nservices:\n  db:\n    image: debian\n    entrypoint: [\"/bin/app\"]\n    command: [serve, \"a b\"]\n    working_dir: /srv\n    post_start: [{command: touch /started}]\n    cloud_init: {runcmd: [\"echo first\"]}\n    volumes: [\"data:/data\", \"/srv/share:/mnt/share\"]\nvolumes:\n  data:\n",
    );
    let doc = yaml(&docs.user_data);
    let files = doc["write_files"].as_vec().unwrap();
    let file = |path: &str| -> (String, String) {
        let f = files
            .iter()
            .find(|f| f["path"].as_str() == Some(path))
            .unwrap_or_else(|| panic!("no {path} in {files:?}"));
        (
            f["content"].as_str().unwrap().to_string(),
            f["permissions"].as_str().unwrap().to_string(),
        )
    };
    let (script, mode) = file(cloud_init::SERVICE_COMMAND_SCRIPT);
    assert_eq!(mode, "0755");
    assert!(script.starts_with("#!/bin/sh\n"), "{script}");
    let volume_at = script.find("virtio-vol-data").unwrap();
    let share_at = script.find("holos0 /mnt/share 9p").unwrap();
    let exec_at = script
        .find(r#"exec sh -c 'cd /srv && /bin/app serve '\''a b'\'''"#)
        .unwrap_or_else(|| panic!("{script}"));
    assert!(
        volume_at < share_at && share_at < exec_at,
        "mounts, then the command: {script}"
    );
    let (unit, _) = file(cloud_init::SERVICE_COMMAND_UNIT);
    for line in [
        "ExecStart=/usr/local/lib/holos/service-command",
        "WantedBy=multi-user.target",
        "EnvironmentFile=-/etc/environment",
        "After=local-fs.target remote-fs.target network-online.target cloud-init.service",
    ] {
        assert!(unit.lines().any(|l| l == line), "{line} missing:\n{unit}");
    }
    let runcmd: Vec<String> = doc["runcmd"]
        .as_vec()
        .unwrap()
        .iter()
        .map(|c| match c.as_str() {
            Some(s) => s.to_string(),
            None => strings(c).join(" "),
        })
        .collect();
    assert_eq!(runcmd.len(), 5, "{runcmd:#?}");
    assert!(runcmd[0].contains("virtio-vol-data") && runcmd[1].contains("/mnt/share"));
    assert_eq!(runcmd[2], "echo first");
    assert!(runcmd[3].contains("systemctl enable holos-service-command.service"));
    assert!(runcmd[3].contains("/etc/local.d/holos-service-command.start"));
    assert!(runcmd[4].contains("touch /started"), "post_start last");
    // Without a command: no script, no unit, no start step.
    let (docs, _) = documents("services:\n  a: {image: debian}\n");
    assert!(!docs.user_data.contains("holos-service-command"));
}

/// The mount scripts are real shell: run them with stand-ins for the
/// system commands and check the flow (mkfs only without a filesystem,
/// the failure message and status).
#[test]
fn volume_mount_script_formats_only_blank_disks_and_reports_failures() {
    let (docs, _) = documents(VOLUMES);
    let doc = yaml(&docs.user_data);
    let runcmd = doc["runcmd"].as_vec().unwrap();
    let script_of = |needle: &str| -> String {
        runcmd
            .iter()
            .filter_map(|c| c.as_vec())
            .map(|argv| argv[2].as_str().unwrap().to_string())
            .find(|s| s.contains(needle))
            .unwrap()
    };
    let rw = script_of("vol-pgdata");
    let scratch = tempfile::tempdir().unwrap();
    let bin = scratch.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let log = scratch.path().join("calls");
    for (name, body) in [
        ("blkid", "echo blkid >> \"$LOG\"; exit \"$BLKID_STATUS\""),
        ("mkfs.ext4", "echo mkfs \"$@\" >> \"$LOG\""),
        ("mkdir", "echo mkdir \"$@\" >> \"$LOG\""),
        ("mountpoint", "exit 1"),
        (
            "mount",
            "echo mount \"$@\" >> \"$LOG\"; exit \"$MOUNT_STATUS\"",
        ),
    ] {
        let path = bin.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::os::unix::fs::PermissionsExt::set_mode(
            &mut std::fs::metadata(&path).unwrap().permissions(),
            0o755,
        );
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
    }
    // The script checks `[ -b "$dev" ]` and edits /etc/fstab: point both at
    // scratch files by rewriting the absolute paths.
    let fstab = scratch.path().join("fstab");
    let device = scratch.path().join("disk");
    let adapt = |script: &str| {
        script
            .replace("/etc/fstab", fstab.to_str().unwrap())
            .replace("[ ! -b \"$dev\" ]", "[ ! -e \"$dev\" ]")
            .replace(
                "dev=/dev/disk/by-id/virtio-vol-pgdata",
                &format!("dev={}", device.display()),
            )
            .replace(">/dev/console", ">/dev/null")
    };
    std::fs::write(&device, "").unwrap();
    let run = |blkid: &str, mount: &str| {
        let _ = std::fs::remove_file(&log);
        let output = std::process::Command::new("sh")
            .arg("-c")
            .arg(adapt(&rw))
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .env("LOG", &log)
            .env("BLKID_STATUS", blkid)
            .env("MOUNT_STATUS", mount)
            .output()
            .unwrap();
        (output, std::fs::read_to_string(&log).unwrap_or_default())
    };
    let (output, calls) = run("2", "0");
    assert!(output.status.success(), "{output:?}");
    assert!(
        calls.contains("mkfs -q"),
        "blank disk gets formatted: {calls}"
    );
    let (output, calls) = run("0", "0");
    assert!(output.status.success());
    assert!(
        !calls.contains("mkfs"),
        "a disk with a filesystem is kept: {calls}"
    );
    assert_eq!(
        std::fs::read_to_string(&fstab).unwrap().lines().count(),
        1,
        "the fstab line is added once"
    );
    let (output, _) = run("0", "32");
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("holos: failed to mount volume pgdata at /var/lib/postgresql"),
        "{stderr}"
    );
}

#[test]
fn network_config_matches_quoted_macs_and_sets_the_static_ip() {
    let (docs, manifest) = documents(VOLUMES);
    let instance = &manifest.services[0].instances[0];
    // YAML 1.1 reads an unquoted all-digit MAC as a number.
    assert!(
        docs.network_config
            .contains(&format!("macaddress: \"{}\"", instance.mac_internal))
    );
    let doc = yaml(&docs.network_config);
    assert_eq!(doc["version"].as_integer(), Some(2));
    let internal = &doc["ethernets"]["internal0"];
    assert_eq!(
        internal["match"]["macaddress"].as_str(),
        Some(instance.mac_internal.as_str())
    );
    assert_eq!(
        strings(&internal["addresses"]),
        [format!("{}/24", instance.ip)]
    );
    let user = &doc["ethernets"]["user0"];
    assert_eq!(
        user["match"]["macaddress"].as_str(),
        Some(instance.mac_user.as_str())
    );
    assert_eq!(user["dhcp4"].as_bool(), Some(true));

    let meta = yaml(&docs.meta_data);
    assert_eq!(meta["instance-id"].as_str(), Some("holos-demo-db-0"));
    assert_eq!(meta["local-hostname"].as_str(), Some("dbhost"));
}

#[test]
fn seed_iso_reads_back_with_label_and_files() {
    use hadris_iso::read::IsoImage;
    let (docs, _) = documents(VOLUMES);
    let image = seed_iso::build(&docs).unwrap();
    let iso = IsoImage::open(std::io::Cursor::new(image.clone())).unwrap();
    let pvd = iso.read_pvd().unwrap();
    assert_eq!(pvd.volume_identifier.to_str().trim_end(), "cidata");
    assert!(iso.supports_rrip(), "Rock Ridge expected");
    for (name, text) in [
        ("meta-data", &docs.meta_data),
        ("user-data", &docs.user_data),
        ("network-config", &docs.network_config),
    ] {
        let entry = iso
            .find_path(name)
            .unwrap()
            .unwrap_or_else(|| panic!("{name} missing"));
        assert_eq!(
            String::from_utf8(iso.read_file(&entry).unwrap()).unwrap(),
            *text,
            "{name}"
        );
    }
    // Rock Ridge gives the primary tree the real names.
    let mut rock_ridge_names = Vec::new();
    for root in iso.root_dirs().iter() {
        for entry in root
            .iter(&iso)
            .entries()
            .flatten()
            .filter(|e| !e.is_special())
        {
            if let Some(name) = entry.rrip.as_ref().and_then(|r| r.alternate_name.clone()) {
                rock_ridge_names.push(name);
            }
        }
    }
    rock_ridge_names.sort();
    assert_eq!(
        rock_ridge_names,
        ["meta-data", "network-config", "user-data"]
    );
    // A Joliet supplementary volume descriptor (type 2 with a UCS-2 escape
    // sequence) follows the primary one.
    let joliet = image
        .chunks(2048)
        .skip(16)
        .take_while(|s| s[0] != 255)
        .any(|s| {
            s[0] == 2
                && &s[1..6] == b"CD001"
                && s[88..90] == *b"%/"
                && matches!(s[90], b'@' | b'C' | b'E')
        });
    assert!(joliet, "no Joliet descriptor");
    // cloud-init finds the seed with blkid: the label must read `cidata`.
    if std::path::Path::new("/usr/sbin/blkid").exists()
        || std::path::Path::new("/sbin/blkid").exists()
    {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seed.iso");
        std::fs::write(&path, &image).unwrap();
        let out = std::process::Command::new("blkid")
            .args(["-p", "-o", "export"])
            .arg(&path)
            .env("PATH", "/usr/sbin:/sbin:/usr/bin:/bin")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.lines().any(|l| l == "LABEL=cidata"), "{text}");
        assert!(text.lines().any(|l| l == "TYPE=iso9660"), "{text}");
    }
}

#[test]
fn extra_authorized_keys_sit_beside_the_project_key() {
    let (docs, _) = documents(
        "services:\n  web:\n    image: debian:12\n    cloud_init:\n      ssh_authorized_keys:\n        - ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOperatorKey me@laptop\n        - \"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTests holos@test\"\n        - ecdsa-sha2-nistp256 AAAAE2VjZHNh other\n",
    );
    let doc = yaml(&docs.user_data);
    assert_eq!(
        strings(&doc["users"][0]["ssh_authorized_keys"]),
        [
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTests holos@test",
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOperatorKey me@laptop",
            "ecdsa-sha2-nistp256 AAAAE2VjZHNh other",
        ]
    );
}

#[test]
fn a_disk_size_has_cloud_init_grow_the_root_file_system() {
    let (docs, _) =
        documents("services:\n  web:\n    image: debian:12\n    vm: {disk_size: 20g}\n");
    let doc = yaml(&docs.user_data);
    assert_eq!(doc["growpart"]["mode"].as_str(), Some("auto"));
    assert_eq!(strings(&doc["growpart"]["devices"]), ["/"]);
    assert_eq!(doc["resize_rootfs"].as_bool(), Some(true));
    // Without one, the image's own cloud-init settings stay in charge.
    let (docs, _) = documents("services:\n  web:\n    image: debian:12\n");
    assert!(
        !docs.user_data.contains("growpart") && !docs.user_data.contains("resize_rootfs"),
        "{}",
        docs.user_data
    );
}

/// Configs and secrets are written at every boot by `bootcmd` scripts
/// (after the host-key repair, before the service's own bootcmd), with
/// their owner and mode; the secret is not in the user-data in clear. The
/// script is real shell: run here, it writes the file.
#[test]
fn configs_and_secrets_are_written_by_bootcmd_with_owner_and_mode() {
    let out = tempfile::tempdir().unwrap();
    let uid = nix::unistd::getuid().as_raw();
    let gid = nix::unistd::getgid().as_raw();
    let dir = out.path().display();
    let (docs, _) = documents(&format!(
        "services:\n  a:\n    image: debian\n    cloud_init: {{bootcmd: [\"echo mine\"]}}\n    configs: [{{source: c, target: {dir}/etc/app.conf}}]\n    secrets: [{{source: s, target: {dir}/run/secrets/token, uid: \"{uid}\", gid: \"{gid}\"}}]\nconfigs:\n  c: {{content: \"port=80\\n\"}}\nsecrets:\n  s: {{content: \"t0p-s3cr3t 'quoted'\"}}\n"
    ));
    assert!(!docs.user_data.contains("t0p-s3cr3t"), "{}", docs.user_data);
    let doc = yaml(&docs.user_data);
    let bootcmd = doc["bootcmd"].as_vec().unwrap();
    assert_eq!(bootcmd.len(), 4, "{bootcmd:?}");
    assert_eq!(bootcmd[3].as_str(), Some("echo mine"));
    for entry in &bootcmd[1..3] {
        let argv = strings(entry);
        assert_eq!(argv[..2], ["sh", "-c"]);
        let status = std::process::Command::new("sh")
            .args(["-c", &argv[2]])
            .status()
            .unwrap();
        assert!(status.success(), "{}", argv[2]);
    }
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let secret = out.path().join("run/secrets/token");
    assert_eq!(
        std::fs::read_to_string(&secret).unwrap(),
        "t0p-s3cr3t 'quoted'"
    );
    let meta = std::fs::metadata(&secret).unwrap();
    assert_eq!(meta.permissions().mode() & 0o7777, 0o400, "secrets: 0400");
    assert_eq!((meta.uid(), meta.gid()), (uid, gid));
    let config = out.path().join("etc/app.conf");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), "port=80\n");
    let mode = std::fs::metadata(&config).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o444, "configs: 0444");
    assert!(!out.path().join("run/secrets/token.holos-new").exists());
}

/// With named networks: one static NIC per network (its own prefix), a
/// DHCP NIC on a host bridge without ipam, the DNS search domains on the
/// user NIC, and `/etc/hosts` with the names of the networks the instance
/// is on only.
#[test]
fn network_config_and_hosts_follow_the_services_networks() {
    let (docs, manifest) = documents(
        "services:\n  app:\n    image: debian\n    dns_search: [corp.example]\n    networks:\n      back: {aliases: [api]}\n      lan: {}\n  web:\n    image: debian\n    networks: [front]\nnetworks:\n  front: {}\n  back: {ipam: {config: [{subnet: 10.40.0.0/16}]}}\n  lan: {driver_opts: {com.docker.network.bridge.name: br0}}\n",
    );
    let app = &manifest.services[0].instances[0];
    let doc = yaml(&docs.network_config);
    let ethernets = &doc["ethernets"];
    assert_eq!(
        strings(&ethernets["internal0"]["addresses"]),
        ["10.40.0.2/16"]
    );
    assert_eq!(
        ethernets["internal0"]["match"]["macaddress"].as_str(),
        Some(app.networks[0].mac.as_str())
    );
    assert_eq!(ethernets["internal1"]["dhcp4"].as_bool(), Some(true));
    assert_eq!(
        strings(&ethernets["user0"]["nameservers"]["search"]),
        ["corp.example"]
    );
    let user_data = yaml(&docs.user_data);
    let hosts = user_data["write_files"]
        .as_vec()
        .unwrap()
        .iter()
        .find(|f| f["path"].as_str() == Some("/etc/hosts"))
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(hosts.contains("10.40.0.2 app-0 app api\n"), "{hosts}");
    assert!(
        !hosts.contains("web"),
        "web shares no network with app: {hosts}"
    );
}
