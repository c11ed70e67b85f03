//! `ports`: Compose short and long syntax, TCP and UDP over IPv4.

use std::net::Ipv4Addr;

use super::reader::{Reader, child, item};
use crate::keys;
use crate::manifest::{Port, Protocol};
use crate::yaml::{Kind, Node};

const TCP_IPV4_ONLY: &str = "holos supports TCP and UDP over IPv4 only";

fn protocol(text: &str) -> Option<Protocol> {
    match text {
        "tcp" => Some(Protocol::Tcp),
        "udp" => Some(Protocol::Udp),
        _ => None,
    }
}

/// Parses `a` or `a-b` into an inclusive range.
fn port_range(text: &str) -> Result<(u16, u16), String> {
    let parse = |s: &str| -> Result<u16, String> {
        match s.trim().parse::<u16>() {
            Ok(p) if p > 0 => Ok(p),
            _ => Err(format!("{s:?} is not a port number (1-65535)")),
        }
    };
    match text.split_once('-') {
        Some((a, b)) => {
            let (a, b) = (parse(a)?, parse(b)?);
            if a > b {
                return Err(format!("port range {text} runs backwards; write {b}-{a}"));
            }
            Ok((a, b))
        }
        None => {
            let p = parse(text)?;
            Ok((p, p))
        }
    }
}

/// `0` (or `00`...): no fixed host port.
fn is_zero(text: &str) -> bool {
    let text = text.trim();
    !text.is_empty() && text.bytes().all(|b| b == b'0')
}

fn ipv4(text: &str) -> Result<Ipv4Addr, String> {
    let trimmed = text.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = trimmed.parse::<Ipv4Addr>() {
        return Ok(ip);
    }
    if trimmed.parse::<std::net::Ipv6Addr>().is_ok() {
        return Err(format!("{text} is an IPv6 address: {TCP_IPV4_ONLY}"));
    }
    Err(format!("{text:?} is not an IPv4 address"))
}

const DEFAULT_HOST_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 1);

/// One short-syntax entry, expanded into its ports.
pub fn parse_short(spec: &str) -> Result<Vec<Port>, String> {
    let (body, protocol) = match spec.rsplit_once('/') {
        Some((b, p)) => (b, Some(p)),
        None => (spec, None),
    };
    let protocol = match protocol {
        None => Protocol::Tcp,
        Some(p) => {
            self::protocol(p).ok_or_else(|| format!("protocol {p} in {spec:?}: {TCP_IPV4_ONLY}"))?
        }
    };
    if body.contains('[') || body.matches(':').count() > 3 {
        return Err(format!("{spec:?} uses IPv6: {TCP_IPV4_ONLY}"));
    }
    let parts: Vec<&str> = body.split(':').collect();
    let (host_ip, host, guest_ip, guest) = match parts.as_slice() {
        [guest] => (None, None, None, *guest),
        [host, guest] => (None, Some(*host), None, *guest),
        [ip, host, guest] => (Some(*ip), Some(*host), None, *guest),
        [ip, host, guest_ip, guest] => (Some(*ip), Some(*host), Some(*guest_ip), *guest),
        _ => {
            return Err(format!(
                "{spec:?} is not a port mapping; write \"host:guest\""
            ));
        }
    };
    let host_ip = match host_ip {
        Some(ip) if !ip.is_empty() => ipv4(ip)?,
        _ => DEFAULT_HOST_IP,
    };
    let guest_ip = match guest_ip {
        Some(ip) if !ip.is_empty() => Some(ipv4(ip)?),
        _ => None,
    };
    let (g0, g1) = port_range(guest)?;
    // Host port 0, as in Docker, asks for an ephemeral one (picked at `up`).
    let host = host
        .filter(|h| !h.is_empty() && !is_zero(h))
        .map(port_range)
        .transpose()?;
    if let Some((h0, h1)) = host
        && h1 - h0 != g1 - g0
    {
        return Err(format!(
            "{spec:?}: the host range and the guest range must have the same length"
        ));
    }
    Ok((0..=(g1 - g0))
        .map(|offset| Port {
            protocol,
            host_ip,
            host_port: host.map(|(h0, _)| h0 + offset),
            guest_ip,
            guest_port: g0 + offset,
            name: None,
            app_protocol: None,
        })
        .collect())
}

fn parse_long(r: &mut Reader, node: &Node, path: &str) -> Vec<Port> {
    if r.mapping(node, path, keys::PORT_LONG).is_none() {
        return Vec::new();
    }
    let Some(target_node) = node.get("target") else {
        r.error(node, path, "long syntax needs target: (the guest port)");
        return Vec::new();
    };
    let Some(target) = r.unsigned(target_node, &child(path, "target"), 65535) else {
        return Vec::new();
    };
    let mut protocol = Protocol::Tcp;
    if let Some(p) = node.get("protocol")
        && let Some(p_text) = r.string(p, &child(path, "protocol"))
    {
        match self::protocol(&p_text) {
            Some(known) => protocol = known,
            None => r.error(
                p,
                &child(path, "protocol"),
                format!("protocol {p_text}: {TCP_IPV4_ONLY}"),
            ),
        }
    }
    let host_ip = match node
        .get("host_ip")
        .and_then(|n| r.string(n, &child(path, "host_ip")))
    {
        Some(ip) => match ipv4(&ip) {
            Ok(ip) => ip,
            Err(e) => {
                if let Some(n) = node.get("host_ip") {
                    r.error(n, &child(path, "host_ip"), e);
                }
                return Vec::new();
            }
        },
        None => DEFAULT_HOST_IP,
    };
    let published = match node.get("published") {
        Some(n) if !n.is_null() => match r.string(n, &child(path, "published")).map(|t| {
            if is_zero(&t) {
                Ok(None)
            } else {
                port_range(&t).map(Some)
            }
        }) {
            Some(Ok(range)) => range,
            Some(Err(e)) => {
                r.error(n, &child(path, "published"), e);
                return Vec::new();
            }
            None => return Vec::new(),
        },
        _ => None,
    };
    let name = r.opt_string(node.get("name"), &child(path, "name"));
    let app_protocol = r.opt_string(node.get("app_protocol"), &child(path, "app_protocol"));
    let guest_port = target as u16;
    if guest_port == 0 {
        r.error(
            target_node,
            &child(path, "target"),
            "must be a port number (1-65535)",
        );
        return Vec::new();
    }
    // A published range maps every host port to the same target.
    let hosts: Vec<Option<u16>> = match published {
        Some((a, b)) => (a..=b).map(Some).collect(),
        None => vec![None],
    };
    hosts
        .into_iter()
        .map(|host_port| Port {
            protocol,
            host_ip,
            host_port,
            guest_ip: None,
            guest_port,
            name: name.clone(),
            app_protocol: app_protocol.clone(),
        })
        .collect()
}

pub fn decode_ports(r: &mut Reader, node: &Node, path: &str) -> Vec<Port> {
    let mut out = Vec::new();
    for (i, entry) in r.list(node, path).iter().enumerate() {
        let entry_path = item(path, i);
        match &entry.kind {
            Kind::Scalar { text, .. } => match parse_short(text) {
                Ok(ports) => out.extend(ports),
                Err(e) => r.error(entry, &entry_path, e),
            },
            Kind::Map(_) => out.extend(parse_long(r, entry, &entry_path)),
            _ => r.error(
                entry,
                &entry_path,
                "must be \"host:guest\" or a mapping with target:",
            ),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(spec: &str) -> (Ipv4Addr, Option<u16>, Option<Ipv4Addr>, u16) {
        let ports = parse_short(spec).unwrap();
        assert_eq!(ports.len(), 1, "{spec}");
        let p = &ports[0];
        (p.host_ip, p.host_port, p.guest_ip, p.guest_port)
    }

    #[test]
    fn short_syntax_variants() {
        let lo = Ipv4Addr::new(127, 0, 0, 1);
        assert_eq!(one("8080:80"), (lo, Some(8080), None, 80));
        assert_eq!(one("80"), (lo, None, None, 80));
        assert_eq!(one("8080:80/tcp"), (lo, Some(8080), None, 80));
        assert_eq!(
            one("0.0.0.0:8080:80"),
            (Ipv4Addr::UNSPECIFIED, Some(8080), None, 80)
        );
        assert_eq!(one("127.0.0.1::80"), (lo, None, None, 80));
        assert_eq!(
            one("10.0.0.1:8080:10.10.0.9:80"),
            (
                Ipv4Addr::new(10, 0, 0, 1),
                Some(8080),
                Some(Ipv4Addr::new(10, 10, 0, 9)),
                80
            )
        );
    }

    #[test]
    fn ranges_expand_pairwise() {
        let ports = parse_short("8080-8081:80-81").unwrap();
        let pairs: Vec<(Option<u16>, u16)> =
            ports.iter().map(|p| (p.host_port, p.guest_port)).collect();
        assert_eq!(pairs, [(Some(8080), 80), (Some(8081), 81)]);
        assert!(
            parse_short("8080-8082:80-81")
                .unwrap_err()
                .contains("same length")
        );
    }

    #[test]
    fn udp_is_accepted() {
        let ports = parse_short("5353:53/udp").unwrap();
        assert_eq!(
            (ports[0].protocol, ports[0].host_port, ports[0].guest_port),
            (Protocol::Udp, Some(5353), 53)
        );
        assert_eq!(parse_short("80/tcp").unwrap()[0].protocol, Protocol::Tcp);
    }

    #[test]
    fn sctp_and_ipv6_are_rejected() {
        assert!(
            parse_short("53:53/sctp")
                .unwrap_err()
                .contains("TCP and UDP over IPv4 only")
        );
        assert!(
            parse_short("[::1]:8080:80")
                .unwrap_err()
                .contains("TCP and UDP over IPv4 only")
        );
        assert!(
            parse_short("::1:8080:80")
                .unwrap_err()
                .contains("TCP and UDP over IPv4 only")
        );
        assert!(parse_short("x:80").unwrap_err().contains("not a port"));
    }
}
