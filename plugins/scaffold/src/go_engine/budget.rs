//! The render budget for values: Go templates have no string operators, so
//! every string (and list or map) a template builds comes out of a
//! function. Each registered function is wrapped so that a result larger
//! than the budget (`max_render_size`) fails the render at its line, as
//! output past it does; the functions that multiply their input (`repeat`,
//! `replace`, `indent`, `join`, `printf` ...) check their bound before they
//! allocate. What no function bounds, the SDK's memory watch does.

use std::cell::Cell;
use std::sync::Arc;

use gotmpl::{FuncMap, TemplateError, Value};

thread_local! {
    /// The budget of the render running on this thread.
    static BUDGET: Cell<usize> =
        const { Cell::new(holo_plugin::template::DEFAULT_MAX_RENDER_SIZE) };
}

/// The budget is `limit` while this lives.
pub struct Scope {
    previous: usize,
}

impl Scope {
    pub fn enter(limit: usize) -> Scope {
        Scope {
            previous: BUDGET.replace(limit),
        }
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        BUDGET.set(self.previous);
    }
}

/// The error of `name` whose result would pass the budget.
fn too_big(name: &str, limit: usize) -> TemplateError {
    TemplateError::Exec(format!(
        "{name}: the result is more than {limit} bytes (max_render_size), as a string doubled in a loop becomes; make the template build less, or raise max_render_size on this resource"
    ))
}

/// Refuses `name` before it allocates when its result may reach `bound`
/// bytes.
pub fn allow(name: &str, bound: usize) -> Result<(), TemplateError> {
    let limit = BUDGET.get();
    if bound > limit {
        return Err(too_big(name, limit));
    }
    Ok(())
}

/// The bytes `value` holds, counted up to `left` (past it, more than
/// `left`): strings by their length, list items and map entries with the
/// size of a value each.
pub fn size(value: &Value, left: usize) -> usize {
    const SLOT: usize = std::mem::size_of::<Value>();
    match value {
        Value::String(s) => s.len(),
        Value::List(items) => {
            let mut total = 0;
            for item in items.iter() {
                total += SLOT + size(item, left.saturating_sub(total));
                if total > left {
                    break;
                }
            }
            total
        }
        Value::Map(map) => {
            let mut total = 0;
            for (key, item) in map.iter() {
                total += SLOT + key.len() + size(item, left.saturating_sub(total));
                if total > left {
                    break;
                }
            }
            total
        }
        _ => SLOT,
    }
}

/// The bytes of all `args`, for a function whose result holds them.
pub fn size_of_all(args: &[Value]) -> usize {
    let limit = BUDGET.get();
    args.iter()
        .fold(0usize, |total, arg| total.saturating_add(size(arg, limit)))
}

/// `functions`, each failing when its result passes the budget.
pub fn bounded(functions: FuncMap) -> FuncMap {
    functions
        .into_iter()
        .map(|(name, function)| {
            let shown = name.clone();
            let wrapped: gotmpl::ValueFunc = Arc::new(move |args: &[Value]| {
                let result = function(args)?;
                let limit = BUDGET.get();
                if size(&result, limit) > limit {
                    return Err(too_big(&shown, limit));
                }
                Ok(result)
            });
            (name, wrapped)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_count_strings_items_and_keys_and_stop_past_the_limit() {
        let slot = std::mem::size_of::<Value>();
        assert_eq!(size(&Value::String("abc".into()), 100), 3);
        let list = Value::List(vec![Value::String("ab".into()), Value::Int(1)].into());
        assert_eq!(size(&list, 1000), slot + 2 + slot + slot);
        let long = Value::List(vec![Value::String("x".repeat(50).into()); 1000].into());
        assert!(size(&long, 100) > 100 && size(&long, 100) < 100 + 2 * (slot + 50));
    }

    #[test]
    fn a_result_past_the_budget_is_an_error_naming_the_function() {
        let _scope = Scope::enter(10);
        let mut functions = FuncMap::new();
        let echo: gotmpl::ValueFunc = Arc::new(|args: &[Value]| Ok(args[0].clone()));
        functions.insert("echo".into(), echo);
        let functions = bounded(functions);
        let echo = &functions["echo"];
        assert!(echo(&[Value::String("short".into())]).is_ok());
        let err = echo(&[Value::String("far too long".into())]).expect_err("budget");
        assert!(
            err.to_string()
                .contains("echo: the result is more than 10 bytes (max_render_size)"),
            "{err}"
        );
        assert!(allow("repeat", 10).is_ok() && allow("repeat", 11).is_err());
    }
}
