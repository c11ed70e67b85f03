//! `holos inspect PROJECT` and `holos ps` without a compose file: projects
//! as the state directory records them, whatever the current directory.

use holo_plugin::command::shell_quote;
use serde::Serialize;

use crate::error::Error;
use crate::ops::inspect::{InstanceView, view};
use crate::ops::volumes::{self, VolumeInfo};
use crate::qemu;
use crate::state::{Layout, ProjectRecord};

/// One project: its record, each instance with its QEMU command line and
/// SSH command, and its volumes.
#[derive(Debug, Serialize)]
pub struct ProjectView {
    pub project: String,
    /// The compose files `up` read.
    pub files: Vec<String>,
    pub spec_hash: String,
    /// The resolved manifest from those files, when they still resolve;
    /// the caller fills it in.
    pub manifest: Option<serde_json::Value>,
    pub instances: Vec<InstanceDetail>,
    pub volumes: Vec<VolumeInfo>,
}

#[derive(Debug, Serialize)]
pub struct InstanceDetail {
    #[serde(flatten)]
    pub view: InstanceView,
    /// The QEMU command line, program first.
    pub qemu_argv: Vec<String>,
    /// How to log in by hand.
    pub ssh_command: String,
}

/// Every instance of every recorded project, by project then start order.
pub fn all_instances(layout: &Layout) -> Result<Vec<InstanceView>, Error> {
    let mut views = Vec::new();
    for project in layout.projects() {
        let Some(record) = ProjectRecord::load(layout, &project)? else {
            continue;
        };
        let mut instances: Vec<_> = record.instances.values().collect();
        instances.sort_by_key(|i| i.start_order);
        views.extend(instances.into_iter().map(|i| view(layout, i)));
    }
    Ok(views)
}

/// The project `name` as recorded; `None` when it has no record.
pub fn project(layout: &Layout, name: &str) -> Result<Option<ProjectView>, Error> {
    let Some(record) = ProjectRecord::load(layout, name)? else {
        return Ok(None);
    };
    let mut instances: Vec<_> = record.instances.values().collect();
    instances.sort_by_key(|i| i.start_order);
    let key = layout.ssh_key(name);
    let details = instances
        .into_iter()
        .map(|i| {
            let mut argv = vec![qemu::qemu_system_program()];
            argv.extend(qemu::argv(&i.spec));
            InstanceDetail {
                view: view(layout, i),
                qemu_argv: argv,
                ssh_command: format!(
                    "ssh -i {} -p {} -o StrictHostKeyChecking=no {}@127.0.0.1",
                    shell_quote(&key.to_string_lossy()),
                    i.spec.ssh_port,
                    shell_quote(&i.spec.user)
                ),
            }
        })
        .collect();
    Ok(Some(ProjectView {
        project: record.project.clone(),
        files: record.files.clone(),
        spec_hash: record.spec_hash.clone(),
        manifest: None,
        instances: details,
        volumes: volumes::list(layout, name)?,
    }))
}

/// `holos inspect PROJECT` without `--json`.
pub fn readable(p: &ProjectView) -> String {
    let mut out = format!(
        "project:   {}\nfiles:     {}\nspec hash: {}\n",
        p.project,
        if p.files.is_empty() {
            "-".to_string()
        } else {
            p.files.join(", ")
        },
        p.spec_hash
    );
    for i in &p.instances {
        let v = &i.view;
        out.push_str(&format!("\ninstance {} ({})\n", v.instance, v.service));
        let state = match v.pid {
            Some(pid) => format!("{} (pid {pid})", v.state),
            None => v.state.to_string(),
        };
        out.push_str(&format!("  state:   {state}\n"));
        out.push_str(&format!("  health:  {}\n", v.health.unwrap_or("-")));
        out.push_str(&format!("  ip:      {}\n", v.ip));
        out.push_str(&format!("  ssh:     {}\n", i.ssh_command));
        let ports: Vec<String> = v
            .ports
            .iter()
            .map(|f| format!("{}:{}->{}/tcp", f.host_ip, f.host_port, f.guest_port))
            .collect();
        out.push_str(&format!(
            "  ports:   {}\n",
            if ports.is_empty() {
                "-".to_string()
            } else {
                ports.join(", ")
            }
        ));
        for m in &v.volumes {
            let mode = if m.read_only { "ro" } else { "rw" };
            out.push_str(&format!("  volume:  {} at {} ({mode})\n", m.name, m.target));
        }
        let argv: Vec<String> = i.qemu_argv.iter().map(|a| shell_quote(a)).collect();
        out.push_str(&format!("  qemu:    {}\n", argv.join(" ")));
    }
    if !p.volumes.is_empty() {
        out.push('\n');
        out.push_str(&volumes::table(&p.volumes));
    }
    out
}
