//! Loading the run: holorc, plugin binaries and their `info`, the plugin
//! directories, generators and the virtual resource root.

use crate::holorc;
use crate::output::{Output, Stream};
use crate::paths;
use crate::plugin::{Plugin, PluginDirs};
use crate::run_dir::RunDir;

/// Exit code for holorc, plugin, scan, selector and lock errors (as Holo 3).
pub const EXIT_FATAL: i32 = 255;

/// Reads holorc and loads every plugin. Errors are printed; the caller exits
/// with the returned code.
pub fn load_plugins(run_dir: &RunDir, out: &mut Output) -> Result<LoadedPlugins, i32> {
    let root = &run_dir.root;
    let holorc = holorc::read(root);
    let mut plugins = Vec::new();
    let mut dirs_to_create = Vec::new();
    let mut state_dirs = Vec::new();
    let mut missing_plugins = false;
    for decl in holorc.decls {
        if let Err(e) = std::fs::metadata(&decl.binary) {
            if e.kind() == std::io::ErrorKind::NotFound {
                out.error(Stream::Err, &format!("{}: file not found", decl.binary));
                out.warn(Stream::Err, &format!("Skipping plugin: {}", decl.id));
                missing_plugins = true;
                continue;
            }
            out.error(
                Stream::Err,
                &format!("stat {}: {}", decl.binary, paths::errno_text(&e)),
            );
            return Err(EXIT_FATAL);
        }
        let static_dir =
            paths::normalize(&paths::join(root, &format!("usr/share/holo/{}", decl.id)));
        let dirs = PluginDirs {
            root: paths::normalize(root),
            cache: paths::normalize(&paths::join(&run_dir.cache, &decl.id)),
            // Holo 3 runs `info` with the static directory; the resource
            // directory is settled in `prepare_resources`.
            resource: static_dir.clone(),
            resource_origin: static_dir,
            state: paths::normalize(&paths::join(root, &format!("var/lib/holo/{}", decl.id))),
        };
        let loaded = Plugin::load(&decl.id, &decl.binary, &dirs, |line| {
            crate::apply::plugin_stderr_line(out, line)
        });
        match loaded {
            Ok(plugin) => {
                dirs_to_create.push(dirs.cache);
                state_dirs.push(dirs.state);
                plugins.push(plugin);
            }
            Err(message) => {
                out.error(Stream::Err, &message);
                return Err(EXIT_FATAL);
            }
        }
    }
    if let Some(error) = holorc.error {
        out.error(Stream::Err, &error.message);
        if let Some(hint) = error.hint {
            out.write(Stream::Err, format!("{hint}\n").as_bytes());
        }
        return Err(EXIT_FATAL);
    }
    Ok(LoadedPlugins {
        plugins,
        missing_plugins,
        dirs_to_create,
        state_dirs,
    })
}

/// The plugins, and the cache and state directories to create once every
/// resource directory is known to exist (as Holo 3 does).
pub struct LoadedPlugins {
    pub plugins: Vec<Plugin>,
    /// A declared plugin's binary is missing (`Skipping plugin: ID`): its
    /// entities went unmanaged, so `holo apply` must not exit 0.
    pub missing_plugins: bool,
    dirs_to_create: Vec<String>,
    /// Each plugin's state directory, in the order of `plugins`.
    state_dirs: Vec<String>,
}

/// Runs the generators and settles each plugin's `HOLO_RESOURCE_DIR`: the
/// static directory itself for an `inplace` plugin that no generator wrote
/// for (nothing is copied), else Holo 3's virtual resource directory with
/// the static resources copied in. Every missing static resource directory
/// is reported before the run stops. With `noop` (`apply --noop`), a plugin
/// that declares the `noop` extension gets no state directory created: a
/// dry run leaves the root as it was. Plugins without it get theirs, since
/// holo cannot tell what their scan needs.
pub fn prepare_resources(
    run_dir: &mut RunDir,
    loaded: &mut LoadedPlugins,
    noop: bool,
    out: &mut Output,
) -> Result<(), i32> {
    let mut missing = false;
    for plugin in &loaded.plugins {
        let dir = paths::join(&run_dir.root, &format!("usr/share/holo/{}", plugin.id));
        match std::fs::metadata(&dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                out.error(Stream::Err, &format!("cannot open {dir}: not a directory!"));
                missing = true;
            }
            Err(e) => {
                out.error(
                    Stream::Err,
                    &format!("cannot open {dir}: stat {dir}: {}", paths::errno_text(&e)),
                );
                let advice = format!(
                    "plugin {} needs its resource directory: create {dir} (it may stay empty), or remove the plugin's line from holorc\n",
                    plugin.id
                );
                out.write(Stream::Err, advice.as_bytes());
                missing = true;
            }
        }
    }
    if missing {
        return Err(EXIT_FATAL);
    }
    let state_dirs = loaded
        .plugins
        .iter()
        .zip(&loaded.state_dirs)
        .filter(|(plugin, _)| !(noop && plugin.has_extension(holo_protocol::extension::NOOP)))
        .map(|(_, dir)| dir);
    for dir in loaded.dirs_to_create.iter().chain(state_dirs) {
        if let Err(e) = crate::in_root::create_dir_all(&run_dir.root, dir) {
            out.error(
                Stream::Err,
                &format!("mkdir {dir}: {}", paths::errno_text(&e)),
            );
            return Err(EXIT_FATAL);
        }
    }
    if let Err(message) = run_dir.run_generators(out) {
        out.error(Stream::Err, &message);
        out.end_paragraph(Stream::Err);
        return Err(1);
    }
    for plugin in &mut loaded.plugins {
        if plugin.has_extension(holo_protocol::extension::INPLACE)
            && !run_dir.generated_for(&plugin.id)
        {
            continue;
        }
        if let Err(message) = run_dir.add_static_resources(&plugin.id) {
            // Holo 3 exits 1 here, as for a failing generator.
            out.error(Stream::Err, &message);
            out.end_paragraph(Stream::Err);
            return Err(1);
        }
        let virtual_dir = paths::join(&run_dir.virtual_root, &plugin.id);
        plugin.set_resource_dir(&paths::normalize(&virtual_dir));
    }
    Ok(())
}
