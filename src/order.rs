//! The order extension: entities move after everything they `REQUIRES` or
//! `SUBSCRIBES` to. The sort and its cycle message are holo-protocol's,
//! shared with the SDK's one-off runs.

pub use holo_protocol::order::{cycle_message, sort};
