//! The plugin's two output channels towards the driver: the scan report on
//! stdout, and the structured messages on file descriptor 3.

use std::io::Write;
use std::os::fd::{BorrowedFd, RawFd};
use std::path::Path;

use crate::error::{Error, Result};
use crate::plugin::Scanned;

/// The descriptor the driver reads structured messages from.
const FD3: RawFd = 3;

/// The scan report for `entities`. `REQUIRES:`/`SUBSCRIBES:` lines are
/// written only when `with_order` (the driver announced the `order`
/// extension). Info lines with an empty value are left out, because the
/// protocol's `key: value` form cannot carry them.
pub fn scan_report<S>(entities: &[Scanned<S>], with_order: bool) -> Result<String> {
    // About what an entity of holo-file takes; pages never written cost
    // nothing, and growing would copy the whole report.
    let mut report = String::with_capacity(entities.len() * 512);
    for entity in entities {
        append_entity(&mut report, entity, with_order)?;
    }
    Ok(report)
}

/// Writes a scan report's text to `out`.
pub fn write_report_text(out: &mut impl Write, report: &str) -> Result<()> {
    out.write_all(report.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|err| Error::new(format!("cannot write the scan report to stdout: {err}")))
}

fn append_entity<S>(report: &mut String, entity: &Scanned<S>, with_order: bool) -> Result<()> {
    check_entity_id(&entity.id)?;
    report.push_str("ENTITY: ");
    report.push_str(&entity.id);
    report.push('\n');
    for source in &entity.sources {
        push_line(report, "SOURCE", &source.to_string_lossy());
    }
    if let Some(action) = &entity.action {
        let value = match &action.reason {
            Some(reason) => format!("{} ({reason})", action.verb),
            None => action.verb.clone(),
        };
        push_line(report, "ACTION", &value);
    }
    for (key, value) in &entity.info {
        if key.is_empty() || key.contains([':', '\n']) || key.trim() != key {
            return Err(Error::new(format!(
                "entity {}: info key {key:?} cannot be written to a scan report; use a key without ':', newline or surrounding spaces",
                entity.id
            )));
        }
        push_line(report, key, value);
    }
    if with_order {
        for required in &entity.requires {
            check_reference(&entity.id, required)?;
            push_line(report, "REQUIRES", required);
        }
        for subscribed in &entity.subscribes {
            check_reference(&entity.id, subscribed)?;
            push_line(report, "SUBSCRIBES", subscribed);
        }
    }
    Ok(())
}

/// Appends `key: value`, flattening newlines so that the line stays one line.
fn push_line(report: &mut String, key: &str, value: &str) {
    let value = value.trim();
    if value.is_empty() {
        return;
    }
    report.push_str(key);
    report.push_str(": ");
    if value.contains('\n') {
        report.push_str(&value.replace('\n', "\\n"));
    } else {
        report.push_str(value);
    }
    report.push('\n');
}

/// An entity id must be one line and must not look like a path.
pub fn check_entity_id(id: &str) -> Result<()> {
    if id.is_empty() || id.contains('\n') || id.trim() != id {
        return Err(Error::new(format!(
            "invalid entity id {id:?}: it must be one non-empty line without surrounding spaces"
        )));
    }
    if id.starts_with('/') || id.starts_with("./") || id.starts_with("../") {
        return Err(Error::new(format!(
            "invalid entity id {id:?}: it looks like a path; use the form type:identifier"
        )));
    }
    Ok(())
}

fn check_reference(entity: &str, reference: &str) -> Result<()> {
    check_entity_id(reference).map_err(|err| err.context(format!("entity {entity}")))
}

/// Whether file descriptor 3 is open (it is not when a plugin runs by hand).
pub fn fd3_is_open() -> bool {
    nix::fcntl::fcntl(fd3(), nix::fcntl::FcntlArg::F_GETFD).is_ok()
}

/// Called once at startup. Marks FD 3 close-on-exec, so that a daemon a
/// plugin starts cannot hold the driver's message pipe open. When FD 3 is
/// closed (a plugin run by hand), `/dev/null` takes its place, so that no
/// file the plugin opens later lands on descriptor 3 and receives messages.
pub(crate) fn prepare_fd3() {
    use nix::fcntl::{FcntlArg, FdFlag, fcntl};
    if fd3_is_open() {
        let _ = fcntl(fd3(), FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC));
        return;
    }
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        use std::os::fd::AsRawFd;
        if null.as_raw_fd() != FD3 {
            // Keep /dev/null on FD 3 itself; `null` is closed when dropped.
            if let Ok(fd) = fcntl(&null, FcntlArg::F_DUPFD_CLOEXEC(FD3))
                && fd != FD3
            {
                use std::os::fd::FromRawFd;
                // SAFETY: fcntl just returned this descriptor; nothing else owns it.
                drop(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) });
            }
        } else {
            let _ = fcntl(&null, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC));
            std::mem::forget(null);
        }
    }
}

fn fd3() -> BorrowedFd<'static> {
    // SAFETY: only ever used for fcntl/write; an fd 3 that is closed makes
    // those calls fail with EBADF, which callers treat as "not open".
    unsafe { BorrowedFd::borrow_raw(FD3) }
}

/// Writes `bytes` on FD 3 in full. A closed FD 3 is skipped silently.
pub fn fd3_write(bytes: &[u8]) -> Result<()> {
    let mut rest = bytes;
    while !rest.is_empty() {
        match nix::unistd::write(fd3(), rest) {
            Ok(0) => break,
            Ok(written) => rest = &rest[written..],
            Err(nix::errno::Errno::EINTR) => continue,
            Err(nix::errno::Errno::EBADF) => return Ok(()),
            Err(err) => {
                return Err(Error::new(format!(
                    "cannot write to file descriptor 3 (the driver's message channel): {err}"
                )));
            }
        }
    }
    Ok(())
}

/// Writes one FD 3 message line such as `not changed`.
pub fn fd3_message(message: &str) -> Result<()> {
    fd3_write(format!("{message}\n").as_bytes())
}

/// Writes the two NUL-terminated diff paths on FD 3: desired state, then
/// current; then, when there are any and the driver announced `diff-header`,
/// the header lines as a third field.
pub fn fd3_diff(desired: &Path, current: &Path, header: &[String], env: &crate::Env) -> Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let mut bytes = Vec::new();
    bytes.extend_from_slice(desired.as_os_str().as_bytes());
    bytes.push(0);
    bytes.extend_from_slice(current.as_os_str().as_bytes());
    bytes.push(0);
    if !header.is_empty() && env.has_extension(holo_protocol::extension::DIFF_HEADER) {
        for line in header {
            bytes.extend_from_slice(line.as_bytes());
            bytes.push(b'\n');
        }
        bytes.push(0);
    }
    fd3_write(&bytes)
}

/// Writes several diffs on FD 3 (the `diff-files` extension): one diff
/// writes as [`fd3_diff`] does; several write three NUL-terminated fields
/// each, desired path, current path and header lines (empty when there are
/// none or the driver did not announce `diff-header`).
pub fn fd3_diff_files(diffs: &[crate::plugin::Diff], env: &crate::Env) -> Result<()> {
    use std::os::unix::ffi::OsStrExt;
    if let [diff] = diffs {
        return fd3_diff(&diff.desired, &diff.current, &diff.header, env);
    }
    let with_header = env.has_extension(holo_protocol::extension::DIFF_HEADER);
    let mut bytes = Vec::new();
    for diff in diffs {
        bytes.extend_from_slice(diff.desired.as_os_str().as_bytes());
        bytes.push(0);
        bytes.extend_from_slice(diff.current.as_os_str().as_bytes());
        bytes.push(0);
        if with_header {
            for line in &diff.header {
                bytes.extend_from_slice(line.as_bytes());
                bytes.push(b'\n');
            }
        }
        bytes.push(0);
    }
    fd3_write(&bytes)
}

/// For an entity that is not a file: writes the desired and the current state
/// as text below `$HOLO_CACHE_DIR/diff/` (`<encoded id>.desired` and
/// `.current`) and returns the two paths for [`crate::Plugin::diff`]. A side
/// given as `None` (no desired state, or nothing there) is `/dev/null`.
pub fn diff_texts(
    env: &crate::Env,
    id: &str,
    desired: Option<&str>,
    current: Option<&str>,
) -> Result<(std::path::PathBuf, std::path::PathBuf)> {
    let dir = env.cache_dir.join("diff");
    let write_side = |text: Option<&str>, suffix: &str| -> Result<std::path::PathBuf> {
        let Some(text) = text else {
            return Ok(std::path::PathBuf::from("/dev/null"));
        };
        std::fs::create_dir_all(&dir).map_err(|err| Error::io("create directory", &dir, &err))?;
        let path = dir.join(crate::state::entity_file_name(id, &format!(".{suffix}")));
        std::fs::write(&path, text).map_err(|err| Error::io("write", &path, &err))?;
        Ok(path)
    };
    Ok((
        write_side(desired, "desired")?,
        write_side(current, "current")?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(entities: &[Scanned<()>], with_order: bool) -> String {
        scan_report(entities, with_order).expect("report is valid")
    }

    #[test]
    fn report_lists_entity_source_action_info_in_order() {
        let entity = Scanned::new("demo:a", ())
            .source("/res/00.toml")
            .info("found in", "/res/00.toml")
            .info("empty", "")
            .info("value", "x\ny")
            .requires("demo:b");
        let orphan = Scanned::<()>::orphan("demo:z");
        assert_eq!(
            report(&[entity.clone(), orphan], false),
            "ENTITY: demo:a\nSOURCE: /res/00.toml\nfound in: /res/00.toml\nvalue: x\\ny\n\
             ENTITY: demo:z\nACTION: Scrubbing (resource was deleted)\n"
        );
        assert_eq!(
            report(&[entity], true),
            "ENTITY: demo:a\nSOURCE: /res/00.toml\nfound in: /res/00.toml\nvalue: x\\ny\nREQUIRES: demo:b\n"
        );
    }

    #[test]
    fn diff_texts_writes_both_sides_or_dev_null() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = dir.path().to_path_buf();
        let env = crate::Env::from_lookup("demo", |key| {
            (key == "HOLO_CACHE_DIR").then(|| cache.clone().into())
        })
        .expect("env");
        let (desired, current) =
            diff_texts(&env, "vm:proj/web", Some("image = \"a\"\n"), None).expect("written");
        assert_eq!(desired, dir.path().join("diff/vm:proj%2Fweb.desired"));
        assert_eq!(
            std::fs::read_to_string(&desired).expect("read"),
            "image = \"a\"\n"
        );
        assert_eq!(current, Path::new("/dev/null"));
        let (desired, current) = diff_texts(&env, "demo:x", None, Some("y")).expect("written");
        assert_eq!(desired, Path::new("/dev/null"));
        assert_eq!(std::fs::read_to_string(current).expect("read"), "y");
    }

    #[test]
    fn path_like_ids_and_bad_keys_are_rejected() {
        let err = scan_report(&[Scanned::new("/etc/x", ())], false).expect_err("path-like id");
        assert!(err.message().contains("looks like a path"));
        let bad_key = Scanned::new("demo:a", ()).info("a:b", "v");
        let err = scan_report(&[bad_key], false).expect_err("bad key");
        assert!(err.message().contains("demo:a"));
    }
}
