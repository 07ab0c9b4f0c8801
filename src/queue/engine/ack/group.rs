//! A batch of lease ends in multis: as many items' fenced operations side by
//! side as fit one multi ([`MULTI_OPS`] operations and the server's packet
//! size), and, when a multi fails, which item its failing operation belongs
//! to.

use std::collections::VecDeque;

use super::Ending;
use crate::client::{Op, MULTI_OPS};
use crate::queue::core::Core;

/// Items' fenced operations side by side in one multi.
pub(super) struct Group {
    pub(super) endings: Vec<Ending>,
    /// How many operations each item has in the multi, in order.
    lens: Vec<usize>,
}

impl Group {
    /// Which item the operation at `index` of the multi belongs to, and its
    /// index among that item's operations.
    pub(super) fn locate(&self, index: usize) -> (usize, usize) {
        locate(&self.lens, index)
    }
}

/// Which of items of `lens` operations each, side by side, the operation at
/// `index` belongs to, and its index among that item's operations (past
/// the end: the last item's).
fn locate(lens: &[usize], index: usize) -> (usize, usize) {
    let mut start = 0;
    for (k, len) in lens.iter().enumerate() {
        if index < start + len {
            return (k, index - start);
        }
        start += len;
    }
    let last = lens.last().copied().unwrap_or(0);
    (lens.len().saturating_sub(1), index - start + last)
}

/// `endings` in order, in groups of at most `per_multi` items whose fenced
/// operations fit one multi ([`MULTI_OPS`] operations and a packet), with
/// each group's multi. An item too large to share a multi goes alone (and
/// fails alone if it is too large even so).
pub(super) fn grouped<T>(core: &Core<T>, endings: Vec<Ending>, per_multi: usize) -> (Vec<Group>, Vec<Vec<Op>>) {
    let mut rest = VecDeque::from(endings);
    let (mut groups, mut multis) = (Vec::new(), Vec::new());
    while !rest.is_empty() {
        let (mut ops, mut lens) = (Vec::new(), Vec::new());
        for ending in rest.iter().take(per_multi.max(1)) {
            let own = ending.ops(core);
            if !lens.is_empty() && ops.len() + own.len() > MULTI_OPS {
                break;
            }
            lens.push(own.len());
            ops.extend(own);
        }
        let fits = core
            .client
            .multi_chunks(&ops, MULTI_OPS)
            .first()
            .map_or(ops.len(), |chunk| chunk.end);
        let (mut used, mut items) = (0, 0);
        for len in &lens {
            if items > 0 && used + len > fits {
                break;
            }
            used += len;
            items += 1;
        }
        ops.truncate(used);
        lens.truncate(items);
        groups.push(Group {
            endings: rest.drain(..items).collect(),
            lens,
        });
        multis.push(ops);
    }
    (groups, multis)
}

#[cfg(test)]
mod tests {
    use super::locate;

    #[test]
    fn a_failing_operation_is_located_in_its_item() {
        // An acknowledgement (2 operations), a requeue and a dead-letter
        // move (3 each).
        let lens = [2, 3, 3];
        assert_eq!(locate(&lens, 0), (0, 0));
        assert_eq!(locate(&lens, 1), (0, 1));
        assert_eq!(locate(&lens, 2), (1, 0), "the requeue's lock delete");
        assert_eq!(locate(&lens, 4), (1, 2));
        assert_eq!(locate(&lens, 6), (2, 1), "the move's create");
        assert_eq!(locate(&lens, 7), (2, 2));
        assert_eq!(locate(&lens, 9), (2, 4), "past the end: the last item's");
    }
}
