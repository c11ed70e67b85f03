//! Images: the verified image cache, `holos pull` and the base images `up`
//! uses (`cache`), `holos.images.lock` (`lock`), and `holos verify`
//! (`verify`).

pub mod cache;
pub mod lock;
pub mod verify;
