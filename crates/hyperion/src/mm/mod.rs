//! Hyperion's memory manager (§3.2, Fig 9): superbins by 32-byte size class, metabins, bins
//! and chunks in large mappings, addressed by 5-byte Hyperion Pointers.
//!
//! # Hierarchy
//!
//! 64 *superbins*: superbin `i ∈ [1, 63]` serves chunks of `32·i` bytes; superbin 0 serves
//! *extended bins*, 16-byte chunks holding an extended Hyperion Pointer (eHP) for blocks
//! larger than 2,016 bytes. Every superbin has up to 2^14 *metabins* of 256 *bins* of 4,096
//! *chunks*. A bin's chunks live in one block (`bins.rs`, [`Caps`](bins::Caps)): on the
//! heap while it is under 64 KiB (made for 8 chunks when the bin gets its first chunk,
//! doubling by copying: HPs name chunks by index); from 64 KiB in a mapping made once for
//! all 4,096 chunks, in 4 KiB pages, in which the bin *grows in place one page at a time*
//! (no copy, no new mapping, the readers' directory unchanged: it bounds such a bin at
//! 4,096 chunks from the start; the pages not reached stay untouched, neither resident
//! nor counted); and once full, if its chunks take 2 MiB or more, in huge pages (one
//! copy), holding what whole huge pages below 4,096 chunks hold — less than a chunk
//! unused (4,096 chunks rounded up to whole huge pages left up to 47 % of a full bin
//! unused). A bin is freed — memory returned — when its last chunk is freed (see [`Bin`](bins::Bin)
//! for why bins grow instead of mapping all 4,096 chunks at once as the paper does).
//! Why growing bins are not in huge pages (the paper's bins are; ours were, doubling from
//! 2 MiB): a huge page becomes resident whole at its first write, so each (arena, size
//! class)'s last, growing bin held on average half a huge page of free chunks, and up to
//! half the bin as free capacity after a doubling; with 16 arenas and ~50 size classes
//! in use that was hundreds of megabytes, most of the free chunk bytes at 100M keys with
//! pre-processing (`docs/results/hyperion/bins-1203.md`). Full bins — nearly all the
//! chunks at scale — keep the huge pages' reach in the TLB. A
//! bin keeps a 4,096-bit occupancy map; a metabin a 256-bit map of its non-full bins; a
//! superbin the ordered set of its non-full bins (the paper keeps a list of 16 non-full
//! metabins; an ordered set gives the same "lowest non-full bin first" policy, which keeps
//! memory compact, without its refill logic). A metabin makes its bin slots as bins are
//! opened and is freed with its last bin (a deviation: 256 slots made eagerly in each of the
//! 63 size classes a growing container passes through cost more than the keys at a
//! million keys; measured: `docs/results/hyperion.md`).
//!
//! # Hyperion Pointer (5 bytes, little-endian 40-bit integer)
//!
//! ```text
//! bits 0..12  chunk    (0..4096)
//! bits 12..20 bin      (0..256)
//! bits 20..34 metabin  (0..2^14)
//! bits 34..40 superbin (0..64)
//! ```
//!
//! The trie stores only HPs, so it is independent of where the mappings are. An HP of
//! superbin 0 names an extended-bin chunk, whose 16 bytes are the eHP:
//! `[heap pointer u64][requested size u32][over-allocation u16][flags u16]`. The heap block
//! grows in steps of 256 bytes up to 8 KiB, 1 KiB up to 16 KiB and 4 KiB beyond (the
//! paper's increments), and comes from an `orrery_core::alloc::BlockHeap` shared by every
//! index of the process (`heap.rs`; behind the fail point tests use), whose free pages and
//! empty chunks go back to the OS (the global allocator, which the paper's `malloc` stands
//! for, kept them).
//!
//! # Accounting and failure
//!
//! [`MemoryManager::bytes`] is exact: the reserved bytes of every bin mapping, the heap
//! blocks of extended bins at their capacity, and the manager's own metadata. Every mapping
//! and heap block is fallible: out of memory is [`Error::OutOfMemory`](orrery_core::api::Error::OutOfMemory) and changes nothing.
//! Chunks of existing bins never fail.
//!
//! # Giving memory back
//!
//! A bin whose chunks are at most a quarter taken and whose upper half is free halves (its
//! lower half copied into a block half the size, published to the readers' directory, the
//! old block retired; from 64 KiB into a new mapping, of the whole 4 KiB pages that hold
//! at most half — by copying, not by giving the top pages back in place, which
//! `HugeRegion::discard` allows only while nobody reads them, and optimistic readers may),
//! down to 8 chunks; it grows again only once full, so a bin does not
//! halve and double back under churn. A chunk left in the upper half of such a bin is
//! moved by the next writer that touches its container even when the container still fits
//! ([`MemoryManager::should_move`]; `write/apply.rs`: allocate, copy, relink the parent's
//! Hyperion Pointer, free — the exact-fit move, under the write lock and the trie's odd
//! version, which protects optimistic readers as any write does). Allocation takes the
//! lowest free chunk of the lowest non-full bin, so the new chunk is lower — in a lower
//! bin or in the lower half — and every move brings the bin nearer to halving. The paper
//! maps each bin whole and only says that Hyperion Pointers let the manager "reorganize
//! and move chunks at will" (§3.2); this is our policy. Extended blocks live in the shared
//! block heap (`heap.rs`), whose free pages go back to the OS; after a mass removal the
//! T-Node jump tables the removed keys had needed go too (`write/tjt.rs`).
//!
//! # Chained extended bins (§3.2)
//!
//! [`CHAIN_SLOTS`] (64) consecutive extended-bin chunks, the first at a chunk index that is
//! a multiple of 64 (one word of a bin's occupancy map), allocated and freed together
//! ([`MemoryManager::alloc_chain`],
//! [`MemoryManager::free_chain`]); every slot's eHP carries flag [`FLAG_CHAIN`](hp::FLAG_CHAIN) (flags bit
//! 0) and a slot without a block is *void* (heap pointer 0). One Hyperion Pointer (the
//! first slot's) names the chain; the slots hold the parts of a split container
//! (`split.rs`), and [`MemoryManager::resolve`] picks the part for a key byte.
//!
//! The paper's chains have 8 slots of 32 T-Node keys; ours have 64 slots of
//! [`SLOT_KEYS`] (4). Why: with 8, a trie's root container at 10M random keys (~39K keys
//! a trie, nearly all as S-Nodes of the root) stays in eight parts of ~77 KB, past what
//! the split rule would cut, and every insert shifts half a part's tail — measured as
//! the largest share of an insert (`docs/results/hyperion.md`, "Insert speed"). With 64
//! slots the same rule (16 KiB + 64 KiB·S, 3 KiB minimum) cuts them to ~10 KB. The cost:
//! a chain takes 1 KiB of eHP chunks instead of 128 bytes, and [`MemoryManager::resolve`]
//! may pass up to 63 void slots (16 bytes each, consecutive) to find a key's part.
//! An extended block grows and shrinks behind its Hyperion Pointer
//! ([`MemoryManager::regrow`]: a new heap block, the eHP rewritten), so neither a part nor
//! any container over 2,016 bytes moves in the trie when its size changes.
//!
//! # Optimistic readers
//!
//! Readers that hold no lock (`opt.rs`) cannot walk the superbins' vectors, which writers
//! reallocate. They use the [`Dirs`] directory instead: per superbin an atomic pointer to
//! a table with one word per bin, `base | log2(chunks)` of the bin's memory (the base is
//! 64-byte aligned, so one atomic word gives a consistent address and length), 0 when the
//! bin is unmapped. A writer publishes a bin's word when it maps, grows or frees it, and
//! replaces a table by a larger copy when a bin id passes its end. A reader bounds-checks
//! the chunk index against the word and reads an eHP's fields with atomic loads,
//! validating its version before it follows the eHP's pointer (pointer and
//! capacity are two fields a writer changes one after the other).
//!
//! Nothing a reader may hold is freed at once: a bin's old memory after it grows, a freed
//! bin's memory, a replaced or emptied directory table, an extended heap block replaced by
//! [`MemoryManager::regrow`] or freed, and a voided chain slot's block are handed to the
//! `orrery_core::sync` epoch collector and freed once every reader pinned at that moment
//! has unpinned. A chunk freed inside a bin that stays mapped is reused at once: a reader
//! reading it sees garbage, which its version check rejects. [`MemoryManager::bytes`]
//! counts live memory only (retired blocks are not counted), and extended blocks are
//! zeroed when allocated so that a reader never reads uninitialized bytes.
//!
//! # Files
//!
//! | file | what it holds |
//! |---|---|
//! | `hp.rs` | [`Hp`], the Hyperion Pointer, and the hierarchy's size constants |
//! | `bins.rs` | superbins, metabins, bins and the memory of a bin's chunks |
//! | `manager.rs` | [`MemoryManager`] of one arena, its accounting and [`MemStats`] |
//! | `alloc.rs` | allocating, growing and freeing chunks and extended blocks; retirement |
//! | `chain.rs` | chained extended bins: split containers' parts |
//! | `access.rs` | a block's bytes under the lock |
//! | `dirs.rs` | the optimistic readers' directory [`Dirs`] and their checked [`RawBlock`] |
//!
//! The rest of the crate sees only the list below: pointers, the manager's methods, the
//! readers' directory and the capacity rules writers size their blocks by.

mod access;
mod alloc;
mod bins;
mod chain;
mod dirs;
mod heap;
mod hp;
mod manager;
pub(crate) mod occupancy;
#[cfg(test)]
mod tests;

pub(crate) use alloc::{capacity_for, extended_capacity};
pub(crate) use dirs::{Dirs, RawBlock};
#[cfg(feature = "bench-internals")]
pub(crate) use heap::paged_bytes;
#[cfg(test)]
pub(crate) use hp::MAX_SMALL;
pub(crate) use hp::{CHAIN_SLOTS, Hp, SLOT_KEYS};
pub use manager::MemStats;
pub(crate) use manager::MemoryManager;
