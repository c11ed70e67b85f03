//! `holos devices` against a fake sysfs tree below `HOLO_ROOT_DIR`, laid
//! out as Linux lays it out: functions under `devices/`, linked from
//! `bus/pci/devices/`, with `driver` and `iommu_group` links.

use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

/// One function of the fake tree: address, vendor, device, class, driver, group.
type Function = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    Option<&'static str>,
    u32,
);

const HOST: [Function; 6] = [
    (
        "0000:00:01.0",
        "0x8086",
        "0x1901",
        "0x060400",
        Some("pcieport"),
        1,
    ),
    (
        "0000:01:00.0",
        "0x10de",
        "0x1b80",
        "0x030000",
        Some("vfio-pci"),
        1,
    ),
    (
        "0000:01:00.1",
        "0x10de",
        "0x10f0",
        "0x040300",
        Some("snd_hda_intel"),
        1,
    ),
    (
        "0000:02:00.0",
        "0x1002",
        "0x67df",
        "0x030000",
        Some("amdgpu"),
        2,
    ),
    (
        "0000:03:00.0",
        "0x144d",
        "0xa808",
        "0x010802",
        Some("nvme"),
        3,
    ),
    (
        "0000:04:00.0",
        "0x8086",
        "0x3e92",
        "0x030000",
        Some("vfio-pci"),
        4,
    ),
];

fn fake_sysfs(root: &Path, functions: &[Function]) {
    let sys = root.join("sys");
    for dir in ["bus/pci/devices", "bus/pci/drivers", "devices/pci0000:00"] {
        std::fs::create_dir_all(sys.join(dir)).unwrap();
    }
    for (address, vendor, device, class, driver, group) in functions {
        let dir = sys.join("devices/pci0000:00").join(address);
        std::fs::create_dir_all(&dir).unwrap();
        for (name, value) in [("vendor", vendor), ("device", device), ("class", class)] {
            std::fs::write(dir.join(name), format!("{value}\n")).unwrap();
        }
        if let Some(driver) = driver {
            std::fs::create_dir_all(sys.join("bus/pci/drivers").join(driver)).unwrap();
            symlink(
                format!("../../../bus/pci/drivers/{driver}"),
                dir.join("driver"),
            )
            .unwrap();
        }
        let group_dir = sys.join(format!("kernel/iommu_groups/{group}/devices"));
        std::fs::create_dir_all(&group_dir).unwrap();
        symlink(
            format!("../../../../devices/pci0000:00/{address}"),
            group_dir.join(address),
        )
        .unwrap();
        symlink(
            format!("../../../kernel/iommu_groups/{group}"),
            dir.join("iommu_group"),
        )
        .unwrap();
        symlink(
            format!("../../../devices/pci0000:00/{address}"),
            sys.join("bus/pci/devices").join(address),
        )
        .unwrap();
    }
}

fn devices(root: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_holos"))
        .arg("devices")
        .args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOLO_ROOT_DIR", root)
        .output()
        .unwrap()
}

fn json(out: &Output) -> Vec<Value> {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice::<Value>(&out.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn by_address<'a>(list: &'a [Value], address: &str) -> &'a Value {
    list.iter()
        .find(|d| d["address"] == address)
        .unwrap_or_else(|| panic!("{address} not in {list:?}"))
}

#[test]
fn devices_lists_vendor_driver_group_viability_and_vfio_from_sysfs() {
    let root = tempfile::tempdir().unwrap();
    fake_sysfs(root.path(), &HOST);
    let list = json(&devices(root.path(), &["--json"]));
    assert_eq!(list.len(), 6);
    let nvidia = by_address(&list, "0000:01:00.0");
    assert_eq!(nvidia["vendor"], "10de");
    assert_eq!(nvidia["device"], "1b80");
    assert_eq!(nvidia["driver"], "vfio-pci");
    assert_eq!(nvidia["iommu_group"], 1);
    assert_eq!(nvidia["vfio"], true);
    // Its HDMI audio is still on the host's sound driver.
    assert_eq!(nvidia["group_viable"], false);
    let advice = nvidia["advice"].as_str().unwrap();
    assert!(advice.contains("0000:01:00.1 (snd_hda_intel)"), "{advice}");
    let amd = by_address(&list, "0000:02:00.0");
    assert_eq!(amd["vfio"], false);
    // Alone in its group: binding the card itself is enough.
    assert_eq!(amd["group_viable"], true);
    assert!(
        amd["advice"]
            .as_str()
            .unwrap()
            .contains("echo 0000:02:00.0 > /sys/bus/pci/devices/0000:02:00.0/driver/unbind"),
        "{amd}"
    );
    let intel = by_address(&list, "0000:04:00.0");
    assert_eq!(
        (&intel["vfio"], &intel["group_viable"]),
        (&Value::Bool(true), &Value::Bool(true))
    );
    assert_eq!(intel["advice"], Value::Null);
    assert_eq!(by_address(&list, "0000:03:00.0")["kind"], "nvme");
}

#[test]
fn devices_gpu_keeps_display_controllers_and_their_groups_and_says_what_to_do() {
    let root = tempfile::tempdir().unwrap();
    fake_sysfs(root.path(), &HOST);
    let list = json(&devices(root.path(), &["--gpu", "--json"]));
    let addresses: Vec<&str> = list
        .iter()
        .map(|d| d["address"].as_str().unwrap())
        .collect();
    assert_eq!(
        addresses,
        [
            "0000:00:01.0",
            "0000:01:00.0",
            "0000:01:00.1",
            "0000:02:00.0",
            "0000:04:00.0"
        ]
    );
    let out = devices(root.path(), &["--gpu"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success());
    let intel = text
        .lines()
        .find(|l| l.starts_with("0000:04:00.0"))
        .unwrap();
    assert!(
        intel.contains("8086:3e92") && intel.ends_with("yes     yes"),
        "{text}"
    );
    assert!(
        text.contains("\n0000:02:00.0: bind it to vfio-pci"),
        "{text}"
    );
    assert!(!text.contains("\n0000:04:00.0:"), "{text}");
}

#[test]
fn devices_without_sysfs_says_where_it_looked() {
    let root = tempfile::tempdir().unwrap();
    let out = devices(root.path(), &[]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot list PCI devices in") && stderr.contains("sys/bus/pci/devices"),
        "{stderr}"
    );
}
