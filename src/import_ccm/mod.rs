//! `holo import-ccm MANIFEST.yaml [--to DIR]`: a CCM manifest as holo
//! resource files (`usr/share/holo/KIND/STEM.toml`) and data
//! (`etc/holo/data.toml`). Everything is converted before anything is
//! written: a manifest with a part that holo cannot express writes nothing
//! and lists each such part with its line.

mod expr;
mod manifest;
mod model;
mod resources;
mod sources;
mod toml_out;

use model::Import;
use std::path::{Path, PathBuf};
use toml_out::Value;

const USAGE: &str = "usage: holo import-ccm MANIFEST.yaml [--to DIR] [--render]";

/// What the command line asks for.
struct Request {
    manifest: PathBuf,
    to: PathBuf,
    /// `--render`: print the files instead of writing them.
    render: bool,
}

/// Entry point of `holo import-ccm`; returns the exit code.
pub fn main(args: &[String]) -> i32 {
    let request = match parse_args(args) {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!("holo import-ccm: {message}");
            return 2;
        }
    };
    match import(&request) {
        Ok(()) => 0,
        Err(lines) => {
            for line in lines {
                eprintln!("!! {line}");
            }
            1
        }
    }
}

/// The manifest and the target directory (`--to`, else `HOLO_ROOT_DIR`,
/// else `/`).
fn parse_args(args: &[String]) -> Result<Request, String> {
    let mut manifest = None;
    let mut to = None;
    let mut render = false;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--to" => match rest.next() {
                Some(dir) if !dir.is_empty() => to = Some(PathBuf::from(dir)),
                _ => return Err(format!("--to needs a directory, as in `--to DIR`; {USAGE}")),
            },
            "--render" => render = true,
            other if other.starts_with('-') => {
                return Err(format!("unknown option {other}; {USAGE}"));
            }
            _ if manifest.is_some() => return Err(format!("one manifest at a time; {USAGE}")),
            _ => manifest = Some(PathBuf::from(arg)),
        }
    }
    let manifest = manifest.ok_or_else(|| USAGE.to_string())?;
    let to = to
        .or_else(|| {
            std::env::var_os("HOLO_ROOT_DIR")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
        .unwrap_or_else(|| PathBuf::from("/"));
    Ok(Request {
        manifest,
        to,
        render,
    })
}

/// Converts and writes; the paths written, or the lines that say why not.
fn import(request: &Request) -> Result<(), Vec<String>> {
    let manifest = request.manifest.as_path();
    let shown = manifest.display();
    let text = std::fs::read_to_string(manifest)
        .map_err(|err| vec![format!("cannot read {shown}: {err}")])?;
    let root = holos_compose::yaml::parse_str(&text, manifest)
        .map_err(|diags| diags.iter().map(ToString::to_string).collect::<Vec<_>>())?;
    let mut converted = manifest::read(&root);
    let manifest_dir = manifest.parent().unwrap_or(Path::new("."));
    let bundled = sources::bundled(&mut converted, manifest_dir);
    for (line, note) in &converted.notes {
        eprintln!(">> {shown}:{line}: {note}");
    }
    if !converted.problems.is_empty() {
        let mut lines: Vec<String> = converted
            .problems
            .iter()
            .map(|(line, what)| format!("{shown}:{line}: {what}"))
            .collect();
        lines.push(format!(
            "{shown}: nothing was written; change or remove the parts above"
        ));
        return Err(lines);
    }
    let stem = manifest
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_else(|| "ccm".to_string());
    let mut files = files_of(&converted, &stem, &shown.to_string());
    files.extend(bundled);
    if request.render {
        render(&files);
        return Ok(());
    }
    for path in write_all(&request.to, &files)? {
        println!("wrote {}", path.display());
    }
    Ok(())
}

/// `--render`: each file's path below the target and its text, as CCM's
/// `--render` shows the resolved manifest; a bundled file that is not
/// UTF-8 is named with its size.
fn render(files: &[(PathBuf, Vec<u8>)]) {
    for (path, bytes) in files {
        match std::str::from_utf8(bytes) {
            Ok(text) => print!("==> {} <==\n{text}\n", path.display()),
            Err(_) => println!("==> {} <== ({} bytes)\n", path.display(), bytes.len()),
        }
    }
}

/// Each file to write, relative to the target, with its text.
fn files_of(import: &Import, stem: &str, source: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let header = format!("# Imported from {source} by holo import-ccm.\n");
    let mut files = Vec::new();
    for kind in model::KINDS {
        let tables: Vec<String> = import
            .resources
            .iter()
            .filter(|resource| resource.kind == *kind)
            .map(|resource| format!("\n[[{kind}]]\n{}", toml_out::entries(&resource.properties)))
            .collect();
        if !tables.is_empty() {
            let path = PathBuf::from(format!("usr/share/holo/{kind}/{stem}.toml"));
            files.push((path, format!("{header}{}", tables.concat()).into_bytes()));
        }
    }
    if let Some(data) = data_file(import) {
        files.push((
            PathBuf::from("etc/holo/data.toml"),
            format!("{header}{data}").into_bytes(),
        ));
    }
    files
}

/// holo-data(5)'s `data.toml`, when the manifest has data.
fn data_file(import: &Import) -> Option<String> {
    let mut text = String::new();
    for (section, entries) in [("data", &import.data), ("hierarchy", &import.hierarchy)] {
        if !entries.is_empty() {
            text.push_str(&format!("\n[{section}]\n{}", toml_out::entries(entries)));
        }
    }
    for (level, values) in &import.overrides {
        let values = match values {
            Value::Table(entries) => toml_out::entries(entries),
            other => format!("# not a table: {}\n", toml_out::inline(other)),
        };
        text.push_str(&format!(
            "\n[overrides.{}]\n{values}",
            toml_out::string(level)
        ));
    }
    (!text.is_empty()).then_some(text)
}

/// Writes the files below `to`; refuses before writing any when one exists.
fn write_all(to: &Path, files: &[(PathBuf, Vec<u8>)]) -> Result<Vec<PathBuf>, Vec<String>> {
    let existing: Vec<String> = files
        .iter()
        .map(|(path, _)| to.join(path))
        .filter(|path| path.exists())
        .map(|path| {
            format!(
                "{} exists already; move it away or import with --to another directory",
                path.display()
            )
        })
        .collect();
    if !existing.is_empty() {
        return Err(existing);
    }
    let mut written = Vec::new();
    for (path, text) in files {
        let target = to.join(path);
        crate::run_report::write_atomically(&target, text, true).map_err(|err| vec![err])?;
        written.push(target);
    }
    Ok(written)
}
