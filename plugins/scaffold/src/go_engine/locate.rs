//! The line of an execution error. gotmpl's execution errors do not say
//! where they happened; Go's do. The failing template is run again with
//! its tree cut short after the first N nodes (in the order they are
//! written), and the smallest N that still fails names the node, and so
//! its line. When that node calls another template, the search goes on in
//! the called template.

use gotmpl::parse::{ListNode, Node};

/// The nodes of `tree` in the order they are written, each with its line.
fn count(tree: &ListNode) -> usize {
    tree.nodes.iter().map(count_node).sum()
}

fn count_node(node: &Node) -> usize {
    match node {
        Node::List(list) => count(list),
        Node::If(branch) | Node::Range(branch) | Node::With(branch) => {
            1 + count(&branch.body) + branch.else_body.as_ref().map_or(0, count)
        }
        Node::Define(_) => 0,
        _ => 1,
    }
}

/// `tree` with only its first `keep` nodes.
pub fn truncate(tree: &ListNode, keep: usize) -> ListNode {
    let mut left = keep;
    truncate_list(tree, &mut left)
}

fn truncate_list(tree: &ListNode, left: &mut usize) -> ListNode {
    let mut nodes = Vec::new();
    for node in &tree.nodes {
        if *left == 0 {
            break;
        }
        let kept = match node {
            Node::List(list) => Node::List(truncate_list(list, left)),
            Node::If(branch) | Node::Range(branch) | Node::With(branch) => {
                *left -= 1;
                let mut cut = branch.clone();
                cut.body = truncate_list(&branch.body, left);
                cut.else_body = branch
                    .else_body
                    .as_ref()
                    .map(|other| truncate_list(other, left));
                match node {
                    Node::If(_) => Node::If(cut),
                    Node::Range(_) => Node::Range(cut),
                    _ => Node::With(cut),
                }
            }
            Node::Define(_) => node.clone(),
            _ => {
                *left -= 1;
                node.clone()
            }
        };
        nodes.push(kept);
    }
    ListNode {
        pos: tree.pos,
        nodes,
    }
}

/// The `index`th node (from 1) of `tree`.
fn nth(tree: &ListNode, index: usize) -> Option<&Node> {
    let mut left = index;
    nth_in(tree, &mut left)
}

fn nth_in<'a>(tree: &'a ListNode, left: &mut usize) -> Option<&'a Node> {
    for node in &tree.nodes {
        match node {
            Node::List(list) => {
                if let Some(found) = nth_in(list, left) {
                    return Some(found);
                }
            }
            Node::Define(_) => {}
            _ => {
                *left -= 1;
                if *left == 0 {
                    return Some(node);
                }
                if let Node::If(branch) | Node::Range(branch) | Node::With(branch) = node {
                    if let Some(found) = nth_in(&branch.body, left) {
                        return Some(found);
                    }
                    if let Some(other) = &branch.else_body
                        && let Some(found) = nth_in(other, left)
                    {
                        return Some(found);
                    }
                }
            }
        }
    }
    None
}

fn line_of(node: &Node) -> usize {
    match node {
        Node::List(list) => list.pos.line,
        Node::Text(text) => text.pos.line,
        Node::Action(action) => action.pos.line,
        Node::If(branch) | Node::Range(branch) | Node::With(branch) => branch.pos.line,
        Node::Template(call) => call.pos.line,
        Node::Define(define) => define.pos.line,
        Node::Break(pos) | Node::Continue(pos) => pos.line,
    }
}

/// Runs the templates with some trees replaced; says whether the run fails.
pub type Fails<'a> = dyn FnMut(&[(String, ListNode)]) -> bool + 'a;

/// Where a failed run failed: the template's name and the line.
///
/// `trees` names each template's tree; `fails` runs the templates with
/// those trees and says whether the run fails.
pub fn locate(
    trees: &mut dyn FnMut(&str) -> Option<ListNode>,
    fails: &mut Fails<'_>,
    entry: &str,
) -> Option<(String, usize)> {
    let mut fixed: Vec<(String, ListNode)> = Vec::new();
    let mut name = entry.to_string();
    let mut found = None;
    for _ in 0..16 {
        let Some(full) = trees(&name) else {
            return found;
        };
        let mut run = |keep: usize| {
            let mut set = fixed.clone();
            set.push((name.clone(), truncate(&full, keep)));
            fails(&set)
        };
        let total = count(&full);
        if !run(total) {
            return found;
        }
        let (mut low, mut high) = (0, total);
        if run(0) {
            return found;
        }
        while high - low > 1 {
            let middle = low + (high - low) / 2;
            if run(middle) {
                high = middle;
            } else {
                low = middle;
            }
        }
        let node = nth(&full, high)?;
        found = Some((name.clone(), line_of(node)));
        let Node::Template(call) = node else {
            return found;
        };
        if call.name.as_str() == name {
            return found;
        }
        fixed.push((name.clone(), truncate(&full, high)));
        name = call.name.to_string();
    }
    found
}
