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

/// The most of a domain's XML that is read: virsh prints a few KiB.
const XML_BYTES_MAX: u64 = 16 << 20;
/// How deep elements may nest: libvirt's go a handful of levels deep, and
/// the parser recurses per level.
const XML_DEPTH_MAX: usize = 256;
/// How many nodes a domain's XML may have.
const XML_NODES_MAX: u32 = 1_000_000;

/// Refuses XML too large to be a domain's.
fn check_size(bytes: u64, origin: &str) -> Result<(), String> {
    if bytes <= XML_BYTES_MAX {
        return Ok(());
    }
    let human = holos_runtime::ops::volumes::human_bytes;
    Err(format!(
        "{origin} is {}; a domain's XML is far smaller (at most {} is read); give the XML that virsh dumpxml prints",
        human(bytes),
        human(XML_BYTES_MAX)
    ))
}

/// How deep the elements of `xml` nest, up to past [`XML_DEPTH_MAX`]: a
/// scan of the tags (quotes, comments, CDATA and declarations skipped), so
/// that the parser never meets a nesting deep enough to overflow its stack.
fn nesting_depth(xml: &str) -> usize {
    let bytes = xml.as_bytes();
    let skip_to = |from: usize, end: &[u8]| {
        bytes[from..]
            .windows(end.len())
            .position(|w| w == end)
            .map_or(bytes.len(), |at| from + at + end.len())
    };
    let (mut at, mut depth, mut deepest) = (0, 0usize, 0usize);
    while let Some(offset) = bytes[at..].iter().position(|b| *b == b'<') {
        at += offset;
        let rest = &bytes[at..];
        if rest.starts_with(b"<!--") {
            at = skip_to(at, b"-->");
        } else if rest.starts_with(b"<![CDATA[") {
            at = skip_to(at, b"]]>");
        } else if rest.starts_with(b"<?") {
            at = skip_to(at, b"?>");
        } else if rest.starts_with(b"<!") || rest.starts_with(b"</") {
            depth = depth.saturating_sub(usize::from(rest.starts_with(b"</")));
            at = skip_to(at, b">");
        } else {
            let (end, self_closing) = tag_end(bytes, at);
            if !self_closing {
                depth += 1;
                deepest = deepest.max(depth);
                if deepest > XML_DEPTH_MAX {
                    return deepest;
                }
            }
            at = end;
        }
    }
    deepest
}

/// Where the start tag at `at` ends (past its `>`, outside quotes), and
/// whether it closes itself (`/>`).
fn tag_end(bytes: &[u8], at: usize) -> (usize, bool) {
    let mut quote = None;
    for (index, byte) in bytes.iter().enumerate().skip(at + 1) {
        match (quote, *byte) {
            (None, b'"' | b'\'') => quote = Some(*byte),
            (Some(q), b) if b == q => quote = None,
            (None, b'>') => return (index + 1, bytes[index - 1] == b'/'),
            _ => {}
        }
    }
    (bytes.len(), false)
}

/// Parses one domain; `origin` names the file (or `virsh` call) in errors.
pub fn parse_domain(xml: &str, origin: &str) -> Result<Domain, String> {
    check_size(xml.len() as u64, origin)?;
    if nesting_depth(xml) > XML_DEPTH_MAX {
        return Err(format!(
            "{origin}: elements nest deeper than {XML_DEPTH_MAX} levels, which no domain's XML does; give the XML that virsh dumpxml prints"
        ));
    }
    let options = roxmltree::ParsingOptions {
        nodes_limit: XML_NODES_MAX,
        ..roxmltree::ParsingOptions::default()
    };
    let document = Document::parse_with_options(xml, options).map_err(|e| {
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
    let mut out = Rendered::default();
    let mut taken = std::collections::BTreeSet::new();
    for domain in domains {
        out.warnings.extend(domain.warnings.iter().cloned());
        let name = unique_name(&domain.name, &mut taken);
        let service = service_node(domain, &name, &mut out, &pos);
        out.services.push((key(&name, &pos), service));
    }
    let Rendered {
        services,
        volumes,
        warnings,
    } = out;
    let mut top = vec![(key("services", &pos), Node::map(services, pos.clone()))];
    if !volumes.is_empty() {
        top.push((key("volumes", &pos), Node::map(volumes, pos.clone())));
    }
    let mut text = header(domains, &warnings);
    text.push_str(&Node::map(top, pos).to_yaml_string());
    (text, warnings)
}

/// What [`render`] gathers over the domains.
#[derive(Default)]
struct Rendered {
    services: Vec<(Node, Node)>,
    volumes: Vec<(Node, Node)>,
    warnings: Vec<String>,
}

fn key(name: &str, pos: &Pos) -> Node {
    Node::plain(name, pos.clone())
}

/// The service name of a domain, numbered when another domain's folds to
/// it: `Web` and `web` become `web` and `web-2`.
fn unique_name(domain: &str, taken: &mut std::collections::BTreeSet<String>) -> String {
    let base = service_name(domain);
    let mut name = base.clone();
    let mut number = 1;
    while !taken.insert(name.clone()) {
        number += 1;
        name = format!("{base}-{number}");
    }
    name
}

/// One domain's service; its other disks go to `out.volumes`.
fn service_node(domain: &Domain, name: &str, out: &mut Rendered, pos: &Pos) -> Node {
    let Some((first, others)) = domain.disks.split_first() else {
        out.warnings.push(format!(
            "{}: no disk with a file path; set image: (an alias or a disk image) yourself",
            domain.name
        ));
        let image = (key("image", pos), Node::string("TODO", pos.clone()));
        return Node::map(vec![image], pos.clone());
    };
    let mut service = vec![
        (
            key("image", pos),
            Node::string(first.path.clone(), pos.clone()),
        ),
        (
            key("image_format", pos),
            Node::plain(first.format.clone(), pos.clone()),
        ),
    ];
    if let Some(vm) = vm_node(domain, pos) {
        service.push((key("vm", pos), vm));
    }
    if !domain.ports.is_empty() {
        let ports = domain
            .ports
            .iter()
            .map(|p| Node::string(p.clone(), pos.clone()));
        service.push((key("ports", pos), Node::seq(ports.collect(), pos.clone())));
    }
    if !others.is_empty() {
        let mounts = others
            .iter()
            .map(|disk| volume_mount(domain, name, disk, out, pos))
            .collect();
        service.push((key("volumes", pos), Node::seq(mounts, pos.clone())));
    }
    if !domain.pci.is_empty() {
        let devices = domain.pci.iter().map(|(address, rom)| {
            let mut entry = vec![(key("pci", pos), Node::string(address.clone(), pos.clone()))];
            if let Some(rom) = rom {
                entry.push((key("rom_file", pos), Node::string(rom.clone(), pos.clone())));
            }
            Node::map(entry, pos.clone())
        });
        service.push((
            key("devices", pos),
            Node::seq(devices.collect(), pos.clone()),
        ));
    }
    Node::map(service, pos.clone())
}

/// `vm:` of a domain: vcpu, memory, machine and UEFI, when any is set.
fn vm_node(domain: &Domain, pos: &Pos) -> Option<Node> {
    let mut vm = Vec::new();
    let mut put =
        |name: &str, value: String| vm.push((key(name, pos), Node::plain(value, pos.clone())));
    if let Some(vcpu) = domain.vcpu {
        put("vcpu", vcpu.to_string());
    }
    if let Some(memory) = domain.memory_mib {
        put("memory_mb", memory.to_string());
    }
    if let Some(machine) = &domain.machine {
        put("machine", machine.clone());
    }
    if domain.uefi {
        put("uefi", "true".into());
    }
    (!vm.is_empty()).then(|| Node::map(vm, pos.clone()))
}

/// A further disk as an empty named volume of its size: the mount, with
/// the volume added to `out.volumes`.
fn volume_mount(
    domain: &Domain,
    service: &str,
    disk: &Disk,
    out: &mut Rendered,
    pos: &Pos,
) -> Node {
    let volume = format!("{service}-{}", service_name(&disk.target));
    let mut options = Vec::new();
    match disk_size(disk) {
        Some(bytes) => options.push((key("size", pos), Node::plain(size_text(bytes), pos.clone()))),
        None => out.warnings.push(format!(
            "{}: cannot read the size of disk {} ({}); volume {volume} gets the default size",
            domain.name, disk.target, disk.path
        )),
    }
    out.warnings.push(format!(
        "{}: disk {} ({}) becomes the empty named volume {volume}, mounted at /mnt/{}: its data is not copied and the mount point is a guess",
        domain.name, disk.target, disk.path, disk.target
    ));
    out.volumes
        .push((key(&volume, pos), Node::map(options, pos.clone())));
    Node::string(format!("{volume}:/mnt/{}", disk.target), pos.clone())
}

/// The comment at the top: where the file comes from, and the warnings.
fn header(domains: &[Domain], warnings: &[String]) -> String {
    let names: Vec<String> = domains
        .iter()
        .map(|d| d.name.replace(['\n', '\r'], " "))
        .collect();
    let mut text = format!(
        "# Imported by `holos import` from the libvirt domain{} {}.\n# holos boots an overlay of each image and never writes the image itself.\n# The guest gets its SSH key and network through cloud-init; an image\n# without cloud-init boots, but holos exec and healthchecks cannot reach it.\n",
        if names.len() == 1 { "" } else { "s" },
        names.join(", ")
    );
    for warning in warnings {
        text.push_str(&format!("# warning: {}\n", warning.replace('\n', " ")));
    }
    text
}

/// `virsh [-c URI] dumpxml DOMAIN` for each domain (`virsh list --all
/// --name` when none is named); virsh's default connection without a URI.
pub fn from_virsh(uri: Option<&str>, names: &[String]) -> Result<Vec<(String, String)>, String> {
    let connect: Vec<&str> = uri.map(|uri| vec!["-c", uri]).unwrap_or_default();
    let shown = uri.map(|uri| format!(" -c {uri}")).unwrap_or_default();
    let virsh = |args: &[&str]| -> Result<String, String> {
        let command = holo_plugin::process::Command::new("virsh")
            .args(connect.iter().copied())
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
        return Err(format!(
            "{} has no domains to import",
            uri.unwrap_or("the default libvirt connection")
        ));
    }
    names
        .iter()
        .map(|name| {
            Ok((
                format!("virsh{shown} dumpxml {name}"),
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
            let origin = file.display().to_string();
            let size = std::fs::metadata(file)
                .map_err(|e| format!("cannot read {origin}: {e}"))?
                .len();
            check_size(size, &origin)?;
            std::fs::read_to_string(file)
                .map(|text| (origin.clone(), text))
                .map_err(|e| format!("cannot read {origin}: {e}"))
        })
        .collect()
}

/// `holos import`.
pub fn run(args: &crate::cli::ImportArgs) -> Result<(), String> {
    let sources = if args.xml.is_empty() {
        from_virsh(args.connect.as_deref(), &args.domains)?
    } else {
        from_files(&args.xml)?
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
    fn nesting_depth_counts_elements_only() {
        assert_eq!(nesting_depth("<a><b/><c x='>'><d></d></c></a>"), 3);
        assert_eq!(
            nesting_depth("<?xml version='1.0'?><!-- <x><y> --><a><![CDATA[<z>]]></a>"),
            1
        );
        let deep = format!("{}{}", "<a>".repeat(300), "</a>".repeat(300));
        assert_eq!(nesting_depth(&deep), XML_DEPTH_MAX + 1);
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
