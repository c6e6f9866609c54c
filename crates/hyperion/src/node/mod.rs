//! The container byte format (§3.1, Fig 3–8) and its read paths: point searches, the
//! pipelined lookup of `get_many`, and ordered walks — the bottom floor of the crate. It
//! imports only the memory manager (`mm`, for Hyperion Pointers and blocks); every other
//! module reads containers through it.
//!
//! # Container
//!
//! A container is a block of the memory manager: a 4-byte header, then the payload.
//!
//! ```text
//! header (u32 LE): bits 0..24 size (bytes used, header included) | 24..27 J | 27..29 S | 29..32 0
//! payload:         T-Node [S-Node …] T-Node [S-Node …] …   (pre-order, keys ascending)
//! ```
//!
//! A container holds 16-bit partial keys as a two-level internal trie: a T-Node for the
//! first byte, its S-Node children for the second. The paper's header has 19 size bits and
//! an 8-bit `free` count; here the capacity is known from the Hyperion Pointer (its
//! superbin, or the eHP), so `free` is not stored and its bits widen `size` to 24 (values
//! of any length are inline or out of line, and a container that cannot be split — all
//! its T-Nodes in one chain slot's key range — may pass the paper's 512 KiB). `S` is the split delay
//! (`write/split.rs`); `J` the number of 7-entry groups of the container jump table that
//! follows the header ([`cjt`]), the payload starting after it.
//!
//! A container referenced through a chained extended bin is *split* (`split.rs`): the
//! Hyperion Pointer names up to [`CHAIN_SLOTS`](crate::mm::CHAIN_SLOTS) parts, each an
//! ordinary container; a reader picks
//! the part by the next key byte ([`MemoryManager::resolve`](crate::mm::MemoryManager::resolve)).
//!
//! # Nodes
//!
//! ```text
//! T-Node: [t:2 k=0 d:3 js:1 jt:1] [key byte if d = 0] [u16 jump if js] [30-byte table if jt]
//!         [value if t = 11]
//! S-Node: [t:2 k=1 d:3 c:2]       [key byte if d = 0] [value if t = 11] [child]
//! ```
//!
//! `t`: `01` inner (no key ends here), `10` a key ends here with the empty value, `11` a
//! key ends here and its value follows (the paper's "leaf without / with value"; a T-Node
//! may both end a key and have S-Node children). `d`: delta encoding — `1..=7` is the key
//! byte's distance from the previous sibling's (from 0 for the first sibling), `0` means
//! the key byte follows. `js`: a jump successor follows, the u16 LE distance from this
//! T-Node's first byte to the next T-Node's (0: none), kept on the T-Nodes of a
//! container's own payload (`write.rs`); `jt`: a T-Node jump table follows (15 u16 LE
//! offsets from the T-Node's end to its S-Nodes `16·(i+1)`, placeholders standing in for
//! missing ones; `tjt.rs`).
//! `c`: `00` no child, `01` a 5-byte Hyperion Pointer to a child container follows, `10` an
//! embedded container follows (`[size u8 = 1 + payload length][payload]`, at most 255
//! bytes, same format as a container's payload), `11` a path-compressed suffix follows.
//!
//! # Values
//!
//! `[tag u8]`: `1..=8` that many bytes inline follow (the paper's 8-byte values);
//! `0xFF` a Hyperion Pointer follows, to a block `[len u32 LE][bytes]` (out of line);
//! `0` the empty value (only inside a path-compressed node; nodes use `t = 10` for it).
//!
//! # Path-compressed suffix (c = 11)
//!
//! `[h u8][suffix][value]`: `h & 0x7F` is the suffix length (1..=127) and the suffix bytes
//! follow. Deviation: the paper's bit 7 says whether a value follows; every key here has a
//! value (possibly empty, tag 0), so bit 7 instead marks a *long* suffix (> 127 bytes, which
//! the paper does not support): then a Hyperion Pointer to a block `[len u32][bytes]`
//! replaces the inline bytes.
//!
//! # Files
//!
//! | file | what it holds |
//! |---|---|
//! | `bytes.rs` | the reader abstraction [`Bytes`] (a locked slice, or an optimistic reader's checked block) and the restart type [`Torn`] |
//! | `format.rs` | constants, headers, values, children, suffixes: the node parser |
//! | `cjt.rs` | container jump tables, reading half (layout, seek); built by `write/cjt.rs` |
//! | `tjt.rs` | T-Node jump tables, reading half (layout, placeholders, seek); built by `write/tjt.rs` |
//! | `search.rs` | point searches: T-Node and S-Node search, the locked lookup, the `get_many` [`Probe`] |
//! | `walk.rs` | ordered walks over a [`Src`] (locked or optimistic), a trie's walk with its root value |

mod bytes;
pub(crate) mod cjt;
mod format;
mod search;
pub(crate) mod tjt;
mod walk;

pub(crate) use bytes::{Bytes, R, Torn, ok, u32_in};
pub(crate) use format::{
    C_EMB, C_HP, C_NONE, C_PC, ChildRef, EMBED_MAX, HEADER, INLINE_MAX, PC_MAX, Suffix, T_EMPTY,
    T_INNER, T_VALUE, TAG_OUT, ValRef, blob, jump_successor, parse, parse_val, set_used, t_key,
    used, used_in, write_header,
};
pub(crate) use search::{Probe, Step, find_s, find_t, lookup, s_start, search};
#[cfg(test)]
pub(crate) use walk::CHECK_EVERY;
pub(crate) use walk::{Src, Visit, walk_trie};
