//! Machine facts beyond the basics, as facter names them where it has a
//! name: `virtual` and `is_virtual`, `disks`, `mountpoints`,
//! `default_route`, `primary_ip`, `uptime_seconds` and `processor_model`.
//! Each is read natively from `/proc` and `/sys`; every parser takes the
//! file's text, so the tests feed it recorded text.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::Path;

use toml::{Table, Value};

/// Adds every fact this machine can tell to `facts`; a fact whose source
/// is missing (no default route, no DMI) is left out.
pub(super) fn gather(facts: &mut Table, interfaces: &[Value]) {
    let virt = detect_virtual(&Host);
    facts.insert("is_virtual".into(), Value::Boolean(virt != "physical"));
    facts.insert("virtual".into(), Value::String(virt));
    facts.insert("disks".into(), Value::Table(disks(Path::new("/sys/block"))));
    if let Ok(text) = std::fs::read_to_string("/proc/self/mountinfo") {
        facts.insert(
            "mountpoints".into(),
            Value::Table(mountpoints(&text, statvfs_sizes)),
        );
    }
    let route = std::fs::read_to_string("/proc/net/route")
        .ok()
        .and_then(|text| default_route(&text));
    if let Some(ip) = primary_ip(route.as_ref().map(|r| r.interface.as_str()), interfaces) {
        facts.insert("primary_ip".into(), Value::String(ip));
    }
    if let Some(route) = route {
        let mut table = Table::new();
        table.insert("interface".into(), Value::String(route.interface));
        table.insert("gateway".into(), Value::String(route.gateway.to_string()));
        facts.insert("default_route".into(), Value::Table(table));
    }
    if let Some(seconds) = std::fs::read_to_string("/proc/uptime")
        .ok()
        .and_then(|text| uptime_seconds(&text))
    {
        facts.insert("uptime_seconds".into(), Value::Integer(seconds));
    }
    if let Some(model) = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| processor_model(&text))
    {
        facts.insert("processor_model".into(), Value::String(model));
    }
}

/// The files virtualization is detected from, so that tests can stand in.
pub(super) trait Probe {
    /// The trimmed content of a file, if it can be read.
    fn read(&self, path: &str) -> Option<String>;
    fn exists(&self, path: &str) -> bool;
}

struct Host;

impl Probe for Host {
    fn read(&self, path: &str) -> Option<String> {
        std::fs::read_to_string(path)
            .ok()
            .map(|s| s.trim().to_string())
    }
    fn exists(&self, path: &str) -> bool {
        Path::new(path).exists()
    }
}

/// facter's `virtual`: a container runtime first (`docker`, `podman`,
/// `lxc`, `systemd_nspawn`), then the hypervisor the DMI tables name
/// (`kvm`, `vmware`, `virtualbox`, `xenhvm`, `hyperv`, `gce`), then
/// `virtual` for an unnamed hypervisor (the CPU's hypervisor flag), else
/// `physical`.
pub(super) fn detect_virtual(probe: &dyn Probe) -> String {
    if probe.exists("/.dockerenv") {
        return "docker".into();
    }
    if probe.exists("/run/.containerenv") {
        return "podman".into();
    }
    if let Some(container) = probe.read("/run/systemd/container") {
        return match container.as_str() {
            "systemd-nspawn" => "systemd_nspawn".into(),
            "" => "container".into(),
            other => other.replace('-', "_"),
        };
    }
    if let Some(cgroup) = probe.read("/proc/1/cgroup") {
        if cgroup.contains("/docker/") || cgroup.contains("/docker-") {
            return "docker".into();
        }
        if cgroup.contains("/lxc/") || cgroup.contains("/lxc.payload") {
            return "lxc".into();
        }
    }
    let vendor = probe
        .read("/sys/class/dmi/id/sys_vendor")
        .unwrap_or_default();
    let product = probe
        .read("/sys/class/dmi/id/product_name")
        .unwrap_or_default();
    let both = format!("{vendor} {product}");
    let named = [
        ("QEMU", "kvm"),
        ("KVM", "kvm"),
        ("Amazon EC2", "kvm"),
        ("VMware", "vmware"),
        ("innotek", "virtualbox"),
        ("VirtualBox", "virtualbox"),
        ("Xen", "xenhvm"),
        ("Google", "gce"),
    ];
    if let Some((_, name)) = named.iter().find(|(needle, _)| both.contains(needle)) {
        return (*name).into();
    }
    if vendor.contains("Microsoft") && product.contains("Virtual Machine") {
        return "hyperv".into();
    }
    let hypervisor_flag = probe.read("/proc/cpuinfo").is_some_and(|cpuinfo| {
        cpuinfo
            .lines()
            .filter(|line| line.starts_with("flags"))
            .any(|line| line.split_whitespace().any(|flag| flag == "hypervisor"))
    });
    if hypervisor_flag {
        "virtual".into()
    } else {
        "physical".into()
    }
}

/// `[disks.NAME]` with `size_bytes` (and `model`, `vendor` where the
/// kernel knows them) for each block device but loop, RAM and zram
/// devices.
pub(super) fn disks(sys_block: &Path) -> Table {
    let mut disks = Table::new();
    let Ok(entries) = std::fs::read_dir(sys_block) else {
        return disks;
    };
    let mut names: Vec<String> = entries
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| !["loop", "ram", "zram"].iter().any(|p| name.starts_with(p)))
        .collect();
    names.sort();
    for name in names {
        let dir = sys_block.join(&name);
        let read = |rel: &str| {
            std::fs::read_to_string(dir.join(rel))
                .ok()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
        };
        let Some(sectors) = read("size").and_then(|s| s.parse::<i64>().ok()) else {
            continue;
        };
        let mut disk = Table::new();
        // The kernel counts 512-byte sectors whatever the device's own size.
        disk.insert(
            "size_bytes".into(),
            Value::Integer(sectors.saturating_mul(512)),
        );
        for (key, rel) in [("model", "device/model"), ("vendor", "device/vendor")] {
            if let Some(value) = read(rel) {
                disk.insert(key.into(), Value::String(value));
            }
        }
        disks.insert(name, Value::Table(disk));
    }
    disks
}

/// File systems that hold no data of their own.
const PSEUDO_FILESYSTEMS: &[&str] = &[
    "autofs",
    "binfmt_misc",
    "bpf",
    "cgroup",
    "cgroup2",
    "configfs",
    "debugfs",
    "devpts",
    "efivarfs",
    "fusectl",
    "hugetlbfs",
    "mqueue",
    "nsfs",
    "proc",
    "pstore",
    "rpc_pipefs",
    "securityfs",
    "selinuxfs",
    "sysfs",
    "tracefs",
];

/// Total and available bytes of the file system mounted at a path.
type Sizes = fn(&str) -> Option<(u64, u64)>;

fn statvfs_sizes(path: &str) -> Option<(u64, u64)> {
    let stat = nix::sys::statvfs::statvfs(path).ok()?;
    let fragment = stat.fragment_size();
    Some((
        stat.blocks().saturating_mul(fragment),
        stat.blocks_available().saturating_mul(fragment),
    ))
}

/// `[mountpoints."PATH"]` with `device`, `filesystem`, `options`,
/// `size_bytes`, `available_bytes` and `used_bytes`, from
/// `/proc/self/mountinfo`, pseudo file systems and empty ones left out.
pub(super) fn mountpoints(mountinfo: &str, sizes: Sizes) -> Table {
    let mut mounts = Table::new();
    for line in mountinfo.lines() {
        // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
        let Some((before, after)) = line.split_once(" - ") else {
            continue;
        };
        let fields: Vec<&str> = before.split(' ').collect();
        let rest: Vec<&str> = after.split(' ').collect();
        let (Some(point), Some(options), Some(fstype), Some(source)) =
            (fields.get(4), fields.get(5), rest.first(), rest.get(1))
        else {
            continue;
        };
        if PSEUDO_FILESYSTEMS.contains(fstype) {
            continue;
        }
        let point = unescape_mount(point);
        let Some((size, available)) = sizes(&point) else {
            continue;
        };
        if size == 0 {
            continue;
        }
        let as_int = |n: u64| Value::Integer(i64::try_from(n).unwrap_or(i64::MAX));
        let mut mount = Table::new();
        mount.insert("device".into(), Value::String(unescape_mount(source)));
        mount.insert("filesystem".into(), Value::String((*fstype).to_string()));
        mount.insert(
            "options".into(),
            Value::Array(
                options
                    .split(',')
                    .map(|o| Value::String(o.to_string()))
                    .collect(),
            ),
        );
        mount.insert("size_bytes".into(), as_int(size));
        mount.insert("available_bytes".into(), as_int(available));
        mount.insert("used_bytes".into(), as_int(size.saturating_sub(available)));
        // A path mounted over keeps its last mount, as the kernel shows it.
        mounts.insert(point, Value::Table(mount));
    }
    mounts
}

/// mountinfo escapes space, tab, newline and backslash as `\NNN` (octal).
fn unescape_mount(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|b| (b'0'..=b'7').contains(b)))
            .and_then(|d| u8::from_str_radix(std::str::from_utf8(d).ok()?, 8).ok());
        if let Some(byte) = octal {
            out.push(byte);
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[derive(Debug, PartialEq, Eq)]
pub(super) struct Route {
    pub interface: String,
    pub gateway: Ipv4Addr,
}

/// The IPv4 default route with the lowest metric, from `/proc/net/route`
/// (addresses in the kernel's byte order, as hexadecimal).
pub(super) fn default_route(text: &str) -> Option<Route> {
    let mut best: Option<(u64, Route)> = None;
    for line in text.lines().skip(1) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [
            iface,
            destination,
            gateway,
            _flags,
            _refcnt,
            _use,
            metric,
            mask,
            ..,
        ] = fields.as_slice()
        else {
            continue;
        };
        if *destination != "00000000" || *mask != "00000000" {
            continue;
        }
        let Ok(raw) = u32::from_str_radix(gateway, 16) else {
            continue;
        };
        let metric = metric.parse::<u64>().unwrap_or(u64::MAX);
        let route = Route {
            interface: (*iface).to_string(),
            gateway: Ipv4Addr::from(raw.to_le_bytes()),
        };
        if best.as_ref().is_none_or(|(m, _)| metric < *m) {
            best = Some((metric, route));
        }
    }
    best.map(|(_, route)| route)
}

/// The first IPv4 address of the default route's interface, else the first
/// IPv4 address that is not a loopback one.
pub(super) fn primary_ip(route_interface: Option<&str>, interfaces: &[Value]) -> Option<String> {
    let mut by_name: BTreeMap<&str, Vec<Ipv4Addr>> = BTreeMap::new();
    let mut all = Vec::new();
    for entry in interfaces {
        let Some(table) = entry.as_table() else {
            continue;
        };
        let name = table.get("name").and_then(Value::as_str).unwrap_or("");
        let addresses = table
            .get("addresses")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        for address in addresses {
            if let Some(v4) = address.as_str().and_then(|a| a.parse::<Ipv4Addr>().ok()) {
                by_name.entry(name).or_default().push(v4);
                all.push(v4);
            }
        }
    }
    route_interface
        .and_then(|name| by_name.get(name)?.first().copied())
        .or_else(|| all.into_iter().find(|ip| !ip.is_loopback()))
        .map(|ip| ip.to_string())
}

/// Whole seconds since boot, from `/proc/uptime`.
pub(super) fn uptime_seconds(text: &str) -> Option<i64> {
    let first = text.split_whitespace().next()?;
    let seconds: f64 = first.parse().ok()?;
    // Truncation is what `uptime` shows too.
    Some(seconds as i64)
}

/// The processor's model as `/proc/cpuinfo` names it (`model name` on x86,
/// else `Model`, `Hardware` or `cpu` as other architectures write it).
pub(super) fn processor_model(text: &str) -> Option<String> {
    for key in ["model name", "Model", "Hardware", "cpu"] {
        let found = text.lines().find_map(|line| {
            let (name, value) = line.split_once(':')?;
            (name.trim() == key && !value.trim().is_empty()).then(|| value.trim().to_string())
        });
        if found.is_some() {
            return found;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    struct Recorded(HashMap<&'static str, &'static str>);

    impl Probe for Recorded {
        fn read(&self, path: &str) -> Option<String> {
            self.0.get(path).map(|s| s.trim().to_string())
        }
        fn exists(&self, path: &str) -> bool {
            self.0.contains_key(path)
        }
    }

    fn probe(files: &[(&'static str, &'static str)]) -> Recorded {
        Recorded(files.iter().copied().collect())
    }

    #[test]
    fn virtual_is_the_container_before_the_hypervisor() {
        let p = probe(&[
            ("/.dockerenv", ""),
            ("/sys/class/dmi/id/sys_vendor", "QEMU"),
        ]);
        assert_eq!(detect_virtual(&p), "docker");
        let p = probe(&[("/run/systemd/container", "systemd-nspawn\n")]);
        assert_eq!(detect_virtual(&p), "systemd_nspawn");
        let p = probe(&[("/proc/1/cgroup", "0::/lxc.payload.web/init.scope\n")]);
        assert_eq!(detect_virtual(&p), "lxc");
    }

    #[test]
    fn virtual_names_the_hypervisor_from_dmi() {
        for (vendor, product, expected) in [
            ("QEMU", "Standard PC (Q35 + ICH9, 2009)", "kvm"),
            ("VMware, Inc.", "VMware Virtual Platform", "vmware"),
            ("innotek GmbH", "VirtualBox", "virtualbox"),
            ("Microsoft Corporation", "Virtual Machine", "hyperv"),
            ("Google", "Google Compute Engine", "gce"),
        ] {
            let files = [
                ("/sys/class/dmi/id/sys_vendor", vendor),
                ("/sys/class/dmi/id/product_name", product),
            ];
            assert_eq!(detect_virtual(&probe(&files)), expected, "{vendor}");
        }
    }

    #[test]
    fn virtual_falls_back_to_the_hypervisor_flag_then_physical() {
        let p = probe(&[("/proc/cpuinfo", "flags\t\t: fpu vme hypervisor lahf_lm\n")]);
        assert_eq!(detect_virtual(&p), "virtual");
        let p = probe(&[
            ("/proc/cpuinfo", "flags\t\t: fpu vme lahf_lm\n"),
            ("/sys/class/dmi/id/sys_vendor", "Dell Inc."),
        ]);
        assert_eq!(detect_virtual(&p), "physical");
    }

    #[test]
    fn mountpoints_keep_real_file_systems_with_their_sizes() {
        let mountinfo = "\
22 1 0:21 / /proc rw,nosuid - proc proc rw
25 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
26 25 0:23 / /run rw,nosuid,nodev - tmpfs tmpfs rw,size=100k
27 25 254:2 / /srv/my\\040data rw - xfs /dev/vdb rw
28 25 0:40 / /empty rw - tmpfs none rw
";
        fn sizes(path: &str) -> Option<(u64, u64)> {
            match path {
                "/" => Some((10_000, 4_000)),
                "/run" => Some((100, 90)),
                "/srv/my data" => Some((50, 50)),
                _ => Some((0, 0)),
            }
        }
        let mounts = mountpoints(mountinfo, sizes);
        let keys: Vec<&str> = mounts.keys().map(String::as_str).collect();
        assert_eq!(keys, ["/", "/run", "/srv/my data"]);
        let root = mounts["/"].as_table().expect("table");
        assert_eq!(root["device"].as_str(), Some("/dev/vda1"));
        assert_eq!(root["filesystem"].as_str(), Some("ext4"));
        assert_eq!(root["size_bytes"].as_integer(), Some(10_000));
        assert_eq!(root["available_bytes"].as_integer(), Some(4_000));
        assert_eq!(root["used_bytes"].as_integer(), Some(6_000));
        assert_eq!(root["options"].as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn the_default_route_with_the_lowest_metric() {
        let text = "\
Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
wlan0\t00000000\t0101A8C0\t0003\t0\t0\t600\t00000000\t0\t0\t0
eth0\t00000000\t0202000A\t0003\t0\t0\t100\t00000000\t0\t0\t0
eth0\t0002000A\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0
";
        assert_eq!(
            default_route(text),
            Some(Route {
                interface: "eth0".into(),
                gateway: Ipv4Addr::new(10, 0, 2, 2)
            })
        );
        assert_eq!(default_route("Iface\tDestination\n"), None);
    }

    #[test]
    fn primary_ip_prefers_the_default_route_interface() {
        let interfaces: Vec<Value> = toml::from_str::<Table>(
            "[[i]]\nname = \"eth0\"\naddresses = [\"fe80::1\", \"10.0.2.15\"]\n[[i]]\nname = \"lo\"\naddresses = [\"127.0.0.1\"]\n[[i]]\nname = \"wg0\"\naddresses = [\"10.9.0.1\"]\n",
        )
        .expect("toml")["i"]
            .as_array()
            .expect("array")
            .clone();
        assert_eq!(
            primary_ip(Some("wg0"), &interfaces).as_deref(),
            Some("10.9.0.1")
        );
        assert_eq!(primary_ip(None, &interfaces).as_deref(), Some("10.0.2.15"));
        assert_eq!(primary_ip(Some("nope"), &interfaces[1..2]), None);
    }

    #[test]
    fn uptime_and_processor_model() {
        assert_eq!(uptime_seconds("12345.67 23456.78\n"), Some(12345));
        assert_eq!(uptime_seconds(""), None);
        let x86 = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n";
        assert_eq!(
            processor_model(x86).as_deref(),
            Some("Intel(R) Xeon(R) CPU @ 2.20GHz")
        );
        let arm = "processor\t: 0\nBogoMIPS\t: 108.00\n\nHardware\t: BCM2835\nModel\t\t: Raspberry Pi 4 Model B Rev 1.4\n";
        assert_eq!(
            processor_model(arm).as_deref(),
            Some("Raspberry Pi 4 Model B Rev 1.4")
        );
    }

    #[test]
    fn disks_leave_out_loop_devices() {
        let sys = tempfile::tempdir().expect("tempdir");
        for (name, size, model) in [
            ("vda", "41943040", Some("QEMU HARDDISK ")),
            ("loop0", "8", None),
        ] {
            let dir = sys.path().join(name);
            std::fs::create_dir_all(dir.join("device")).expect("mkdir");
            std::fs::write(dir.join("size"), size).expect("write");
            if let Some(model) = model {
                std::fs::write(dir.join("device/model"), model).expect("write");
            }
        }
        let disks = disks(sys.path());
        assert_eq!(disks.keys().collect::<Vec<_>>(), ["vda"]);
        let vda = disks["vda"].as_table().expect("table");
        assert_eq!(vda["size_bytes"].as_integer(), Some(41943040 * 512));
        assert_eq!(vda["model"].as_str(), Some("QEMU HARDDISK"));
    }
}
