//! An HTTP/1.1 server on 127.0.0.1 for download tests, started in the
//! test: routes by path, optional basic auth and a required header, a
//! route that stalls mid-body (idle timeouts), redirects, and a log of the requests.
//! Each connection is answered on its own thread; the server ends with the
//! test process. Shared by the archive tests and the holos image tests
//! (`#[path]`).

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use sha2::{Digest, Sha256};

/// What the server answers for one path.
#[derive(Clone, Default)]
pub struct Route {
    pub body: Vec<u8>,
    /// Required `Authorization: Basic` user and password.
    pub basic: Option<(String, String)>,
    /// A required header (name, value).
    pub header: Option<(String, String)>,
    /// Send the headers and half the body, then nothing more while the
    /// test runs: a server gone idle.
    pub stall: bool,
    /// Answer `302 Found` with this `Location` instead.
    pub redirect: Option<String>,
}

impl Route {
    pub fn body(body: impl Into<Vec<u8>>) -> Route {
        Route {
            body: body.into(),
            ..Route::default()
        }
    }
}

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub path: String,
    /// Header names lowercased.
    pub headers: HashMap<String, String>,
}

/// A server thread on 127.0.0.1; it ends with the test process.
pub struct Server {
    pub base: String,
    routes: Arc<Mutex<HashMap<String, Route>>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    pub fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let base = format!(
            "http://127.0.0.1:{}",
            listener.local_addr().expect("address").port()
        );
        let routes: Arc<Mutex<HashMap<String, Route>>> = Arc::default();
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let (thread_routes, thread_seen) = (routes.clone(), seen.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (routes, seen) = (thread_routes.clone(), thread_seen.clone());
                std::thread::spawn(move || answer(stream, &routes, &seen));
            }
        });
        Server { base, routes, seen }
    }

    /// Serves `route` at `path`; returns the URL.
    pub fn serve(&self, path: &str, route: Route) -> String {
        self.routes
            .lock()
            .expect("routes")
            .insert(path.to_string(), route);
        format!("{}{path}", self.base)
    }

    /// Stops serving `path` (404 from now on).
    pub fn remove(&self, path: &str) {
        self.routes.lock().expect("routes").remove(path);
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().expect("seen").clone()
    }

    /// How many requests asked for `path`.
    pub fn count(&self, path: &str) -> usize {
        self.requests().iter().filter(|r| r.path == path).count()
    }
}

fn answer(stream: TcpStream, routes: &Mutex<HashMap<String, Route>>, seen: &Mutex<Vec<Seen>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut reader = BufReader::new(&stream);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_string();
    let mut headers = HashMap::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_string());
        }
    }
    seen.lock().expect("seen").push(Seen {
        path: path.clone(),
        headers: headers.clone(),
    });
    let route = routes.lock().expect("routes").get(&path).cloned();
    if let Some(location) = route.as_ref().and_then(|r| r.redirect.clone()) {
        let mut stream = &stream;
        let _ = write!(
            stream,
            "HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
        return;
    }
    if let Some(route) = route.as_ref().filter(|r| r.stall) {
        let mut stream = &stream;
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n",
            route.body.len()
        );
        let _ = stream.write_all(&route.body[..route.body.len() / 2]);
        let _ = stream.flush();
        std::thread::sleep(Duration::from_secs(3600));
        return;
    }
    let (status, body) = match route {
        None => ("404 Not Found", Vec::new()),
        Some(route) => {
            let basic_ok = route.basic.as_ref().is_none_or(|(user, password)| {
                let encoded =
                    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
                headers.get("authorization") == Some(&format!("Basic {encoded}"))
            });
            let header_ok = route
                .header
                .as_ref()
                .is_none_or(|(name, value)| headers.get(&name.to_ascii_lowercase()) == Some(value));
            if !basic_ok {
                ("401 Unauthorized", Vec::new())
            } else if !header_ok {
                ("403 Forbidden", Vec::new())
            } else {
                ("200 OK", route.body)
            }
        }
    };
    let mut stream = &stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(&body);
}

pub fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}
