//! The apply order of `holo apply` and of one-off runs: entities move after
//! everything they `REQUIRES` or `SUBSCRIBES` to. Kahn's algorithm, always
//! taking the ready entity with the lowest original index, so that without
//! references nothing moves; a cycle is one message for both.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use crate::fast_hash::FastMap;

/// Sorts `ids` (already in plugin, then ID order). `deps[i]` lists the
/// entities that entity `i` must come after; references to entities outside
/// `ids` are ignored here (they are not applied and do not block).
/// On a cycle, returns the cycle as a list of IDs, first repeated at the end.
pub fn sort(ids: &[&str], deps: &[Vec<&str>]) -> Result<Vec<usize>, Vec<String>> {
    let index: FastMap<&str, usize> = ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
    let mut indegree = vec![0usize; ids.len()];
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); ids.len()];
    let mut unique: Vec<usize> = Vec::new();
    for (i, list) in deps.iter().enumerate() {
        unique.clear();
        unique.extend(list.iter().filter_map(|d| index.get(d).copied()));
        unique.sort_unstable();
        unique.dedup();
        for &d in &unique {
            dependents[d].push(i);
            indegree[i] += 1;
        }
    }
    // The smallest ready index first, as a min-heap gives it.
    let mut ready: BinaryHeap<Reverse<usize>> = (0..ids.len())
        .filter(|i| indegree[*i] == 0)
        .map(Reverse)
        .collect();
    let mut result = Vec::with_capacity(ids.len());
    while let Some(Reverse(next)) = ready.pop() {
        result.push(next);
        for &dependent in &dependents[next] {
            indegree[dependent] -= 1;
            if indegree[dependent] == 0 {
                ready.push(Reverse(dependent));
            }
        }
    }
    if result.len() == ids.len() {
        return Ok(result);
    }
    Err(find_cycle(ids, deps, &index, &indegree))
}

/// The message for a cycle that [`sort`] returned.
pub fn cycle_message(cycle: &[String]) -> String {
    format!(
        "dependency cycle between entities: {}; remove one of these REQUIRES/SUBSCRIBES references",
        cycle.join(" -> ")
    )
}

/// Walks unresolved dependencies from an unresolved entity until a node repeats.
fn find_cycle(
    ids: &[&str],
    deps: &[Vec<&str>],
    index: &FastMap<&str, usize>,
    indegree: &[usize],
) -> Vec<String> {
    let Some(start) = (0..ids.len()).find(|i| indegree[*i] > 0) else {
        return Vec::new();
    };
    let mut path = vec![start];
    let mut position: HashMap<usize, usize> = HashMap::from([(start, 0)]);
    let mut current = start;
    loop {
        let Some(next) = deps[current]
            .iter()
            .filter_map(|d| index.get(d).copied())
            .find(|d| indegree[*d] > 0)
        else {
            return path.iter().map(|i| ids[*i].to_string()).collect();
        };
        if let Some(&at) = position.get(&next) {
            let mut cycle: Vec<String> = path[at..].iter().map(|i| ids[*i].to_string()).collect();
            cycle.push(ids[next].to_string());
            return cycle;
        }
        position.insert(next, path.len());
        path.push(next);
        current = next;
    }
}

/// How an entity that already ran in this run (or, for a one-off, earlier
/// in its session) ended, as far as the entities after it care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Earlier {
    Changed,
    Unchanged,
    /// Failed or skipped: what requires or subscribes to it is skipped.
    Failed,
}

/// What to do with an entity, given how the ones it references ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate<'a> {
    /// Apply it; `refresh` when an entity it subscribes to changed.
    Run { refresh: bool },
    /// Skip it: this entity, which it requires or subscribes to, failed.
    Skip { failed: &'a str },
}

/// The rule of `holo apply` for one entity: skipped when an entity it
/// requires or subscribes to failed (the first one, requirements first),
/// refreshed when one it subscribes to changed. `earlier` says how an
/// entity ended, `None` for one that did not run: it neither blocks nor
/// refreshes.
pub fn gate<'a>(
    requires: &'a [String],
    subscribes: &'a [String],
    earlier: impl Fn(&str) -> Option<Earlier>,
) -> Gate<'a> {
    let failed = requires
        .iter()
        .chain(subscribes)
        .find(|id| earlier(id) == Some(Earlier::Failed));
    if let Some(failed) = failed {
        return Gate::Skip { failed };
    }
    let refresh = subscribes
        .iter()
        .any(|id| earlier(id) == Some(Earlier::Changed));
    Gate::Run { refresh }
}

#[cfg(test)]
mod gate_tests {
    use super::*;

    fn ids(list: &[&str]) -> Vec<String> {
        list.iter().map(|id| id.to_string()).collect()
    }

    fn ended(id: &str) -> Option<Earlier> {
        match id {
            "file:changed" => Some(Earlier::Changed),
            "file:same" => Some(Earlier::Unchanged),
            "file:failed" => Some(Earlier::Failed),
            _ => None,
        }
    }

    #[test]
    fn a_failed_requirement_skips() {
        let requires = ids(&["file:same", "file:failed"]);
        assert_eq!(
            gate(&requires, &[], ended),
            Gate::Skip {
                failed: "file:failed"
            }
        );
    }

    #[test]
    fn a_failed_subscription_skips_too() {
        let subscribes = ids(&["file:failed", "file:changed"]);
        assert_eq!(
            gate(&[], &subscribes, ended),
            Gate::Skip {
                failed: "file:failed"
            }
        );
    }

    #[test]
    fn a_changed_subscription_refreshes() {
        let subscribes = ids(&["file:same", "file:changed"]);
        assert_eq!(gate(&[], &subscribes, ended), Gate::Run { refresh: true });
    }

    #[test]
    fn a_changed_requirement_does_not_refresh() {
        let requires = ids(&["file:changed"]);
        assert_eq!(gate(&requires, &[], ended), Gate::Run { refresh: false });
    }

    #[test]
    fn what_did_not_run_neither_blocks_nor_refreshes() {
        let unknown = ids(&["file:elsewhere"]);
        assert_eq!(
            gate(&unknown, &unknown, ended),
            Gate::Run { refresh: false }
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_references_nothing_moves() {
        let ids = ["a", "b", "c"];
        assert_eq!(
            sort(&ids, &[vec![], vec![], vec![]]).unwrap(),
            vec![0, 1, 2]
        );
    }

    #[test]
    fn entity_moves_after_its_requirement_and_others_keep_their_place() {
        let ids = ["a", "b", "c", "d"];
        // a requires c: a waits, b goes first, then c, then a, then d
        let order = sort(&ids, &[vec!["c"], vec![], vec![], vec![]]).unwrap();
        assert_eq!(order, vec![1, 2, 0, 3]);
    }

    #[test]
    fn references_outside_the_set_do_not_block() {
        let ids = ["a", "b"];
        assert_eq!(sort(&ids, &[vec!["zzz"], vec![]]).unwrap(), vec![0, 1]);
    }

    #[test]
    fn cycle_is_reported_in_order() {
        let ids = ["a", "b", "c"];
        let cycle = sort(&ids, &[vec!["b"], vec!["c"], vec!["a"]]).unwrap_err();
        assert_eq!(cycle, vec!["a", "b", "c", "a"]);
        assert_eq!(
            cycle_message(&cycle),
            "dependency cycle between entities: a -> b -> c -> a; remove one of these REQUIRES/SUBSCRIBES references"
        );
    }

    #[test]
    fn self_reference_is_a_cycle() {
        let cycle = sort(&["a"], &[vec!["a"]]).unwrap_err();
        assert_eq!(cycle, vec!["a", "a"]);
    }
}
