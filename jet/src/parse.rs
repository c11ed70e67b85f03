//! Builds the syntax tree of one template from its tokens.

use std::collections::HashMap;
use std::rc::Rc;

use serde_json::Value;

use crate::lex::{Tok, Token};
use crate::{Delims, Failure};

#[derive(Debug)]
pub struct Expr {
    pub kind: ExprKind,
    pub pos: usize,
}

#[derive(Debug)]
pub enum ExprKind {
    Lit(Value),
    Ident(String),
    Context,
    /// `_` in a pipeline command: where the piped value goes.
    Slot,
    Field(Box<Expr>, String),
    Index(Box<Expr>, Box<Expr>),
    Slice(Box<Expr>, Option<Box<Expr>>, Option<Box<Expr>>),
    Call(String, Vec<Expr>),
    /// A call of a value (`form.Get("x")`, a method call in Jet): parsed
    /// wherever it stands, failing only when it runs.
    CallValue(Box<Expr>),
    Not(Box<Expr>),
    Neg(Box<Expr>),
    Binary(&'static str, Box<Expr>, Box<Expr>),
    Ternary(Box<Expr>, Box<Expr>, Box<Expr>),
    Pipe(Box<Expr>, Vec<Command>),
}

#[derive(Debug)]
pub struct Command {
    pub name: String,
    pub args: Vec<Expr>,
    pub pos: usize,
}

#[derive(Debug)]
pub enum Node {
    Text(String),
    Print(Expr),
    Set {
        names: Vec<(String, usize)>,
        values: Vec<Expr>,
        declare: bool,
    },
    If {
        init: Option<Box<Node>>,
        branches: Vec<(Expr, Vec<Node>)>,
        otherwise: Vec<Node>,
    },
    /// Nodes from one action (`x := 1; x`).
    Seq(Vec<Node>),
    Range {
        key: Option<String>,
        value: Option<String>,
        over: Expr,
        body: Vec<Node>,
        otherwise: Vec<Node>,
    },
    /// A block definition, run where it stands.
    Block {
        name: String,
        pos: usize,
    },
    Yield {
        name: String,
        /// `name=value`; a bare `name` (no value, an error when run) or a
        /// value without a name (run, then dropped), as Jet parses them.
        args: Vec<(String, Option<Expr>)>,
        context: Option<Expr>,
        content: Option<Rc<Vec<Node>>>,
        pos: usize,
    },
    YieldContent {
        pos: usize,
    },
    Include {
        name: Expr,
        context: Option<Expr>,
        pos: usize,
    },
    Try {
        body: Vec<Node>,
        catch: Option<(Option<String>, Vec<Node>)>,
    },
    /// `return value`: what `exec` gives back; the template goes on.
    Return(Expr),
}

#[derive(Debug)]
pub struct Block {
    pub params: Vec<(String, Option<Expr>)>,
    /// The context a definition runs with where it stands.
    pub context: Option<Expr>,
    pub body: Vec<Node>,
    pub content: Option<Rc<Vec<Node>>>,
}

#[derive(Debug)]
pub struct Parsed {
    pub body: Vec<Node>,
    pub blocks: HashMap<String, Rc<Block>>,
    pub extends: Option<(String, usize)>,
    pub imports: Vec<(String, usize)>,
}

const RESERVED: &[&str] = &[
    "if", "else", "end", "range", "block", "yield", "include", "import", "extends", "content",
    "try", "catch", "return", "true", "false", "nil",
];

pub fn parse(tokens: Vec<Token>, delims: &Delims) -> Result<Parsed, Failure> {
    let mut p = Parser {
        toks: tokens,
        i: 0,
        blocks: HashMap::new(),
        depth: 0,
        open: delims.left.clone(),
        close: delims.right.clone(),
    };
    let mut extends = None;
    let mut imports = Vec::new();
    // `extends` and `import` stand at the top, before any other action.
    // As in Jet, whitespace-only text up to the first other action or text
    // is dropped.
    loop {
        if let Tok::Text(t) = &p.peek().tok
            && t.trim().is_empty()
        {
            p.i += 1;
            continue;
        }
        if p.peek().tok != Tok::Open {
            break;
        }
        let kw = p.peek_at(1).tok.clone();
        let is_extends = kw == Tok::Ident("extends".into());
        if !is_extends && kw != Tok::Ident("import".into()) {
            break;
        }
        p.i += 2;
        let pos = p.peek().pos;
        let name = match p.next().tok {
            Tok::Str(s) => s,
            _ => return Err(Failure::new(pos, "expected a quoted template name")),
        };
        p.expect_close()?;
        if is_extends {
            if extends.is_some() || !imports.is_empty() {
                return Err(Failure::new(
                    pos,
                    "extends must be the first statement of the template",
                ));
            }
            extends = Some((name, pos));
        } else {
            imports.push((name, pos));
        }
    }
    let (body, end) = p.list()?;
    if let Some((kw, pos)) = end {
        return Err(Failure::new(
            pos,
            format!(
                "unexpected {} {kw} {} without a matching opening statement",
                p.open, p.close
            ),
        ));
    }
    Ok(Parsed {
        body,
        blocks: p.blocks,
        extends,
        imports,
    })
}

struct Parser {
    toks: Vec<Token>,
    i: usize,
    blocks: HashMap<String, Rc<Block>>,
    depth: usize,
    open: String,
    close: String,
}

const MAX_NESTING: usize = 64;

type Terminator = Option<(String, usize)>;

impl Parser {
    fn peek(&self) -> &Token {
        self.peek_at(0)
    }

    fn peek_at(&self, n: usize) -> &Token {
        let last = self.toks.len().saturating_sub(1);
        &self.toks[(self.i + n).min(last)]
    }

    fn next(&mut self) -> Token {
        let t = self.peek().clone();
        if self.i < self.toks.len() {
            self.i += 1;
        }
        t
    }

    fn is_kw(&self, n: usize, kw: &str) -> bool {
        matches!(&self.peek_at(n).tok, Tok::Ident(s) if s == kw)
    }

    fn expect_close(&mut self) -> Result<(), Failure> {
        let t = self.next();
        match t.tok {
            Tok::Close => Ok(()),
            other => Err(Failure::new(
                t.pos,
                format!(
                    "unexpected {} in action, expected the closing delimiter",
                    describe(&other)
                ),
            )),
        }
    }

    fn expect(&mut self, want: Tok, what: &str) -> Result<usize, Failure> {
        let t = self.next();
        if t.tok == want {
            Ok(t.pos)
        } else {
            Err(Failure::new(
                t.pos,
                format!("unexpected {}, expected {what}", describe(&t.tok)),
            ))
        }
    }

    fn ident(&mut self, what: &str) -> Result<(String, usize), Failure> {
        let t = self.next();
        match t.tok {
            Tok::Ident(s) => Ok((s, t.pos)),
            other => Err(Failure::new(
                t.pos,
                format!("unexpected {}, expected {what}", describe(&other)),
            )),
        }
    }

    /// Parses nodes up to `end`, `else`, `content` or `catch`; returns the
    /// terminating keyword (its action's opening delimiter is consumed up to
    /// the keyword) or None at the end of input.
    fn list(&mut self) -> Result<(Vec<Node>, Terminator), Failure> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(Failure::new(
                self.peek().pos,
                format!("statements nested deeper than {MAX_NESTING} levels"),
            ));
        }
        let mut nodes = Vec::new();
        loop {
            let t = self.next();
            match t.tok {
                Tok::Eof => {
                    self.depth -= 1;
                    return Ok((nodes, None));
                }
                Tok::Text(s) => nodes.push(Node::Text(s)),
                Tok::Open => {
                    for kw in ["end", "else", "content", "catch"] {
                        if self.is_kw(0, kw) {
                            let pos = self.next().pos;
                            self.depth -= 1;
                            return Ok((nodes, Some((kw.to_string(), pos))));
                        }
                    }
                    nodes.push(self.action(t.pos)?);
                }
                other => {
                    return Err(Failure::new(
                        t.pos,
                        format!("unexpected {}", describe(&other)),
                    ));
                }
            }
        }
    }

    fn body_until_end(&mut self, open_pos: usize, what: &str) -> Result<Vec<Node>, Failure> {
        let (body, end) = self.list()?;
        self.finish(end, open_pos, what, &["end"])?;
        Ok(body)
    }

    fn finish(
        &mut self,
        end: Terminator,
        open_pos: usize,
        what: &str,
        allowed: &[&str],
    ) -> Result<String, Failure> {
        match end {
            Some((kw, _)) if allowed.contains(&kw.as_str()) => {
                if kw == "end" || kw == "content" {
                    self.expect_close()?;
                }
                Ok(kw)
            }
            Some((kw, pos)) => Err(Failure::new(
                pos,
                format!("unexpected {} {kw} {} in {what}", self.open, self.close),
            )),
            None => Err(Failure::new(
                open_pos,
                format!(
                    "{what} is never closed: missing {} end {}",
                    self.open, self.close
                ),
            )),
        }
    }

    fn action(&mut self, open_pos: usize) -> Result<Node, Failure> {
        let first = self.peek().clone();
        if let Tok::Ident(kw) = &first.tok {
            match kw.as_str() {
                "if" => {
                    self.next();
                    return self.if_chain(open_pos);
                }
                "range" => {
                    self.next();
                    return self.range(open_pos);
                }
                "block" => {
                    self.next();
                    return self.block(open_pos);
                }
                "yield" => {
                    self.next();
                    return self.yield_(first.pos);
                }
                "include" => {
                    self.next();
                    let name = self.expr()?;
                    let context = if self.peek().tok == Tok::Close {
                        None
                    } else {
                        Some(self.pipeline()?)
                    };
                    self.expect_close()?;
                    return Ok(Node::Include {
                        name,
                        context,
                        pos: first.pos,
                    });
                }
                "try" => {
                    self.next();
                    self.expect_close()?;
                    let (body, end) = self.list()?;
                    let kw = self.finish(end, open_pos, "try", &["end", "catch"])?;
                    let catch = if kw == "catch" {
                        let var = if let Tok::Ident(_) = self.peek().tok {
                            Some(self.ident("a variable name")?.0)
                        } else {
                            None
                        };
                        self.expect_close()?;
                        Some((var, self.body_until_end(open_pos, "catch")?))
                    } else {
                        None
                    };
                    return Ok(Node::Try { body, catch });
                }
                "extends" | "import" => {
                    return Err(Failure::new(
                        first.pos,
                        format!(
                            "{kw} must stand at the top of the template, before any other action"
                        ),
                    ));
                }
                "return" => {
                    self.next();
                    let value = self.pipeline()?;
                    self.expect_close()?;
                    return Ok(Node::Return(value));
                }
                "end" | "else" | "catch" => {
                    return Err(Failure::new(
                        first.pos,
                        format!("{kw} is not supported here"),
                    ));
                }
                _ => {}
            }
            if let Some(set) = self.set_statement()? {
                // `x := 1; x + 1` sets, then prints.
                if self.peek().tok == Tok::Semicolon {
                    self.next();
                    let then = self.pipeline()?;
                    self.expect_close()?;
                    return Ok(Node::Seq(vec![set, Node::Print(then)]));
                }
                self.expect_close()?;
                return Ok(set);
            }
        }
        let e = self.pipeline()?;
        self.expect_close()?;
        Ok(Node::Print(e))
    }

    /// `name := value`, `name = value`, `a, b := x, y`, or `v, ok :=
    /// m["k"]` (the value, and whether the key is there); None when the
    /// action is not an assignment.
    fn set_statement(&mut self) -> Result<Option<Node>, Failure> {
        let first = self.peek().pos;
        if !matches!(self.peek().tok, Tok::Ident(_)) {
            return Ok(None);
        }
        let mut n = 1;
        while self.peek_at(n).tok == Tok::Comma && matches!(self.peek_at(n + 1).tok, Tok::Ident(_))
        {
            n += 2;
        }
        let op = &self.peek_at(n).tok;
        if *op != Tok::Declare && *op != Tok::Assign {
            return Ok(None);
        }
        let declare = *op == Tok::Declare;
        let mut names = Vec::new();
        loop {
            let (name, pos) = self.ident("a variable name")?;
            if RESERVED.contains(&name.as_str()) {
                return Err(Failure::new(
                    pos,
                    format!("{name} is a keyword and cannot be a variable"),
                ));
            }
            names.push((name, pos));
            if self.peek().tok == Tok::Comma {
                self.next();
            } else {
                break;
            }
        }
        self.next();
        let mut values = vec![self.pipeline()?];
        while self.peek().tok == Tok::Comma {
            self.next();
            values.push(self.pipeline()?);
        }
        let lookup =
            names.len() == 2 && values.len() == 1 && matches!(values[0].kind, ExprKind::Index(..));
        if values.len() != names.len() && !lookup {
            return Err(Failure::new(
                first,
                format!("{} variables but {} values", names.len(), values.len()),
            ));
        }
        Ok(Some(Node::Set {
            names,
            values,
            declare,
        }))
    }

    fn if_chain(&mut self, open_pos: usize) -> Result<Node, Failure> {
        let mut branches = Vec::new();
        let mut otherwise = Vec::new();
        // `if v, ok := m["k"]; ok`: the variables live in the if.
        let init = match self.set_statement()? {
            Some(set) => {
                self.expect(Tok::Semicolon, "; and a condition after the assignment")?;
                Some(Box::new(set))
            }
            None => None,
        };
        loop {
            let cond = self.pipeline()?;
            self.expect_close()?;
            let (body, end) = self.list()?;
            branches.push((cond, body));
            let kw = self.finish(end, open_pos, "if", &["end", "else"])?;
            if kw == "end" {
                break;
            }
            if self.is_kw(0, "if") {
                self.next();
                continue;
            }
            self.expect_close()?;
            otherwise = self.body_until_end(open_pos, "if")?;
            break;
        }
        Ok(Node::If {
            init,
            branches,
            otherwise,
        })
    }

    fn range(&mut self, open_pos: usize) -> Result<Node, Failure> {
        let (mut key, mut value) = (None, None);
        if let Tok::Ident(a) = self.peek().tok.clone() {
            if self.peek_at(1).tok == Tok::Declare {
                self.i += 2;
                key = Some(a);
            } else if self.peek_at(1).tok == Tok::Comma
                && let Tok::Ident(b) = self.peek_at(2).tok.clone()
                && self.peek_at(3).tok == Tok::Declare
            {
                self.i += 4;
                key = Some(a);
                value = Some(b);
            }
        }
        // As in Jet, range takes an expression, not a pipeline.
        let over = self.expr()?;
        self.expect_close()?;
        let (body, end) = self.list()?;
        let kw = self.finish(end, open_pos, "range", &["end", "else"])?;
        let otherwise = if kw == "else" {
            self.expect_close()?;
            self.body_until_end(open_pos, "range")?
        } else {
            Vec::new()
        };
        Ok(Node::Range {
            key,
            value,
            over,
            body,
            otherwise,
        })
    }

    fn block(&mut self, open_pos: usize) -> Result<Node, Failure> {
        let (name, pos) = self.ident("a block name")?;
        if RESERVED.contains(&name.as_str()) {
            return Err(Failure::new(pos, format!("a block cannot be named {name}")));
        }
        self.expect(Tok::LParen, "( after the block name")?;
        let mut params = Vec::new();
        while self.peek().tok != Tok::RParen {
            let (p, _) = self.ident("a parameter name")?;
            let default = if self.peek().tok == Tok::Assign {
                self.next();
                Some(self.expr()?)
            } else {
                None
            };
            params.push((p, default));
            if self.peek().tok == Tok::Comma {
                self.next();
            } else {
                break;
            }
        }
        self.expect(Tok::RParen, ") after the block parameters")?;
        let context = if self.peek().tok == Tok::Close {
            None
        } else {
            Some(self.expr()?)
        };
        self.expect_close()?;
        let (body, end) = self.list()?;
        let kw = self.finish(end, open_pos, "block", &["end", "content"])?;
        let content = if kw == "content" {
            Some(Rc::new(self.body_until_end(open_pos, "block")?))
        } else {
            None
        };
        // A later definition of the same name replaces an earlier one, as
        // in Jet.
        self.blocks.insert(
            name.clone(),
            Rc::new(Block {
                params,
                context,
                body,
                content,
            }),
        );
        Ok(Node::Block { name, pos })
    }

    /// One argument of a yield: `name=value`, a bare `name`, or a value.
    fn yield_arg(&mut self) -> Result<(String, Option<Expr>), Failure> {
        if let Tok::Ident(name) = self.peek().tok.clone() {
            match self.peek_at(1).tok {
                Tok::Assign => {
                    self.i += 2;
                    return Ok((name, Some(self.expr()?)));
                }
                Tok::Comma | Tok::RParen => {
                    self.next();
                    return Ok((name, None));
                }
                _ => {}
            }
        }
        Ok((String::new(), Some(self.expr()?)))
    }

    fn yield_(&mut self, pos: usize) -> Result<Node, Failure> {
        if self.is_kw(0, "content") {
            self.next();
            self.expect_close()?;
            return Ok(Node::YieldContent { pos });
        }
        let (name, _) = self.ident("a block name after yield")?;
        self.expect(Tok::LParen, "( after the block name")?;
        let mut args = Vec::new();
        while self.peek().tok != Tok::RParen {
            args.push(self.yield_arg()?);
            if self.peek().tok == Tok::Comma {
                self.next();
            } else {
                break;
            }
        }
        self.expect(Tok::RParen, ") after the yield arguments")?;
        let mut context = None;
        if self.peek().tok != Tok::Close && !self.is_kw(0, "content") {
            context = Some(self.expr()?);
        }
        let mut content = None;
        if self.is_kw(0, "content") {
            self.next();
            self.expect_close()?;
            content = Some(Rc::new(self.body_until_end(pos, "yield content")?));
        } else {
            self.expect_close()?;
        }
        Ok(Node::Yield {
            name,
            args,
            context,
            content,
            pos,
        })
    }

    /// An expression with optional `| command` stages; also the prefix call
    /// form `fn: a, b`.
    fn pipeline(&mut self) -> Result<Expr, Failure> {
        let start = self.peek().pos;
        let head = if let (Tok::Ident(name), Tok::Colon) =
            (self.peek().tok.clone(), self.peek_at(1).tok.clone())
        {
            self.i += 2;
            let args = self.args_until_pipe()?;
            Expr {
                kind: ExprKind::Call(name, args),
                pos: start,
            }
        } else {
            self.expr()?
        };
        let mut cmds = Vec::new();
        while self.peek().tok == Tok::Pipe {
            self.next();
            let (name, pos) = self.ident("a function name after |")?;
            let args = match self.peek().tok {
                Tok::LParen => {
                    self.next();
                    self.call_args()?
                }
                Tok::Colon => {
                    self.next();
                    self.args_until_pipe()?
                }
                _ => Vec::new(),
            };
            cmds.push(Command { name, args, pos });
        }
        if cmds.is_empty() {
            Ok(head)
        } else {
            Ok(Expr {
                kind: ExprKind::Pipe(Box::new(head), cmds),
                pos: start,
            })
        }
    }

    fn args_until_pipe(&mut self) -> Result<Vec<Expr>, Failure> {
        let mut args = vec![self.expr()?];
        while self.peek().tok == Tok::Comma {
            self.next();
            args.push(self.expr()?);
        }
        Ok(args)
    }

    fn call_args(&mut self) -> Result<Vec<Expr>, Failure> {
        let mut args = Vec::new();
        // As in Jet, an argument is an expression, not a pipeline.
        while self.peek().tok != Tok::RParen {
            args.push(self.expr()?);
            if self.peek().tok == Tok::Comma {
                self.next();
            } else {
                break;
            }
        }
        self.expect(Tok::RParen, ") to close the argument list")?;
        Ok(args)
    }

    fn expr(&mut self) -> Result<Expr, Failure> {
        self.expr_nested(Self::ternary)
    }

    /// Runs `f` one nesting level deeper; deep nesting is an error, not a
    /// stack overflow.
    fn expr_nested(&mut self, f: fn(&mut Self) -> Result<Expr, Failure>) -> Result<Expr, Failure> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(Failure::new(
                self.peek().pos,
                format!("expression nested deeper than {MAX_NESTING} levels"),
            ));
        }
        let r = f(self);
        self.depth -= 1;
        r
    }

    fn ternary(&mut self) -> Result<Expr, Failure> {
        let cond = self.binary(0)?;
        if self.peek().tok != Tok::Question {
            return Ok(cond);
        }
        self.next();
        let yes = self.expr()?;
        self.expect(Tok::Colon, ": in the ternary expression")?;
        let no = self.expr()?;
        let pos = cond.pos;
        Ok(Expr {
            kind: ExprKind::Ternary(Box::new(cond), Box::new(yes), Box::new(no)),
            pos,
        })
    }

    fn binary(&mut self, level: usize) -> Result<Expr, Failure> {
        const LEVELS: &[&[&str]] = &[
            // Jet gives && and || the same precedence, left to right.
            &["||", "&&"],
            &["==", "!="],
            &["<", "<=", ">", ">="],
            &["+", "-"],
            &["*", "/", "%"],
        ];
        if level == LEVELS.len() {
            return self.unary();
        }
        let mut left = self.binary(level + 1)?;
        loop {
            let op = match &self.peek().tok {
                Tok::Op(op) if LEVELS[level].contains(op) => *op,
                _ => return Ok(left),
            };
            self.next();
            let right = self.binary(level + 1)?;
            let pos = left.pos;
            left = Expr {
                kind: ExprKind::Binary(op, Box::new(left), Box::new(right)),
                pos,
            };
        }
    }

    fn unary(&mut self) -> Result<Expr, Failure> {
        let t = self.peek().clone();
        match t.tok {
            Tok::Op("!") => {
                self.next();
                // As in Jet, ! negates a whole comparison: !a == b is !(a == b).
                let e = self.expr_nested(|p| p.binary(1))?;
                Ok(Expr {
                    kind: ExprKind::Not(Box::new(e)),
                    pos: t.pos,
                })
            }
            Tok::Op("-") => {
                self.next();
                let e = self.expr_nested(Self::unary)?;
                Ok(Expr {
                    kind: ExprKind::Neg(Box::new(e)),
                    pos: t.pos,
                })
            }
            Tok::Op("+") => {
                self.next();
                self.expr_nested(Self::unary)
            }
            _ => self.postfix(),
        }
    }

    fn postfix(&mut self) -> Result<Expr, Failure> {
        let mut e = self.primary()?;
        loop {
            let t = self.peek().clone();
            match t.tok {
                Tok::Field(name) if !t.space => {
                    self.next();
                    e = Expr {
                        kind: ExprKind::Field(Box::new(e), name),
                        pos: t.pos,
                    };
                }
                Tok::LBrack if !t.space => {
                    self.next();
                    let lo = if self.peek().tok == Tok::Colon {
                        None
                    } else {
                        Some(Box::new(self.pipeline()?))
                    };
                    if self.peek().tok == Tok::Colon {
                        self.next();
                        let hi = if self.peek().tok == Tok::RBrack {
                            None
                        } else {
                            Some(Box::new(self.pipeline()?))
                        };
                        self.expect(Tok::RBrack, "] to close the slice")?;
                        e = Expr {
                            kind: ExprKind::Slice(Box::new(e), lo, hi),
                            pos: t.pos,
                        };
                    } else {
                        self.expect(Tok::RBrack, "] to close the index")?;
                        let Some(index) = lo else {
                            return Err(Failure::new(t.pos, "empty index expression"));
                        };
                        e = Expr {
                            kind: ExprKind::Index(Box::new(e), index),
                            pos: t.pos,
                        };
                    }
                }
                // As in Jet, a space may stand before the argument list.
                Tok::LParen => {
                    self.next();
                    let args = self.call_args()?;
                    let kind = match e.kind {
                        ExprKind::Ident(name) => ExprKind::Call(name, args),
                        other => ExprKind::CallValue(Box::new(Expr {
                            kind: other,
                            pos: e.pos,
                        })),
                    };
                    e = Expr { kind, pos: e.pos };
                }
                _ => return Ok(e),
            }
        }
    }

    fn primary(&mut self) -> Result<Expr, Failure> {
        let t = self.next();
        let kind = match t.tok {
            Tok::Str(s) => ExprKind::Lit(Value::String(s)),
            // Jet keeps every number literal as a float64.
            Tok::Int(i) => ExprKind::Lit(Value::from(i as f64)),
            Tok::Float(f) => ExprKind::Lit(Value::from(f)),
            Tok::Dot => ExprKind::Context,
            Tok::Field(name) => ExprKind::Field(
                Box::new(Expr {
                    kind: ExprKind::Context,
                    pos: t.pos,
                }),
                name,
            ),
            Tok::Ident(name) => match name.as_str() {
                "true" => ExprKind::Lit(Value::Bool(true)),
                "false" => ExprKind::Lit(Value::Bool(false)),
                "nil" => ExprKind::Lit(Value::Null),
                "_" => ExprKind::Slot,
                _ => ExprKind::Ident(name),
            },
            // As in Jet, parentheses hold an expression, not a pipeline.
            Tok::LParen => {
                let e = self.expr()?;
                self.expect(Tok::RParen, ")")?;
                return Ok(e);
            }
            other => {
                return Err(Failure::new(
                    t.pos,
                    format!("unexpected {} in expression", describe(&other)),
                ));
            }
        };
        Ok(Expr { kind, pos: t.pos })
    }
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Text(_) => "text".into(),
        Tok::Open => "opening delimiter".into(),
        Tok::Close => "end of action".into(),
        Tok::Ident(s) => format!("identifier {s:?}"),
        Tok::Field(s) => format!("field .{s}"),
        Tok::Dot => "\".\"".into(),
        Tok::Str(s) => format!("string {s:?}"),
        Tok::Int(i) => format!("number {i}"),
        Tok::Float(f) => format!("number {f}"),
        Tok::LParen => "\"(\"".into(),
        Tok::RParen => "\")\"".into(),
        Tok::LBrack => "\"[\"".into(),
        Tok::RBrack => "\"]\"".into(),
        Tok::Comma => "\",\"".into(),
        Tok::Semicolon => "\";\"".into(),
        Tok::Colon => "\":\"".into(),
        Tok::Pipe => "\"|\"".into(),
        Tok::Question => "\"?\"".into(),
        Tok::Assign => "\"=\"".into(),
        Tok::Declare => "\":=\"".into(),
        Tok::Op(op) => format!("{op:?}"),
        Tok::Eof => "end of template".into(),
    }
}
