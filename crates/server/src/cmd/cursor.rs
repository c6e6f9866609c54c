//! The arguments and cursors of `HSCAN`, `SSCAN` and `ZSCAN`: `key cursor [MATCH pattern]
//! [COUNT count]`.
//!
//! A compact collection is returned whole with cursor 0, as Redis does for its listpack
//! and intset encodings. A large one is paged: the cursor is a number standing for the
//! last element key returned (kept in the server's cursor table, as `SCAN`'s), and the
//! next call resumes strictly after it, in the collection's hash order.

use super::{Ctx, not_integer, syntax_error};
use crate::glob;
use crate::num::parse_i64;
use crate::resp::Reply;

/// A parsed `*SCAN key cursor …`.
pub(super) struct ScanArgs<'a> {
    pub(super) key: &'a [u8],
    pub(super) cursor: u64,
    pub(super) pattern: Option<&'a [u8]>,
    pub(super) count: usize,
}

impl<'a> ScanArgs<'a> {
    /// Parses `name key cursor [MATCH p] [COUNT n]` with Redis's errors.
    pub(super) fn parse(args: &'a [Vec<u8>]) -> Result<ScanArgs<'a>, Reply> {
        let Some(cursor) = std::str::from_utf8(&args[2])
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
        else {
            return Err(Reply::err("ERR invalid cursor"));
        };
        let mut s = ScanArgs {
            key: &args[1],
            cursor,
            pattern: None,
            count: 10,
        };
        let mut i = 3;
        while i < args.len() {
            let Some(v) = args.get(i + 1) else {
                return Err(syntax_error());
            };
            match &args[i].to_ascii_uppercase()[..] {
                b"MATCH" => s.pattern = Some(v),
                b"COUNT" => match parse_i64(v) {
                    Some(n) if n >= 1 => s.count = n as usize,
                    Some(_) => return Err(syntax_error()),
                    None => return Err(not_integer()),
                },
                _ => return Err(syntax_error()),
            }
            i += 2;
        }
        Ok(s)
    }

    /// Where to resume: `Ok(None)` from the start, `Err` for a cursor the table forgot.
    pub(super) fn resume(&self, ctx: &Ctx<'_>) -> Result<Option<Vec<u8>>, Reply> {
        if self.cursor == 0 {
            return Ok(None);
        }
        ctx.shared
            .cursors
            .get(self.cursor)
            .map(Some)
            .ok_or_else(|| Reply::err("ERR invalid cursor"))
    }

    /// Whether `item` passes `MATCH`.
    pub(super) fn matches(&self, item: &[u8]) -> bool {
        self.pattern.is_none_or(|p| glob::matches(p, item))
    }

    /// The reply: the next cursor (0 when `next` is `None`) and the items.
    pub(super) fn reply(ctx: &Ctx<'_>, next: Option<Vec<u8>>, items: Vec<Reply>) -> Reply {
        let cursor = match next {
            Some(k) => ctx.shared.cursors.put(k),
            None => 0,
        };
        Reply::Array(vec![Reply::bulk(cursor.to_string()), Reply::Array(items)])
    }
}
