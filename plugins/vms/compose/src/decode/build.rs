//! `build:` and `dockerfile:`: the Dockerfile a service is provisioned from.

use std::path::Path;

use super::reader::{Reader, child};
use crate::dockerfile::{self, Provisioning};
use crate::keys;
use crate::yaml::{Kind, Node};

/// `build:` / `dockerfile:` into provisioning steps.
pub fn decode_build(r: &mut Reader, node: &Node, path: &str) -> Option<Provisioning> {
    let (text, context, origin) = if let Some(build) = node.get("build").filter(|n| !n.is_null()) {
        let bpath = child(path, "build");
        let (context, dockerfile, inline) = match &build.kind {
            Kind::Scalar { text, .. } => (text.clone(), None, None),
            Kind::Map(_) => {
                r.mapping(build, &bpath, keys::BUILD)?;
                let context = r
                    .opt_string(build.get("context"), &child(&bpath, "context"))
                    .unwrap_or_else(|| ".".into());
                let dockerfile =
                    r.opt_string(build.get("dockerfile"), &child(&bpath, "dockerfile"));
                let inline = r.opt_string(
                    build.get("dockerfile_inline"),
                    &child(&bpath, "dockerfile_inline"),
                );
                if let Some(additional) = build.get("additional_contexts") {
                    r.key_values(additional, &child(&bpath, "additional_contexts"), &['=']);
                }
                (context, dockerfile, inline)
            }
            _ => {
                r.error(
                    build,
                    &bpath,
                    "must be a context path or a mapping with context:",
                );
                return None;
            }
        };
        let context = std::path::PathBuf::from(context);
        match inline {
            Some(text) => (text, context, "dockerfile_inline".to_string()),
            None => {
                let file = context.join(dockerfile.unwrap_or_else(|| "Dockerfile".into()));
                match std::fs::read_to_string(&file) {
                    Ok(text) => (text, context, file.display().to_string()),
                    Err(e) => {
                        r.error(
                            build,
                            &bpath,
                            format!(
                                "cannot read {}: {e}; fix context/dockerfile",
                                file.display()
                            ),
                        );
                        return None;
                    }
                }
            }
        }
    } else if let Some(dockerfile) = node.get("dockerfile").filter(|n| !n.is_null()) {
        let dpath = child(path, "dockerfile");
        let file = std::path::PathBuf::from(r.string(dockerfile, &dpath)?);
        let context = file.parent().map(Path::to_path_buf).unwrap_or_default();
        match std::fs::read_to_string(&file) {
            Ok(text) => (text, context, file.display().to_string()),
            Err(e) => {
                r.error(
                    dockerfile,
                    &dpath,
                    format!("cannot read {}: {e}; fix the path", file.display()),
                );
                return None;
            }
        }
    } else {
        return None;
    };
    match dockerfile::translate(&text, &context) {
        Ok(p) => Some(p),
        Err(errors) => {
            let at = node
                .get("build")
                .or_else(|| node.get("dockerfile"))
                .unwrap_or(node);
            for e in errors {
                r.error(
                    at,
                    &child(path, "build"),
                    format!("{origin}:{}: {}", e.line, e.message),
                );
            }
            None
        }
    }
}
