//! `holo-ID status NAME`: what the plugin reads back, as the `[[KIND]]`
//! table that would declare it.

use crate::env::Env;
use crate::error::{Error, Result};
use crate::plugin::{Plugin, StatusTable};
use std::io::Write;
use std::process::ExitCode;

/// `holo-ID status NAME`: the plugin's [`Plugin::status`] as a `[[KIND]]`
/// table.
pub(crate) fn status<P: Plugin>(plugin: &P, env: &Env, args: &[String]) -> Result<ExitCode> {
    let [name] = args else {
        return Err(Error::new(format!(
            "usage: holo-{} status NAME (exactly one name)",
            P::ID
        )));
    };
    let Some(kind) = plugin.properties().first().map(|(kind, _)| kind.clone()) else {
        return Err(Error::new(format!("holo-{} has no status", P::ID)));
    };
    let Some(found) = plugin.status(env, name) else {
        return Err(Error::new(format!(
            "holo-{} has no status: what it leaves on the system cannot be read back into a [[{kind}]] table",
            P::ID
        )));
    };
    let found = found?;
    print!("{}", render_status(&kind, name, &found)?);
    let _ = std::io::stdout().flush();
    Ok(if found.unknown.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(3)
    })
}

/// The `[[KIND]]` table of `status`: `name`, then the notes and the
/// properties to fill in as comments, then the properties.
pub fn render_status(kind: &str, name: &str, found: &StatusTable) -> Result<String> {
    let table = status_table(kind, name, &found.properties)?;
    let Some((head, rest)) = table.split_once('\n').and_then(|(header, rest)| {
        let (name_line, rest) = rest.split_once('\n')?;
        Some((format!("{header}\n{name_line}\n"), rest.to_string()))
    }) else {
        return Ok(table);
    };
    let mut comments = String::new();
    let lines = found
        .notes
        .iter()
        .flat_map(|note| note.lines().map(str::to_string))
        .chain(
            found
                .unknown
                .iter()
                .map(|(property, what)| format!("{property}: {what}")),
        );
    for line in lines {
        comments.push_str(&format!("# {line}\n").replace("# \n", "#\n"));
    }
    Ok(format!("{head}{comments}{rest}"))
}

/// A `[[KIND]]` table with `name` first, then `properties` (plain values
/// and lists of them) in sorted order.
pub fn status_table(kind: &str, name: &str, properties: &toml::Table) -> Result<String> {
    let mut rest = String::new();
    for (key, value) in properties {
        // A table inside the table is inline, or it would start a table of
        // its own after `[[KIND]]`.
        let holds_table = match value {
            toml::Value::Table(_) => true,
            toml::Value::Array(items) => items.iter().any(toml::Value::is_table),
            _ => false,
        };
        if holds_table {
            let key = toml::Table::from_iter([(key.clone(), toml::Value::Boolean(true))]);
            let key = toml::to_string(&key)
                .map_err(|err| Error::new(format!("cannot write the table: {err}")))?;
            let key = key.trim_end().trim_end_matches("true").trim_end();
            rest.push_str(&format!("{key} {value}\n"));
            continue;
        }
        let one = toml::Table::from_iter([(key.clone(), value.clone())]);
        rest.push_str(
            &toml::to_string(&one)
                .map_err(|err| Error::new(format!("cannot write the table: {err}")))?,
        );
    }
    Ok(format!(
        "[[{kind}]]\nname = {}\n{rest}",
        toml::Value::String(name.to_string())
    ))
}

#[cfg(test)]
#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn status_tables_put_the_name_first() {
        let mut properties = toml::Table::new();
        properties.insert("mode".to_string(), "0644".into());
        properties.insert("ensure".to_string(), "present".into());
        assert_eq!(
            status_table("file", "/etc/motd", &properties).expect("table"),
            "[[file]]\nname = \"/etc/motd\"\nensure = \"present\"\nmode = \"0644\"\n"
        );
    }

    #[test]
    fn tables_inside_status_tables_are_inline() {
        let properties: toml::Table =
            "data = { port = 8080, \"a b\" = [1] }\npost = [{ glob = \"*\" }]\nsource = \"/srv\"\n"
                .parse()
                .expect("toml");
        let text = status_table("scaffold", "/etc/app", &properties).expect("table");
        let parsed: toml::Table = text.parse().expect("parses back");
        assert_eq!(parsed.len(), 1, "{text}");
        let scaffold = &parsed["scaffold"][0];
        assert_eq!(scaffold["data"]["port"].as_integer(), Some(8080));
        assert_eq!(scaffold["data"]["a b"][0].as_integer(), Some(1));
        assert_eq!(scaffold["post"][0]["glob"].as_str(), Some("*"));
        assert_eq!(scaffold["source"].as_str(), Some("/srv"));
    }

    #[test]
    fn status_comments_follow_the_name() {
        let mut properties = toml::Table::new();
        properties.insert("checksum".to_string(), "abc".into());
        let found = StatusTable {
            properties,
            notes: vec!["last run: ok".to_string()],
            unknown: vec![("url".to_string(), "fill in the URL".to_string())],
        };
        assert_eq!(
            render_status("archive", "/a.tgz", &found).expect("table"),
            "[[archive]]\nname = \"/a.tgz\"\n# last run: ok\n# url: fill in the URL\nchecksum = \"abc\"\n"
        );
    }
}
