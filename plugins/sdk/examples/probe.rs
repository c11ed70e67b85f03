//! holo-probe: a plugin for the SDK's own tests. Each `[[probe]]` table
//! lists `steps` that apply runs in order: `out:TEXT` and `err:TEXT` print a
//! line, `child:TEXT` and `child-err:TEXT` print it from a child process,
//! `sleep` waits 50 ms, `fail:TEXT` returns an error, `panic` panics.

use std::process::ExitCode;
use std::time::Duration;

use holo_plugin::process::Command;
use holo_plugin::resources::{self, Resource};
use holo_plugin::{EntityCtx, Env, Error, Mode, Outcome, Plugin, Result, Scanned};
use serde::Deserialize;

#[derive(Deserialize)]
struct Probe {
    name: String,
    steps: Vec<String>,
}

impl Resource for Probe {
    const KIND: &'static str = "probe";
    fn entity_id(&self) -> String {
        format!("probe:{}", self.name)
    }
}

struct ProbePlugin;

impl Plugin for ProbePlugin {
    const ID: &'static str = "probe";
    type Spec = Vec<String>;

    fn scan(&self, env: &Env) -> Result<Vec<Scanned<Vec<String>>>> {
        Ok(resources::load::<Probe>(env)?
            .iter()
            .map(|declared| declared.scanned(declared.resource.steps.clone()))
            .collect())
    }

    fn apply(&self, _: &Env, entity: &EntityCtx<Vec<String>>, _: Mode) -> Result<Outcome> {
        for step in entity.spec.iter().flatten() {
            let (verb, text) = step.split_once(':').unwrap_or((step.as_str(), ""));
            match verb {
                "out" => println!("{text}"),
                "err" => eprintln!("{text}"),
                "child" => Command::new("echo").arg(text).run_forwarded_checked()?,
                "child-err" => Command::shell("echo \"$0\" >&2")
                    .arg(text)
                    .run_forwarded_checked()?,
                "sleep" => std::thread::sleep(Duration::from_millis(50)),
                "fail" => return Err(Error::new(text)),
                "panic" => panic!("probe panics: {text}"),
                _ => return Err(Error::new(format!("{}: unknown step {step}", entity.id))),
            }
        }
        Ok(Outcome::Changed)
    }
}

fn main() -> ExitCode {
    holo_plugin::run(ProbePlugin)
}
