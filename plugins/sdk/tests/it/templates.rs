//! Templates through the public API: the messages users see, and the cost of
//! rendering many properties with one context.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use holo_plugin::facts::Facts;
use holo_plugin::template::TemplateContext;

fn context() -> TemplateContext {
    let facts: toml::Table =
        toml::from_str("hostname = \"web01\"\n[os]\nid = \"debian\"\n").expect("facts");
    let data: toml::Table = toml::from_str("port = 8080\n").expect("data");
    TemplateContext::new(Facts::from_table(facts), data, BTreeMap::new())
}

#[test]
fn messages_show_the_whole_tag_and_say_what_to_do() {
    let ctx = context();
    let cases = [
        (
            "{{ data.missing }}",
            1,
            "in `{{ data.missing }}`: `data.missing` is undefined; define it in etc/holo/data.toml",
        ),
        (
            "a\nx {{ facts.os.nope }} y",
            2,
            "in `{{ facts.os.nope }}`: `facts.os.nope` is undefined;",
        ),
        (
            "{% for x in data.nope %}{% endfor %}",
            1,
            "in `{% for x in data.nope %}`: `data.nope` is undefined;",
        ),
        (
            "{{ data.port ",
            1,
            "in `{{ data.port`: template syntax error: unexpected end of input",
        ),
        ("{{ data.port | nosuchfilter }}", 1, "unknown filter"),
        (
            "{{ lookup('facts.zzz') }}",
            1,
            "in `{{ lookup('facts.zzz') }}`: lookup('facts.zzz') found nothing; the path starts with facts, data or env, or give a default: lookup('facts.zzz', 'fallback')",
        ),
    ];
    for (text, line, expected) in cases {
        let err = ctx.render(text).expect_err(text);
        assert!(
            err.to_string().starts_with(expected) || err.to_string().contains(expected),
            "{text:?} gave {err}"
        );
        assert_eq!(err.line(), line, "{text:?}");
    }
}

#[test]
fn ten_thousand_renders_stay_cheap() {
    let ctx = context();
    let started = Instant::now();
    for index in 0..10_000 {
        let plain = format!("/srv/files/{index}");
        assert_eq!(ctx.render(&plain).expect("plain"), plain);
        let templated = ctx
            .render(&format!(
                "{index} on {{{{ facts.hostname }}}}:{{{{ data.port }}}}"
            ))
            .expect("template");
        assert_eq!(templated, format!("{index} on web01:8080"));
    }
    let elapsed = started.elapsed();
    // Measured ~0.2 s unoptimised; the bound only catches a per-render
    // regression such as reloading facts, on a busy shared machine.
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
}
