//! Splits a template into text and action tokens.

use crate::{Delims, Failure};

#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    Text(String),
    Open,
    Close,
    Ident(String),
    /// `.name` written without a space before the dot.
    Field(String),
    Dot,
    Str(String),
    Int(i64),
    Float(f64),
    LParen,
    RParen,
    LBrack,
    RBrack,
    Comma,
    Semicolon,
    Colon,
    Pipe,
    Question,
    Assign,
    Declare,
    Op(&'static str),
    Eof,
}

#[derive(Debug, Clone)]
pub struct Token {
    pub tok: Tok,
    pub pos: usize,
    /// Whitespace came right before this token.
    pub space: bool,
}

const TRIM_CHARS: &[char] = &[' ', '\t', '\r', '\n'];

pub fn lex(src: &str, delims: &Delims) -> Result<Vec<Token>, Failure> {
    let mut out = Vec::new();
    let mut pos = 0;
    let mut trim_next = false;
    let open = delims.left.as_str();
    let close = delims.right.as_str();
    let copen = delims.comment_left.as_str();
    let cclose = delims.comment_right.as_str();
    // Where the next comment starts; searched again only once passed, so
    // lexing stays linear.
    let mut comment_at: Option<usize> = src.find(copen);
    let last_open = open.chars().next().and_then(|c| src.rfind(c));
    loop {
        let rest = &src[pos..];
        if let Some(c) = comment_at
            && c < pos
        {
            comment_at = src[pos..].find(copen).map(|n| pos + n);
        }
        let at_open = rest.find(open).map(|n| pos + n);
        // As Jet's lexer does: past the last character that could start an
        // action (`[` for `[[`), the rest is text, comments included.
        let comment = comment_at.filter(|&c| last_open.is_some_and(|l| l >= c));
        let (next, is_comment) = match (at_open, comment) {
            (Some(a), Some(c)) if c < a => (Some(c), true),
            (Some(a), _) => (Some(a), false),
            (None, Some(c)) => (Some(c), true),
            (None, None) => (None, false),
        };
        let end = next.unwrap_or(src.len());
        let mut text = &src[pos..end];
        if trim_next {
            text = text.trim_start_matches(TRIM_CHARS);
            trim_next = false;
        }
        let Some(_) = next else {
            push_text(&mut out, text, pos);
            out.push(Token {
                tok: Tok::Eof,
                pos: src.len(),
                space: false,
            });
            return Ok(out);
        };
        if is_comment {
            push_text(&mut out, text, pos);
            let body = end + copen.len();
            match src[body..].find(cclose) {
                Some(n) => pos = body + n + cclose.len(),
                None => return Err(Failure::new(end, "unclosed comment")),
            }
            continue;
        }
        let mut inner = end + open.len();
        if src[inner..].starts_with("- ") {
            text = text.trim_end_matches(TRIM_CHARS);
            inner += 2;
        }
        push_text(&mut out, text, pos);
        out.push(Token {
            tok: Tok::Open,
            pos: end,
            space: false,
        });
        let (after, trim) = lex_action(src, inner, close, &mut out)?;
        pos = after;
        trim_next = trim;
    }
}

fn push_text(out: &mut Vec<Token>, text: &str, pos: usize) {
    if !text.is_empty() {
        out.push(Token {
            tok: Tok::Text(text.to_string()),
            pos,
            space: false,
        });
    }
}

/// Lexes one action from `pos`; returns the offset after its closing
/// delimiter and whether that delimiter trims the following whitespace.
fn lex_action(
    src: &str,
    mut pos: usize,
    close: &str,
    out: &mut Vec<Token>,
) -> Result<(usize, bool), Failure> {
    let start = pos;
    let mut space = false;
    let mut parens = 0usize;
    let mut brackets = 0usize;
    loop {
        let rest = &src[pos..];
        if parens == 0 && brackets == 0 {
            if let Some(after) = rest.strip_prefix(" -")
                && after.starts_with(close)
            {
                out.push(Token {
                    tok: Tok::Close,
                    pos,
                    space: true,
                });
                return Ok((pos + 2 + close.len(), true));
            }
            if rest.starts_with(close) {
                out.push(Token {
                    tok: Tok::Close,
                    pos,
                    space,
                });
                return Ok((pos + close.len(), false));
            }
        }
        let Some(c) = rest.chars().next() else {
            return Err(Failure::new(
                start,
                format!("unclosed action: no closing {close}"),
            ));
        };
        if c.is_whitespace() {
            space = true;
            pos += c.len_utf8();
            continue;
        }
        let tok_pos = pos;
        let two = rest.get(..2).unwrap_or("");
        let tok = if let Some(op) = ["==", "!=", "<=", ">=", "&&", "||"]
            .into_iter()
            .find(|op| *op == two)
        {
            pos += 2;
            Tok::Op(op)
        } else if two == ":=" {
            pos += 2;
            Tok::Declare
        } else if c == '"' || c == '`' {
            let (s, len) = lex_string(src, pos)?;
            pos += len;
            Tok::Str(s)
        } else if c == '\'' {
            let (tok, len) = lex_char(rest, tok_pos)?;
            pos += len;
            tok
        } else if c.is_ascii_digit()
            || (c == '.' && rest[1..].starts_with(|d: char| d.is_ascii_digit()))
        {
            let (value, len) = lex_number(rest).ok_or_else(|| {
                Failure::new(
                    tok_pos,
                    format!("bad number {}", &rest[..ident_len(rest).max(1)]),
                )
            })?;
            pos += len;
            Tok::Float(value)
        } else if c == '_' || c.is_alphabetic() {
            let len = ident_len(rest);
            pos += len;
            Tok::Ident(rest[..len].to_string())
        } else if c == '.' {
            let (tok, len) = lex_dot(rest);
            pos += len;
            tok
        } else {
            pos += c.len_utf8();
            let tok = punctuation(c, tok_pos)?;
            match tok {
                Tok::LParen => parens += 1,
                Tok::RParen => parens = parens.saturating_sub(1),
                Tok::LBrack => brackets += 1,
                Tok::RBrack => brackets = brackets.saturating_sub(1),
                _ => {}
            }
            tok
        };
        out.push(Token {
            tok,
            pos: tok_pos,
            space,
        });
        space = false;
    }
}

/// A character literal at the start of `rest`: its code point, as in Go,
/// and its length.
fn lex_char(rest: &str, tok_pos: usize) -> Result<(Tok, usize), Failure> {
    let body = &rest[1..];
    let mut it = body.char_indices();
    let ch = match it.next() {
        Some((_, '\\')) => unescape(&mut it).map_err(|m| Failure::new(tok_pos, m))?,
        Some((_, ch)) if ch != '\'' => ch,
        _ => return Err(bad_char(tok_pos)),
    };
    match it.next() {
        Some((i, '\'')) => Ok((Tok::Int(i64::from(u32::from(ch))), i + 2)),
        _ => Err(bad_char(tok_pos)),
    }
}

fn bad_char(tok_pos: usize) -> Failure {
    Failure::new(
        tok_pos,
        "bad character literal: write one character between single quotes",
    )
}

/// The character an escape after `\\` stands for, as in Go's quoted
/// strings: `\\n`, `\\x41`, `\\101`, `\\u00e9`, `\\U0001F600` and the like.
fn unescape(chars: &mut std::str::CharIndices<'_>) -> Result<char, String> {
    let Some((_, e)) = chars.next() else {
        return Err("unterminated escape sequence".into());
    };
    let simple = match e {
        'a' => Some('\u{7}'),
        'b' => Some('\u{8}'),
        'f' => Some('\u{c}'),
        'n' => Some('\n'),
        'r' => Some('\r'),
        't' => Some('\t'),
        'v' => Some('\u{b}'),
        '\\' | '"' | '\'' => Some(e),
        _ => None,
    };
    if let Some(c) = simple {
        return Ok(c);
    }
    let (digits, radix, first) = match e {
        'x' => (2, 16, None),
        'u' => (4, 16, None),
        'U' => (8, 16, None),
        '0'..='7' => (2, 8, Some(e)),
        other => return Err(format!("unknown escape sequence \\{other} in string")),
    };
    let mut text: String = first.into_iter().collect();
    for _ in 0..digits {
        match chars.next() {
            Some((_, d)) => text.push(d),
            None => return Err("unterminated escape sequence".into()),
        }
    }
    let code = u32::from_str_radix(&text, radix)
        .map_err(|_| format!("bad escape sequence \\{e}{text}"))?;
    if matches!(e, 'x' | '0'..='7') && code > 0x7f {
        return Err(format!(
            "escape \\{e}{text} is a byte that is not UTF-8 text; write the character"
        ));
    }
    char::from_u32(code).ok_or_else(|| format!("escape \\{e}{text} is not a character"))
}

/// `.field` or a lone `.`, and its length.
fn lex_dot(rest: &str) -> (Tok, usize) {
    let after = &rest[1..];
    let len = ident_len(after);
    if len > 0 {
        (Tok::Field(after[..len].to_string()), 1 + len)
    } else {
        (Tok::Dot, 1)
    }
}

/// A one-character token: brackets, separators and operators.
fn punctuation(c: char, tok_pos: usize) -> Result<Tok, Failure> {
    Ok(match c {
        '(' => Tok::LParen,
        ')' => Tok::RParen,
        '[' => Tok::LBrack,
        ']' => Tok::RBrack,
        ',' => Tok::Comma,
        ';' => Tok::Semicolon,
        ':' => Tok::Colon,
        '|' => Tok::Pipe,
        '?' => Tok::Question,
        '=' => Tok::Assign,
        '+' => Tok::Op("+"),
        '-' => Tok::Op("-"),
        '*' => Tok::Op("*"),
        '/' => Tok::Op("/"),
        '%' => Tok::Op("%"),
        '<' => Tok::Op("<"),
        '>' => Tok::Op(">"),
        '!' => Tok::Op("!"),
        other => {
            return Err(Failure::new(
                tok_pos,
                format!("unexpected character {other:?} in action"),
            ));
        }
    })
}

/// A number at the start of `s` as Go writes it (`12`, `1.5`, `.5`, `5.`,
/// `1e3`, `0x1F`), and its length.
fn lex_number(s: &str) -> Option<(f64, usize)> {
    let b = s.as_bytes();
    let digits = |mut i: usize| {
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        i
    };
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        let len = hex
            .find(|c: char| !c.is_ascii_hexdigit())
            .unwrap_or(hex.len());
        let value = i64::from_str_radix(&hex[..len], 16).ok()?;
        return Some((value as f64, 2 + len));
    }
    let mut end = digits(0);
    if end < b.len()
        && b[end] == b'.'
        && !b
            .get(end + 1)
            .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
    {
        end = digits(end + 1);
    }
    if end < b.len() && (b[end] == b'e' || b[end] == b'E') {
        let mut exp = end + 1;
        if exp < b.len() && (b[exp] == b'+' || b[exp] == b'-') {
            exp += 1;
        }
        let after = digits(exp);
        if after > exp {
            end = after;
        }
    }
    if end < b.len() && (b[end].is_ascii_alphanumeric() || b[end] == b'_') {
        return None;
    }
    Some((s[..end].parse().ok()?, end))
}

fn ident_len(s: &str) -> usize {
    s.char_indices()
        .find(|(_, c)| !(*c == '_' || c.is_alphanumeric()))
        .map(|(i, _)| i)
        .unwrap_or(s.len())
}

fn lex_string(src: &str, start: usize) -> Result<(String, usize), Failure> {
    let rest = &src[start..];
    let mut chars = rest.char_indices();
    let quote = chars.next().map(|(_, c)| c).unwrap_or('"');
    let mut out = String::new();
    while let Some((i, c)) = chars.next() {
        if c == quote {
            return Ok((out, i + 1));
        }
        if c == '\\' && quote == '"' {
            out.push(unescape(&mut chars).map_err(|m| Failure::new(start + i, m))?);
            continue;
        }
        if c == '\n' && quote == '"' {
            break;
        }
        out.push(c);
    }
    Err(Failure::new(start, "unterminated string"))
}
