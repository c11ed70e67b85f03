//! The names of the facts that templates see, for the SDK that gathers
//! them and for the driver's `import-ccm`, which maps CCM's names onto
//! them.

/// Facts gathered in both modes (in test mode from files below the root).
pub const HOST_FACTS: &[&str] = &["hostname", "os", "arch", "kernel"];

/// Facts gathered only on a real machine: test mode leaves them out, so
/// that a run does not depend on the machine it runs on, and a test sets
/// them in `etc/holo/facts.toml`.
pub const MACHINE_FACTS: &[&str] = &[
    "cpus",
    "memory_mb",
    "interfaces",
    "virtual",
    "is_virtual",
    "disks",
    "mountpoints",
    "default_route",
    "primary_ip",
    "uptime_seconds",
    "processor_model",
];

/// Whether `name` is the top-level name of a fact that holo gathers.
pub fn is_gathered(name: &str) -> bool {
    HOST_FACTS.contains(&name) || MACHINE_FACTS.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_and_machine_facts_are_gathered_and_others_not() {
        assert!(is_gathered("hostname") && is_gathered("primary_ip"));
        assert!(!is_gathered("host") && !is_gathered("data"));
    }
}
