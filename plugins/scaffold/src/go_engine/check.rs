//! What Go's parser refuses and gotmpl lets through: `{{end}}` and
//! `{{else}}` out of place, a missing `{{end}}`, `{{break}}` outside a
//! range, `{{define}}` inside an action, functions that are not defined and
//! variables that are not declared, each at its line. gotmpl parses first;
//! this pass reads only templates it accepted.

/// A refused template: the line and what Go's parser says.
#[derive(Debug, PartialEq)]
pub struct CheckError {
    pub line: usize,
    pub message: String,
}

/// One token of an action, as far as the checks need to tell them apart.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String),
    Var(String),
    Declare,
    Assign,
    Comma,
    DoubleDot,
    Other,
}

/// An action: its line, and its tokens and the line of each (comments are
/// left out).
struct Action {
    line: usize,
    tokens: Vec<Token>,
    lines: Vec<usize>,
}

/// Checks `text` (which gotmpl parsed) against Go's parser rules.
pub fn check(
    text: &str,
    left: &str,
    right: &str,
    functions: &dyn Fn(&str) -> bool,
) -> Result<(), CheckError> {
    let Some((actions, eof_line)) = actions(text, left, right)? else {
        return Ok(());
    };
    let mut state = Blocks::default();
    for action in &actions {
        state.action(action, functions)?;
    }
    match state.open.last() {
        Some(open) => Err(CheckError {
            line: eof_line,
            message: format!(
                "unexpected EOF: the {{{{{}}}}} at line {} has no {{{{end}}}}",
                open.keyword, open.line
            ),
        }),
        None => Ok(()),
    }
}

/// The actions of `text` and the line it ends on; None where the text is
/// not what the scanner understands (gotmpl has then reported it).
type Scanned = Option<(Vec<Action>, usize)>;

fn actions(text: &str, left: &str, right: &str) -> Result<Scanned, CheckError> {
    let mut found = Vec::new();
    let mut rest = text;
    let mut line = 1;
    while let Some(at) = rest.find(left) {
        line += rest[..at].matches('\n').count();
        let start_line = line;
        let mut inside = &rest[at + left.len()..];
        if let Some(trimmed) = inside.strip_prefix('-')
            && trimmed.starts_with([' ', '\t', '\r', '\n'])
        {
            inside = trimmed;
        }
        let Some((tokens, used)) = tokens(inside, right, start_line)? else {
            return Ok(None);
        };
        line += inside[..used].matches('\n').count();
        if let Some((tokens, lines)) = tokens {
            found.push(Action {
                line: start_line,
                tokens,
                lines,
            });
        }
        rest = &inside[used..];
    }
    line += rest.matches('\n').count();
    Ok(Some((found, line)))
}

/// The tokens of one action and their lines (None for a comment), and how
/// many bytes of `text` it takes up to and with the right delimiter.
type ActionTokens = Option<(Option<(Vec<Token>, Vec<usize>)>, usize)>;

fn tokens(text: &str, right: &str, line: usize) -> Result<ActionTokens, CheckError> {
    let trimmed = text.trim_start();
    if let Some(comment) = trimmed.strip_prefix("/*") {
        let Some(end) = comment.find("*/") else {
            return Err(CheckError {
                line,
                message: "unclosed comment; end it with */ and the closing delimiter".into(),
            });
        };
        let after = &comment[end + 2..];
        let Some(close) = after.find(right) else {
            return Ok(None);
        };
        let used = text.len() - after.len() + close + right.len();
        return Ok(Some((None, used)));
    }
    let mut found = Vec::new();
    let mut lines = Vec::new();
    let mut index = 0;
    let mut at_line = line;
    let bytes = text.as_bytes();
    loop {
        let here = &text[index..];
        if here.starts_with(right) {
            return Ok(Some((Some((found, lines)), index + right.len())));
        }
        if let Some(after) = here.strip_prefix('-')
            && text[..index].ends_with([' ', '\t', '\r', '\n'])
            && after.starts_with(right)
        {
            return Ok(Some((Some((found, lines)), index + 1 + right.len())));
        }
        if here.starts_with('.') && text[..index].ends_with(['"', '\'', '`']) {
            return Err(CheckError {
                line: at_line,
                message: "unexpected . after a quoted term; put a space before it".into(),
            });
        }
        let Some(&byte) = bytes.get(index) else {
            return Ok(None);
        };
        let (token, length) = match byte {
            b' ' | b'\t' | b'\r' | b'\n' => (None, 1),
            b'"' | b'\'' => (Some(Token::Other), quoted(here, byte)?),
            b'`' => match here[1..].find('`') {
                Some(end) => (Some(Token::Other), end + 2),
                None => {
                    return Err(CheckError {
                        line,
                        message: "unterminated raw quoted string".into(),
                    });
                }
            },
            b':' if here.starts_with(":=") => (Some(Token::Declare), 2),
            b'=' => (Some(Token::Assign), 1),
            b',' => (Some(Token::Comma), 1),
            b'.' if here.starts_with("..") => (Some(Token::DoubleDot), 2),
            b'$' => {
                let length = 1 + word_length(&here[1..]);
                (Some(Token::Var(here[..length].to_string())), length)
            }
            b'.' => (Some(Token::Other), 1 + word_length(&here[1..])),
            b'0'..=b'9' | b'+' | b'-' => (Some(Token::Other), 1 + number_length(&here[1..])),
            _ if word_length(here) > 0 => {
                let length = word_length(here);
                let word = &here[..length];
                let preceded = text[..index].ends_with([')', '.']);
                let token = if preceded {
                    Token::Other
                } else {
                    Token::Word(word.to_string())
                };
                (Some(token), length)
            }
            _ => (
                Some(Token::Other),
                here.chars().next().map_or(1, char::len_utf8),
            ),
        };
        if let Some(token) = token {
            found.push(token);
            lines.push(at_line);
        }
        at_line += text[index..index + length].matches('\n').count();
        index += length;
    }
}

fn quoted(text: &str, quote: u8) -> Result<usize, CheckError> {
    let bytes = text.as_bytes();
    let mut index = 1;
    while let Some(&byte) = bytes.get(index) {
        match byte {
            b'\\' => index += 2,
            b'\n' => break,
            _ if byte == quote => return Ok(index + 1),
            _ => index += 1,
        }
    }
    // gotmpl reports an unterminated string; leave the rest to it.
    Ok(text.len())
}

fn word_length(text: &str) -> usize {
    text.char_indices()
        .find(|(_, c)| !(c.is_alphanumeric() || *c == '_'))
        .map_or(text.len(), |(at, _)| at)
}

fn number_length(text: &str) -> usize {
    text.char_indices()
        .find(|(_, c)| !(c.is_alphanumeric() || matches!(c, '_' | '.' | '+' | '-')))
        .map_or(text.len(), |(at, _)| at)
}

/// An open `{{if}}`, `{{range}}`, `{{with}}`, `{{define}}` or `{{block}}`.
struct Open {
    keyword: String,
    line: usize,
    in_else: bool,
    /// How many variables were declared when it opened.
    vars: usize,
    /// A define's body sees only `$`: the variables outside it, kept here.
    outside: Option<Vec<String>>,
}

struct Blocks {
    open: Vec<Open>,
    vars: Vec<String>,
}

impl Default for Blocks {
    fn default() -> Self {
        Blocks {
            open: Vec::new(),
            vars: vec!["$".into()],
        }
    }
}

const OPENERS: &[&str] = &["if", "range", "with", "define", "block"];

impl Blocks {
    fn action(
        &mut self,
        action: &Action,
        functions: &dyn Fn(&str) -> bool,
    ) -> Result<(), CheckError> {
        let fail = |message: String| {
            Err(CheckError {
                line: action.line,
                message,
            })
        };
        let mut tokens = action.tokens.as_slice();
        let mut lines = action.lines.as_slice();
        let keyword = match tokens.first() {
            Some(Token::Word(word)) => word.as_str(),
            _ => "",
        };
        match keyword {
            "end" => return self.end(action.line),
            "else" => {
                self.else_branch(action.line, tokens.get(1))?;
                tokens = &tokens[1..];
                lines = &lines[1..];
            }
            "break" | "continue" => return self.loop_control(keyword, action),
            "define" if !self.open.is_empty() => {
                return fail(format!(
                    "unexpected {{{{define}}}} inside {{{{{}}}}}; define templates at the top level",
                    self.open.last().map_or("", |open| open.keyword.as_str())
                ));
            }
            _ => {}
        }
        let keyword = match tokens.first() {
            Some(Token::Word(word)) if OPENERS.contains(&word.as_str()) || word == "template" => {
                word.clone()
            }
            _ => String::new(),
        };
        if OPENERS.contains(&keyword.as_str()) && action.tokens[0] != Token::Word("else".into()) {
            self.open.push(Open {
                keyword: keyword.clone(),
                line: action.line,
                in_else: false,
                vars: self.vars.len(),
                outside: None,
            });
            if keyword == "define"
                && let Some(open) = self.open.last_mut()
            {
                open.outside = Some(std::mem::replace(&mut self.vars, vec!["$".into()]));
                open.vars = 1;
            }
        }
        let skip = usize::from(!keyword.is_empty());
        if keyword == "block" && tokens.len() < 3 {
            return fail(
                "missing value for block clause; write {{block \"NAME\" .}}...{{end}}".into(),
            );
        }
        self.pipeline(&tokens[skip..], &lines[skip..], functions)
    }

    fn end(&mut self, line: usize) -> Result<(), CheckError> {
        match self.open.pop() {
            Some(open) => {
                self.vars.truncate(open.vars);
                if let Some(outside) = open.outside {
                    self.vars = outside;
                }
                Ok(())
            }
            None => Err(CheckError {
                line,
                message: "unexpected {{end}}: nothing is open here; remove it or add the {{if}}, {{range}} or {{with}} it ends".into(),
            }),
        }
    }

    fn else_branch(&mut self, line: usize, next: Option<&Token>) -> Result<(), CheckError> {
        let chained = match next {
            Some(Token::Word(word)) if word == "if" || word == "with" => Some(word.as_str()),
            _ => None,
        };
        let fail = |what: &str| {
            Err(CheckError {
                line,
                message: format!("unexpected {{{{else}}}}: {what}"),
            })
        };
        let Some(open) = self.open.last_mut() else {
            return fail("no {{if}}, {{range}} or {{with}} is open here");
        };
        if !matches!(open.keyword.as_str(), "if" | "range" | "with") {
            return fail(&format!("a {{{{{}}}}} has no {{{{else}}}}", open.keyword));
        }
        if open.in_else {
            return fail(&format!(
                "the {{{{{}}}}} at line {} has had its {{{{else}}}}; add {{{{end}}}} before it",
                open.keyword, open.line
            ));
        }
        match chained {
            Some(word) if word != open.keyword => fail(&format!(
                "{{{{else {word}}}}} cannot follow a {{{{{}}}}}",
                open.keyword
            )),
            Some(_) => Ok(()),
            None => {
                open.in_else = true;
                Ok(())
            }
        }
    }

    fn loop_control(&self, keyword: &str, action: &Action) -> Result<(), CheckError> {
        let in_range = self
            .open
            .iter()
            .rev()
            .take_while(|open| open.keyword != "define" && open.keyword != "block")
            .any(|open| open.keyword == "range" && !open.in_else);
        let message = if !in_range {
            format!("{{{{{keyword}}}}} outside {{{{range}}}}; use it only inside a range's body")
        } else if action.tokens.len() > 1 {
            format!("{{{{{keyword}}}}} takes nothing after it")
        } else {
            return Ok(());
        };
        Err(CheckError {
            line: action.line,
            message,
        })
    }

    /// The variables a pipeline declares and uses, and the functions it calls.
    fn pipeline(
        &mut self,
        tokens: &[Token],
        lines: &[usize],
        functions: &dyn Fn(&str) -> bool,
    ) -> Result<(), CheckError> {
        let line_at = |at: usize| lines.get(at).copied().unwrap_or(0);
        let fail = |at: usize, message: String| {
            Err(CheckError {
                line: line_at(at),
                message,
            })
        };
        let mut declared = Vec::new();
        let mut start = 0;
        if let Some(at) = tokens
            .iter()
            .position(|token| matches!(token, Token::Declare | Token::Assign))
        {
            declared = tokens[..at].to_vec();
            start = at + 1;
        }
        for (at, token) in tokens.iter().enumerate().skip(start) {
            match token {
                Token::Word(word)
                    if !matches!(word.as_str(), "true" | "false" | "nil") && !functions(word) =>
                {
                    return fail(
                        at,
                        format!(
                            "function {word:?} not defined; use one of Go's or sprig's functions, or lookup"
                        ),
                    );
                }
                Token::Var(name) => self.known(name, line_at(at))?,
                Token::DoubleDot => return fail(at, "unexpected . after term \".\"".into()),
                _ => {}
            }
        }
        let assigning = tokens.contains(&Token::Assign);
        for (at, token) in declared.into_iter().enumerate() {
            if let Token::Var(name) = token {
                let base = name.split('.').next().unwrap_or(&name).to_string();
                if assigning {
                    self.known(&base, line_at(at))?;
                } else {
                    self.vars.push(base);
                }
            }
        }
        Ok(())
    }

    fn known(&self, name: &str, line: usize) -> Result<(), CheckError> {
        if self.vars.iter().any(|var| var == name) {
            return Ok(());
        }
        Err(CheckError {
            line,
            message: format!(
                "undefined variable {name:?}; declare it first with {{{{ {name} := ... }}}}"
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(text: &str) -> Result<(), usize> {
        let known = |name: &str| matches!(name, "len" | "printf" | "eq");
        check(text, "{{", "}}", &known).map_err(|err| err.line)
    }

    #[test]
    fn blocks_that_close_are_accepted() {
        let text = "{{ if 1 }}a{{ else if 2 }}b{{ else }}c{{ end }}\n{{ range $i, $v := . }}{{ $i }}{{ break }}{{ end }}\n{{ define \"x\" }}{{ $ }}{{ end }}{{ with $x := 1 }}{{ $x }}{{ else with 2 }}{{ end }}";
        assert_eq!(checked(text), Ok(()));
        assert_eq!(
            checked("{{/* {{end}} */}}{{ \"{{end}}\" }}{{ `}}` }}"),
            Ok(())
        );
    }

    #[test]
    fn an_end_or_else_out_of_place_is_refused_at_its_line() {
        assert_eq!(checked("a\n{{ end }}"), Err(2));
        assert_eq!(checked("{{ else }}"), Err(1));
        assert_eq!(checked("{{ if 1 }}\n{{ else }}{{ else }}{{ end }}"), Err(2));
        assert_eq!(checked("{{ define \"x\" }}{{ else }}{{ end }}"), Err(1));
        assert_eq!(checked("{{ if 1 }}{{ else with 2 }}{{ end }}"), Err(1));
    }

    #[test]
    fn a_missing_end_is_refused_at_the_last_line() {
        assert_eq!(checked("{{ range . }}\nx\n"), Err(3));
        assert_eq!(
            checked("{{ if 1 }}{{ define \"x\" }}{{ end }}{{ end }}"),
            Err(1)
        );
    }

    #[test]
    fn break_and_continue_only_in_a_range_body() {
        assert_eq!(
            checked("{{ range . }}{{ if 1 }}{{ continue }}{{ end }}{{ end }}"),
            Ok(())
        );
        assert_eq!(checked("{{ break }}"), Err(1));
        assert_eq!(
            checked("{{ range . }}{{ else }}{{ break }}{{ end }}"),
            Err(1)
        );
        assert_eq!(checked("{{ range . }}{{ break 1 }}{{ end }}"), Err(1));
    }

    #[test]
    fn functions_and_variables_must_exist_where_they_are_written() {
        assert_eq!(checked("{{ if false }}\n{{ nosuch }}{{ end }}"), Err(2));
        assert_eq!(
            checked("{{ len . | printf \"%d\" }} {{ .a.len }} {{ true }}"),
            Ok(())
        );
        assert_eq!(checked("{{ with $x := 1 }}{{ end }}\n{{ $x }}"), Err(2));
        assert_eq!(checked("{{ $y = 1 }}"), Err(1));
        assert_eq!(checked("{{ $x := 1 }}{{ $x = 2 }}{{ $.a }}"), Ok(()));
        assert_eq!(checked("{{ ..x }}"), Err(1));
        assert_eq!(
            checked("{{ $x := 1 }}{{ define \"t\" }}{{ $ }}{{ end }}{{ $x }}"),
            Ok(())
        );
        assert_eq!(
            checked("{{ $x := 1 }}{{ define \"t\" }}{{ $x }}{{ end }}"),
            Err(1)
        );
    }

    #[test]
    fn an_unterminated_raw_string_is_refused_where_it_starts() {
        assert_eq!(checked("a\n{{ `x\ny"), Err(2));
    }
}
