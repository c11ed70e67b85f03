//! Credentials in holo-archive: a cross-origin redirect gets none of the
//! headers or basic auth the resource set (two ports on 127.0.0.1 are two
//! origins, and the test reads what the second server received); a URL
//! password with an unencoded `#`, `?` or `/` is refused and never shown;
//! query strings (signed URLs) are redacted in output and state, and a
//! changed one still changes the recorded URL hash.

use crate::support;

use std::fs;

use support::{Format, Item, Root, Route, Server, build};

const ENTITY: &str = "archive:/opt/app.tar.gz";

fn archive() -> Vec<u8> {
    build(
        Format::TarGz,
        &[Item::File("app/README", b"read me\n", 0o644)],
    )
}

fn resource(url: &str, extra: &str) -> String {
    format!(
        "[[archive]]\nname = \"/opt/app.tar.gz\"\nurl = \"{url}\"\nowner = \"app\"\ngroup = \"app\"\n{extra}"
    )
}

/// Every state file's text.
fn state_text(root: &Root) -> String {
    let mut text = String::new();
    for relative in root.tree() {
        let path = root.path(&relative);
        if relative.starts_with("var/lib/holo") && path.is_file() {
            text.push_str(&fs::read_to_string(&path).expect("state"));
        }
    }
    text
}

#[test]
fn a_cross_origin_redirect_receives_none_of_the_resource_headers() {
    let origin = Server::start();
    let mirror = Server::start();
    let mirror_url = mirror.serve("/mirror/app.tar.gz", Route::body(archive()));
    let url = origin.serve(
        "/private/app.tar.gz",
        Route {
            redirect: Some(mirror_url),
            ..Route::default()
        },
    );
    let root = Root::new(&resource(
        &url,
        "username = \"deploy\"\npassword = \"pw-1\"\nheaders = { X-Api-Token = \"tok-1\", PRIVATE-TOKEN = \"tok-2\", X-JFrog-Art-Api = \"tok-3\", X-Trace = \"plain-4\" }\n",
    ));
    let apply = root.op("apply", ENTITY);
    assert!(apply.success, "{}", apply.all());
    assert_eq!(
        fs::read(root.path("opt/app.tar.gz")).expect("archive"),
        archive()
    );
    let first = &origin.requests()[0];
    for name in [
        "authorization",
        "x-api-token",
        "private-token",
        "x-jfrog-art-api",
        "x-trace",
    ] {
        assert!(first.headers.contains_key(name), "the origin gets {name}");
    }
    let received = mirror.requests();
    assert_eq!(received.len(), 1);
    for name in [
        "authorization",
        "cookie",
        "x-api-token",
        "private-token",
        "x-jfrog-art-api",
        "x-trace",
    ] {
        assert!(
            !received[0].headers.contains_key(name),
            "{name} reached the other origin: {:?}",
            received[0].headers
        );
    }
}

#[test]
fn a_password_with_an_unencoded_delimiter_is_refused_and_never_shown() {
    for password in ["pa#ss-word-1", "pa?ss-word-1", "pa/ss-word-1"] {
        let url = format!("https://deploy:{password}@example.com/app.tar.gz");
        let root = Root::new(&resource(&url, ""));
        let scan = root.run(&["scan"]);
        assert!(!scan.success, "{password}: {}", scan.all());
        assert!(
            scan.stderr.contains("archives.toml:1")
                && scan.stderr.contains("percent-encode")
                && scan.stderr.contains("%2F"),
            "{}",
            scan.stderr
        );
        assert!(
            scan.stderr.contains("https://***@example.com/app.tar.gz"),
            "{}",
            scan.stderr
        );
        assert!(!scan.all().contains("ss-word-1"), "{}", scan.all());
        assert!(!state_text(&root).contains("ss-word-1"));
    }
    // Encoded, it is accepted and redacted.
    let root = Root::new(&resource(
        "https://deploy:pa%2Fss-word-1@example.com/app.tar.gz",
        "",
    ));
    let scan = root.run(&["scan"]);
    assert!(scan.success, "{}", scan.all());
    assert!(!scan.all().contains("ss-word-1"), "{}", scan.all());
}

#[test]
fn signed_urls_are_redacted_and_compared_by_hash() {
    let server = Server::start();
    let path = "/bucket/app.tar.gz";
    server.serve(path, Route::body(archive()));
    // The test server routes by the whole request target.
    let signed = |signature: &str| format!("{}{path}?X-Amz-Signature={signature}", server.base);
    for signature in ["sig-aaa111", "sig-bbb222"] {
        server.serve(
            &format!("{path}?X-Amz-Signature={signature}"),
            Route::body(archive()),
        );
    }
    let root = Root::new(&resource(&signed("sig-aaa111"), ""));
    let scan = root.run(&["scan"]);
    assert!(
        scan.stdout
            .contains(&format!("url: {}{path}?***", server.base)),
        "{}",
        scan.stdout
    );
    let apply = root.run(&["apply", ENTITY]);
    assert!(apply.success, "{}", apply.all());
    let first_state = state_text(&root);
    for run in [&scan, &apply] {
        assert!(!run.all().contains("sig-aaa111"), "{}", run.all());
    }
    assert!(!first_state.contains("sig-aaa111"), "{first_state}");
    assert!(first_state.contains("url_sha256"), "{first_state}");

    // A new signature: the same shown URL, another hash in the state.
    root.set_resources(&resource(&signed("sig-bbb222"), ""));
    let apply = root.op("apply", ENTITY);
    assert!(apply.success, "{}", apply.all());
    let second_state = state_text(&root);
    assert!(!second_state.contains("sig-bbb222"), "{second_state}");
    assert_ne!(first_state, second_state, "the URL change is recorded");
}
