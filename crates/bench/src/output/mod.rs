//! Result records and where they go: an aligned table on stdout for people, JSON lines
//! appended to `--json FILE` for machines (and for `orrery-bench report`).

pub(crate) mod json;
pub(crate) mod record;
pub(crate) mod table;

pub(crate) use record::Record;
