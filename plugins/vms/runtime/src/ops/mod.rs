//! Operating a project (`ps --json` and `inspect`, `volumes ls|rm`) and the
//! host (`doctor`).

pub mod doctor;
pub mod inspect;
pub mod volumes;
