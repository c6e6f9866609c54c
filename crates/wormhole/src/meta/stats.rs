//! `MetaStats`: occupancy and probe statistics of a MetaTrieHT (diagnostics).

#[allow(unused_imports)]
use super::*;

/// Entry counts of one MetaTrieHT by kind (diagnostics). Items: index 0 = leaf-only items
/// (an anchor without byte children: only the root can be one), 1 = internal items (byte
/// children, not an anchor), 2 = both; and leaf entries (childless anchors other than the
/// root, which reference their leaf and have no item).
#[derive(Clone, Debug, Default)]
pub struct MetaStats {
    /// Items by kind.
    pub items: [usize; 3],
    /// Bytes of the items by kind (64 each).
    pub item_bytes: [usize; 3],
    /// Items at their home position of the item array (the position a search prefetches).
    pub items_at_home: usize,
    /// Positions of the item array.
    pub item_cap: usize,
    /// Total prefix length of the leaf-only items.
    pub leaf_only_len_sum: usize,
    /// Leaf entries.
    pub leaf_entries: usize,
    /// Total anchor length of the leaf entries.
    pub leaf_entry_len_sum: usize,
    /// Slots in the table.
    pub slots: usize,
    /// Bytes of the slot array.
    pub slot_bytes: usize,
}

impl std::fmt::Display for MetaStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n: usize = self.items.iter().sum::<usize>() + self.leaf_entries;
        write!(
            f,
            "leaf entries {} (avg len {:.1}); items {} (leaf-only {} / {} B, avg len {:.1}; internal {} / {} B; both {} / {} B); \
             item array {} positions, {} items at home; slots {} ({} B, {:.0}% of entries used); hot bytes {}",
            self.leaf_entries,
            self.leaf_entry_len_sum as f64 / self.leaf_entries.max(1) as f64,
            n - self.leaf_entries,
            self.items[0],
            self.item_bytes[0],
            self.leaf_only_len_sum as f64 / self.items[0].max(1) as f64,
            self.items[1],
            self.item_bytes[1],
            self.items[2],
            self.item_bytes[2],
            self.item_cap,
            self.items_at_home,
            self.slots,
            self.slot_bytes,
            100.0 * n as f64 / (self.slots * 8).max(1) as f64,
            self.slot_bytes + self.item_cap * ITEM_SIZE,
        )
    }
}
