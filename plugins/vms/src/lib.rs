//! holo-vms: the holos compose model and runtime.
