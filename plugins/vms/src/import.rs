//! `holos import`: libvirt domains (the XML `virsh dumpxml` prints) to a
//! holos.yaml with one service per domain.
//!
//! What maps: vcpu and memory; the first disk becomes the local image (holos
//! boots an overlay of it, so the disk itself is never written), the other
//! disks named volumes of their size (their data is not copied); user-mode
//! port forwards, from `<portForward>` or a QEMU `hostfwd`, become `ports`;
//! PCI host devices become `devices` entries; UEFI firmware sets `vm.uefi`.
//! What does not map (bridged and macvtap NICs, other host devices, CD-ROMs,
//! disks without a file) is reported as a warning, on standard error and as
//! a comment at the top of the file.

use std::path::Path;

use holos_compose::yaml::{Node, Pos};
use roxmltree::Document;

/// The QEMU namespace of `<qemu:commandline>`.
const QEMU_NS: &str = "http://libvirt.org/schemas/domain/qemu/1.0";

/// One libvirt domain, as far as holos can use it.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Domain {
    pub name: String,
    pub vcpu: Option<u32>,
    pub memory_mib: Option<u64>,
    pub uefi: bool,
    /// `pc` for an i440fx machine; q35 is holos's default.
    pub machine: Option<String>,
    pub disks: Vec<Disk>,
    /// `HOST:GUEST`, as Compose writes a port.
    pub ports: Vec<String>,
    /// `DDDD:BB:DD.F` and the ROM file, if any.
    pub pci: Vec<(String, Option<String>)>,
    pub warnings: Vec<String>,
}

#[derive(Debug, PartialEq, Eq)]
pub struct Disk {
    /// `vda`, `sdb`…
    pub target: String,
    pub path: String,
    pub format: String,
}

/// The first child element of `parent` named `name`.
fn child<'a, 'input>(
    parent: roxmltree::Node<'a, 'input>,
    name: &str,
) -> Option<roxmltree::Node<'a, 'input>> {
    parent.children().find(|c| c.has_tag_name(name))
}

/// Parses one domain; `origin` names the file (or `virsh` call) in errors.
pub fn parse_domain(xml: &str, origin: &str) -> Result<Domain, String> {
    let document = Document::parse(xml).map_err(|e| {
        let at = e.pos();
        format!(
            "{origin}:{}:{}: {e}; give the XML that virsh dumpxml prints",
            at.row, at.col
        )
    })?;
    let root = document.root_element();
    let line = |node: roxmltree::Node| document.text_pos_at(node.range().start).row;
    if !root.has_tag_name("domain") {
        return Err(format!(
            "{origin}:{}: the root element is <{}>, not <domain>; give the XML that virsh dumpxml prints",
            line(root),
            root.tag_name().name()
        ));
    }
    let text = |name: &str| child(root, name).and_then(|n| n.text()).map(str::trim);
    let mut domain = Domain {
        name: text("name").unwrap_or_default().to_string(),
        ..Domain::default()
    };
    if domain.name.is_empty() {
        return Err(format!("{origin}:{}: the domain has no <name>", line(root)));
    }
    if let Some(vcpu) = child(root, "vcpu") {
        let value = vcpu.text().unwrap_or_default().trim();
        domain.vcpu =
            Some(value.parse().map_err(|_| {
                format!("{origin}:{}: <vcpu> is {value:?}, not a number", line(vcpu))
            })?);
    }
    if let Some(memory) = child(root, "memory") {
        let value = memory.text().unwrap_or_default().trim();
        let unit = memory.attribute("unit").unwrap_or("KiB");
        domain.memory_mib = Some(memory_mib(value, unit).ok_or_else(|| {
            format!(
                "{origin}:{}: <memory unit={unit:?}> is {value:?}, not a size libvirt writes",
                line(memory)
            )
        })?);
    }
    if let Some(os) = child(root, "os") {
        let loader_is_efi = child(os, "loader").is_some_and(|l| {
            l.attribute("type") == Some("pflash")
                || l.text()
                    .is_some_and(|t| t.contains("OVMF") || t.contains("edk2"))
        });
        domain.uefi = os.attribute("firmware") == Some("efi") || loader_is_efi;
        let machine = child(os, "type").and_then(|t| t.attribute("machine"));
        if machine.is_some_and(|m| m == "pc" || m.starts_with("pc-i440fx")) {
            domain.machine = Some("pc".into());
        }
    }
    let devices = child(root, "devices");
    for device in devices
        .iter()
        .flat_map(|d| d.children())
        .filter(|n| n.is_element())
    {
        match device.tag_name().name() {
            "disk" => disk(&mut domain, device),
            "interface" => interface(&mut domain, device),
            "hostdev" => hostdev(&mut domain, device),
            _ => {}
        }
    }
    qemu_hostfwd(&mut domain, root);
    Ok(domain)
}

fn memory_mib(value: &str, unit: &str) -> Option<u64> {
    let amount: u64 = value.parse().ok()?;
    let bytes_per: u64 = match unit {
        "b" | "bytes" => 1,
        "KB" => 1000,
        "k" | "KiB" => 1 << 10,
        "MB" => 1000 * 1000,
        "M" | "MiB" => 1 << 20,
        "GB" => 1000 * 1000 * 1000,
        "G" | "GiB" => 1 << 30,
        "TB" => 1000 * 1000 * 1000 * 1000,
        "T" | "TiB" => 1 << 40,
        _ => return None,
    };
    Some(amount.checked_mul(bytes_per)? / (1 << 20))
}

fn disk(domain: &mut Domain, disk: roxmltree::Node) {
    let child = |name: &str| disk.children().find(|c| c.has_tag_name(name));
    let target = child("target")
        .and_then(|t| t.attribute("dev"))
        .unwrap_or("disk")
        .to_string();
    let device = disk.attribute("device").unwrap_or("disk");
    if device != "disk" {
        domain.warnings.push(format!(
            "{}: the {device} {target} is left out; attach what it holds with cloud_init or a volume",
            domain.name
        ));
        return;
    }
    let source = child("source");
    let path = match disk.attribute("type").unwrap_or("file") {
        "file" => source.and_then(|s| s.attribute("file")),
        "block" => source.and_then(|s| s.attribute("dev")),
        _ => None,
    };
    let Some(path) = path else {
        domain.warnings.push(format!(
            "{}: disk {target} is a libvirt {} disk without a file path; convert it to a file (qemu-img convert) and name it in the output",
            domain.name,
            disk.attribute("type").unwrap_or("file")
        ));
        return;
    };
    // libvirt's default driver type is raw.
    let format = child("driver")
        .and_then(|d| d.attribute("type"))
        .unwrap_or("raw")
        .to_string();
    domain.disks.push(Disk {
        target,
        path: path.to_string(),
        format,
    });
}

fn interface(domain: &mut Domain, nic: roxmltree::Node) {
    let kind = nic.attribute("type").unwrap_or("user");
    let source = nic.children().find(|c| c.has_tag_name("source"));
    let mac = nic
        .children()
        .find(|c| c.has_tag_name("mac"))
        .and_then(|m| m.attribute("address"));
    let described = match (kind, source) {
        ("bridge", Some(s)) => format!("bridged to {}", s.attribute("bridge").unwrap_or("?")),
        ("network", Some(s)) => format!(
            "on libvirt network {}",
            s.attribute("network").unwrap_or("?")
        ),
        ("direct", Some(s)) => format!("macvtap on {}", s.attribute("dev").unwrap_or("?")),
        (other, _) => format!("of type {other}"),
    };
    for forward in nic.children().filter(|c| c.has_tag_name("portForward")) {
        let proto = forward.attribute("proto").unwrap_or("tcp");
        for range in forward.children().filter(|c| c.has_tag_name("range")) {
            let Some(start) = range.attribute("start") else {
                continue;
            };
            let to = range.attribute("to").unwrap_or(start);
            if proto != "tcp" {
                domain.warnings.push(format!(
                    "{}: the {proto} forward {start}->{to} is left out; holos forwards TCP only",
                    domain.name
                ));
                continue;
            }
            // A range whose guest side would pass port 65535 stays as
            // written, and holos validate names it.
            let port = match (
                range.attribute("end"),
                start.parse::<u16>(),
                to.parse::<u16>(),
            ) {
                (Some(end), Ok(s), Ok(t)) => match end.parse::<u16>() {
                    Ok(e) if e >= s => match t.checked_add(e - s) {
                        Some(last) => format!("{s}-{e}:{t}-{last}"),
                        None => format!("{start}-{end}:{to}"),
                    },
                    _ => format!("{start}:{to}"),
                },
                _ => format!("{start}:{to}"),
            };
            domain.ports.push(port);
        }
    }
    if kind != "user" {
        domain.warnings.push(format!(
            "{}: NIC {}{described}: holos gives each VM one user-mode NIC on its internal network 10.10.0.0/24 (its own MAC); publish what the guest serves under ports:",
            domain.name,
            mac.map(|m| format!("{m} ")).unwrap_or_default()
        ));
    }
}

fn hostdev(domain: &mut Domain, dev: roxmltree::Node) {
    if dev.attribute("type") != Some("pci") {
        domain.warnings.push(format!(
            "{}: the {} host device is left out; holos passes through PCI devices only",
            domain.name,
            dev.attribute("type").unwrap_or("unknown")
        ));
        return;
    }
    let address = dev
        .children()
        .find(|c| c.has_tag_name("source"))
        .and_then(|s| s.children().find(|c| c.has_tag_name("address")));
    let hex = |name: &str, width: usize| -> Option<String> {
        let text = address?.attribute(name)?;
        let value = u32::from_str_radix(text.trim_start_matches("0x"), 16).ok()?;
        Some(format!("{value:0width$x}"))
    };
    match (
        hex("domain", 4),
        hex("bus", 2),
        hex("slot", 2),
        hex("function", 1),
    ) {
        (Some(d), Some(b), Some(s), Some(f)) => {
            let rom = dev
                .children()
                .find(|c| c.has_tag_name("rom"))
                .and_then(|r| r.attribute("file"))
                .map(String::from);
            domain.pci.push((format!("{d}:{b}:{s}.{f}"), rom));
        }
        _ => domain.warnings.push(format!(
            "{}: a PCI host device without a full source address is left out",
            domain.name
        )),
    }
}

/// `hostfwd=tcp:[ADDR]:HOST-[ADDR]:GUEST` in `<qemu:commandline>` arguments.
fn qemu_hostfwd(domain: &mut Domain, root: roxmltree::Node) {
    let args = root
        .descendants()
        .filter(|n| n.tag_name().namespace() == Some(QEMU_NS) && n.tag_name().name() == "arg")
        .filter_map(|n| n.attribute("value"));
    for arg in args {
        for option in arg.split(',') {
            let Some(rule) = option.strip_prefix("hostfwd=") else {
                continue;
            };
            let Some(("tcp", rest)) = rule.split_once(':') else {
                domain.warnings.push(format!(
                    "{}: the QEMU forward {rule} is left out; holos forwards TCP only",
                    domain.name
                ));
                continue;
            };
            let port = |side: &str| side.rsplit(':').next().map(str::to_string);
            if let Some((host, guest)) = rest.split_once('-')
                && let (Some(h), Some(g)) = (port(host), port(guest))
            {
                domain.ports.push(format!("{h}:{g}"));
            }
        }
    }
}

/// A compose service name from a domain name: lower case, `[a-z0-9_-]`.
fn service_name(domain: &str) -> String {
    let name: String = domain
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let name = name.trim_start_matches(['-', '_']).to_string();
    if name.is_empty() { "vm".into() } else { name }
}

/// A disk's virtual size: the qcow2 header's, or a raw file's length.
fn disk_size(disk: &Disk) -> Option<u64> {
    use std::io::Read;
    let mut file = std::fs::File::open(&disk.path).ok()?;
    if disk.format == "qcow2" {
        let mut header = [0u8; 32];
        file.read_exact(&mut header).ok()?;
        if &header[..4] != b"QFI\xfb" {
            return None;
        }
        let mut size = [0u8; 8];
        size.copy_from_slice(&header[24..32]);
        return Some(u64::from_be_bytes(size));
    }
    // The end of a block device is its size; its metadata says 0.
    (disk.format == "raw")
        .then(|| std::io::Seek::seek(&mut file, std::io::SeekFrom::End(0)).ok())?
}

/// A size as holos.yaml writes it: whole GiB or MiB when it is one.
fn size_text(bytes: u64) -> String {
    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;
    if bytes.is_multiple_of(GIB) {
        format!("{}G", bytes / GIB)
    } else if bytes.is_multiple_of(MIB) {
        format!("{}M", bytes / MIB)
    } else {
        bytes.to_string()
    }
}

/// The holos.yaml text for `domains` (a header of warnings as comments),
/// and the warnings.
pub fn render(domains: &[Domain]) -> (String, Vec<String>) {
    let pos = Pos::synthetic("import");
    let key = |k: &str| Node::plain(k, pos.clone());
    let mut warnings: Vec<String> = Vec::new();
    let mut services = Vec::new();
    let mut volumes = Vec::new();
    let mut taken = std::collections::BTreeSet::new();
    for domain in domains {
        warnings.extend(domain.warnings.iter().cloned());
        // Domains named `Web` and `web` become `web` and `web-2`.
        let base = service_name(&domain.name);
        let mut name = base.clone();
        let mut number = 1;
        while !taken.insert(name.clone()) {
            number += 1;
            name = format!("{base}-{number}");
        }
        let mut service = Vec::new();
        let Some((first, others)) = domain.disks.split_first() else {
            warnings.push(format!(
                "{}: no disk with a file path; set image: (an alias or a disk image) yourself",
                domain.name
            ));
            services.push((
                key(&name),
                Node::map(
                    vec![(key("image"), Node::string("TODO", pos.clone()))],
                    pos.clone(),
                ),
            ));
            continue;
        };
        service.push((key("image"), Node::string(first.path.clone(), pos.clone())));
        service.push((
            key("image_format"),
            Node::plain(first.format.clone(), pos.clone()),
        ));
        let mut vm = Vec::new();
        if let Some(vcpu) = domain.vcpu {
            vm.push((key("vcpu"), Node::plain(vcpu.to_string(), pos.clone())));
        }
        if let Some(memory) = domain.memory_mib {
            vm.push((
                key("memory_mb"),
                Node::plain(memory.to_string(), pos.clone()),
            ));
        }
        if let Some(machine) = &domain.machine {
            vm.push((key("machine"), Node::plain(machine.clone(), pos.clone())));
        }
        if domain.uefi {
            vm.push((key("uefi"), Node::plain("true", pos.clone())));
        }
        if !vm.is_empty() {
            service.push((key("vm"), Node::map(vm, pos.clone())));
        }
        if !domain.ports.is_empty() {
            let ports = domain
                .ports
                .iter()
                .map(|p| Node::string(p.clone(), pos.clone()));
            service.push((key("ports"), Node::seq(ports.collect(), pos.clone())));
        }
        if !others.is_empty() {
            let mut mounts = Vec::new();
            for disk in others {
                let volume = format!("{name}-{}", service_name(&disk.target));
                mounts.push(Node::string(
                    format!("{volume}:/mnt/{}", disk.target),
                    pos.clone(),
                ));
                let mut options = Vec::new();
                match disk_size(disk) {
                    Some(bytes) => options.push((key("size"), Node::plain(size_text(bytes), pos.clone()))),
                    None => warnings.push(format!(
                        "{}: cannot read the size of disk {} ({}); volume {volume} gets the default size",
                        domain.name, disk.target, disk.path
                    )),
                }
                warnings.push(format!(
                    "{}: disk {} ({}) becomes the empty named volume {volume}, mounted at /mnt/{}: its data is not copied and the mount point is a guess",
                    domain.name, disk.target, disk.path, disk.target
                ));
                volumes.push((key(&volume), Node::map(options, pos.clone())));
            }
            service.push((key("volumes"), Node::seq(mounts, pos.clone())));
        }
        if !domain.pci.is_empty() {
            let devices = domain.pci.iter().map(|(address, rom)| {
                let mut entry = vec![(key("pci"), Node::string(address.clone(), pos.clone()))];
                if let Some(rom) = rom {
                    entry.push((key("rom_file"), Node::string(rom.clone(), pos.clone())));
                }
                Node::map(entry, pos.clone())
            });
            service.push((key("devices"), Node::seq(devices.collect(), pos.clone())));
        }
        services.push((key(&name), Node::map(service, pos.clone())));
    }
    let mut top = vec![(key("services"), Node::map(services, pos.clone()))];
    if !volumes.is_empty() {
        top.push((key("volumes"), Node::map(volumes, pos.clone())));
    }
    let names: Vec<String> = domains
        .iter()
        .map(|d| d.name.replace(['\n', '\r'], " "))
        .collect();
    let mut text = format!(
        "# Imported by `holos import` from the libvirt domain{} {}.\n# holos boots an overlay of each image and never writes the image itself.\n# The guest gets its SSH key and network through cloud-init; an image\n# without cloud-init boots, but holos exec and healthchecks cannot reach it.\n",
        if names.len() == 1 { "" } else { "s" },
        names.join(", ")
    );
    for warning in &warnings {
        text.push_str(&format!("# warning: {}\n", warning.replace('\n', " ")));
    }
    text.push_str(&Node::map(top, pos).to_yaml_string());
    (text, warnings)
}

/// `virsh -c URI dumpxml DOMAIN` for each domain (`virsh list --all --name`
/// when none is named).
pub fn from_virsh(uri: &str, names: &[String]) -> Result<Vec<(String, String)>, String> {
    let virsh = |args: &[&str]| -> Result<String, String> {
        let command = holo_plugin::process::Command::new("virsh")
            .args(["-c", uri])
            .args(args)
            .timeout(std::time::Duration::from_secs(60));
        let finished = command
            .run()
            .map_err(|e| format!("cannot run virsh: {e}; install libvirt-clients, or export the XML with virsh dumpxml and use --xml"))?;
        if !finished.success() {
            return Err(format!(
                "{} failed: {}",
                command.command_line(),
                finished.stderr_tail(5).trim()
            ));
        }
        let stdout = finished
            .whole_stdout(&command.command_line())
            .map_err(|e| e.to_string())?;
        Ok(String::from_utf8_lossy(stdout).into_owned())
    };
    let names: Vec<String> = if names.is_empty() {
        virsh(&["list", "--all", "--name"])?
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect()
    } else {
        names.to_vec()
    };
    if names.is_empty() {
        return Err(format!("{uri} has no domains to import"));
    }
    names
        .iter()
        .map(|name| {
            Ok((
                format!("virsh -c {uri} dumpxml {name}"),
                virsh(&["dumpxml", name])?,
            ))
        })
        .collect()
}

/// Reads `--xml` files.
pub fn from_files(files: &[std::path::PathBuf]) -> Result<Vec<(String, String)>, String> {
    files
        .iter()
        .map(|file| {
            std::fs::read_to_string(file)
                .map(|text| (file.display().to_string(), text))
                .map_err(|e| format!("cannot read {}: {e}", file.display()))
        })
        .collect()
}

/// `holos import`.
pub fn run(args: &crate::cli::ImportArgs) -> Result<(), String> {
    let sources = match &args.connect {
        Some(uri) => from_virsh(uri, &args.domains)?,
        None => from_files(&args.xml)?,
    };
    let domains = sources
        .iter()
        .map(|(origin, xml)| parse_domain(xml, origin))
        .collect::<Result<Vec<_>, _>>()?;
    let (text, warnings) = render(&domains);
    for warning in &warnings {
        eprintln!("holos: warning: {warning}");
    }
    write_output(&text, args.output.as_deref())
}

/// Writes `text` to `output`, or prints it.
pub fn write_output(text: &str, output: Option<&Path>) -> Result<(), String> {
    match output {
        Some(path) => std::fs::write(path, text)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
            .map(|()| eprintln!("holos: wrote {}", path.display())),
        None => {
            let _ = std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes());
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_units_are_libvirts() {
        assert_eq!(memory_mib("2097152", "KiB"), Some(2048));
        assert_eq!(memory_mib("2", "GiB"), Some(2048));
        assert_eq!(memory_mib("2147483648", "bytes"), Some(2048));
        assert_eq!(memory_mib("2", "parsecs"), None);
    }

    #[test]
    fn service_names_follow_compose() {
        assert_eq!(service_name("Web.Server 1"), "web-server-1");
        assert_eq!(service_name("__x"), "x");
        assert_eq!(service_name("..."), "vm");
    }

    #[test]
    fn domains_whose_names_fold_together_get_their_own_services() {
        let parse = |name: &str| {
            parse_domain(
                &format!("<domain><name>{name}</name><vcpu>1</vcpu></domain>"),
                "a.xml",
            )
            .expect("parses")
        };
        let (text, _) = render(&[parse("Web"), parse("web"), parse("WEB")]);
        for service in ["  web:\n", "  web-2:\n", "  web-3:\n"] {
            assert!(text.contains(service), "{text}");
        }
    }

    #[test]
    fn a_name_with_a_newline_stays_inside_its_comment() {
        let domain = parse_domain(
            "<domain><name>a&#10;services: {}</name><vcpu>1</vcpu></domain>",
            "a.xml",
        )
        .expect("parses");
        let (text, _) = render(&[domain]);
        assert!(!text.contains("\nservices: {}"), "{text}");
    }

    #[test]
    fn sizes_are_whole_units_when_they_can_be() {
        assert_eq!(size_text(20 << 30), "20G");
        assert_eq!(size_text(1536 << 20), "1536M");
        assert_eq!(size_text(1000), "1000");
    }

    #[test]
    fn an_error_names_the_origin_and_line() {
        let err = parse_domain(
            "<domain>\n<name>x</name>\n<vcpu>two</vcpu></domain>",
            "a.xml",
        )
        .unwrap_err();
        assert!(err.starts_with("a.xml:3: <vcpu> is \"two\""), "{err}");
        let err =
            parse_domain("<domain>\n<name>x</name>\n<vcpu>2</vcp></domain>", "a.xml").unwrap_err();
        assert!(err.starts_with("a.xml:3:"), "{err}");
    }
}
