//! holo-package: the `package` plugin for holo. It converges `[[package]]`
//! resources through apt or dnf (or a mock package database in test mode),
//! and owns exact Debian, RPM and CCM-generic version ordering.

pub mod version;
