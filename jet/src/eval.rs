//! Runs parsed templates.

use std::collections::HashMap;
use std::rc::Rc;

use serde_json::{Map, Value};

use crate::funcs::{self, show, to_text, truthy, type_name};
use crate::parse::{self, Block, Expr, ExprKind, Node, Parsed};
use crate::{Engine, Error, Failure, MAX_DEPTH, lex, resolve_name};

struct Source {
    name: String,
    text: String,
}

struct Loaded {
    src: Rc<Source>,
    parsed: Parsed,
    /// Own blocks over imported ones.
    blocks: Rc<Blocks>,
    extends: Option<String>,
}

#[derive(Clone)]
struct BlockRef {
    block: Rc<Block>,
    src: Rc<Source>,
}

type Blocks = HashMap<String, BlockRef>;

struct Content {
    nodes: Rc<Vec<Node>>,
    src: Rc<Source>,
    context: Value,
    /// The variables at the yield: the caller's and the block's
    /// parameters, as Jet restores them for the content.
    scopes: Vec<HashMap<String, Value>>,
}

struct Runtime<'e, 'a> {
    engine: &'e Engine<'a>,
    globals: &'e Map<String, Value>,
    cache: HashMap<String, Rc<Loaded>>,
    out: String,
    scopes: Vec<HashMap<String, Value>>,
    context: Value,
    src: Rc<Source>,
    blocks: Rc<Blocks>,
    contents: Vec<Content>,
    depth: usize,
    /// Statement lists being run, one inside the other.
    lists: usize,
    /// The value of the last `return` run, which `exec` gives back.
    returned: Option<Value>,
    /// In a template the render function runs with data other than the
    /// variables, which (as in CCM's scaffold) sees no variables.
    globals_hidden: bool,
}

const MAX_LISTS: usize = 128;

/// Where a node starts, for messages; text has no position of its own.
fn node_pos(node: &Node) -> usize {
    match node {
        Node::Print(e) => e.pos,
        Node::Block { pos, .. }
        | Node::Yield { pos, .. }
        | Node::YieldContent { pos }
        | Node::Include { pos, .. } => *pos,
        _ => 0,
    }
}

type R<T> = Result<T, Error>;

pub fn render(
    engine: &Engine,
    name: &str,
    vars: &Map<String, Value>,
    context: &Value,
) -> R<String> {
    // CCM hands Jet its data decoded into Go's `any`, where every number
    // is a float64: integers from the caller are floats here too.
    let mut vars = Value::Object(vars.clone());
    as_float64(&mut vars);
    let Value::Object(vars) = vars else {
        return Err(top_error(name, "the variables are not a map".into()));
    };
    let mut context = context.clone();
    as_float64(&mut context);
    let mut rt = Runtime::new(engine, &vars, context, name);
    let name = resolve_name("", name).map_err(|m| top_error(name, m))?;
    rt.run_top(&name)?;
    Ok(rt.out)
}

/// Every number in `v` as a float64, as Go's JSON decoding into `any`
/// gives it.
fn as_float64(v: &mut Value) {
    match v {
        Value::Number(n) if !n.is_f64() => {
            if let Some(f) = n.as_f64().and_then(serde_json::Number::from_f64) {
                *n = f;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(as_float64),
        Value::Object(map) => map.values_mut().for_each(as_float64),
        _ => {}
    }
}

pub fn check(engine: &Engine, name: &str) -> R<()> {
    let vars = Map::new();
    let mut rt = Runtime::new(engine, &vars, Value::Null, name);
    let name = resolve_name("", name).map_err(|m| top_error(name, m))?;
    let mut t = rt.load(&name)?;
    while let Some(parent) = t.extends.clone() {
        rt.enter(t.src.clone(), 0)?;
        t = rt.load(&parent)?;
        rt.depth -= 1;
    }
    Ok(())
}

fn top_error(name: &str, message: String) -> Error {
    Error {
        template: name.to_string(),
        line: 1,
        column: 1,
        message,
        kind: crate::ErrorKind::Render,
    }
}

impl<'e, 'a> Runtime<'e, 'a> {
    fn new(
        engine: &'e Engine<'a>,
        globals: &'e Map<String, Value>,
        context: Value,
        name: &str,
    ) -> Self {
        Runtime {
            engine,
            globals,
            cache: HashMap::new(),
            out: String::new(),
            scopes: vec![HashMap::new()],
            context,
            src: Rc::new(Source {
                name: name.to_string(),
                text: String::new(),
            }),
            blocks: Rc::new(HashMap::new()),
            contents: Vec::new(),
            depth: 0,
            lists: 0,
            returned: None,
            globals_hidden: false,
        }
    }

    fn fail(&self, pos: usize, message: impl Into<String>) -> Error {
        Failure::new(pos, message).locate(&self.src.name, &self.src.text)
    }

    fn enter(&mut self, src: Rc<Source>, pos: usize) -> R<()> {
        if self.depth >= MAX_DEPTH {
            return Err(self.fail(pos, format!("templates and blocks nested deeper than {MAX_DEPTH} levels (include, import, extends or yield recursing?)")));
        }
        self.depth += 1;
        self.src = src;
        Ok(())
    }

    /// Loads, parses and caches template `name` (already resolved), with
    /// the blocks of what it imports.
    fn load(&mut self, name: &str) -> R<Rc<Loaded>> {
        if let Some(t) = self.cache.get(name) {
            return Ok(t.clone());
        }
        let Some((found, text)) = self.find(name) else {
            let m = self.engine.loader.load(name).err().unwrap_or_default();
            return Err(Error {
                template: self.src.name.clone(),
                line: 0,
                column: 0,
                message: format!("cannot load template {name:?}: {m}"),
                kind: crate::ErrorKind::Render,
            });
        };
        let src = Rc::new(Source { name: found, text });
        let parsed = lex::lex(&src.text, &self.engine.delims)
            .and_then(|tokens| parse::parse(tokens, &self.engine.delims))
            .map_err(|f| crate::Error {
                kind: crate::ErrorKind::Syntax,
                ..f.locate(&src.name, &src.text)
            })?;
        let mut blocks = Blocks::new();
        let saved = self.src.clone();
        for (import, pos) in &parsed.imports {
            self.src = src.clone();
            let resolved = resolve_name(name, import).map_err(|m| self.fail(*pos, m))?;
            self.enter(src.clone(), *pos)?;
            let imported = self.load(&resolved).map_err(|e| self.locate_load(e, *pos));
            self.depth -= 1;
            let imported = imported?;
            for (k, v) in imported.blocks.iter() {
                blocks.insert(k.clone(), v.clone());
            }
        }
        self.src = saved;
        for (k, b) in &parsed.blocks {
            blocks.insert(
                k.clone(),
                BlockRef {
                    block: b.clone(),
                    src: src.clone(),
                },
            );
        }
        let extends = match &parsed.extends {
            Some((parent, pos)) => Some(
                resolve_name(name, parent)
                    .map_err(|m| Failure::new(*pos, m).locate(&src.name, &src.text))?,
            ),
            None => None,
        };
        let loaded = Rc::new(Loaded {
            src,
            parsed,
            blocks: Rc::new(blocks),
            extends,
        });
        self.cache.insert(name.to_string(), loaded.clone());
        Ok(loaded)
    }

    /// The template a name finds, as Jet looks: the name as written, then
    /// with `.jet`, `.html.jet` and `.jet.html` added.
    fn find(&self, name: &str) -> Option<(String, String)> {
        ["", ".jet", ".html.jet", ".jet.html"]
            .iter()
            .map(|ext| format!("{name}{ext}"))
            .find_map(|n| self.engine.loader.load(&n).ok().map(|text| (n, text)))
    }

    /// The template to run for `t` (the last one it extends) and the
    /// blocks it runs with (`t`'s over those of what it extends).
    fn root_of(&mut self, t: Rc<Loaded>) -> R<(Rc<Loaded>, Blocks)> {
        let mut t = t;
        let mut blocks: Blocks = (*t.blocks).clone();
        let depth = self.depth;
        let saved_src = self.src.clone();
        while let Some(parent) = t.extends.clone() {
            let pos = t.parsed.extends.as_ref().map(|(_, p)| *p).unwrap_or(0);
            if let Err(e) = self.enter(t.src.clone(), pos) {
                self.depth = depth;
                self.src = saved_src;
                return Err(e);
            }
            let p = self.load(&parent).map_err(|e| self.locate_load(e, pos));
            let p = match p {
                Ok(p) => p,
                Err(e) => {
                    self.depth = depth;
                    self.src = saved_src;
                    return Err(e);
                }
            };
            for (k, v) in p.blocks.iter() {
                blocks.entry(k.clone()).or_insert_with(|| v.clone());
            }
            t = p;
        }
        self.depth = depth;
        self.src = saved_src;
        Ok((t, blocks))
    }

    /// A load error without a place gets the place of the statement.
    fn locate_load(&self, mut e: Error, pos: usize) -> Error {
        if e.line == 0 {
            let located = self.fail(pos, String::new());
            e.template = located.template;
            e.line = located.line;
            e.column = located.column;
        }
        e
    }

    fn run_top(&mut self, name: &str) -> R<()> {
        let t = self.load(name).map_err(|mut e| {
            if e.line == 0 {
                e.line = 1;
                e.column = 1;
            }
            e
        })?;
        // The extended template runs, with the extending one's blocks.
        let (t, blocks) = self.root_of(t)?;
        self.src = t.src.clone();
        self.blocks = Rc::new(blocks);
        self.list(&t.parsed.body)
    }

    fn write(&mut self, s: &str, pos: usize) -> R<()> {
        let max = self.engine.max_output;
        if self.out.len() + s.len() > max {
            return Err(self.fail(pos, format!("output exceeds {max} bytes")));
        }
        self.out.push_str(s);
        Ok(())
    }

    fn scoped(&mut self, nodes: &[Node]) -> R<()> {
        self.scopes.push(HashMap::new());
        let r = self.list(nodes);
        self.scopes.pop();
        r
    }

    fn list(&mut self, nodes: &[Node]) -> R<()> {
        // Statement lists inside yields inside statement lists: bounded
        // here, so that no template overflows the stack.
        if self.lists >= MAX_LISTS {
            let pos = nodes.first().map(node_pos).unwrap_or(0);
            return Err(self.fail(pos, format!("statements and blocks nested deeper than {MAX_LISTS} levels while rendering (a block or include recursing?)")));
        }
        self.lists += 1;
        let r = nodes.iter().try_for_each(|node| self.node(node));
        self.lists -= 1;
        r
    }

    fn node(&mut self, node: &Node) -> R<()> {
        match node {
            Node::Text(s) => self.write(s, 0),
            Node::Print(e) => {
                let v = self.eval(e)?;
                // includeIfExists gives a truth value that prints nothing.
                if matches!(&e.kind, ExprKind::Call(n, _) if n == "includeIfExists") {
                    return Ok(());
                }
                let text = to_text(&v);
                self.write(&text, e.pos)
            }
            Node::Return(e) => {
                self.returned = Some(self.eval(e)?);
                Ok(())
            }
            Node::Seq(nodes) => self.list(nodes),
            Node::Set {
                names,
                values,
                declare,
            } => self.assign(names, values, *declare),
            Node::If {
                init,
                branches,
                otherwise,
            } => {
                self.scopes.push(HashMap::new());
                let r = self.if_branches(init, branches, otherwise);
                self.scopes.pop();
                r
            }
            Node::Range {
                key,
                value,
                over,
                body,
                otherwise,
            } => self.range(key, value, over, body, otherwise),
            Node::Block { name, pos } => {
                let Some(b) = self.blocks.get(name).cloned() else {
                    return Err(self.fail(*pos, format!("unresolved block {name:?}")));
                };
                let content = b.block.content.clone().map(|nodes| (nodes, b.src.clone()));
                let context = match &b.block.context {
                    Some(e) => Some(self.eval_in(e, &b.src)?),
                    None => None,
                };
                self.yield_block(&b, None, context, content, *pos)
            }
            Node::Yield {
                name,
                args,
                context,
                content,
                pos,
            } => {
                let Some(b) = self.blocks.get(name).cloned() else {
                    return Err(self.fail(*pos, format!("unresolved block {name:?}: define it with a block statement here or in an imported template")));
                };
                let context = match context {
                    Some(e) => Some(self.eval(e)?),
                    None => None,
                };
                let content = content.clone().map(|nodes| (nodes, self.src.clone()));
                self.yield_block(&b, Some(args), context, content, *pos)
            }
            Node::YieldContent { pos } => self.yield_content(*pos),
            Node::Include { name, context, pos } => self.include(name, context.as_ref(), *pos),
            Node::Try { body, catch } => self.try_catch(body, catch.as_ref()),
        }
    }

    /// `a, b := x, y` (`declare`) or `a = x`; `v, ok := m["k"]` gives the
    /// value (nil when absent) and whether it is there.
    fn assign(&mut self, names: &[(String, usize)], values: &[Expr], declare: bool) -> R<()> {
        let mut vals = Vec::with_capacity(names.len());
        if names.len() == 2 && values.len() == 1 {
            // v, ok := m["k"]: the value (nil when absent) and
            // whether it is there.
            let found = self.path(&values[0]).cloned();
            vals.push(found.clone().unwrap_or(Value::Null));
            vals.push(Value::Bool(found.is_some()));
        } else {
            for e in values {
                vals.push(self.eval(e)?);
            }
        }
        for ((name, pos), v) in names.iter().zip(vals) {
            if name == "_" {
                continue;
            }
            if declare {
                if let Some(top) = self.scopes.last_mut() {
                    top.insert(name.clone(), v);
                }
            } else if let Some(slot) = self.scopes.iter_mut().rev().find_map(|s| s.get_mut(name)) {
                *slot = v;
            } else {
                return Err(self.fail(*pos, format!("could not assign {name:?}: the variable is not declared; declare it with {name} := …")));
            }
        }
        Ok(())
    }

    /// `yield content`: the content the current yield passed, in the
    /// scopes and context it was written in.
    fn yield_content(&mut self, pos: usize) -> R<()> {
        let Some(c) = self.contents.pop() else {
            return Ok(());
        };
        let saved_ctx = std::mem::replace(&mut self.context, c.context.clone());
        let saved_scopes = std::mem::replace(&mut self.scopes, c.scopes.clone());
        let saved_src = self.src.clone();
        let r = self
            .enter(c.src.clone(), pos)
            .and_then(|_| self.scoped(&c.nodes));
        if r.is_ok() {
            self.depth -= 1;
        }
        self.src = saved_src;
        self.scopes = saved_scopes;
        self.context = saved_ctx;
        self.contents.push(c);
        r
    }

    /// `include "name" context`: the template, with the caller's blocks
    /// and its own.
    fn include(&mut self, name: &Expr, context: Option<&Expr>, pos: usize) -> R<()> {
        let v = self.eval(name)?;
        let Value::String(n) = v else {
            return Err(self.fail(
                name.pos,
                format!(
                    "the name of the template to include must be a string, not {} {}",
                    type_name(&v),
                    show(&v)
                ),
            ));
        };
        let resolved = resolve_name(&self.src.name, &n).map_err(|m| self.fail(name.pos, m))?;
        let new_ctx = match context {
            Some(e) => Some(self.eval(e)?),
            None => None,
        };
        let t = self
            .load(&resolved)
            .map_err(|e| self.locate_load(e, name.pos))?;
        let (t, own) = self.root_of(t)?;
        // The included template sees the caller's blocks and its own.
        let mut blocks = (*self.blocks).clone();
        for (k, v) in own {
            blocks.insert(k, v);
        }
        self.run_body(&t, blocks, new_ctx, pos)
    }

    /// Runs template `t` in a scope of its own with `blocks` and, when
    /// given, `context` as dot; then restores the caller's.
    fn run_body(
        &mut self,
        t: &Loaded,
        blocks: Blocks,
        context: Option<Value>,
        pos: usize,
    ) -> R<()> {
        let saved_src = self.src.clone();
        let saved_blocks = std::mem::replace(&mut self.blocks, Rc::new(blocks));
        let saved_ctx = context.map(|c| std::mem::replace(&mut self.context, c));
        let r = self
            .enter(t.src.clone(), pos)
            .and_then(|_| self.scoped(&t.parsed.body));
        if r.is_ok() {
            self.depth -= 1;
        }
        self.src = saved_src;
        self.blocks = saved_blocks;
        if let Some(c) = saved_ctx {
            self.context = c;
        }
        r
    }

    /// `try … catch err …`: on an error the output and state go back to
    /// where the try began, and the catch runs with the error's text.
    fn try_catch(&mut self, body: &[Node], catch: Option<&(Option<String>, Vec<Node>)>) -> R<()> {
        let mark = self.out.len();
        let (scopes, ctx, src, blocks, depth, contents) = (
            self.scopes.len(),
            self.context.clone(),
            self.src.clone(),
            self.blocks.clone(),
            self.depth,
            self.contents.len(),
        );
        match self.scoped(body) {
            Ok(()) => Ok(()),
            Err(e) => {
                self.out.truncate(mark);
                self.scopes.truncate(scopes);
                self.context = ctx;
                self.src = src;
                self.blocks = blocks;
                self.depth = depth;
                self.contents.truncate(contents);
                let Some((var, nodes)) = catch else {
                    return Ok(());
                };
                let mut scope = HashMap::new();
                if let Some(var) = var {
                    scope.insert(var.clone(), Value::String(e.to_string()));
                }
                self.scopes.push(scope);
                let r = self.list(nodes);
                self.scopes.pop();
                r
            }
        }
    }

    fn if_branches(
        &mut self,
        init: &Option<Box<Node>>,
        branches: &[(Expr, Vec<Node>)],
        otherwise: &[Node],
    ) -> R<()> {
        if let Some(set) = init {
            self.node(set)?;
        }
        for (cond, body) in branches {
            if truthy(&self.eval(cond)?) {
                return self.scoped(body);
            }
        }
        self.scoped(otherwise)
    }

    fn eval_in(&mut self, e: &Expr, src: &Rc<Source>) -> R<Value> {
        let saved = std::mem::replace(&mut self.src, src.clone());
        let r = self.eval(e);
        self.src = saved;
        r
    }

    fn yield_block(
        &mut self,
        b: &BlockRef,
        args: Option<&[(String, Option<Expr>)]>,
        context: Option<Value>,
        content: Option<(Rc<Vec<Node>>, Rc<Source>)>,
        pos: usize,
    ) -> R<()> {
        let block = &b.block;
        let mut scope = HashMap::new();
        // As in Jet, every named argument becomes a variable of the block,
        // declared or not, a value without a name is run and dropped, and
        // a parameter without a value or default is false in a yield and
        // an error where the block is defined (no arguments).
        for (name, e) in args.unwrap_or_default() {
            let Some(e) = e else {
                return Err(self.fail(
                    pos,
                    format!("argument {name} of the yield has no value: write {name}=…"),
                ));
            };
            let v = self.eval(e)?;
            if !name.is_empty() {
                scope.insert(name.clone(), v);
            }
        }
        for (p, default) in &block.params {
            if scope.contains_key(p) {
                continue;
            }
            let v = match (default, args) {
                (Some(d), _) => self.eval_in(d, &b.src)?,
                (None, Some(_)) => Value::Bool(false),
                (None, None) => {
                    return Err(self.fail(pos, format!("block parameter {p:?} has no default, so the block cannot run where it is defined; give it one ({p}=…) or define the block in a template that is imported")));
                }
            };
            scope.insert(p.clone(), v);
        }
        let content_ctx = context.clone().unwrap_or_else(|| self.context.clone());
        self.scopes.push(scope);
        let pushed = if let Some((nodes, src)) = content {
            self.contents.push(Content {
                nodes,
                src,
                context: content_ctx,
                scopes: self.scopes.clone(),
            });
            true
        } else {
            false
        };
        let saved_ctx = context.map(|c| std::mem::replace(&mut self.context, c));
        let saved_src = self.src.clone();
        let r = self
            .enter(b.src.clone(), pos)
            .and_then(|_| self.scoped(&block.body));
        if r.is_ok() {
            self.depth -= 1;
        }
        self.scopes.pop();
        self.src = saved_src;
        if let Some(c) = saved_ctx {
            self.context = c;
        }
        if pushed {
            self.contents.pop();
        }
        r
    }

    fn range(
        &mut self,
        key: &Option<String>,
        value: &Option<String>,
        over: &Expr,
        body: &[Node],
        otherwise: &[Node],
    ) -> R<()> {
        let v = self.eval(over)?;
        let items: Vec<(Value, Value)> = match v {
            Value::Array(items) => items
                .into_iter()
                .enumerate()
                .map(|(i, v)| (Value::from(i), v))
                .collect(),
            Value::Object(map) => {
                let mut pairs: Vec<(String, Value)> = map.into_iter().collect();
                pairs.sort_by(|a, b| a.0.cmp(&b.0));
                pairs
                    .into_iter()
                    .map(|(k, v)| (Value::String(k), v))
                    .collect()
            }
            other => {
                return Err(self.fail(
                    over.pos,
                    format!(
                        "cannot range over {} {}; range needs a list or a map",
                        type_name(&other),
                        show(&other)
                    ),
                ));
            }
        };
        if items.is_empty() {
            return self.scoped(otherwise);
        }
        for (k, item) in items {
            let mut scope = HashMap::new();
            if let Some(k_name) = key
                && k_name != "_"
            {
                scope.insert(k_name.clone(), k);
            }
            let saved_ctx = match value {
                Some(v_name) => {
                    if v_name != "_" {
                        scope.insert(v_name.clone(), item);
                    }
                    None
                }
                None => Some(std::mem::replace(&mut self.context, item)),
            };
            self.scopes.push(scope);
            let r = self.list(body);
            self.scopes.pop();
            if let Some(c) = saved_ctx {
                self.context = c;
            }
            r?;
        }
        Ok(())
    }

    fn lookup(&self, name: &str) -> Option<&Value> {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.get(name))
            .or_else(|| {
                if self.globals_hidden {
                    None
                } else {
                    self.globals.get(name)
                }
            })
    }

    /// The value a plain path (`x`, `.`, `a.b`, `m["k"]`, `l[0]`) names,
    /// borrowed; None when `e` is not such a path or does not resolve (the
    /// caller then evaluates it and reports what is wrong).
    fn path(&self, e: &Expr) -> Option<&Value> {
        match &e.kind {
            ExprKind::Ident(name) => self.lookup(name),
            ExprKind::Context => Some(&self.context),
            ExprKind::Field(base, name) => self.path(base)?.as_object()?.get(name),
            ExprKind::Index(base, index) => {
                let base = self.path(base)?;
                match (&index.kind, base) {
                    (ExprKind::Lit(Value::String(k)), Value::Object(map)) => map.get(k),
                    (ExprKind::Lit(Value::Number(n)), Value::Array(items)) => {
                        let f = n.as_f64()?;
                        if f < 0.0 || f.fract() != 0.0 {
                            return None;
                        }
                        items.get(f as usize)
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }

    fn eval(&mut self, e: &Expr) -> R<Value> {
        if matches!(e.kind, ExprKind::Field(..) | ExprKind::Index(..))
            && let Some(v) = self.path(e)
        {
            return Ok(v.clone());
        }
        match &e.kind {
            ExprKind::Lit(v) => Ok(v.clone()),
            ExprKind::Context => Ok(self.context.clone()),
            ExprKind::Slot => Err(self.fail(e.pos, "_ stands for the piped value and is only allowed in the arguments of a pipeline command")),
            ExprKind::Ident(name) => match self.lookup(name) {
                Some(v) => Ok(v.clone()),
                None if funcs::BUILTINS.contains(&name.as_str()) || self.engine.functions.contains_key(name) => {
                    Err(self.fail(e.pos, format!("{name} is a function; call it as {name}(…)")))
                }
                None => Err(crate::Error {
                    kind: crate::ErrorKind::Undefined,
                    ..self.fail(e.pos, format!("{name:?} is not defined: no variable or global of that name"))
                }),
            },
            ExprKind::Field(base, name) => {
                let b = self.eval(base)?;
                match b {
                    // As in Jet, a missing key is nothing (it prints nothing),
                    // but a missing field of dot (`.a.b`) is an error.
                    Value::Object(mut map) => match map.remove(name) {
                        Some(v) => Ok(v),
                        None if of_dot(base) => Err(self.fail(e.pos, format!("{} has no field {name:?}", describe(base)))),
                        None => Ok(Value::Null),
                    },
                    other => Err(self.fail(e.pos, format!("cannot read field {name:?} of {}: it is {} {}", describe(base), type_name(&other), show(&other)))),
                }
            }
            ExprKind::Index(base, index) => self.index(e, base, index),
            ExprKind::Slice(base, lo, hi) => self.slice(e, base, lo.as_deref(), hi.as_deref()),
            ExprKind::Call(name, args) => {
                if name == "isset" {
                    if args.is_empty() {
                        return Err(self.fail(e.pos, "isset needs at least one argument"));
                    }
                    for a in args {
                        match self.eval(a) {
                            Ok(Value::Null) | Err(_) => return Ok(Value::Bool(false)),
                            Ok(_) => {}
                        }
                    }
                    return Ok(Value::Bool(true));
                }
                let mut vals = Vec::with_capacity(args.len());
                for a in args {
                    vals.push(self.eval(a)?);
                }
                self.call(name, &vals, e.pos)
            }
            ExprKind::CallValue(callee) => match self.eval(callee)? {
                // Jet calls a missing method of a map as nothing.
                Value::Null => Ok(Value::Null),
                other => Err(self.fail(e.pos, format!("cannot call {}: it is {} {}, and only functions can be called", describe(callee), type_name(&other), show(&other)))),
            },
            ExprKind::Not(x) => Ok(Value::Bool(!truthy(&self.eval(x)?))),
            ExprKind::Neg(x) => {
                let v = self.eval(x)?;
                match &v {
                    Value::Number(n) if n.is_f64() => Ok(Value::from(-n.as_f64().unwrap_or(0.0))),
                    Value::Number(n) => match n.as_i64().and_then(i64::checked_neg) {
                        Some(i) => Ok(Value::from(i)),
                        None => Err(self.fail(e.pos, "integer overflow")),
                    },
                    other => Err(self.fail(e.pos, format!("cannot negate {} {}", type_name(other), show(other)))),
                }
            }
            ExprKind::Binary(op, l, r) => self.binary(op, l, r, e.pos),
            ExprKind::Ternary(c, y, n) => {
                if truthy(&self.eval(c)?) {
                    self.eval(y)
                } else {
                    self.eval(n)
                }
            }
            ExprKind::Pipe(head, cmds) => self.pipe(head, cmds),
        }
    }

    /// `base[index]`: a map's key, a list's element, a string's byte.
    fn index(&mut self, e: &Expr, base: &Expr, index: &Expr) -> R<Value> {
        let b = self.eval(base)?;
        let i = self.eval(index)?;
        match (b, &i) {
            (Value::Object(mut map), Value::String(k)) => Ok(map.remove(k).unwrap_or(Value::Null)),
            (Value::Array(mut items), Value::Number(_)) => {
                let n = funcs::int_arg("index", std::slice::from_ref(&i), 0)
                    .map_err(|m| self.fail(index.pos, m))?;
                let len = items.len();
                if n < 0 || n as usize >= len {
                    return Err(self.fail(
                        index.pos,
                        format!(
                            "index {n} out of range: {} has {len} elements",
                            describe(base)
                        ),
                    ));
                }
                Ok(items.swap_remove(n as usize))
            }
            (Value::String(s), Value::Number(_)) => {
                let n = funcs::int_arg("index", std::slice::from_ref(&i), 0)
                    .map_err(|m| self.fail(index.pos, m))?;
                match s.as_bytes().get(n.max(0) as usize) {
                    Some(byte) if n >= 0 => Ok(Value::from(*byte)),
                    _ => Err(self.fail(
                        index.pos,
                        format!("index {n} out of range: the string has {} bytes", s.len()),
                    )),
                }
            }
            (b, i) => Err(self.fail(
                e.pos,
                format!(
                    "cannot index {} {} with {} {}",
                    type_name(&b),
                    describe(base),
                    type_name(i),
                    show(i)
                ),
            )),
        }
    }

    /// `base[lo:hi]` of a list or a string.
    fn slice(&mut self, e: &Expr, base: &Expr, lo: Option<&Expr>, hi: Option<&Expr>) -> R<Value> {
        let b = self.eval(base)?;
        let len = match &b {
            Value::Array(a) => a.len(),
            Value::String(s) => s.len(),
            other => {
                return Err(self.fail(
                    e.pos,
                    format!("cannot slice {} {}", type_name(other), describe(base)),
                ));
            }
        };
        let mut bound = |x: Option<&Expr>, default: usize| -> R<usize> {
            match x {
                None => Ok(default),
                Some(x) => {
                    let v = self.eval(x)?;
                    let n = funcs::int_arg("slice", std::slice::from_ref(&v), 0)
                        .map_err(|m| self.fail(x.pos, m))?;
                    usize::try_from(n)
                        .map_err(|_| self.fail(x.pos, format!("negative slice index {n}")))
                }
            }
        };
        let (l, h) = (bound(lo, 0)?, bound(hi, len)?);
        if l > h || h > len {
            return Err(self.fail(
                e.pos,
                format!("slice bounds out of range [{l}:{h}] with length {len}"),
            ));
        }
        match b {
            Value::Array(a) => Ok(Value::Array(a[l..h].to_vec())),
            Value::String(s) => match s.get(l..h) {
                Some(part) => Ok(Value::String(part.to_string())),
                None => Err(self.fail(
                    e.pos,
                    format!("slice [{l}:{h}] cuts a character of the string in two"),
                )),
            },
            _ => Ok(Value::Null),
        }
    }

    /// `head | cmd a b | …`: each command gets the value so far as its
    /// first argument, or where `_` stands.
    fn pipe(&mut self, head: &Expr, cmds: &[parse::Command]) -> R<Value> {
        let mut v = self.eval(head)?;
        for cmd in cmds {
            let mut vals = Vec::with_capacity(cmd.args.len() + 1);
            let mut slotted = false;
            for a in &cmd.args {
                if matches!(a.kind, ExprKind::Slot) {
                    if slotted {
                        return Err(self.fail(a.pos, "_ may stand only once in a command"));
                    }
                    slotted = true;
                    vals.push(v.clone());
                } else {
                    vals.push(self.eval(a)?);
                }
            }
            if !slotted {
                vals.insert(0, v);
            }
            v = self.call(&cmd.name, &vals, cmd.pos)?;
        }
        Ok(v)
    }

    fn call(&mut self, name: &str, args: &[Value], pos: usize) -> R<Value> {
        match name {
            "isset" => return Ok(Value::Bool(args.iter().all(|a| !a.is_null()))),
            "exec" | "includeIfExists" => return self.run_other(name, args, pos),
            // Jet's Go functions refuse an invalid value (a missing key).
            "len" | "ints" => {}
            _ if funcs::BUILTINS.contains(&name) => {
                if let Some(i) = args.iter().position(Value::is_null) {
                    return Err(self.fail(
                        pos,
                        format!(
                            "argument {} of {name} is nothing (a missing key or nil)",
                            i + 1
                        ),
                    ));
                }
            }
            _ => {}
        }
        let max = self.engine.max_output;
        if let Some(r) = funcs::call(name, args, max) {
            let v = r.map_err(|m| self.fail(pos, m))?;
            // A string doubled in a loop by a function (replace, join ...)
            // would fill memory long before it is written.
            if matches!(&v, Value::String(s) if s.len() > max) {
                return Err(self.fail(pos, format!("{name}: the result exceeds {max} bytes")));
            }
            return Ok(v);
        }
        if self.engine.render_function.as_deref() == Some(name) {
            return self.render_template(name, args, pos);
        }
        if let Some(f) = self.engine.functions.get(name) {
            let mut v = f(args).map_err(|m| self.fail(pos, format!("{name}: {m}")))?;
            as_float64(&mut v);
            return Ok(v);
        }
        let hint = match name {
            "dump" => " (this Jet built-in is not supported)",
            _ => "",
        };
        Err(self.fail(pos, format!("function {name:?} is not defined{hint}")))
    }

    /// `exec(name[, context])`: runs a template for the value it
    /// returns, its output dropped; `includeIfExists(name[, context])`:
    /// includes a template when there is one, and says whether it did.
    fn run_other(&mut self, fn_name: &str, args: &[Value], pos: usize) -> R<Value> {
        let (template, context) = match args {
            [Value::String(t)] => (t, None),
            [Value::String(t), c] => (t, Some(c.clone())),
            _ => {
                return Err(self.fail(pos, format!("{fn_name} needs a template name and optionally a context: {fn_name}(\"name\", .)")));
            }
        };
        let resolved = resolve_name("", template).map_err(|m| self.fail(pos, m))?;
        let exists = self.cache.contains_key(&resolved) || self.find(&resolved).is_some();
        if fn_name == "includeIfExists" && !exists {
            return Ok(Value::Bool(false));
        }
        let t = self.load(&resolved).map_err(|e| self.locate_load(e, pos))?;
        let (t, blocks) = self.root_of(t)?;
        let mark = self.out.len();
        let saved_returned = self.returned.take();
        let r = self.run_body(&t, blocks, context, pos);
        let returned = std::mem::replace(&mut self.returned, saved_returned);
        r?;
        if fn_name == "includeIfExists" {
            return Ok(Value::Bool(true));
        }
        self.out.truncate(mark);
        Ok(returned.unwrap_or(Value::Null))
    }

    /// The render function: another template's output, as a string.
    fn render_template(&mut self, fn_name: &str, args: &[Value], pos: usize) -> R<Value> {
        let [Value::String(template), context] = args else {
            return Err(self.fail(pos, format!("{fn_name} needs a template name and the data the template sees as dot: {fn_name}(\"_partials/header.conf\", .)")));
        };
        let context = context.clone();
        // As in CCM's scaffold, the variables are there only when dot is
        // the variables.
        let hidden = !matches!(&context, Value::Object(m) if m == self.globals);
        let resolved = resolve_name("", template).map_err(|m| self.fail(pos, m))?;
        let t = self.load(&resolved).map_err(|e| self.locate_load(e, pos))?;
        let (t, blocks) = self.root_of(t)?;
        let saved_out = std::mem::take(&mut self.out);
        let saved_scopes = std::mem::replace(&mut self.scopes, vec![HashMap::new()]);
        let saved_ctx = std::mem::replace(&mut self.context, context);
        let saved_src = self.src.clone();
        let saved_blocks = std::mem::replace(&mut self.blocks, Rc::new(blocks));
        let saved_contents = std::mem::take(&mut self.contents);
        let saved_hidden = std::mem::replace(&mut self.globals_hidden, hidden);
        let r = self
            .enter(t.src.clone(), pos)
            .and_then(|_| self.list(&t.parsed.body));
        if r.is_ok() {
            self.depth -= 1;
        }
        let rendered = std::mem::replace(&mut self.out, saved_out);
        self.scopes = saved_scopes;
        self.context = saved_ctx;
        self.src = saved_src;
        self.blocks = saved_blocks;
        self.contents = saved_contents;
        self.globals_hidden = saved_hidden;
        r?;
        let max = self.engine.max_output;
        if self.out.len() + rendered.len() > max {
            return Err(self.fail(pos, format!("output exceeds {max} bytes")));
        }
        Ok(Value::String(rendered))
    }

    /// `"text" + r`: the right side as text.
    fn concat(&self, s: &str, b: &Value, r: &Expr, pos: usize) -> R<Value> {
        if b.is_null() {
            return Err(self.fail(
                r.pos,
                format!(
                    "{} is nothing (a missing key or nil); + needs a value",
                    describe(r)
                ),
            ));
        }
        let right = to_text(b);
        // A string doubled in a loop would fill memory long before it is
        // written.
        let max = self.engine.max_output;
        if s.len() + right.len() > max {
            return Err(self.fail(pos, format!("a string built with + exceeds {max} bytes")));
        }
        Ok(Value::String(format!("{s}{right}")))
    }

    fn binary(&mut self, op: &str, l: &Expr, r: &Expr, pos: usize) -> R<Value> {
        if op == "&&" || op == "||" {
            let lv = truthy(&self.eval(l)?);
            if (op == "&&" && !lv) || (op == "||" && lv) {
                return Ok(Value::Bool(lv));
            }
            return Ok(Value::Bool(truthy(&self.eval(r)?)));
        }
        let a = self.eval(l)?;
        let b = self.eval(r)?;
        match op {
            "==" => return Ok(Value::Bool(equal(&a, &b))),
            "!=" => return Ok(Value::Bool(!equal(&a, &b))),
            _ => {}
        }
        if let Value::String(s) = &a
            && op == "+"
        {
            return self.concat(s, &b, r, pos);
        }
        let num = |v: &Value, side: &Expr| -> R<Num> {
            match v {
                Value::Number(n) => Ok(match n.as_i64() {
                    Some(i) if !n.is_f64() => Num::I(i),
                    _ => Num::F(n.as_f64().unwrap_or(0.0)),
                }),
                // Jet converts a string on the right of a number.
                Value::String(s) if std::ptr::eq(side, r) => match s.trim().parse::<i64>() {
                    Ok(i) => Ok(Num::I(i)),
                    Err(_) => s.trim().parse::<f64>().map(Num::F).map_err(|_| {
                        self.fail(
                            side.pos,
                            format!("{} is not a number: {}", describe(side), show(v)),
                        )
                    }),
                },
                other => Err(self.fail(
                    side.pos,
                    format!(
                        "{op} needs numbers, but {} is {} {}",
                        describe(side),
                        type_name(other),
                        show(other)
                    ),
                )),
            }
        };
        let (x, y) = (num(&a, l)?, num(&b, r)?);
        let overflow = || self.fail(pos, "integer overflow");
        match (x, y) {
            (Num::I(x), Num::I(y)) => {
                let v = match op {
                    "+" => x.checked_add(y).ok_or_else(overflow)?,
                    "-" => x.checked_sub(y).ok_or_else(overflow)?,
                    "*" => x.checked_mul(y).ok_or_else(overflow)?,
                    "/" | "%" if y == 0 => return Err(self.fail(r.pos, "division by zero")),
                    "/" => x.checked_div(y).ok_or_else(overflow)?,
                    "%" => x.checked_rem(y).ok_or_else(overflow)?,
                    "<" => return Ok(Value::Bool(x < y)),
                    "<=" => return Ok(Value::Bool(x <= y)),
                    ">" => return Ok(Value::Bool(x > y)),
                    ">=" => return Ok(Value::Bool(x >= y)),
                    _ => return Err(self.fail(pos, format!("unknown operator {op}"))),
                };
                Ok(Value::from(v))
            }
            (x, y) => {
                let (x, y) = (x.f(), y.f());
                let v = match op {
                    "+" => x + y,
                    "-" => x - y,
                    "*" => x * y,
                    "/" if y == 0.0 => return Err(self.fail(r.pos, "division by zero")),
                    "/" => x / y,
                    "%" => {
                        let (xi, yi) = (x as i64, y as i64);
                        if yi == 0 {
                            return Err(self.fail(r.pos, "division by zero"));
                        }
                        return Ok(Value::from(xi.checked_rem(yi).ok_or_else(overflow)?));
                    }
                    "<" => return Ok(Value::Bool(x < y)),
                    "<=" => return Ok(Value::Bool(x <= y)),
                    ">" => return Ok(Value::Bool(x > y)),
                    ">=" => return Ok(Value::Bool(x >= y)),
                    _ => return Err(self.fail(pos, format!("unknown operator {op}"))),
                };
                Ok(serde_json::Number::from_f64(v)
                    .map(Value::Number)
                    .unwrap_or(Value::Null))
            }
        }
    }
}

#[derive(Clone, Copy)]
enum Num {
    I(i64),
    F(f64),
}

impl Num {
    fn f(self) -> f64 {
        match self {
            Num::I(i) => i as f64,
            Num::F(f) => f,
        }
    }
}

fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) if !a.is_f64() && !b.is_f64() => x == y,
            _ => x.as_f64() == y.as_f64(),
        },
        _ => a == b,
    }
}

/// Whether `e` is dot or a field of dot (`.`, `.a`, `.a.b`), where Jet
/// finds a missing field an error.
fn of_dot(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Context => true,
        ExprKind::Field(base, _) => of_dot(base),
        _ => false,
    }
}

/// The expression as written, for messages: `data.port`, `.name`.
fn describe(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Ident(n) => n.clone(),
        ExprKind::Context => ".".into(),
        ExprKind::Field(b, n) => match b.kind {
            ExprKind::Context => format!(".{n}"),
            _ => format!("{}.{n}", describe(b)),
        },
        ExprKind::Index(b, i) => match &i.kind {
            ExprKind::Lit(v) => format!("{}[{}]", describe(b), show(v)),
            _ => format!("{}[…]", describe(b)),
        },
        ExprKind::Lit(v) => show(v),
        ExprKind::Call(n, _) => format!("{n}(…)"),
        _ => "the expression".into(),
    }
}
