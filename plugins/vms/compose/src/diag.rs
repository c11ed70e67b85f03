//! Diagnostics: one error with its source position and key path.
//!
//! Every stage collects these instead of stopping at the first problem, so
//! that `holos validate` can list everything that is wrong at once.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where a node starts: file, 1-based line, 1-based column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pos {
    pub file: Arc<PathBuf>,
    pub line: usize,
    pub col: usize,
}

impl Pos {
    pub fn new(file: &Arc<PathBuf>, line: usize, col: usize) -> Self {
        Pos {
            file: Arc::clone(file),
            line,
            col,
        }
    }

    /// A position for values that have no source (defaults, command line).
    pub fn synthetic(what: &str) -> Self {
        Pos {
            file: Arc::new(PathBuf::from(what)),
            line: 0,
            col: 0,
        }
    }
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.file.display())
        } else {
            write!(f, "{}:{}:{}", self.file.display(), self.line, self.col)
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diag {
    pub pos: Pos,
    /// Dotted key path such as `services.web.ports[0]`; empty when the
    /// position alone says enough.
    pub path: String,
    pub message: String,
}

impl Diag {
    pub fn at(pos: &Pos, path: impl Into<String>, message: impl Into<String>) -> Self {
        Diag {
            pos: pos.clone(),
            path: path.into(),
            message: message.into(),
        }
    }

    /// An error about a whole file (it could not be read, for example).
    pub fn file(path: &Path, message: impl Into<String>) -> Self {
        Diag {
            pos: Pos {
                file: Arc::new(path.to_path_buf()),
                line: 0,
                col: 0,
            },
            path: String::new(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Diag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}: {}", self.pos, self.message)
        } else {
            write!(f, "{}: {}: {}", self.pos, self.path, self.message)
        }
    }
}

/// Collects diagnostics while a stage keeps going.
#[derive(Default, Debug)]
pub struct Diags {
    pub list: Vec<Diag>,
    /// Problems that do not stop the load (an unset variable, for example).
    pub warnings: Vec<Diag>,
}

impl Diags {
    pub fn warn(&mut self, pos: &Pos, path: impl Into<String>, message: impl Into<String>) {
        self.warnings.push(Diag::at(pos, path, message));
    }

    pub fn push(&mut self, pos: &Pos, path: impl Into<String>, message: impl Into<String>) {
        self.list.push(Diag::at(pos, path, message));
    }

    pub fn extend(&mut self, more: impl IntoIterator<Item = Diag>) {
        self.list.extend(more);
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

/// The closest candidate within a small edit distance, for "did you mean".
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let len = word.chars().count();
    let limit = if len <= 3 { 1 } else { (len / 3).clamp(2, 3) };
    candidates
        .into_iter()
        .map(|c| (edit_distance(word, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, c)| (*d, *c))
        .map(|(_, c)| c)
}

/// Edit distance over chars where swapping two neighbours counts as one
/// edit (optimal string alignment), so `prots` is one step from `ports`.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let width = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * width];
    for i in 0..=a.len() {
        d[i * width] = i;
    }
    for (j, cell) in d.iter_mut().enumerate().take(width) {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[(i - 1) * width + j] + 1)
                .min(d[i * width + j - 1] + 1)
                .min(d[(i - 1) * width + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[(i - 2) * width + j - 2] + 1);
            }
            d[i * width + j] = best;
        }
    }
    d[a.len() * width + b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_keys_only() {
        let keys = ["ports", "image", "volumes"];
        assert_eq!(did_you_mean("prots", keys), Some("ports"));
        assert_eq!(did_you_mean("imag", keys), Some("image"));
        assert_eq!(did_you_mean("zzzzzz", keys), None);
        assert_eq!(did_you_mean("bd", ["db", "web"]), Some("db"));
    }
}
