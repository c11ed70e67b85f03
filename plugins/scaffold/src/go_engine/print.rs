//! Values printed as Go's fmt prints them where gotmpl prints otherwise:
//! floats in `%v` (`1e+09`, not `1000000000`), `%T`, `%s` and `%d` of a
//! list, and `print`/`println` spacing. Actions print through `print_value`,
//! which the engine appends to every action's pipeline.

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::{Arc, Mutex};

use gotmpl::parse::{CommandNode, Expr, ListNode, Node};
use gotmpl::{Template, TemplateError, Value};

/// The function every action's value passes through before gotmpl prints it.
pub const PRINT_VALUE: &str = "_holo_print_value";
/// The function that gives `{{template "t"}}` (without data) nil, as Go does.
pub const NO_DATA: &str = "_holo_no_data";

/// Go's `%v` of a value, as `fmt.Sprint` writes it.
pub fn go_value(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Nil => out.push_str("<nil>"),
        Value::Float(f) => out.push_str(&go_float(*f)),
        Value::List(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(' ');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Map(map) => {
            out.push_str("map[");
            for (index, (key, item)) in map.iter().enumerate() {
                if index > 0 {
                    out.push(' ');
                }
                let _ = write!(out, "{key}:");
                write_value(out, item);
            }
            out.push(']');
        }
        other => {
            let _ = write!(out, "{other}");
        }
    }
}

/// `strconv.FormatFloat(f, 'g', -1, 64)`, which `%v` writes: the shortest
/// digits, in e-notation when the exponent is below -4 or at least 6.
pub fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let scientific = format!("{f:e}");
    let Some((mantissa, exponent)) = scientific.split_once('e') else {
        return scientific;
    };
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if (-4..6).contains(&exponent) {
        return format!("{f}");
    }
    let sign = if exponent < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exponent.abs())
}

/// Go's `%#v`: the value as Go source.
fn go_syntax(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s:?}"),
        Value::List(items) => {
            let inner: Vec<String> = items.iter().map(go_syntax).collect();
            format!("[]interface {{}}{{{}}}", inner.join(", "))
        }
        Value::Map(map) => {
            let inner: Vec<String> = map
                .iter()
                .map(|(key, item)| format!("{key:?}:{}", go_syntax(item)))
                .collect();
            format!("map[string]interface {{}}{{{}}}", inner.join(", "))
        }
        Value::Nil => "interface {}(nil)".into(),
        other => go_value(other),
    }
}

/// Go's name of a value's type, for `%T`.
fn go_type(value: &Value) -> &'static str {
    match value {
        Value::Nil => "<nil>",
        Value::Bool(_) => "bool",
        Value::Int(_) => "int",
        Value::Uint(_) => "uint64",
        Value::Float(_) => "float64",
        Value::String(_) => "string",
        Value::List(_) => "[]interface {}",
        Value::Map(_) => "map[string]interface {}",
        Value::Function(_) => "func",
    }
}

/// The value an action prints: floats, lists and maps as Go writes them,
/// everything else as gotmpl does.
pub fn print_value(args: &[Value]) -> Result<Value, TemplateError> {
    match args.last() {
        Some(value @ (Value::Float(_) | Value::List(_) | Value::Map(_))) => {
            Ok(Value::String(go_value(value).into()))
        }
        Some(value) => Ok(value.clone()),
        None => Ok(Value::Nil),
    }
}

/// `fmt.Sprint`: a space between two operands when neither is a string.
pub fn sprint(args: &[Value]) -> String {
    let mut out = String::new();
    for (index, arg) in args.iter().enumerate() {
        let is_string = |value: &Value| matches!(value, Value::String(_));
        if index > 0 && !is_string(arg) && !is_string(&args[index - 1]) {
            out.push(' ');
        }
        write_value(&mut out, arg);
    }
    out
}

/// `fmt.Sprintln`: spaces between all operands and a newline.
pub fn sprintln(args: &[Value]) -> String {
    let mut out = args.iter().map(go_value).collect::<Vec<_>>().join(" ");
    out.push('\n');
    out
}

/// gotmpl's own functions, reached through a template of their own per
/// function and number of arguments (gotmpl's function map is not
/// public), for the functions this engine wraps.
#[derive(Default)]
pub struct Builtins {
    cache: Mutex<HashMap<(&'static str, usize), Arc<Template>>>,
}

impl Builtins {
    /// `fmt.Sprintf`: the verbs gotmpl formats otherwise than Go are
    /// written here, the rest left to gotmpl.
    pub fn printf(&self, args: &[Value]) -> Result<Value, TemplateError> {
        let Some(Value::String(format)) = args.first() else {
            return self.call("printf", args);
        };
        super::budget::allow("printf", printf_bound(format, &args[1..]))?;
        let (format, operands) = rewrite(format, &args[1..]);
        let mut all = vec![Value::String(format.into())];
        all.extend(operands);
        self.call("printf", &all)
    }

    /// Go's `index`, which also takes no index at all.
    pub fn index(args: &[Value]) -> Result<Value, TemplateError> {
        let Some((first, indexes)) = args.split_first() else {
            return Err(TemplateError::Exec(
                "wrong number of args for index: want at least 1 got 0".into(),
            ));
        };
        if matches!(first, Value::Nil) && !indexes.is_empty() {
            return Err(TemplateError::Exec("index of untyped nil".into()));
        }
        indexes
            .iter()
            .try_fold(first.clone(), |item, index| item.index(index))
    }

    /// Go's `html`, `js` and `urlquery`: the operands as `print` joins
    /// them (a missing value as `<no value>`), escaped.
    pub fn escape(&self, name: &'static str, args: &[Value]) -> Result<Value, TemplateError> {
        let joined = match args {
            [Value::String(s)] => s.to_string(),
            _ => {
                let shown: Vec<Value> = args
                    .iter()
                    .map(|arg| match arg {
                        Value::Nil => Value::String("<no value>".into()),
                        other => other.clone(),
                    })
                    .collect();
                sprint(&shown)
            }
        };
        self.call(name, &[Value::String(joined.into())])
    }

    /// The builtin `name`'s text for `args`.
    fn call(&self, name: &'static str, args: &[Value]) -> Result<Value, TemplateError> {
        let template = {
            let mut cache = self
                .cache
                .lock()
                .map_err(|_| TemplateError::Exec(format!("{name}: a lock is poisoned")))?;
            match cache.get(&(name, args.len())) {
                Some(template) => Arc::clone(template),
                None => {
                    let operands: String = (0..args.len())
                        .map(|index| format!(" (index . {index})"))
                        .collect();
                    let text = format!("{{{{{name}{operands}}}}}");
                    let parsed = Arc::new(Template::new(name).parse(&text)?);
                    cache.insert((name, args.len()), Arc::clone(&parsed));
                    parsed
                }
            }
        };
        let list = Value::List(args.to_vec().into());
        Ok(Value::String(template.execute_to_string(&list)?.into()))
    }
}

/// The format with each verb gotmpl would get wrong turned into `%s` and
/// its operand into Go's text for it.
fn rewrite(format: &str, args: &[Value]) -> (String, Vec<Value>) {
    let mut out = String::new();
    let mut operands: Vec<Value> = Vec::new();
    let mut next = 0;
    let mut chars = format.char_indices().peekable();
    while let Some((_, c)) = chars.next() {
        out.push(c);
        if c != '%' {
            continue;
        }
        let mut flags = String::new();
        while let Some(&(_, f)) = chars.peek() {
            if f == '%' && flags.is_empty() {
                break;
            }
            if f.is_ascii_alphabetic() {
                break;
            }
            flags.push(f);
            chars.next();
        }
        let Some((_, verb)) = chars.next() else {
            out.push_str(&flags);
            break;
        };
        if verb == '%' {
            out.push('%');
            continue;
        }
        let stars = flags.matches('*').count();
        for _ in 0..stars {
            if let Some(arg) = args.get(next) {
                operands.push(arg.clone());
            }
            next += 1;
        }
        let arg = args.get(next);
        next += 1;
        let (verb, arg) = match (verb, arg) {
            ('T', Some(arg)) => ('s', Value::String(go_type(arg).into())),
            ('v' | 's' | 'd', Some(value @ (Value::List(_) | Value::Map(_))))
                if !flags.contains(['#', '+']) =>
            {
                ('s', Value::String(go_value(value).into()))
            }
            ('v', Some(Value::Float(f))) if !flags.contains(['#', '+']) => {
                ('s', Value::String(go_float(*f).into()))
            }
            ('v', Some(value)) if flags.contains('#') => {
                let flags = flags.replace('#', "");
                out.push_str(&flags);
                out.push('s');
                operands.push(Value::String(go_syntax(value).into()));
                continue;
            }
            ('x' | 'X', Some(Value::String(s))) if flags.contains(' ') => {
                let hex: Vec<String> = s
                    .bytes()
                    .map(|b| {
                        if verb == 'x' {
                            format!("{b:02x}")
                        } else {
                            format!("{b:02X}")
                        }
                    })
                    .collect();
                let flags = flags.replace(' ', "");
                out.push_str(&flags);
                out.push('s');
                operands.push(Value::String(hex.join(" ").into()));
                continue;
            }
            (verb, Some(arg)) => (verb, arg.clone()),
            (verb, None) => {
                out.push_str(&flags);
                out.push(verb);
                continue;
            }
        };
        out.push_str(&flags);
        out.push(verb);
        operands.push(arg);
    }
    operands.extend(args.iter().skip(next).cloned());
    (out, operands)
}

/// Every action of `tree` made to print through [`PRINT_VALUE`], and every
/// `{{template "t"}}` without data given nil.
pub fn go_printing(tree: &mut ListNode, text: &str) {
    for node in &mut tree.nodes {
        match node {
            Node::Action(action) => ideal_floats(&mut action.pipe, text),
            Node::If(branch) | Node::Range(branch) | Node::With(branch) => {
                ideal_floats(&mut branch.pipe, text);
            }
            Node::Template(call) => {
                if let Some(pipe) = &mut call.pipe {
                    ideal_floats(pipe, text);
                }
            }
            _ => {}
        }
        match node {
            Node::Action(action) if !action.pipe.decl.is_empty() => {
                changes_in_place(&mut action.pipe)
            }
            Node::Action(action) if !action.pipe.is_assign => {
                let pos = action.pipe.pos;
                action.pipe.commands.push(CommandNode {
                    pos,
                    args: vec![Expr::Identifier(pos, PRINT_VALUE.into())],
                });
            }
            Node::List(list) => go_printing(list, text),
            Node::If(branch) | Node::Range(branch) | Node::With(branch) => {
                go_printing(&mut branch.body, text);
                if let Some(other) = &mut branch.else_body {
                    go_printing(other, text);
                }
            }
            Node::Define(define) => go_printing(&mut define.body, text),
            Node::Template(call) if call.pipe.is_none() => {
                let pos = call.pos;
                call.pipe = Some(gotmpl::parse::PipeNode {
                    pos,
                    decl: Vec::new(),
                    commands: vec![CommandNode {
                        pos,
                        args: vec![Expr::Identifier(pos, NO_DATA.into())],
                    }],
                    is_assign: false,
                });
            }
            _ => {}
        }
    }
}

/// Sprig's `set` and `unset` change the dict they are given; values here
/// do not change in place, so `$_ := set $d "k" "v"` becomes
/// `$d = set $d "k" "v"`.
fn changes_in_place(pipe: &mut gotmpl::parse::PipeNode) {
    let [command] = pipe.commands.as_slice() else {
        return;
    };
    let (Some(Expr::Identifier(_, function)), Some(Expr::Variable(_, variable, fields))) =
        (command.args.first(), command.args.get(1))
    else {
        return;
    };
    if matches!(
        function.as_str(),
        "set" | "unset" | "merge" | "mergeOverwrite"
    ) && fields.is_empty()
        && variable.as_str() != "$"
    {
        pipe.decl = vec![variable.clone()];
        pipe.is_assign = true;
    }
}

/// Go keeps a number written with `.`, `e` or `p` (`1e9`, `3.0`) a float
/// even when its value is whole; gotmpl makes it an integer.
fn ideal_floats(pipe: &mut gotmpl::parse::PipeNode, text: &str) {
    for command in &mut pipe.commands {
        for arg in &mut command.args {
            match arg {
                Expr::Number(pos, gotmpl::parse::Number::Int(value))
                    if written_as_float(text, pos.offset) =>
                {
                    *arg = Expr::Number(*pos, gotmpl::parse::Number::Float(*value as f64));
                }
                Expr::Pipe(_, inner) => ideal_floats(inner, text),
                Expr::Chain(_, inner, _) => {
                    if let Expr::Pipe(_, pipe) = inner.as_mut() {
                        ideal_floats(pipe, text);
                    }
                }
                _ => {}
            }
        }
    }
}

fn written_as_float(text: &str, offset: usize) -> bool {
    let Some(rest) = text.get(offset..) else {
        return false;
    };
    let literal: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '-'))
        .collect();
    let lower = literal.trim_start_matches(['+', '-']).to_ascii_lowercase();
    if lower.starts_with('\'') {
        return false;
    }
    if lower.starts_with("0x") {
        return lower.contains('p');
    }
    lower.contains(['.', 'e', 'p'])
}

/// The number `text` starts with, 0 without one (or past `usize`: the most).
fn leading_number(text: &str) -> usize {
    let digits = text.len() - text.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    match text[..digits].parse::<usize>() {
        Ok(number) => number,
        Err(_) if digits > 0 => usize::MAX,
        Err(_) => 0,
    }
}

/// At most how many bytes `printf` writes: the format, the operands, and
/// every width it may pad to (a number in the format, or an operand for
/// `*`).
fn printf_bound(format: &str, operands: &[Value]) -> usize {
    let widths = format
        .split('%')
        .skip(1)
        .map(|verb| {
            let verb = verb.trim_start_matches(['+', '-', '#', ' ', '0', '[', ']']);
            let width = leading_number(verb);
            let precision = verb
                .trim_start_matches(|c: char| c.is_ascii_digit())
                .strip_prefix('.')
                .map_or(0, leading_number);
            width.saturating_add(precision)
        })
        .fold(0usize, usize::saturating_add);
    let starred = if format.contains('*') {
        operands
            .iter()
            .filter_map(|operand| match operand {
                Value::Int(n) => usize::try_from(*n).ok(),
                Value::Uint(n) => usize::try_from(*n).ok(),
                _ => None,
            })
            .fold(0usize, usize::saturating_add)
    } else {
        0
    };
    format
        .len()
        .saturating_add(super::budget::size_of_all(operands))
        .saturating_add(widths)
        .saturating_add(starred)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_as_go_percent_v() {
        let rows = [
            (1e9, "1e+09"),
            (123_456.0, "123456"),
            (1_234_567.0, "1.234567e+06"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (3.0, "3"),
            (-2.5, "-2.5"),
            (1e21, "1e+21"),
            (1e100, "1e+100"),
        ];
        for (value, go) in rows {
            assert_eq!(go_float(value), go, "{value}");
        }
    }

    #[test]
    fn printf_verbs_gotmpl_would_get_wrong_are_rewritten() {
        let list = Value::List(vec![Value::Int(1), Value::Float(0.5)].into());
        let (format, operands) = rewrite(
            "%T|%5v|%s|%% %d",
            &[list.clone(), Value::Float(1e9), list, Value::Int(3)],
        );
        assert_eq!(format, "%s|%5s|%s|%% %d");
        let shown: Vec<String> = operands.iter().map(go_value).collect();
        assert_eq!(shown, ["[]interface {}", "1e+09", "[1 0.5]", "3"]);
    }

    #[test]
    fn sprint_spaces_operands_that_are_not_strings() {
        let args = [
            Value::String("a".into()),
            Value::Int(1),
            Value::Int(2),
            Value::String("b".into()),
        ];
        assert_eq!(sprint(&args), "a1 2b");
        assert_eq!(sprintln(&args), "a 1 2 b\n");
    }
}
