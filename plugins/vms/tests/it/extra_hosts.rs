//! `extra_hosts` as the guest's `/etc/hosts` gets it: several addresses
//! are several lines, `host-gateway` is the host as the guest sees it
//! through QEMU's user network, and a value that is no address is refused
//! at its line.

use crate::common::project;

fn hosts(yaml: &str) -> Vec<(String, String)> {
    project(yaml).manifest().services[0]
        .extra_hosts
        .iter()
        .map(|e| (e.names.join(" "), e.ip.clone()))
        .collect()
}

#[test]
fn several_addresses_split_and_host_gateway_is_the_user_network_host() {
    let got = hosts(
        "services:\n  a:\n    image: alpine\n    extra_hosts: [\"h=1.2.3.4,5.6.7.8\", \"gw=host-gateway\", \"six=[::1]\"]\n",
    );
    let want = [
        ("h", "1.2.3.4"),
        ("h", "5.6.7.8"),
        ("gw", "10.0.2.2"),
        ("six", "::1"),
    ];
    assert_eq!(
        got,
        want.map(|(h, ip)| (h.to_string(), ip.to_string())).to_vec()
    );
    let got = hosts("services:\n  a:\n    image: alpine\n    extra_hosts: {gw: host-gateway}\n");
    assert_eq!(got, [("gw".to_string(), "10.0.2.2".to_string())]);
}

#[test]
fn a_value_that_is_no_address_is_refused_at_its_line() {
    let errors = project(
        "services:\n  a:\n    image: alpine\n    extra_hosts:\n      - \"ok=1.2.3.4\"\n      - \"bad=not-an-ip\"\n",
    )
    .errors();
    assert_eq!(
        errors,
        "DIR/holos.yaml:6:9: services.a.extra_hosts[1]: \"not-an-ip\" is not an IP address or host-gateway; write host=1.2.3.4 (several separated by commas)"
    );
}
