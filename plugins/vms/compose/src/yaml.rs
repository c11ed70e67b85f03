//! A YAML tree that keeps every node's file, line and column.
//!
//! Built from saphyr-parser's events so that anchors, aliases, `<<` merge
//! keys and Compose's `!reset` / `!override` tags are resolved here, once,
//! and every later stage (interpolation, merging, validation) can still point
//! at the source position of what it complains about.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use saphyr_parser::{Event, Parser, ScalarStyle, ScanError, Span, SpannedEventReceiver, Tag};

use crate::diag::Diag;
pub use crate::diag::Pos;

/// Compose's merge-control tags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MergeTag {
    /// `!reset`: drop the value inherited from earlier files.
    Reset,
    /// `!override`: replace the inherited value instead of merging with it.
    Override,
}

#[derive(Clone, Debug)]
pub struct Node {
    pub kind: Kind,
    pub pos: Pos,
    pub tag: Option<MergeTag>,
}

#[derive(Clone, Debug)]
pub enum Kind {
    Null,
    /// A scalar keeps its text; `plain` scalars may be read as numbers or
    /// booleans, quoted ones are always strings.
    Scalar {
        text: String,
        plain: bool,
    },
    Seq(Vec<Node>),
    Map(Vec<(Node, Node)>),
}

impl Node {
    pub fn new(kind: Kind, pos: Pos) -> Self {
        Node {
            kind,
            pos,
            tag: None,
        }
    }

    pub fn string(text: impl Into<String>, pos: Pos) -> Self {
        Node::new(
            Kind::Scalar {
                text: text.into(),
                plain: false,
            },
            pos,
        )
    }

    pub fn plain(text: impl Into<String>, pos: Pos) -> Self {
        Node::new(
            Kind::Scalar {
                text: text.into(),
                plain: true,
            },
            pos,
        )
    }

    pub fn map(entries: Vec<(Node, Node)>, pos: Pos) -> Self {
        Node::new(Kind::Map(entries), pos)
    }

    pub fn seq(items: Vec<Node>, pos: Pos) -> Self {
        Node::new(Kind::Seq(items), pos)
    }

    pub fn is_null(&self) -> bool {
        matches!(self.kind, Kind::Null)
    }

    /// The text of a scalar (numbers and booleans included).
    pub fn as_str(&self) -> Option<&str> {
        match &self.kind {
            Kind::Scalar { text, .. } => Some(text),
            _ => None,
        }
    }

    pub fn as_map(&self) -> Option<&[(Node, Node)]> {
        match &self.kind {
            Kind::Map(entries) => Some(entries),
            _ => None,
        }
    }

    pub fn as_map_mut(&mut self) -> Option<&mut Vec<(Node, Node)>> {
        match &mut self.kind {
            Kind::Map(entries) => Some(entries),
            _ => None,
        }
    }

    pub fn as_seq(&self) -> Option<&[Node]> {
        match &self.kind {
            Kind::Seq(items) => Some(items),
            _ => None,
        }
    }

    /// The value under `key` in a mapping.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.as_map()?
            .iter()
            .find(|(k, _)| k.as_str() == Some(key))
            .map(|(_, v)| v)
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut Node> {
        self.as_map_mut()?
            .iter_mut()
            .find(|(k, _)| k.as_str() == Some(key))
            .map(|(_, v)| v)
    }

    /// Sets `key` to `value`, replacing an existing entry in place.
    pub fn set(&mut self, key: &str, value: Node) {
        let pos = value.pos.clone();
        if let Some(entries) = self.as_map_mut() {
            if let Some(slot) = entries.iter_mut().find(|(k, _)| k.as_str() == Some(key)) {
                slot.1 = value;
            } else {
                entries.push((Node::string(key, pos), value));
            }
        }
    }

    pub fn remove(&mut self, key: &str) -> Option<Node> {
        let entries = self.as_map_mut()?;
        let index = entries.iter().position(|(k, _)| k.as_str() == Some(key))?;
        Some(entries.remove(index).1)
    }

    /// A short name for the node's type, for error messages.
    pub fn type_name(&self) -> &'static str {
        match &self.kind {
            Kind::Null => "null",
            Kind::Scalar { .. } => "a scalar",
            Kind::Seq(_) => "a list",
            Kind::Map(_) => "a mapping",
        }
    }

    /// Plain-scalar typing, as YAML 1.2's core schema does.
    pub fn scalar_type(&self) -> ScalarType {
        match &self.kind {
            Kind::Null => ScalarType::Null,
            Kind::Scalar { text, plain: true } => classify_plain(text),
            _ => ScalarType::Str,
        }
    }

    /// Converts to JSON, typing plain scalars (used by `config --format json`
    /// and by the schema agreement test).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value;
        match &self.kind {
            Kind::Null => Value::Null,
            Kind::Scalar { text, plain } => {
                if !*plain {
                    return Value::String(text.clone());
                }
                match classify_plain(text) {
                    ScalarType::Bool(b) => Value::Bool(b),
                    ScalarType::Int(i) => Value::from(i),
                    ScalarType::Float(f) => serde_json::Number::from_f64(f)
                        .map(Value::Number)
                        .unwrap_or_else(|| Value::String(text.clone())),
                    ScalarType::Null | ScalarType::Str => Value::String(text.clone()),
                }
            }
            Kind::Seq(items) => Value::Array(items.iter().map(Node::to_json).collect()),
            Kind::Map(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.as_str().unwrap_or_default().to_string(), v.to_json()))
                    .collect(),
            ),
        }
    }

    /// Converts to saphyr's tree for emitting YAML.
    pub fn to_saphyr(&self) -> saphyr::Yaml<'static> {
        use saphyr::{Scalar, Yaml};
        match &self.kind {
            Kind::Null => Yaml::Value(Scalar::Null),
            Kind::Scalar { text, plain } => match (plain, classify_plain(text)) {
                (true, ScalarType::Bool(_) | ScalarType::Int(_) | ScalarType::Float(_)) => {
                    Yaml::Representation(text.clone().into(), ScalarStyle::Plain, None)
                }
                _ if is_yaml11_keyword(text) => {
                    Yaml::Representation(text.clone().into(), ScalarStyle::DoubleQuoted, None)
                }
                // saphyr quotes (or writes as a literal block) every other
                // string that would not read back as itself.
                _ => Yaml::Value(Scalar::String(text.clone().into())),
            },
            Kind::Seq(items) => Yaml::Sequence(items.iter().map(Node::to_saphyr).collect()),
            Kind::Map(entries) => {
                let mut map = saphyr::Mapping::new();
                for (k, v) in entries {
                    let key = k.as_str().unwrap_or_default().to_string();
                    map.insert(Yaml::Value(Scalar::String(key.into())), v.to_saphyr());
                }
                Yaml::Mapping(map)
            }
        }
    }

    /// Renders as a YAML document (without the leading `---`).
    pub fn to_yaml_string(&self) -> String {
        let doc = self.to_saphyr();
        let mut out = String::new();
        let mut emitter = saphyr::YamlEmitter::new(&mut out);
        emitter.multiline(true);
        // Writing into a String cannot fail.
        let _ = emitter.dump(&doc);
        let body = out.strip_prefix("---\n").unwrap_or(&out);
        let mut body = body.to_string();
        if !body.ends_with('\n') {
            body.push('\n');
        }
        body
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScalarType {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str,
}

/// Words that YAML 1.1 readers take as booleans or null in any letter case.
/// saphyr quotes only their usual spellings (`yes`, `Yes`, `YES`), so the
/// others are quoted here; all are plain letters, so no escaping is needed.
fn is_yaml11_keyword(text: &str) -> bool {
    const KEYWORDS: [&str; 9] = ["y", "n", "yes", "no", "on", "off", "true", "false", "null"];
    KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(text))
}

/// Types the text of a plain scalar. Null-looking text is a string here:
/// the parser turns plain nulls into [`Kind::Null`], so a scalar node only
/// holds such text after interpolation (`A: ${EMPTY}`), and Compose reads
/// interpolated values as strings.
fn classify_plain(text: &str) -> ScalarType {
    match text {
        "true" | "True" | "TRUE" => return ScalarType::Bool(true),
        "false" | "False" | "FALSE" => return ScalarType::Bool(false),
        _ => {}
    }
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && let Ok(i) = text.parse::<i64>()
    {
        return ScalarType::Int(i);
    }
    if let Some(hex) = text.strip_prefix("0x")
        && let Ok(i) = i64::from_str_radix(hex, 16)
    {
        return ScalarType::Int(i);
    }
    if let Some(oct) = text.strip_prefix("0o")
        && let Ok(i) = i64::from_str_radix(oct, 8)
    {
        return ScalarType::Int(i);
    }
    let looks_numeric = digits
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+'))
        && digits.bytes().any(|b| b.is_ascii_digit());
    if looks_numeric && let Ok(f) = text.parse::<f64>() {
        return ScalarType::Float(f);
    }
    ScalarType::Str
}

/// Reads and parses a YAML file.
pub fn load_file(path: &Path) -> Result<Node, Vec<Diag>> {
    let bytes = std::fs::read(path).map_err(|e| {
        vec![Diag::file(
            path,
            format!("cannot read file: {e}; check the path given with -f or include"),
        )]
    })?;
    let text =
        String::from_utf8(bytes).map_err(|e| vec![not_utf8(path, e.as_bytes(), e.utf8_error())])?;
    parse_str(&text, path)
}

/// Where the first byte that is not UTF-8 is, as line and column.
fn not_utf8(path: &Path, bytes: &[u8], error: std::str::Utf8Error) -> Diag {
    let valid = &bytes[..error.valid_up_to()];
    let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
    let col = valid.len() - valid.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1) + 1;
    let byte = bytes.get(error.valid_up_to()).copied().unwrap_or_default();
    Diag::at(
        &Pos::new(&Arc::new(path.to_path_buf()), line, col),
        "",
        format!("byte 0x{byte:02x} is not UTF-8; the file must be UTF-8 text: fix or remove it"),
    )
}

/// Aliases may expand at most this many nodes in total, so that a
/// "billion laughs" file fails instead of eating the machine.
const MAX_ALIAS_NODES: usize = 1_000_000;

/// Deeper nesting is refused so that recursive walks cannot overflow the stack.
const MAX_DEPTH: usize = 128;

/// Parses one YAML document. An empty document is `Null`.
pub fn parse_str(text: &str, path: &Path) -> Result<Node, Vec<Diag>> {
    let file = Arc::new(path.to_path_buf());
    let mut builder = Builder {
        file: Arc::clone(&file),
        stack: Vec::new(),
        anchors: HashMap::new(),
        docs: Vec::new(),
        errors: Vec::new(),
        alias_budget: MAX_ALIAS_NODES,
    };
    let mut parser = Parser::new_from_str(text);
    if let Err(e) = parser.load(&mut builder, true) {
        return Err(vec![scan_error(&file, &e)]);
    }
    if !builder.errors.is_empty() {
        return Err(builder.errors);
    }
    let mut docs = builder.docs;
    if docs.len() > 1 {
        return Err(vec![Diag::at(
            &docs[1].pos,
            "",
            "holds more than one YAML document; split it into separate files and pass each with -f",
        )]);
    }
    Ok(docs
        .pop()
        .unwrap_or_else(|| Node::new(Kind::Null, Pos::new(&file, 1, 1))))
}

fn scan_error(file: &Arc<PathBuf>, e: &ScanError) -> Diag {
    let m = e.marker();
    Diag::at(
        &Pos::new(file, m.line(), m.col() + 1),
        "",
        format!("invalid YAML: {}", e.info()),
    )
}

enum Frame {
    Seq {
        anchor: usize,
        tag: Option<MergeTag>,
        pos: Pos,
        items: Vec<Node>,
    },
    Map {
        anchor: usize,
        tag: Option<MergeTag>,
        pos: Pos,
        entries: Vec<(Node, Node)>,
        /// The string keys so far, so that a duplicate is found in constant
        /// time (a mapping may have hundreds of thousands of keys).
        keys: HashSet<String>,
        pending_key: Option<Node>,
    },
}

struct Builder {
    file: Arc<PathBuf>,
    stack: Vec<Frame>,
    /// Anchored nodes with their node count and depth.
    anchors: HashMap<usize, (Node, usize, usize)>,
    docs: Vec<Node>,
    errors: Vec<Diag>,
    alias_budget: usize,
}

/// Node count and nesting depth, so that aliases can be bounded in both.
fn measure(node: &Node) -> (usize, usize) {
    let children: Vec<(usize, usize)> = match &node.kind {
        Kind::Seq(items) => items.iter().map(measure).collect(),
        Kind::Map(entries) => entries
            .iter()
            .flat_map(|(k, v)| [measure(k), measure(v)])
            .collect(),
        _ => Vec::new(),
    };
    let count = 1 + children.iter().map(|(c, _)| c).sum::<usize>();
    let depth = 1 + children.iter().map(|(_, d)| *d).max().unwrap_or(0);
    (count, depth)
}

impl Builder {
    fn pos(&self, span: &Span) -> Pos {
        Pos::new(&self.file, span.start.line(), span.start.col() + 1)
    }

    fn merge_tag(&mut self, tag: Option<&Tag>, pos: &Pos) -> Option<MergeTag> {
        let tag = tag?;
        if tag.handle == "!" {
            match tag.suffix.as_str() {
                "reset" => return Some(MergeTag::Reset),
                "override" => return Some(MergeTag::Override),
                _ => {}
            }
        }
        if tag.is_yaml_core_schema() {
            return None;
        }
        self.errors.push(Diag::at(
            pos,
            "",
            format!("unknown YAML tag {tag}; holos understands only !reset and !override"),
        ));
        None
    }

    fn finish(&mut self, node: Node, anchor: usize) {
        if anchor > 0 {
            let (size, depth) = measure(&node);
            self.anchors.insert(anchor, (node.clone(), size, depth));
        }
        match self.stack.last_mut() {
            None => self.docs.push(node),
            Some(Frame::Seq { items, .. }) => items.push(node),
            Some(Frame::Map {
                entries,
                keys,
                pending_key,
                ..
            }) => match pending_key.take() {
                None => {
                    if !matches!(node.kind, Kind::Scalar { .. } | Kind::Null) {
                        self.errors.push(Diag::at(
                            &node.pos,
                            "",
                            "mapping keys must be plain strings; quote the key",
                        ));
                    }
                    *pending_key = Some(node);
                }
                Some(key) => {
                    let duplicate = match key.as_str() {
                        Some("<<") | None => false,
                        Some(text) => !keys.insert(text.to_string()),
                    };
                    if duplicate {
                        self.errors.push(Diag::at(
                            &key.pos,
                            "",
                            format!(
                                "duplicate key {:?}; remove one of the two",
                                key.as_str().unwrap_or_default()
                            ),
                        ));
                    }
                    entries.push((key, node));
                }
            },
        }
    }

    /// Applies `<<` merge keys: explicit keys win, then earlier merge sources.
    fn resolve_merge_keys(&mut self, entries: Vec<(Node, Node)>) -> Vec<(Node, Node)> {
        if !entries.iter().any(|(k, _)| {
            k.as_str() == Some("<<") && matches!(k.kind, Kind::Scalar { plain: true, .. })
        }) {
            return entries;
        }
        let mut own = Vec::new();
        let mut sources = Vec::new();
        for (k, v) in entries {
            if k.as_str() == Some("<<") && matches!(k.kind, Kind::Scalar { plain: true, .. }) {
                match v.kind {
                    Kind::Map(m) => sources.push(m),
                    Kind::Seq(items) => {
                        for item in items {
                            match item.kind {
                                Kind::Map(m) => sources.push(m),
                                _ => self.errors.push(Diag::at(
                                    &item.pos,
                                    "<<",
                                    "a merge key takes a mapping or a list of mappings",
                                )),
                            }
                        }
                    }
                    _ => self.errors.push(Diag::at(
                        &v.pos,
                        "<<",
                        "a merge key takes a mapping or a list of mappings",
                    )),
                }
            } else {
                own.push((k, v));
            }
        }
        let mut taken: HashSet<Option<String>> = own
            .iter()
            .map(|(k, _)| k.as_str().map(str::to_string))
            .collect();
        let mut merged: Vec<(Node, Node)> = Vec::new();
        for source in sources {
            for (k, v) in source {
                if taken.insert(k.as_str().map(str::to_string)) {
                    merged.push((k, v));
                }
            }
        }
        // Keep the mapping's own keys first, in source order.
        own.extend(merged);
        own
    }
}

impl<'input> SpannedEventReceiver<'input> for Builder {
    fn on_event(&mut self, ev: Event<'input>, span: Span) {
        let pos = self.pos(&span);
        match ev {
            Event::Scalar(text, style, anchor, tag) => {
                let tag = self.merge_tag(tag.as_deref(), &pos);
                let plain = style == ScalarStyle::Plain;
                let kind = if plain && matches!(text.as_ref(), "" | "~" | "null" | "Null" | "NULL")
                {
                    Kind::Null
                } else {
                    Kind::Scalar {
                        text: text.into_owned(),
                        plain,
                    }
                };
                let mut node = Node::new(kind, pos);
                node.tag = tag;
                self.finish(node, anchor);
            }
            Event::SequenceStart(..) | Event::MappingStart(..) if self.stack.len() >= MAX_DEPTH => {
                self.start_too_deep(pos);
            }
            Event::SequenceStart(anchor, tag) => {
                let tag = self.merge_tag(tag.as_deref(), &pos);
                self.stack.push(Frame::Seq {
                    anchor,
                    tag,
                    pos,
                    items: Vec::new(),
                });
            }
            Event::MappingStart(anchor, tag) => {
                let tag = self.merge_tag(tag.as_deref(), &pos);
                self.stack.push(Frame::Map {
                    anchor,
                    tag,
                    pos,
                    entries: Vec::new(),
                    keys: HashSet::new(),
                    pending_key: None,
                });
            }
            Event::SequenceEnd | Event::MappingEnd if self.stack.len() > MAX_DEPTH => {
                self.stack.pop();
            }
            Event::SequenceEnd | Event::MappingEnd => self.end_collection(),
            Event::Alias(id) => self.alias(id, pos),
            Event::Nothing
            | Event::StreamStart
            | Event::StreamEnd
            | Event::DocumentStart(_)
            | Event::DocumentEnd => {}
        }
    }
}

impl Builder {
    /// A sequence or mapping beyond `MAX_DEPTH`: one error, and a frame
    /// that only keeps the start and end events balanced.
    fn start_too_deep(&mut self, pos: Pos) {
        if self.errors.is_empty() {
            self.errors.push(Diag::at(
                &pos,
                "",
                format!("nesting deeper than {MAX_DEPTH} levels; flatten the document"),
            ));
        }
        // Keep the frames balanced so the matching end events pop them.
        self.stack.push(Frame::Seq {
            anchor: 0,
            tag: None,
            pos,
            items: Vec::new(),
        });
    }

    /// The end of the innermost sequence or mapping: its node.
    fn end_collection(&mut self) {
        match self.stack.pop() {
            Some(Frame::Seq {
                anchor,
                tag,
                pos,
                items,
            }) => {
                let mut node = Node::seq(items, pos);
                node.tag = tag;
                self.finish(node, anchor);
            }
            Some(Frame::Map {
                anchor,
                tag,
                pos,
                entries,
                ..
            }) => {
                let entries = self.resolve_merge_keys(entries);
                let mut node = Node::map(entries, pos);
                node.tag = tag;
                self.finish(node, anchor);
            }
            None => {}
        }
    }

    /// An alias: a copy of the anchored node, within the depth and the
    /// budget of expanded nodes; a null after an error otherwise.
    fn alias(&mut self, id: usize, pos: Pos) {
        let message = match self.anchors.get(&id) {
            Some((_, _, depth)) if self.stack.len() + depth > MAX_DEPTH => {
                format!("aliases nest deeper than {MAX_DEPTH} levels; simplify the anchors")
            }
            Some((node, size, _)) if *size <= self.alias_budget => {
                self.alias_budget -= *size;
                let mut node = node.clone();
                // The alias's own position is more useful for errors
                // about where the value ended up.
                node.pos = pos;
                self.finish(node, 0);
                return;
            }
            Some(_) => "aliases expand to too many nodes; simplify the anchors".to_string(),
            None => "alias refers to an unknown anchor".to_string(),
        };
        self.errors.push(Diag::at(&pos, "", message));
        self.finish(Node::new(Kind::Null, pos), 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Node, Vec<Diag>> {
        parse_str(text, Path::new("t.yaml"))
    }

    #[test]
    fn keeps_positions_and_scalar_styles() {
        let doc = parse("a:\n  b: '1'\n  c: 2\n").unwrap();
        let b = doc.get("a").and_then(|a| a.get("b")).unwrap();
        assert_eq!((b.pos.line, b.pos.col), (2, 6));
        assert_eq!(b.to_json(), serde_json::json!("1"));
        assert_eq!(
            doc.get("a").and_then(|a| a.get("c")).unwrap().to_json(),
            serde_json::json!(2)
        );
    }

    #[test]
    fn merge_keys_and_aliases() {
        let doc =
            parse("base: &b {x: 1, y: 1}\nother: &o {z: 3}\nm:\n  <<: [*b, *o]\n  y: 2\n").unwrap();
        assert_eq!(
            doc.get("m").unwrap().to_json(),
            serde_json::json!({"y": 2, "x": 1, "z": 3})
        );
    }

    #[test]
    fn merge_tags_are_recorded() {
        let doc = parse("a: !reset []\nb: !override {x: 1}\n").unwrap();
        assert_eq!(doc.get("a").unwrap().tag, Some(MergeTag::Reset));
        assert_eq!(doc.get("b").unwrap().tag, Some(MergeTag::Override));
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = "[".repeat(100_000);
        assert!(parse(&deep).is_err());
        let nested = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        let errors = parse(&nested).unwrap_err();
        assert!(
            errors[0].message.contains("nesting deeper than 128"),
            "{errors:?}"
        );
    }

    #[test]
    fn aliases_cannot_nest_past_the_depth_limit() {
        let mut text = format!("a0: &a0 {}1{}\n", "[".repeat(60), "]".repeat(60));
        for i in 1..5 {
            text.push_str(&format!(
                "a{i}: &a{i} {}*a{}{}\n",
                "[".repeat(60),
                i - 1,
                "]".repeat(60)
            ));
        }
        let errors = parse(&text).unwrap_err();
        assert!(
            errors
                .iter()
                .any(|e| e.message.contains("aliases nest deeper")),
            "{errors:?}"
        );
    }

    #[test]
    fn alias_bombs_are_refused() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..10 {
            let p = i - 1;
            text.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
            ));
        }
        let errors = parse(&text).unwrap_err();
        assert!(
            errors.iter().any(|e| e.message.contains("too many nodes")),
            "{errors:?}"
        );
    }

    #[test]
    fn emits_yaml_that_reads_back() {
        let doc = parse("s: \"8080:80\"\nn: 3\nt: \"true\"\nm: |\n  two\n  lines\n").unwrap();
        let again = parse(&doc.to_yaml_string()).unwrap();
        assert_eq!(doc.to_json(), again.to_json());
    }

    #[test]
    fn strings_that_look_like_other_types_are_quoted() {
        let pos = Pos::synthetic("test");
        let texts = [
            "",
            "~",
            "null",
            "NuLl",
            "true",
            "tRUE",
            "yEs",
            "No",
            "ON",
            "oFf",
            "y",
            "N",
            "12",
            "-1.5e3",
            "0x1f",
            " lead",
            "trail ",
            "a: b",
            "a #b",
            "- a",
            "? a",
            "*a",
            "&a",
            "!a",
            "|",
            ">",
            "'a'",
            "\"a\"",
            "%a",
            "@a",
            "`a`",
            "two\nlines",
            "\n",
        ];
        for text in texts {
            // Interpolation leaves its result in a plain scalar, so both
            // styles must print as strings.
            for node in [
                Node::plain(text, pos.clone()),
                Node::string(text, pos.clone()),
            ] {
                if node.scalar_type() != ScalarType::Str {
                    continue; // A real number or boolean, printed as one.
                }
                let doc = Node::map(vec![(Node::string("A", pos.clone()), node)], pos.clone());
                let yaml = doc.to_yaml_string();
                let again = parse(&yaml).unwrap();
                let value = again.get("A").unwrap();
                assert_eq!(value.scalar_type(), ScalarType::Str, "{text:?} as {yaml:?}");
                assert_eq!(value.as_str(), Some(text), "{text:?} as {yaml:?}");
                let bare = yaml.trim_start_matches("A: ").trim_end();
                if is_yaml11_keyword(text) || text.is_empty() {
                    assert_eq!(bare, format!("\"{text}\""), "{text:?}");
                }
            }
        }
    }
}
