//! A minimal QMP client: connect to an instance's control socket, read the
//! greeting, negotiate capabilities, and run commands.
//!
//! Replies and events share the socket: every read skips `{"event": …}`
//! lines until the `return` or `error` that answers the command. On QEMU 7.2
//! `system_powerdown` sends its `POWERDOWN` event before the `return`.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::error::Error;

pub struct Qmp {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl Qmp {
    /// Connects and completes the handshake; every read waits at most `timeout`.
    pub fn connect(socket: &Path, timeout: Duration) -> Result<Qmp, Error> {
        let stream = UnixStream::connect(socket).map_err(|e| {
            Error::Instance(format!(
                "cannot connect to QMP at {}: {e}",
                socket.display()
            ))
        })?;
        let _ = stream.set_read_timeout(Some(timeout));
        let _ = stream.set_write_timeout(Some(timeout));
        let writer = stream.try_clone().map_err(|e| {
            Error::Instance(format!(
                "cannot use the QMP socket {}: {e}",
                socket.display()
            ))
        })?;
        let mut qmp = Qmp {
            reader: BufReader::new(stream),
            writer,
        };
        let greeting = qmp.read_message()?;
        if greeting.get("QMP").is_none() {
            return Err(Error::Instance(format!(
                "{} did not greet as QMP does: {greeting}",
                socket.display()
            )));
        }
        qmp.execute("qmp_capabilities")?;
        Ok(qmp)
    }

    /// Runs `command` and returns its `return` value.
    pub fn execute(&mut self, command: &str) -> Result<Value, Error> {
        self.send(json!({ "execute": command }), command)
    }

    /// Runs `command` with `arguments` and returns its `return` value.
    pub fn execute_with(&mut self, command: &str, arguments: Value) -> Result<Value, Error> {
        self.send(
            json!({ "execute": command, "arguments": arguments }),
            command,
        )
    }

    fn send(&mut self, message: Value, command: &str) -> Result<Value, Error> {
        let mut line = message.to_string();
        if debug() {
            eprintln!("holos: qmp> {line}");
        }
        line.push_str("\r\n");
        self.writer
            .write_all(line.as_bytes())
            .map_err(|e| Error::Instance(format!("cannot send {command} over QMP: {e}")))?;
        loop {
            let message = self.read_message()?;
            if message.get("event").is_some() {
                continue;
            }
            if let Some(value) = message.get("return") {
                return Ok(value.clone());
            }
            if let Some(error) = message.get("error") {
                let desc = error
                    .get("desc")
                    .and_then(Value::as_str)
                    .unwrap_or("no description");
                return Err(Error::Instance(format!("QEMU refused {command}: {desc}")));
            }
        }
    }

    fn read_message(&mut self) -> Result<Value, Error> {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) => Err(Error::Instance(
                "QEMU closed the QMP connection".to_string(),
            )),
            Ok(_) => {
                if debug() {
                    eprintln!("holos: qmp< {}", line.trim_end());
                }
                serde_json::from_str(line.trim()).map_err(|e| {
                    Error::Instance(format!(
                        "QEMU sent a line that is not QMP ({e}): {}",
                        line.trim()
                    ))
                })
            }
            Err(e) => Err(Error::Instance(format!("no answer over QMP: {e}"))),
        }
    }
}

/// `HOLOS_DEBUG_QMP=1`: every QMP line sent and received goes to stderr.
fn debug() -> bool {
    std::env::var_os("HOLOS_DEBUG_QMP").is_some_and(|v| !v.is_empty() && v != "0")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;

    /// A QMP peer that answers like QEMU 7.2: the event before the return.
    fn serve(listener: UnixListener) -> std::thread::JoinHandle<Vec<String>> {
        std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let mut writer = stream.try_clone().unwrap();
            let mut reader = BufReader::new(stream);
            writer
                .write_all(b"{\"QMP\": {\"version\": {}, \"capabilities\": []}}\r\n")
                .unwrap();
            let mut seen = Vec::new();
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap() > 0 {
                let command: Value = serde_json::from_str(line.trim()).unwrap();
                let name = command["execute"].as_str().unwrap().to_string();
                if name == "system_powerdown" {
                    writer
                        .write_all(b"{\"timestamp\": {\"seconds\": 1, \"microseconds\": 2}, \"event\": \"POWERDOWN\"}\r\n")
                        .unwrap();
                }
                if name == "bogus" {
                    writer
                        .write_all(b"{\"error\": {\"class\": \"CommandNotFound\", \"desc\": \"The command bogus has not been found\"}}\r\n")
                        .unwrap();
                } else {
                    writer.write_all(b"{\"return\": {}}\r\n").unwrap();
                }
                seen.push(name);
                line.clear();
            }
            seen
        })
    }

    #[test]
    fn handshake_skips_events_and_reports_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("qmp.sock");
        let peer = serve(UnixListener::bind(&path).unwrap());
        let mut qmp = Qmp::connect(&path, Duration::from_secs(5)).unwrap();
        assert_eq!(qmp.execute("system_powerdown").unwrap(), json!({}));
        let err = qmp.execute("bogus").unwrap_err();
        assert!(
            err.message()
                .contains("The command bogus has not been found"),
            "{err}"
        );
        drop(qmp);
        assert_eq!(
            peer.join().unwrap(),
            ["qmp_capabilities", "system_powerdown", "bogus"]
        );
    }
}
