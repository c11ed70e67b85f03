//! Operating a project (`ps --json` and `inspect`, `volumes ls|rm`) and the
//! host (`doctor`, `devices`).

pub mod devices;
pub mod doctor;
pub mod inspect;
pub mod volumes;
