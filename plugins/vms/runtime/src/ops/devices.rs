//! `holos devices`: the host's PCI devices as sysfs describes them, and
//! whether each can be passed to a VM (`devices:` with VFIO).
//!
//! A device can be passed through when it is bound to `vfio-pci` and its
//! IOMMU group is viable: every other device of the group is bound to
//! `vfio-pci` or `pci-stub`, has no driver, or is a PCI bridge (the rule
//! the kernel's VFIO applies). sysfs is read below the system root (`/`,
//! or `HOLO_ROOT_DIR` in test mode), so tests build a fake tree.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::Error;

/// The driver VFIO passthrough needs.
pub const VFIO_DRIVER: &str = "vfio-pci";
/// Drivers and absences that keep a group viable.
const GROUP_SAFE_DRIVERS: [&str; 3] = [VFIO_DRIVER, "pci-stub", "pcieport"];
/// PCI class of a PCI-to-PCI bridge (class code, subclass).
const BRIDGE_CLASS: u32 = 0x0604;

/// One PCI function.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PciDevice {
    /// `0000:01:00.0`.
    pub address: String,
    /// `10de` and the like, without `0x`.
    pub vendor: String,
    pub device: String,
    /// The 24-bit class code, as 6 hex digits.
    pub class: String,
    /// What the class means, in a word or two.
    pub kind: &'static str,
    pub gpu: bool,
    pub driver: Option<String>,
    pub iommu_group: Option<u32>,
    /// The other functions in the group.
    pub group_members: Vec<String>,
    /// Whether the other functions of the group let it go to VFIO, so that
    /// binding this one is enough (false without IOMMU).
    pub group_viable: bool,
    pub vfio: bool,
    /// What to do before this device can be passed through; `None` when it can.
    pub advice: Option<String>,
}

/// The PCI devices below `sysfs` (the directory that holds `bus/` and
/// `kernel/`), sorted by address.
pub fn list(sysfs: &Path) -> Result<Vec<PciDevice>, Error> {
    let devices_dir = sysfs.join("bus/pci/devices");
    let entries = std::fs::read_dir(&devices_dir).map_err(|e| {
        Error::Host(format!(
            "cannot list PCI devices in {}: {e}; holos devices needs sysfs (Linux)",
            devices_dir.display()
        ))
    })?;
    let mut raw: Vec<Raw> = entries
        .flatten()
        .filter_map(|entry| read_raw(sysfs, &entry.path()))
        .collect();
    raw.sort_by(|a, b| a.address.cmp(&b.address));
    Ok(raw.iter().map(|r| describe(r, &raw)).collect())
}

/// What sysfs says of one function.
#[derive(Clone, Debug)]
struct Raw {
    address: String,
    vendor: String,
    device: String,
    class: u32,
    driver: Option<String>,
    iommu_group: Option<u32>,
}

fn read_raw(sysfs: &Path, dir: &Path) -> Option<Raw> {
    let address = dir.file_name()?.to_str()?.to_string();
    let hex = |name: &str| -> Option<String> {
        let text = std::fs::read_to_string(dir.join(name)).ok()?;
        Some(text.trim().trim_start_matches("0x").to_ascii_lowercase())
    };
    let link_name = |name: &str| -> Option<String> {
        let target = std::fs::read_link(dir.join(name)).ok()?;
        Some(target.file_name()?.to_str()?.to_string())
    };
    let class = u32::from_str_radix(&hex("class")?, 16).ok()?;
    let iommu_group = link_name("iommu_group")
        .and_then(|g| g.parse().ok())
        // A tree without the link may still list the group by directory.
        .or_else(|| group_by_directory(sysfs, &address));
    Some(Raw {
        vendor: hex("vendor")?,
        device: hex("device")?,
        class,
        driver: link_name("driver"),
        iommu_group,
        address,
    })
}

fn group_by_directory(sysfs: &Path, address: &str) -> Option<u32> {
    std::fs::read_dir(sysfs.join("kernel/iommu_groups"))
        .ok()?
        .flatten()
        .find(|group| group.path().join("devices").join(address).exists())
        .and_then(|group| group.file_name().to_str()?.parse().ok())
}

fn is_bridge(raw: &Raw) -> bool {
    raw.class >> 8 == BRIDGE_CLASS
}

fn keeps_group_viable(raw: &Raw) -> bool {
    is_bridge(raw)
        || raw
            .driver
            .as_deref()
            .is_none_or(|d| GROUP_SAFE_DRIVERS.contains(&d))
}

fn describe(raw: &Raw, all: &[Raw]) -> PciDevice {
    let members: Vec<&Raw> = match raw.iommu_group {
        Some(group) => all
            .iter()
            .filter(|other| other.iommu_group == Some(group) && other.address != raw.address)
            .collect(),
        None => Vec::new(),
    };
    let blockers: Vec<&&Raw> = members.iter().filter(|m| !keeps_group_viable(m)).collect();
    let vfio = raw.driver.as_deref() == Some(VFIO_DRIVER);
    let group_viable = raw.iommu_group.is_some() && blockers.is_empty();
    let advice = advice(raw, vfio, &blockers);
    PciDevice {
        address: raw.address.clone(),
        vendor: raw.vendor.clone(),
        device: raw.device.clone(),
        class: format!("{:06x}", raw.class),
        kind: kind(raw.class),
        gpu: raw.class >> 16 == 0x03,
        driver: raw.driver.clone(),
        iommu_group: raw.iommu_group,
        group_members: members.iter().map(|m| m.address.clone()).collect(),
        group_viable,
        vfio,
        advice,
    }
}

/// The steps that make a device passable, in the order they are needed.
fn advice(raw: &Raw, vfio: bool, blockers: &[&&Raw]) -> Option<String> {
    let Some(group) = raw.iommu_group else {
        return Some(
            "no IOMMU group: enable VT-d (Intel) or AMD-Vi in the firmware setup and boot Linux with intel_iommu=on (or amd_iommu=on) iommu=pt".into(),
        );
    };
    let mut steps = Vec::new();
    if !vfio {
        let address = &raw.address;
        steps.push(format!(
            "bind it to {VFIO_DRIVER}: modprobe vfio-pci; echo vfio-pci > /sys/bus/pci/devices/{address}/driver_override; {}echo {address} > /sys/bus/pci/drivers_probe (for every boot: options vfio-pci ids={}:{} in /etc/modprobe.d/vfio.conf, then update-initramfs -u)",
            if raw.driver.is_some() {
                format!("echo {address} > /sys/bus/pci/devices/{address}/driver/unbind; ")
            } else {
                String::new()
            },
            raw.vendor,
            raw.device
        ));
    }
    if !blockers.is_empty() {
        let others: Vec<String> = blockers
            .iter()
            .map(|b| {
                format!(
                    "{} ({})",
                    b.address,
                    b.driver.as_deref().unwrap_or("no driver")
                )
            })
            .collect();
        steps.push(format!(
            "IOMMU group {group} is not viable: bind {} to {VFIO_DRIVER} as well, or move the card to a slot with a group of its own",
            others.join(", ")
        ));
    }
    (!steps.is_empty()).then(|| steps.join("; then "))
}

/// The base class (and a few subclasses) in words.
fn kind(class: u32) -> &'static str {
    match class >> 8 {
        0x0300 => "vga",
        0x0302 => "3d controller",
        0x0403 => "audio",
        0x0108 => "nvme",
        0x0106 => "sata",
        0x0c03 => "usb",
        0x0604 => "pci bridge",
        0x0600 => "host bridge",
        0x0601 => "isa bridge",
        _ => match class >> 16 {
            0x01 => "storage",
            0x02 => "network",
            0x03 => "display",
            0x04 => "multimedia",
            0x05 => "memory",
            0x06 => "bridge",
            0x07 => "communication",
            0x08 => "system",
            0x0c => "serial bus",
            _ => "other",
        },
    }
}

/// The devices `--gpu` keeps: display controllers, and the other
/// functions of their groups (the HDMI audio of a card goes with it).
pub fn gpus(devices: &[PciDevice]) -> Vec<PciDevice> {
    let groups: Vec<u32> = devices
        .iter()
        .filter(|d| d.gpu)
        .filter_map(|d| d.iommu_group)
        .collect();
    devices
        .iter()
        .filter(|d| d.gpu || d.iommu_group.is_some_and(|g| groups.contains(&g)))
        .cloned()
        .collect()
}

/// The table of `holos devices`; with `advise`, a line per device that
/// cannot be passed through yet, saying what to do.
pub fn table(devices: &[PciDevice], advise: bool) -> String {
    let row = |cells: [&str; 7]| {
        format!(
            "{:<13} {:<14} {:<10} {:<14} {:<6} {:<7} {}\n",
            cells[0], cells[1], cells[2], cells[3], cells[4], cells[5], cells[6]
        )
    };
    let mut out = row(["ADDRESS", "KIND", "ID", "DRIVER", "GROUP", "VIABLE", "VFIO"]);
    for d in devices {
        out.push_str(&row([
            &d.address,
            d.kind,
            &format!("{}:{}", d.vendor, d.device),
            d.driver.as_deref().unwrap_or("-"),
            &d.iommu_group.map_or("-".into(), |g| g.to_string()),
            yes_no(d.group_viable),
            yes_no(d.vfio),
        ]));
    }
    if advise {
        for d in devices {
            if let Some(advice) = &d.advice {
                out.push_str(&format!("\n{}: {advice}\n", d.address));
            }
        }
    }
    out
}

fn yes_no(value: bool) -> &'static str {
    if value { "yes" } else { "no" }
}

/// The sysfs directory below a system root.
pub fn sysfs(system_root: &Path) -> PathBuf {
    system_root.join("sys")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(address: &str, class: u32, driver: Option<&str>, group: Option<u32>) -> Raw {
        Raw {
            address: address.into(),
            vendor: "10de".into(),
            device: "1b80".into(),
            class,
            driver: driver.map(Into::into),
            iommu_group: group,
        }
    }

    #[test]
    fn a_vfio_device_alone_in_its_group_needs_nothing() {
        let all = [raw("0000:01:00.0", 0x030000, Some("vfio-pci"), Some(1))];
        let d = describe(&all[0], &all);
        assert!(d.vfio && d.group_viable && d.gpu);
        assert_eq!(d.advice, None);
    }

    #[test]
    fn bridges_unbound_and_stub_functions_keep_a_group_viable() {
        let all = [
            raw("0000:01:00.0", 0x030000, Some("vfio-pci"), Some(1)),
            raw("0000:00:01.0", 0x060400, Some("pcieport"), Some(1)),
            raw("0000:01:00.1", 0x040300, None, Some(1)),
            raw("0000:01:00.2", 0x0c0330, Some("pci-stub"), Some(1)),
        ];
        assert!(describe(&all[0], &all).group_viable);
    }

    #[test]
    fn a_host_driver_in_the_group_makes_it_not_viable_and_says_which() {
        let all = [
            raw("0000:01:00.0", 0x030000, Some("vfio-pci"), Some(1)),
            raw("0000:01:00.1", 0x040300, Some("snd_hda_intel"), Some(1)),
        ];
        let d = describe(&all[0], &all);
        assert!(!d.group_viable);
        let advice = d.advice.unwrap();
        assert!(advice.contains("0000:01:00.1 (snd_hda_intel)"), "{advice}");
    }

    #[test]
    fn a_device_on_a_host_driver_is_told_how_to_bind_it() {
        let all = [raw("0000:01:00.0", 0x030000, Some("nouveau"), Some(1))];
        let advice = describe(&all[0], &all).advice.unwrap();
        assert!(advice.contains("/sys/bus/pci/devices/0000:01:00.0/driver/unbind"));
        assert!(advice.contains("ids=10de:1b80"));
    }

    #[test]
    fn no_iommu_group_means_no_passthrough() {
        let all = [raw("0000:01:00.0", 0x030000, Some("vfio-pci"), None)];
        let d = describe(&all[0], &all);
        assert!(!d.group_viable);
        assert!(d.advice.unwrap().contains("intel_iommu=on"));
    }
}
