//! The diff renderer behind `holo diff` and the "modified by user" report.
//!
//! Holo 3 ran `git diff --no-index -- FROM TO` and post-processed the output:
//! it removed the `index` lines, replaced every `diff --git` line with
//! `diff --holo FROM TO`, and replaced every line starting with `--- a/` or
//! `+++ b/` with `--- FROM` / `+++ TO` (display paths). This module produces
//! the same bytes in-process, without git: the line matching comes from the
//! `similar` crate's Myers diff, and the change groups are then slid exactly
//! as xdiff's `xdl_change_compact` slides them (including git's default
//! indent heuristic), so hunk shapes follow git's.
//!
//! Residual differences from git, known and accepted:
//! - When several different minimal edit scripts exist and sliding cannot
//!   turn one into the other (for example `a b a` against `b a b`), `similar`
//!   may pick another script than xdiff's Myers. Both are correct diffs.
//! - git's gitattributes, `diff.*` configuration, textconv and funcname
//!   drivers are not consulted; git's defaults are used.
//! - A regular file larger than git's `core.bigFileThreshold` (512 MiB) is
//!   treated as binary, as git does, but its content is still compared.
//!
//! Like Holo 3, the rewriting of `--- a/…` and `+++ b/…` also hits a removed
//! content line that starts with `-- a/` or an added one that starts with
//! `++ b/`; this is kept for byte-identical output.

use std::fmt;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use similar::{Algorithm, DiffOp};

/// Context lines around each change, as git's default `-U3`.
const CONTEXT_LINES: usize = 3;
/// git's `FIRST_FEW_BYTES`: only this prefix is searched for NUL bytes.
const BINARY_PROBE_BYTES: usize = 8000;
/// git's default `core.bigFileThreshold`: larger files count as binary.
const BIG_FILE_THRESHOLD: u64 = 512 * 1024 * 1024;
/// Size of xdiff's function-name buffer, which truncates the hunk context.
const FUNCNAME_MAX_BYTES: usize = 80;

/// Why a diff could not be rendered.
#[derive(Debug)]
pub enum DiffError {
    /// One side is a directory, device, FIFO or socket.
    WrongFileType(PathBuf),
    /// One side exists but could not be inspected or read.
    Io { path: PathBuf, source: io::Error },
}

impl fmt::Display for DiffError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DiffError::WrongFileType(path) => {
                write!(f, "file {} has wrong file type", path.display())
            }
            DiffError::Io { path, source } => write!(
                f,
                "cannot read {} for diffing: {} (check that it is readable by holo)",
                path.display(),
                source
            ),
        }
    }
}

impl std::error::Error for DiffError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DiffError::WrongFileType(_) => None,
            DiffError::Io { source, .. } => Some(source),
        }
    }
}

/// One side of the diff as git sees it: a git mode and the blob content.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Blob {
    mode: u32,
    content: Vec<u8>,
    /// Set for files above git's big-file threshold, which git calls binary.
    oversized: bool,
}

const MODE_REGULAR: u32 = 0o100644;
const MODE_EXECUTABLE: u32 = 0o100755;
const MODE_SYMLINK: u32 = 0o120000;
const MODE_TYPE_MASK: u32 = 0o170000;

impl Blob {
    fn is_binary(&self) -> bool {
        self.oversized
            || self.content[..self.content.len().min(BINARY_PROBE_BYTES)].contains(&0)
    }
}

/// Loads one side: `None` for "/dev/null" and for a path that does not
/// exist, as Holo 3's `checkFile` does.
fn load_side(path: &Path) -> Result<Option<Blob>, DiffError> {
    if path.as_os_str() == "/dev/null" {
        return Ok(None);
    }
    let io_error = |source| DiffError::Io {
        path: path.to_path_buf(),
        source,
    };
    let metadata = match fs::symlink_metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(io_error(error)),
    };
    let file_type = metadata.file_type();
    if file_type.is_symlink() {
        let target = fs::read_link(path).map_err(io_error)?;
        Ok(Some(Blob {
            mode: MODE_SYMLINK,
            content: target.as_os_str().as_bytes().to_vec(),
            oversized: false,
        }))
    } else if file_type.is_file() {
        // git only looks at the owner's executable bit.
        let mode = if metadata.permissions().mode() & 0o100 != 0 {
            MODE_EXECUTABLE
        } else {
            MODE_REGULAR
        };
        let content = fs::read(path).map_err(io_error)?;
        Ok(Some(Blob {
            mode,
            oversized: metadata.len() > BIG_FILE_THRESHOLD,
            content,
        }))
    } else {
        Err(DiffError::WrongFileType(path.to_path_buf()))
    }
}

/// Renders the difference between `from` and `to` exactly as Holo 3's
/// post-processed `git diff --no-index -- FROM TO`, without colour.
///
/// `from_display` and `to_display` are the paths shown in the `diff --holo`,
/// `---` and `+++` lines. A missing path or "/dev/null" is an absent side.
/// Identical sides give an empty result.
pub fn render_file_diff(
    from: &Path,
    to: &Path,
    from_display: &str,
    to_display: &str,
) -> Result<Vec<u8>, DiffError> {
    let old = load_side(from)?;
    let new = load_side(to)?;
    let names = Names {
        from_label: git_label("a/", from),
        to_label: git_label("b/", to),
        header: format!("diff --holo {from_display} {to_display}\n"),
    };
    let mut raw = Vec::new();
    match (&old, &new) {
        (Some(a), Some(b)) if a.mode & MODE_TYPE_MASK != b.mode & MODE_TYPE_MASK => {
            // git never diffs a file against a symlink: it shows a deletion
            // and a creation.
            emit_pair(&mut raw, &names, Some(a), None);
            emit_pair(&mut raw, &names, None, Some(b));
        }
        _ => emit_pair(&mut raw, &names, old.as_ref(), new.as_ref()),
    }
    Ok(rewrite_path_lines(&raw, from_display, to_display))
}

/// The path labels of one file pair.
struct Names {
    /// git's `a/PATH` label, C-quoted when git would quote it.
    from_label: Vec<u8>,
    /// git's `b/PATH` label, C-quoted when git would quote it.
    to_label: Vec<u8>,
    /// The `diff --holo FROM TO` line that replaces `diff --git`.
    header: String,
}

/// Writes one git file pair (before Holo's line rewriting).
fn emit_pair(out: &mut Vec<u8>, names: &Names, old: Option<&Blob>, new: Option<&Blob>) {
    let mut header = names.header.as_bytes().to_vec();
    let must_show_header = match (old, new) {
        (None, None) => return,
        (None, Some(b)) => {
            header.extend_from_slice(format!("new file mode {:06o}\n", b.mode).as_bytes());
            true
        }
        (Some(a), None) => {
            header.extend_from_slice(format!("deleted file mode {:06o}\n", a.mode).as_bytes());
            true
        }
        (Some(a), Some(b)) if a.mode != b.mode => {
            header.extend_from_slice(
                format!("old mode {:06o}\nnew mode {:06o}\n", a.mode, b.mode).as_bytes(),
            );
            true
        }
        (Some(_), Some(_)) => false,
    };
    let empty: &[u8] = &[];
    let old_content = old.map_or(empty, |blob| &blob.content);
    let new_content = new.map_or(empty, |blob| &blob.content);
    if old_content == new_content {
        if must_show_header {
            out.extend_from_slice(&header);
        }
        return;
    }
    out.extend_from_slice(&header);
    let dev_null = b"/dev/null".to_vec();
    let old_label = old.map_or(&dev_null, |_| &names.from_label);
    let new_label = new.map_or(&dev_null, |_| &names.to_label);
    if old.is_some_and(Blob::is_binary) || new.is_some_and(Blob::is_binary) {
        out.extend_from_slice(b"Binary files ");
        out.extend_from_slice(old_label);
        out.extend_from_slice(b" and ");
        out.extend_from_slice(new_label);
        out.extend_from_slice(b" differ\n");
        return;
    }
    for (prefix, label) in [(b"--- ", old_label), (b"+++ ", new_label)] {
        out.extend_from_slice(prefix);
        out.extend_from_slice(label);
        // git appends a tab to a label with a space, for patch(1)'s sake.
        if label.contains(&b' ') {
            out.push(b'\t');
        }
        out.push(b'\n');
    }
    emit_hunks(out, old_content, new_content);
}

/// git's label for a path: the prefix plus the path without one leading
/// slash, C-quoted as a whole when any byte needs quoting.
fn git_label(prefix: &str, path: &Path) -> Vec<u8> {
    let bytes = path.as_os_str().as_bytes();
    let name = bytes.strip_prefix(b"/").unwrap_or(bytes);
    let mut plain = prefix.as_bytes().to_vec();
    plain.extend_from_slice(name);
    if !plain.iter().any(|&byte| needs_c_quote(byte)) {
        return plain;
    }
    let mut quoted = vec![b'"'];
    for &byte in &plain {
        match byte {
            0x07 => quoted.extend_from_slice(b"\\a"),
            0x08 => quoted.extend_from_slice(b"\\b"),
            b'\t' => quoted.extend_from_slice(b"\\t"),
            b'\n' => quoted.extend_from_slice(b"\\n"),
            0x0b => quoted.extend_from_slice(b"\\v"),
            0x0c => quoted.extend_from_slice(b"\\f"),
            b'\r' => quoted.extend_from_slice(b"\\r"),
            b'"' => quoted.extend_from_slice(b"\\\""),
            b'\\' => quoted.extend_from_slice(b"\\\\"),
            _ if needs_c_quote(byte) => {
                quoted.extend_from_slice(format!("\\{byte:03o}").as_bytes());
            }
            _ => quoted.push(byte),
        }
    }
    quoted.push(b'"');
    quoted
}

/// git's `cq_must_quote` with the default `core.quotePath = true`.
fn needs_c_quote(byte: u8) -> bool {
    byte < 0x20 || byte == b'"' || byte == b'\\' || byte >= 0x7f
}

/// Holo 3's regex pass: every line starting with `--- a/` or `+++ b/` is
/// replaced by the display path, whether it is a header or content line.
fn rewrite_path_lines(raw: &[u8], from_display: &str, to_display: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    for line in raw.split_inclusive(|&byte| byte == b'\n') {
        let has_newline = line.ends_with(b"\n");
        if line.starts_with(b"--- a/") {
            out.extend_from_slice(b"--- ");
            out.extend_from_slice(from_display.as_bytes());
        } else if line.starts_with(b"+++ b/") {
            out.extend_from_slice(b"+++ ");
            out.extend_from_slice(to_display.as_bytes());
        } else {
            out.extend_from_slice(line);
            continue;
        }
        if has_newline {
            out.push(b'\n');
        }
    }
    out
}

/// Splits content into xdiff records: lines including their `\n`; the last
/// one may lack it.
fn split_records(content: &[u8]) -> Vec<&[u8]> {
    content.split_inclusive(|&byte| byte == b'\n').collect()
}

/// One file's records and which of them are changed, with a `false`
/// sentinel before the first and after the last record (as xdiff keeps).
struct ChangeMap<'a> {
    records: Vec<&'a [u8]>,
    sentinel_changed: Vec<bool>,
}

impl<'a> ChangeMap<'a> {
    fn new(records: Vec<&'a [u8]>) -> Self {
        let sentinel_changed = vec![false; records.len() + 2];
        ChangeMap {
            records,
            sentinel_changed,
        }
    }

    fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether record `index` is changed; `-1` and `len()` are sentinels.
    fn changed(&self, index: isize) -> bool {
        usize::try_from(index + 1)
            .ok()
            .and_then(|slot| self.sentinel_changed.get(slot))
            .copied()
            .unwrap_or(false)
    }

    fn set_changed(&mut self, index: usize, value: bool) {
        if let Some(slot) = self.sentinel_changed.get_mut(index + 1) {
            *slot = value;
        }
    }
}

/// One contiguous run of changed records (`start..end`), xdiff's `xdlgroup`.
#[derive(Clone, Copy)]
struct Group {
    start: usize,
    end: usize,
}

impl Group {
    fn first(map: &ChangeMap) -> Group {
        let mut end = 0;
        while map.changed(end as isize) {
            end += 1;
        }
        Group { start: 0, end }
    }

    fn next(&mut self, map: &ChangeMap) -> bool {
        if self.end == map.len() {
            return false;
        }
        self.start = self.end + 1;
        self.end = self.start;
        while map.changed(self.end as isize) {
            self.end += 1;
        }
        true
    }

    fn previous(&mut self, map: &ChangeMap) -> bool {
        if self.start == 0 {
            return false;
        }
        self.end = self.start - 1;
        self.start = self.end;
        while map.changed(self.start as isize - 1) {
            self.start -= 1;
        }
        true
    }

    fn slide_down(&mut self, map: &mut ChangeMap) -> bool {
        if self.end < map.len() && map.records[self.start] == map.records[self.end] {
            map.set_changed(self.start, false);
            map.set_changed(self.end, true);
            self.start += 1;
            self.end += 1;
            while map.changed(self.end as isize) {
                self.end += 1;
            }
            true
        } else {
            false
        }
    }

    fn slide_up(&mut self, map: &mut ChangeMap) -> bool {
        if self.start > 0 && map.records[self.start - 1] == map.records[self.end - 1] {
            self.start -= 1;
            self.end -= 1;
            map.set_changed(self.start, true);
            map.set_changed(self.end, false);
            while map.changed(self.start as isize - 1) {
                self.start -= 1;
            }
            true
        } else {
            false
        }
    }
}

/// xdiff's `xdl_change_compact` with `XDF_INDENT_HEURISTIC`: slides each
/// change group of `map` to where git puts it, keeping `other` in step.
fn compact_changes(map: &mut ChangeMap, other: &ChangeMap) {
    let mut group = Group::first(map);
    let mut other_group = Group::first(other);
    loop {
        if group.end != group.start {
            let mut earliest_end;
            let mut aligns_with_other;
            let mut group_size;
            loop {
                group_size = group.end - group.start;
                aligns_with_other = false;
                while group.slide_up(map) {
                    other_group.previous(other);
                }
                earliest_end = group.end;
                if other_group.end > other_group.start {
                    aligns_with_other = true;
                }
                while group.slide_down(map) {
                    other_group.next(other);
                    if other_group.end > other_group.start {
                        aligns_with_other = true;
                    }
                }
                if group_size == group.end - group.start {
                    break;
                }
            }
            if group.end == earliest_end {
                // The group cannot move.
            } else if aligns_with_other {
                // Line the group up with the last changed group of the
                // other file that it can reach.
                while other_group.end == other_group.start {
                    if !group.slide_up(map) {
                        break;
                    }
                    other_group.previous(other);
                }
            } else {
                let best_end = best_indent_shift(map, &group, group_size, earliest_end);
                while group.end > best_end {
                    if !group.slide_up(map) {
                        break;
                    }
                    other_group.previous(other);
                }
            }
        }
        if !group.next(map) {
            break;
        }
        other_group.next(other);
    }
}

/// git's `INDENT_HEURISTIC_MAX_SLIDING`.
const INDENT_HEURISTIC_MAX_SLIDING: usize = 100;
/// git's `MAX_INDENT` and `MAX_BLANKS`.
const MAX_INDENT: i32 = 200;
const MAX_BLANKS: i32 = 20;

/// The end position with the lowest indent-heuristic score, for a group
/// that currently sits as low as it can.
fn best_indent_shift(
    map: &ChangeMap,
    group: &Group,
    group_size: usize,
    earliest_end: usize,
) -> usize {
    let lowest = earliest_end
        .max(group.end.saturating_sub(group_size + 1))
        .max(group.end.saturating_sub(INDENT_HEURISTIC_MAX_SLIDING));
    let mut best: Option<(usize, SplitScore)> = None;
    for shift in lowest..=group.end {
        let mut score = SplitScore::default();
        score.add(&SplitMeasurement::at(map, shift as isize));
        score.add(&SplitMeasurement::at(
            map,
            shift as isize - group_size as isize,
        ));
        if best
            .as_ref()
            .is_none_or(|(_, best_score)| score.compare(best_score) <= 0)
        {
            best = Some((shift, score));
        }
    }
    best.map_or(group.end, |(shift, _)| shift)
}

/// git's `get_indent`: the indent width of a record, `-1` for a blank one.
fn indent_of(record: &[u8]) -> i32 {
    let mut indent = 0;
    for &byte in record {
        if !is_git_space(byte) {
            return indent;
        } else if byte == b' ' {
            indent += 1;
        } else if byte == b'\t' {
            indent += 8 - indent % 8;
        }
        if indent >= MAX_INDENT {
            return MAX_INDENT;
        }
    }
    -1
}

/// git's `isspace`, which knows only space, tab, LF and CR.
fn is_git_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

/// git's `split_measurement` of a split above record `split`.
struct SplitMeasurement {
    end_of_file: bool,
    indent: i32,
    pre_blank: i32,
    pre_indent: i32,
    post_blank: i32,
    post_indent: i32,
}

impl SplitMeasurement {
    fn at(map: &ChangeMap, split: isize) -> SplitMeasurement {
        let record = |index: isize| usize::try_from(index).ok().and_then(|i| map.records.get(i));
        let (end_of_file, indent) = match record(split) {
            Some(line) => (false, indent_of(line)),
            None => (true, -1),
        };
        let mut pre_blank = 0;
        let mut pre_indent = -1;
        let mut index = split - 1;
        while let Some(line) = record(index) {
            pre_indent = indent_of(line);
            if pre_indent != -1 {
                break;
            }
            pre_blank += 1;
            if pre_blank == MAX_BLANKS {
                pre_indent = 0;
                break;
            }
            index -= 1;
        }
        let mut post_blank = 0;
        let mut post_indent = -1;
        let mut index = split + 1;
        while let Some(line) = record(index) {
            post_indent = indent_of(line);
            if post_indent != -1 {
                break;
            }
            post_blank += 1;
            if post_blank == MAX_BLANKS {
                post_indent = 0;
                break;
            }
            index += 1;
        }
        SplitMeasurement {
            end_of_file,
            indent,
            pre_blank,
            pre_indent,
            post_blank,
            post_indent,
        }
    }
}

/// git's `split_score`; smaller is better.
#[derive(Default)]
struct SplitScore {
    effective_indent: i32,
    penalty: i32,
}

impl SplitScore {
    /// git's `score_add_split`, with its empirically chosen weights.
    fn add(&mut self, m: &SplitMeasurement) {
        if m.pre_indent == -1 && m.pre_blank == 0 {
            self.penalty += 1; // START_OF_FILE_PENALTY
        }
        if m.end_of_file {
            self.penalty += 21; // END_OF_FILE_PENALTY
        }
        let post_blank = if m.indent == -1 { 1 + m.post_blank } else { 0 };
        let total_blank = m.pre_blank + post_blank;
        self.penalty += -30 * total_blank; // TOTAL_BLANK_WEIGHT
        self.penalty += 6 * post_blank; // POST_BLANK_WEIGHT
        let indent = if m.indent != -1 {
            m.indent
        } else {
            m.post_indent
        };
        let any_blanks = total_blank != 0;
        self.effective_indent += indent;
        if indent == -1 || m.pre_indent == -1 || indent == m.pre_indent {
            return;
        }
        self.penalty += if indent > m.pre_indent {
            if any_blanks { 10 } else { -4 } // RELATIVE_INDENT_*
        } else if m.post_indent != -1 && m.post_indent > indent {
            if any_blanks { 17 } else { 24 } // RELATIVE_OUTDENT_*
        } else if any_blanks {
            17 // RELATIVE_DEDENT_WITH_BLANK_PENALTY
        } else {
            23 // RELATIVE_DEDENT_PENALTY
        };
    }

    /// git's `score_cmp`: negative when `self` is better.
    fn compare(&self, other: &SplitScore) -> i32 {
        let indent_order = (self.effective_indent > other.effective_indent) as i32
            - (self.effective_indent < other.effective_indent) as i32;
        60 * indent_order + (self.penalty - other.penalty) // INDENT_WEIGHT
    }
}

/// One change atom: `old_len` records removed at `old_start` and `new_len`
/// records added at `new_start`.
#[derive(Debug, Clone, Copy)]
struct Change {
    old_start: usize,
    old_len: usize,
    new_start: usize,
    new_len: usize,
}

/// Computes git's change script for two contents.
fn change_script<'a>(old: &'a [u8], new: &'a [u8]) -> (ChangeMap<'a>, ChangeMap<'a>, Vec<Change>) {
    let mut old_map = ChangeMap::new(split_records(old));
    let mut new_map = ChangeMap::new(split_records(new));
    let ops = similar::capture_diff_slices(Algorithm::Myers, &old_map.records, &new_map.records);
    for op in ops {
        let (old_range, new_range) = match op {
            DiffOp::Equal { .. } => continue,
            DiffOp::Delete { .. } | DiffOp::Insert { .. } | DiffOp::Replace { .. } => {
                (op.old_range(), op.new_range())
            }
        };
        for index in old_range {
            old_map.set_changed(index, true);
        }
        for index in new_range {
            new_map.set_changed(index, true);
        }
    }
    compact_changes(&mut old_map, &new_map);
    compact_changes(&mut new_map, &old_map);

    // xdl_build_script: walk both files in step, collecting changed runs.
    let mut changes = Vec::new();
    let (mut old_index, mut new_index) = (0, 0);
    while old_index < old_map.len() || new_index < new_map.len() {
        let old_changed = old_map.changed(old_index as isize);
        let new_changed = new_map.changed(new_index as isize);
        if !old_changed && !new_changed {
            old_index += 1;
            new_index += 1;
            continue;
        }
        let (old_start, new_start) = (old_index, new_index);
        while old_map.changed(old_index as isize) {
            old_index += 1;
        }
        while new_map.changed(new_index as isize) {
            new_index += 1;
        }
        changes.push(Change {
            old_start,
            old_len: old_index - old_start,
            new_start,
            new_len: new_index - new_start,
        });
    }
    (old_map, new_map, changes)
}

/// Writes the unified hunks, as xdiff's `xdl_emit_diff` with git's flags.
fn emit_hunks(out: &mut Vec<u8>, old: &[u8], new: &[u8]) {
    let (old_map, new_map, changes) = change_script(old, new);
    let mut first = 0;
    while first < changes.len() {
        // xdl_get_hunk: join changes separated by at most 2 * context lines.
        let mut last = first;
        while let Some(next) = changes.get(last + 1) {
            let gap = next.old_start - (changes[last].old_start + changes[last].old_len);
            if gap > 2 * CONTEXT_LINES {
                break;
            }
            last += 1;
        }
        let (head, tail) = (changes[first], changes[last]);
        let old_begin = head.old_start.saturating_sub(CONTEXT_LINES);
        let new_begin = head.new_start.saturating_sub(CONTEXT_LINES);
        let trailing = CONTEXT_LINES
            .min(old_map.len() - (tail.old_start + tail.old_len))
            .min(new_map.len() - (tail.new_start + tail.new_len));
        let old_end = tail.old_start + tail.old_len + trailing;
        let new_end = tail.new_start + tail.new_len + trailing;

        out.extend_from_slice(b"@@ -");
        push_range(out, old_begin, old_end - old_begin);
        out.extend_from_slice(b" +");
        push_range(out, new_begin, new_end - new_begin);
        out.extend_from_slice(b" @@");
        if let Some(name) = function_name(&old_map.records[..old_begin]) {
            out.push(b' ');
            out.extend_from_slice(name);
        }
        out.push(b'\n');

        let mut new_cursor = new_begin;
        for change in &changes[first..=last] {
            for record in &new_map.records[new_cursor..change.new_start] {
                push_record(out, b' ', record);
            }
            for record in &old_map.records[change.old_start..change.old_start + change.old_len] {
                push_record(out, b'-', record);
            }
            let added_end = change.new_start + change.new_len;
            for record in &new_map.records[change.new_start..added_end] {
                push_record(out, b'+', record);
            }
            new_cursor = added_end;
        }
        for record in &new_map.records[new_cursor..new_end] {
            push_record(out, b' ', record);
        }
        first = last + 1;
    }
}

/// A hunk range as `xdl_emit_hunk_hdr` prints it: 1-based start (0-based
/// when empty) and the count unless it is 1.
fn push_range(out: &mut Vec<u8>, begin: usize, count: usize) {
    let start = if count == 0 { begin } else { begin + 1 };
    out.extend_from_slice(start.to_string().as_bytes());
    if count != 1 {
        out.extend_from_slice(format!(",{count}").as_bytes());
    }
}

/// git's default funcname: the nearest record before the hunk that starts
/// with an ASCII letter, `_` or `$`, cut to 80 bytes, trailing space removed.
fn function_name<'a>(records_before_hunk: &[&'a [u8]]) -> Option<&'a [u8]> {
    let record = records_before_hunk
        .iter()
        .rev()
        .find(|record| matches!(record.first(), Some(b) if b.is_ascii_alphabetic() || *b == b'_' || *b == b'$'))?;
    let mut name = &record[..record.len().min(FUNCNAME_MAX_BYTES)];
    while let Some((&last, rest)) = name.split_last() {
        if !is_git_space(last) {
            break;
        }
        name = rest;
    }
    (!name.is_empty()).then_some(name)
}

/// One hunk line; a record without newline gets git's marker line.
fn push_record(out: &mut Vec<u8>, prefix: u8, record: &[u8]) {
    out.push(prefix);
    out.extend_from_slice(record);
    if !record.ends_with(b"\n") {
        out.extend_from_slice(b"\n\\ No newline at end of file\n");
    }
}

/// Colours a rendered diff with Holo 3's rules: file headers bold, hunk
/// headers cyan, removed lines red, added lines green.
pub fn colorize_diff(diff: &[u8]) -> Vec<u8> {
    const RULES: [(&[u8], &[u8]); 8] = [
        (b"diff ", b"\x1b[1m"),
        (b"new ", b"\x1b[1m"),
        (b"deleted ", b"\x1b[1m"),
        (b"--- ", b"\x1b[1m"),
        (b"+++ ", b"\x1b[1m"),
        (b"@@ ", b"\x1b[36m"),
        (b"-", b"\x1b[31m"),
        (b"+", b"\x1b[32m"),
    ];
    let mut out = Vec::with_capacity(diff.len() + diff.len() / 4);
    for (index, line) in diff.split(|&byte| byte == b'\n').enumerate() {
        if index > 0 {
            out.push(b'\n');
        }
        match RULES.iter().find(|(prefix, _)| line.starts_with(prefix)) {
            Some((_, colour)) => {
                out.extend_from_slice(colour);
                out.extend_from_slice(line);
                out.extend_from_slice(b"\x1b[0m");
            }
            None => out.extend_from_slice(line),
        }
    }
    out
}
