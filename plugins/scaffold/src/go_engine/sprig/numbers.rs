//! sprig's arithmetic and conversions.

use gotmpl::{TemplateError, Value};

use super::{Func, arity, at_least, error, float, int, string};

pub const FUNCTIONS: &[(&str, Func)] = &[
    ("add", |a| {
        Ok(Value::Int(a.iter().map(int).fold(0, i64::wrapping_add)))
    }),
    ("mul", |a| {
        Ok(Value::Int(a.iter().map(int).fold(1, i64::wrapping_mul)))
    }),
    ("add1", |a| {
        arity("add1", a, 1).map(|()| Value::Int(int(&a[0]).wrapping_add(1)))
    }),
    ("sub", |a| {
        arity("sub", a, 2).map(|()| Value::Int(int(&a[0]).wrapping_sub(int(&a[1]))))
    }),
    ("div", |a| integer_division("div", a, i64::checked_div)),
    ("mod", |a| integer_division("mod", a, i64::checked_rem)),
    ("max", |a| extreme("max", a, i64::max)),
    ("biggest", |a| extreme("biggest", a, i64::max)),
    ("min", |a| extreme("min", a, i64::min)),
    ("addf", |a| Ok(Value::Float(a.iter().map(float).sum()))),
    ("mulf", |a| Ok(Value::Float(a.iter().map(float).product()))),
    ("add1f", |a| {
        arity("add1f", a, 1).map(|()| Value::Float(float(&a[0]) + 1.0))
    }),
    ("subf", |a| floats("subf", a, |x, y| x - y)),
    ("divf", |a| floats("divf", a, |x, y| x / y)),
    ("maxf", |a| float_extreme("maxf", a, f64::max)),
    ("minf", |a| float_extreme("minf", a, f64::min)),
    ("floor", |a| {
        arity("floor", a, 1).map(|()| Value::Float(float(&a[0]).floor()))
    }),
    ("ceil", |a| {
        arity("ceil", a, 1).map(|()| Value::Float(float(&a[0]).ceil()))
    }),
    ("round", round),
    ("int", |a| {
        arity("int", a, 1).map(|()| Value::Int(int(&a[0])))
    }),
    ("int64", |a| {
        arity("int64", a, 1).map(|()| Value::Int(int(&a[0])))
    }),
    ("float64", |a| {
        arity("float64", a, 1).map(|()| Value::Float(float(&a[0])))
    }),
    ("atoi", atoi),
    ("seq", seq),
];

fn integer_division(
    name: &str,
    args: &[Value],
    f: fn(i64, i64) -> Option<i64>,
) -> Result<Value, TemplateError> {
    arity(name, args, 2)?;
    f(int(&args[0]), int(&args[1]))
        .map(Value::Int)
        .ok_or_else(|| error(format!("{name}: integer divide by zero")))
}

fn extreme(name: &str, args: &[Value], f: fn(i64, i64) -> i64) -> Result<Value, TemplateError> {
    at_least(name, args, 1)?;
    Ok(Value::Int(args.iter().map(int).reduce(f).unwrap_or(0)))
}

fn float_extreme(
    name: &str,
    args: &[Value],
    f: fn(f64, f64) -> f64,
) -> Result<Value, TemplateError> {
    at_least(name, args, 1)?;
    Ok(Value::Float(
        args.iter().map(float).reduce(f).unwrap_or(0.0),
    ))
}

fn floats(name: &str, args: &[Value], f: fn(f64, f64) -> f64) -> Result<Value, TemplateError> {
    at_least(name, args, 1)?;
    Ok(Value::Float(
        args.iter().map(float).reduce(f).unwrap_or(0.0),
    ))
}

/// `round VALUE PLACES [HALF]`: rounded at `PLACES` decimals, up from
/// `HALF` (0.5).
fn round(args: &[Value]) -> Result<Value, TemplateError> {
    at_least("round", args, 2)?;
    let half = args.get(2).map_or(0.5, float);
    let scale = 10f64.powi(i32::try_from(int(&args[1])).unwrap_or(0));
    let scaled = float(&args[0]) * scale;
    let whole = scaled.trunc();
    let rounded = if (scaled - whole).abs() >= half {
        whole + scaled.signum()
    } else {
        whole
    };
    Ok(Value::Float(rounded / scale))
}

fn atoi(args: &[Value]) -> Result<Value, TemplateError> {
    arity("atoi", args, 1)?;
    let Value::String(s) = &args[0] else {
        return Err(error("atoi: the argument is not a string".into()));
    };
    Ok(Value::Int(s.parse().unwrap_or(0)))
}

/// `seq [FIRST [STEP]] LAST`: the numbers as the seq command prints them,
/// separated by spaces.
fn seq(args: &[Value]) -> Result<Value, TemplateError> {
    let numbers: Vec<i64> = args.iter().map(int).collect();
    let (first, step, last) = match numbers.as_slice() {
        [last] => (1, 1, *last),
        [first, last] => (*first, if first <= last { 1 } else { -1 }, *last),
        [first, step, last] => (*first, *step, *last),
        _ => return Ok(string("")),
    };
    let mut out = Vec::new();
    let mut at = first;
    while step != 0 && ((step > 0 && at <= last) || (step < 0 && at >= last)) {
        if out.len() >= 1 << 20 {
            return Err(error("seq: more than a million numbers".into()));
        }
        out.push(at.to_string());
        at += step;
    }
    Ok(string(out.join(" ")))
}
