//! One HTTP/1.1 server on 127.0.0.1 for every test that downloads: routes
//! by path, with optional basic auth and a required header, redirects,
//! bodies sent slowly, bodies shorter than their `Content-Length`, a body
//! that stalls (idle timeouts), and a log of the requests. Each connection
//! is answered on its own thread; the server ends with the test process.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use base64::Engine;
use sha2::{Digest, Sha256};

/// What the server answers for one path.
#[derive(Clone, Default)]
pub struct Route {
    pub body: Vec<u8>,
    /// Required `Authorization: Basic` user and password (else 401).
    pub basic: Option<(String, String)>,
    /// A required header (name, value) (else 403).
    pub header: Option<(String, String)>,
    /// Send the headers and half the body, then nothing more until the
    /// client gives up: a server gone idle.
    pub stall: bool,
    /// Answer `302 Found` with this `Location` instead.
    pub redirect: Option<String>,
    /// Send the body in pieces of this many bytes with this pause between
    /// them: a slow server.
    pub slow: Option<(usize, Duration)>,
    /// Announce this `Content-Length` (larger than the body), send the
    /// body and close: a connection cut short.
    pub declared_length: Option<usize>,
}

impl Route {
    /// `200 OK` with `body`.
    pub fn body(body: impl Into<Vec<u8>>) -> Route {
        Route {
            body: body.into(),
            ..Route::default()
        }
    }

    /// `302 Found` to `location`.
    pub fn redirect(location: impl Into<String>) -> Route {
        Route {
            redirect: Some(location.into()),
            ..Route::default()
        }
    }
}

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    /// `GET`, `HEAD`, …
    pub method: String,
    pub path: String,
    /// Header names lowercased.
    pub headers: HashMap<String, String>,
}

type Routes = Arc<Mutex<HashMap<String, Route>>>;
type Log = Arc<Mutex<Vec<Seen>>>;

/// A server thread on 127.0.0.1; it ends with the test process.
pub struct Server {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    routes: Routes,
    seen: Log,
}

impl Server {
    /// A server with no routes (404 for every path).
    #[track_caller]
    pub fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0")
            .unwrap_or_else(|err| panic!("cannot listen on 127.0.0.1: {err}"));
        let port = listener
            .local_addr()
            .unwrap_or_else(|err| panic!("the listener has no address: {err}"))
            .port();
        let routes = Routes::default();
        let seen = Log::default();
        let (thread_routes, thread_seen) = (routes.clone(), seen.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (routes, seen) = (thread_routes.clone(), thread_seen.clone());
                std::thread::spawn(move || answer(stream, &routes, &seen));
            }
        });
        Server {
            base: format!("http://127.0.0.1:{port}"),
            routes,
            seen,
        }
    }

    /// Serves `route` at `path`; returns the URL.
    pub fn serve(&self, path: &str, route: Route) -> String {
        lock(&self.routes).insert(path.to_string(), route);
        format!("{}{path}", self.base)
    }

    /// Stops serving `path` (404 from now on).
    pub fn remove(&self, path: &str) {
        lock(&self.routes).remove(path);
    }

    /// Every request so far, in the order they came.
    pub fn requests(&self) -> Vec<Seen> {
        lock(&self.seen).clone()
    }

    /// How many requests asked for `path`.
    pub fn count(&self, path: &str) -> usize {
        self.requests().iter().filter(|r| r.path == path).count()
    }
}

/// A test that failed while holding the lock leaves the data usable.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Reads the request line and headers.
fn read_request(stream: &TcpStream) -> Option<Seen> {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut reader = BufReader::new(stream);
    let mut request_line = String::new();
    reader.read_line(&mut request_line).ok()?;
    let mut words = request_line.split_whitespace();
    let method = words.next().unwrap_or_default().to_string();
    let path = words.next().unwrap_or_default().to_string();
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
    Some(Seen {
        method,
        path,
        headers,
    })
}

fn answer(stream: TcpStream, routes: &Mutex<HashMap<String, Route>>, seen: &Mutex<Vec<Seen>>) {
    let Some(request) = read_request(&stream) else {
        return;
    };
    lock(seen).push(request.clone());
    let route = lock(routes).get(&request.path).cloned();
    let mut stream = &stream;
    let Some(route) = route else {
        let _ = stream
            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        return;
    };
    if let Some(location) = &route.redirect {
        let _ = write!(
            stream,
            "HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
        return;
    }
    let status = refusal(&route, &request.headers).unwrap_or("200 OK");
    let body = if status == "200 OK" {
        &route.body[..]
    } else {
        &[]
    };
    let length = route.declared_length.unwrap_or(body.len());
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n"
    );
    send_body(stream, &route, body);
}

/// The status that refuses the request, if the route asks for credentials
/// or a header it lacks.
fn refusal(route: &Route, headers: &HashMap<String, String>) -> Option<&'static str> {
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
        Some("401 Unauthorized")
    } else if !header_ok {
        Some("403 Forbidden")
    } else {
        None
    }
}

fn send_body(mut stream: &TcpStream, route: &Route, body: &[u8]) {
    if route.stall {
        let _ = stream.write_all(&body[..body.len() / 2]);
        let _ = stream.flush();
        // Idle until the client hangs up.
        let _ = stream.set_read_timeout(None);
        let _ = stream.read(&mut [0; 1]);
        return;
    }
    match route.slow {
        Some((piece, pause)) => {
            for chunk in body.chunks(piece.max(1)) {
                if stream
                    .write_all(chunk)
                    .and_then(|()| stream.flush())
                    .is_err()
                {
                    return;
                }
                // The pause is what makes this server slow.
                std::thread::sleep(pause);
            }
        }
        None => {
            let _ = stream.write_all(body);
        }
    }
}

/// SHA-256 of `bytes`, lowercase hex.
pub fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// One GET with optional extra header lines; the whole response.
    fn get(url: &str, extra: &str) -> String {
        let rest = url.strip_prefix("http://").expect("http URL");
        let (host, path) = rest.split_once('/').expect("a path");
        let mut stream = TcpStream::connect(host).expect("connect");
        write!(
            stream,
            "GET /{path} HTTP/1.1\r\nHost: {host}\r\n{extra}\r\n"
        )
        .expect("send");
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response);
        response
    }

    #[test]
    fn routes_answer_with_their_body_and_others_404() {
        let server = Server::start();
        let url = server.serve("/a", Route::body("hello"));
        assert!(get(&url, "").ends_with("\r\n\r\nhello"));
        assert!(get(&format!("{}/b", server.base), "").starts_with("HTTP/1.1 404 "));
        server.remove("/a");
        assert!(get(&url, "").starts_with("HTTP/1.1 404 "));
        let seen = server.requests();
        assert_eq!(
            (seen[0].method.as_str(), seen[0].path.as_str()),
            ("GET", "/a")
        );
        assert_eq!(server.count("/a"), 2);
        assert_eq!(
            sha256(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn redirects_auth_and_headers() {
        let server = Server::start();
        let moved = server.serve("/old", Route::redirect("/new"));
        assert!(get(&moved, "").contains("302 Found\r\nLocation: /new\r\n"));
        let secret = server.serve(
            "/secret",
            Route {
                basic: Some(("u".into(), "p".into())),
                header: Some(("X-Token".into(), "t".into())),
                ..Route::body("s")
            },
        );
        assert!(get(&secret, "").starts_with("HTTP/1.1 401 "));
        assert!(get(&secret, "Authorization: Basic dTpw\r\n").starts_with("HTTP/1.1 403 "));
        let both = get(&secret, "Authorization: Basic dTpw\r\nX-Token: t\r\n");
        assert!(
            both.starts_with("HTTP/1.1 200 ") && both.ends_with("\r\n\r\ns"),
            "{both}"
        );
    }

    #[test]
    fn short_slow_and_stalled_bodies() {
        let server = Server::start();
        let short = server.serve(
            "/short",
            Route {
                declared_length: Some(10),
                ..Route::body("abc")
            },
        );
        let response = get(&short, "");
        assert!(response.contains("Content-Length: 10\r\n") && response.ends_with("abc"));
        let slow = server.serve(
            "/slow",
            Route {
                slow: Some((2, Duration::from_millis(20))),
                ..Route::body("abcdef")
            },
        );
        let started = Instant::now();
        assert!(get(&slow, "").ends_with("abcdef"));
        assert!(started.elapsed() >= Duration::from_millis(60));
        let stalled = server.serve(
            "/stall",
            Route {
                stall: true,
                ..Route::body("abcd")
            },
        );
        let rest = stalled.strip_prefix("http://").expect("http URL");
        let mut stream =
            TcpStream::connect(rest.split('/').next().expect("host")).expect("connect");
        stream
            .write_all(b"GET /stall HTTP/1.1\r\n\r\n")
            .expect("send");
        stream
            .set_read_timeout(Some(Duration::from_millis(200)))
            .expect("timeout");
        let mut response = Vec::new();
        let err = stream
            .read_to_end(&mut response)
            .expect_err("the server stalls");
        assert!(matches!(
            err.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ));
        assert!(String::from_utf8_lossy(&response).ends_with("\r\n\r\nab"));
    }
}
