//! Operating a project (`ps --json` and `inspect`, `volumes ls|rm`,
//! `snapshots`) and the
//! host (`doctor`, `devices`, the systemd unit of `install`).

pub mod capacity;
pub mod control;
pub mod devices;
pub mod doctor;
pub mod inspect;
pub mod install;
pub mod project_view;
pub mod snapshots;
pub mod volumes;
