//! holo-users-groups: Holo 3's plugin of that name, in Rust (being written).
