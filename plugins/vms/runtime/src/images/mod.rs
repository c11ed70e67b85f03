//! Images: the verified image cache, `holos pull` and the base images `up`
//! uses (`cache`), and `holos.images.lock` (`lock`).

pub mod cache;
pub mod lock;
