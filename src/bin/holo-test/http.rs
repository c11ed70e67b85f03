//! A case's `http-root/`: its files (and the archives packed from its
//! `NAME.tar.gz.d/`-style directories) served on 127.0.0.1 for the duration
//! of the case.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{self, JoinHandle};
use std::time::Duration;

/// All that `http-root/` may serve, so that one case cannot fill the memory.
const MAX_SERVED_BYTES: usize = 64 << 20;
/// The longest request head the server reads.
const MAX_REQUEST_HEAD: usize = 8 << 10;
/// A client that sends or reads nothing this long is dropped.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(5);
/// The fixed modification time of packed entries (2000-01-01), so that the
/// archives, and so their checksums, never change.
const PACKED_MTIME: u64 = 946_684_800;

/// What the server serves: the path below `http-root/` (without a leading
/// `/`) and the body.
pub type Served = BTreeMap<String, Arc<Vec<u8>>>;

/// Reads `http_root`: each file as it is, each directory named
/// `NAME.tar.gz.d`, `NAME.tgz.d`, `NAME.tar.d` or `NAME.zip.d` packed into
/// the archive `NAME.tar.gz` (...), and every other directory as a
/// directory of the URL space.
pub fn collect(http_root: &Path) -> Result<Served, String> {
    let mut served = Served::new();
    let mut total = 0;
    collect_into(http_root, "", &mut served, &mut total)?;
    Ok(served)
}

fn collect_into(
    dir: &Path,
    prefix: &str,
    served: &mut Served,
    total: &mut usize,
) -> Result<(), String> {
    for (name, path) in sorted_entries(dir)? {
        let metadata = fs::symlink_metadata(&path)
            .map_err(|err| format!("cannot read {}: {}", path.display(), err))?;
        let url_path = format!("{prefix}{name}");
        let body = if metadata.is_dir() {
            match packed_name(&name) {
                Some((archive, Format::Zip)) => (format!("{prefix}{archive}"), pack_zip(&path)?),
                Some((archive, format)) => (
                    format!("{prefix}{archive}"),
                    pack_tar(&path, format == Format::TarGz)?,
                ),
                None => {
                    collect_into(&path, &format!("{url_path}/"), served, total)?;
                    continue;
                }
            }
        } else if metadata.is_file() {
            let body = fs::read(&path)
                .map_err(|err| format!("cannot read {}: {}", path.display(), err))?;
            (url_path, body)
        } else {
            return Err(format!(
                "{}: http-root serves files and archive directories only, not links or special files",
                path.display()
            ));
        };
        *total += body.1.len();
        if *total > MAX_SERVED_BYTES {
            return Err(format!(
                "{}: http-root holds more than {} MiB",
                path.display(),
                MAX_SERVED_BYTES >> 20
            ));
        }
        served.insert(body.0, Arc::new(body.1));
    }
    Ok(())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    TarGz,
    Tar,
    Zip,
}

/// `app.tar.gz.d` packs into `app.tar.gz`.
fn packed_name(dir_name: &str) -> Option<(&str, Format)> {
    let archive = dir_name.strip_suffix(".d")?;
    let format = if archive.ends_with(".tar.gz") || archive.ends_with(".tgz") {
        Format::TarGz
    } else if archive.ends_with(".tar") {
        Format::Tar
    } else if archive.ends_with(".zip") {
        Format::Zip
    } else {
        return None;
    };
    Some((archive, format))
}

/// The entries of `dir`, sorted by the bytes of their names.
fn sorted_entries(dir: &Path) -> Result<Vec<(String, std::path::PathBuf)>, String> {
    let mut entries = Vec::new();
    for entry in
        fs::read_dir(dir).map_err(|err| format!("cannot read {}: {}", dir.display(), err))?
    {
        let entry = entry.map_err(|err| format!("cannot read {}: {}", dir.display(), err))?;
        let name = entry.file_name().into_string().map_err(|name| {
            format!(
                "{}: {:?} is not UTF-8, which a URL or an archive entry needs here",
                dir.display(),
                name
            )
        })?;
        entries.push((name, entry.path()));
    }
    entries.sort();
    Ok(entries)
}

/// One entry of a directory to pack, parents before their contents.
enum Entry {
    Directory {
        name: String,
        mode: u32,
    },
    File {
        name: String,
        mode: u32,
        body: Vec<u8>,
    },
    Symlink {
        name: String,
        target: String,
    },
}

fn entries_below(dir: &Path, prefix: &str, found: &mut Vec<Entry>) -> Result<(), String> {
    for (name, path) in sorted_entries(dir)? {
        let metadata = fs::symlink_metadata(&path)
            .map_err(|err| format!("cannot read {}: {}", path.display(), err))?;
        let name = format!("{prefix}{name}");
        let mode = metadata.permissions().mode() & 0o7777;
        if metadata.file_type().is_symlink() {
            let target = fs::read_link(&path)
                .map_err(|err| format!("cannot read {}: {}", path.display(), err))?;
            found.push(Entry::Symlink {
                name,
                target: target.to_string_lossy().into_owned(),
            });
        } else if metadata.is_dir() {
            found.push(Entry::Directory {
                name: format!("{name}/"),
                mode,
            });
            entries_below(&path, &format!("{name}/"), found)?;
        } else if metadata.is_file() {
            let body = fs::read(&path)
                .map_err(|err| format!("cannot read {}: {}", path.display(), err))?;
            found.push(Entry::File { name, mode, body });
        }
    }
    Ok(())
}

/// Packs `dir` as a tar (gzipped when asked) with sorted names, a fixed
/// time and owner root, so that the same tree always gives the same bytes.
fn pack_tar(dir: &Path, gzip: bool) -> Result<Vec<u8>, String> {
    let mut entries = Vec::new();
    entries_below(dir, "", &mut entries)?;
    let failed = |err: io::Error| format!("cannot pack {}: {}", dir.display(), err);
    let mut builder = tar::Builder::new(Vec::new());
    for entry in &entries {
        let mut header = tar::Header::new_gnu();
        header.set_uid(0);
        header.set_gid(0);
        header.set_username("root").map_err(failed)?;
        header.set_groupname("root").map_err(failed)?;
        header.set_mtime(PACKED_MTIME);
        match entry {
            Entry::Directory { name, mode } => {
                header.set_entry_type(tar::EntryType::Directory);
                header.set_mode(*mode);
                header.set_size(0);
                builder
                    .append_data(&mut header, name, io::empty())
                    .map_err(failed)?;
            }
            Entry::File { name, mode, body } => {
                header.set_entry_type(tar::EntryType::Regular);
                header.set_mode(*mode);
                header.set_size(body.len() as u64);
                builder
                    .append_data(&mut header, name, body.as_slice())
                    .map_err(failed)?;
            }
            Entry::Symlink { name, target } => {
                header.set_entry_type(tar::EntryType::Symlink);
                header.set_mode(0o777);
                header.set_size(0);
                builder
                    .append_link(&mut header, name, target)
                    .map_err(failed)?;
            }
        }
    }
    let tar = builder.into_inner().map_err(failed)?;
    if !gzip {
        return Ok(tar);
    }
    // flate2's header has no name and time 0, so it is fixed as well
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(&tar).map_err(failed)?;
    encoder.finish().map_err(failed)
}

/// Packs `dir` as a zip with sorted names and a fixed time.
fn pack_zip(dir: &Path) -> Result<Vec<u8>, String> {
    let mut entries = Vec::new();
    entries_below(dir, "", &mut entries)?;
    let failed = |err: zip::result::ZipError| format!("cannot pack {}: {}", dir.display(), err);
    let mut writer = zip::ZipWriter::new(io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .last_modified_time(zip::DateTime::default());
    for entry in &entries {
        match entry {
            Entry::Directory { name, mode } => writer
                .add_directory(name.as_str(), options.unix_permissions(*mode))
                .map_err(failed)?,
            Entry::File { name, mode, body } => {
                writer
                    .start_file(name.as_str(), options.unix_permissions(*mode))
                    .map_err(failed)?;
                writer
                    .write_all(body)
                    .map_err(|err| format!("cannot pack {}: {}", dir.display(), err))?;
            }
            Entry::Symlink { name, target } => writer
                .add_symlink(name.as_str(), target.as_str(), options)
                .map_err(failed)?,
        }
    }
    Ok(writer.finish().map_err(failed)?.into_inner())
}

/// The server of one case; stops when dropped.
pub struct Server {
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Serves `served` on an ephemeral port of 127.0.0.1, one connection at
    /// a time, `GET` only.
    pub fn start(served: Served) -> io::Result<Server> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let port = listener.local_addr()?.port();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let thread = thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(stream) = stream {
                    // a client that goes away is its own problem
                    let _ = answer(stream, &served);
                }
            }
        });
        Ok(Server {
            port,
            stop,
            thread: Some(thread),
        })
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // wakes the accept loop, which then sees the flag
        let _ = TcpStream::connect((Ipv4Addr::LOCALHOST, self.port));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Reads one request and answers it: 200 with the body of a served path,
/// 404 for anything else, 405 for a method other than GET or HEAD.
fn answer(stream: TcpStream, served: &Served) -> io::Result<()> {
    stream.set_read_timeout(Some(CLIENT_TIMEOUT))?;
    stream.set_write_timeout(Some(CLIENT_TIMEOUT))?;
    let mut reader = BufReader::new(stream.try_clone()?.take(MAX_REQUEST_HEAD as u64));
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    // the rest of the head: headers are not needed, but must be read
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" || line == "\n" {
            break;
        }
    }
    let mut words = request_line.split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let (status, body) = if method != "GET" && method != "HEAD" {
        ("405 Method Not Allowed", None)
    } else {
        match lookup(served, target) {
            Some(body) => ("200 OK", Some(body)),
            None => ("404 Not Found", None),
        }
    };
    let length = body.map_or(0, |body| body.len());
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Length: {length}\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n"
    )?;
    if let (Some(body), "GET") = (body, method) {
        stream.write_all(body)?;
    }
    stream.flush()
}

/// The body for a request target: an absolute path without a query,
/// matched exactly against the served names, so that nothing outside
/// `http-root/` (no `..`, no percent-encoded tricks) can be reached.
fn lookup<'a>(served: &'a Served, target: &str) -> Option<&'a Vec<u8>> {
    let path = target.split(['?', '#']).next()?.strip_prefix('/')?;
    served.get(path).map(|body| body.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(server: &Server, target: &str) -> String {
        let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, server.port)).expect("connect");
        write!(stream, "GET {target} HTTP/1.1\r\nHost: x\r\n\r\n").expect("send");
        let mut response = String::new();
        stream.read_to_string(&mut response).expect("read");
        response
    }

    fn served(files: &[(&str, &str)]) -> Served {
        files
            .iter()
            .map(|(name, body)| (name.to_string(), Arc::new(body.as_bytes().to_vec())))
            .collect()
    }

    #[test]
    fn served_files_come_back_and_nothing_else() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::write(dir.path().join("secret"), "outside\n").expect("write");
        let http_root = dir.path().join("http-root");
        fs::create_dir_all(http_root.join("sub")).expect("mkdir");
        fs::write(http_root.join("a.txt"), "hello\n").expect("write");
        fs::write(http_root.join("sub/b.txt"), "deeper\n").expect("write");
        let server = Server::start(collect(&http_root).expect("collect")).expect("start");

        let ok = get(&server, "/a.txt");
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(ok.ends_with("\r\n\r\nhello\n"), "{ok}");
        assert!(get(&server, "/sub/b.txt?x=1").ends_with("deeper\n"));
        for outside in [
            "/../secret",
            "/sub/../a.txt",
            "/%2e%2e/secret",
            "/missing",
            "/sub",
            "a.txt",
            "/",
        ] {
            let response = get(&server, outside);
            assert!(
                response.starts_with("HTTP/1.1 404 Not Found\r\n")
                    && response.ends_with("\r\n\r\n"),
                "{outside}: {response}"
            );
        }
        let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, server.port)).expect("connect");
        stream
            .write_all(b"DELETE /a.txt HTTP/1.1\r\n\r\n")
            .expect("send");
        let mut response = String::new();
        stream.read_to_string(&mut response).expect("read");
        assert!(response.starts_with("HTTP/1.1 405 "), "{response}");
    }

    #[test]
    fn a_request_without_an_end_does_not_stop_the_server_for_long() {
        let server = Server::start(served(&[("a", "x")])).expect("start");
        let _silent = TcpStream::connect((Ipv4Addr::LOCALHOST, server.port)).expect("connect");
        let _endless = {
            let mut stream =
                TcpStream::connect((Ipv4Addr::LOCALHOST, server.port)).expect("connect");
            stream
                .write_all(&vec![b'x'; MAX_REQUEST_HEAD * 2])
                .expect("send");
            stream
        };
        let started = std::time::Instant::now();
        assert!(get(&server, "/a").ends_with("\r\n\r\nx"));
        assert!(started.elapsed() < CLIENT_TIMEOUT * 3);
    }

    #[test]
    fn archive_directories_are_packed_the_same_every_time() {
        let dir = tempfile::tempdir().expect("tempdir");
        let http_root = dir.path();
        for archive in ["app.tar.gz.d", "app.zip.d", "plain.tar.d"] {
            fs::create_dir_all(http_root.join(archive).join("conf")).expect("mkdir");
            fs::write(http_root.join(archive).join("conf/b"), "b\n").expect("write");
            fs::write(http_root.join(archive).join("a"), "a\n").expect("write");
        }
        let first = collect(http_root).expect("collect");
        assert_eq!(
            first.keys().collect::<Vec<_>>(),
            ["app.tar.gz", "app.zip", "plain.tar"]
        );
        // the same tree, written in another order and at another time
        thread::sleep(Duration::from_millis(1100));
        fs::write(http_root.join("app.tar.gz.d/a"), "a\n").expect("write");
        assert_eq!(collect(http_root).expect("collect"), first);

        let mut archive = tar::Archive::new(first["plain.tar"].as_slice());
        let names: Vec<(String, u64, u64)> = archive
            .entries()
            .expect("entries")
            .map(|entry| {
                let entry = entry.expect("entry");
                let header = entry.header();
                (
                    entry.path().expect("path").display().to_string(),
                    header.mtime().expect("mtime"),
                    header.uid().expect("uid"),
                )
            })
            .collect();
        assert_eq!(
            names,
            [
                ("a".to_string(), PACKED_MTIME, 0),
                ("conf/".to_string(), PACKED_MTIME, 0),
                ("conf/b".to_string(), PACKED_MTIME, 0)
            ]
        );
        let zip = zip::ZipArchive::new(io::Cursor::new(first["app.zip"].as_slice())).expect("zip");
        assert_eq!(zip.file_names().count(), 3);
    }
}
