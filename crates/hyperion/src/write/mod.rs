//! The write path (§3.1 "Operations", Fig 8): in-place writes — a write changes one node
//! of one payload level and shifts the container's tail within its exact-fit block — and
//! what writers build and maintain beside them: the jump tables' writing halves and
//! container splits.
//!
//! # Protocol of a write
//!
//! 1. [`descend`](path::descend) follows the key through the containers (Hyperion Pointers) and, in the
//!    last container, through its embedded containers, recording every payload *level*
//!    (the container's own payload, then each embedded payload on the path, with the
//!    offsets of its S-Node flag and size byte).
//! 2. The change is planned on the innermost level as one *splice*: the bytes
//!    `[a, b)` of the block are replaced by new bytes. Only the nodes that change are
//!    re-encoded — the T-Node or S-Node the key ends at (or a new one), and the header of
//!    the following sibling, whose delta encoding depends on its predecessor's key.
//! 3. [`ArenaInner::apply`](crate::arena::ArenaInner::apply) applies the splice: the size bytes of every enclosing embedded
//!    container change by the splice's length difference; an embedded container that would
//!    exceed 255 bytes is ejected (Fig 8: its new payload goes to a new block, and its
//!    bytes in the parent are replaced by a Hyperion Pointer, `c = 01`), as is the
//!    outermost embedded container on an insert's path once the container exceeds the
//!    ejection threshold. Then the tail of the container is shifted (`copy_within`) and
//!    the new bytes written. When the container no longer fits its block, it moves: an
//!    extended block (superbin 0) gets a new heap block behind the *same* Hyperion Pointer
//!    ([`MemoryManager::regrow`](crate::mm::MemoryManager::regrow), the paper's realloc), a chunk moves to the chunk of its
//!    new size class and the parent's pointer is patched. A shrinking container moves to
//!    its exact fit the same way when the smaller block can be had, else stays. The
//!    container jump table's entries shift ([`cjt`]), and the jump fields — successor
//!    and T-Node jump table ([`tjt`]) — of the T-Node whose group changed are recomputed
//!    ([`fix_jumps`](path::fix_jumps)), or, for a splice inside one T-Node's group (an S-Node inserted,
//!    replaced or removed, or bytes of an embedded container below one of its S-Nodes),
//!    moved by the splice's length difference without walking the group
//!    ([`shift_jumps`](path::shift_jumps)).
//! 4. After the write, a T-Node whose S-Nodes the writer passed at length, or whose group
//!    its new S-Node made long, gets a T-Node jump table ([`tjt`]), a container whose
//!    T-Nodes it passed at length, or whose run of T-Nodes between two table entries
//!    its new T-Node made long, a rebuilt
//!    container jump table ([`cjt`]), and a large container may be split ([`split`]).
//!
//! # Failure
//!
//! Every allocation of a write (values and suffixes out of line, new containers of a
//! path-compressed split, ejected containers, the container's new block) happens before
//! the first byte of an existing block is written, and is recorded in the [`Txn`](crate::edit::Txn): an
//! allocation failure frees the new blocks and leaves the trie unchanged. Removal never
//! fails (it only shrinks).
//!
//! # Files
//!
//! | file | what it holds |
//! |---|---|
//! | `path.rs` | a writer's descent and levels, [`locate`](path::locate), the [`Splice`](path::Splice), [`fix_jumps`](path::fix_jumps), [`shift_jumps`](path::shift_jumps) |
//! | `insert.rs` | insert (upsert) of one key |
//! | `remove.rs` | removal of one key, pruning what it empties |
//! | `apply.rs` | a splice applied in place: ejection, tail shift, exact-fit moves |
//! | `cjt.rs` | container jump tables, writing half (shifts, rebuilds) |
//! | `tjt.rs` | T-Node jump tables, writing half (when, build) |
//! | `split.rs` | container splits and their chains |
//! | `compact.rs` | the compaction pass: sparse bins drained into fuller ones, chunks relinked |
//!
//! Everything here is `ArenaInner` methods and helpers over locked slices; it reads the
//! byte format through `node` and allocates through `mm` and `edit`.

mod apply;
mod cjt;
mod compact;
mod insert;
mod path;
mod remove;
mod split;
#[cfg(test)]
mod tests;
mod tjt;

#[cfg(test)]
pub(crate) use cjt::REBUILD_HOPS;
pub use compact::Compacted;
#[cfg(test)]
pub(crate) use path::{descend, locate};
#[cfg(test)]
pub(crate) use tjt::BUILD_HOPS;
