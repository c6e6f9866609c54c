//! The memcached front end: the text and meta protocols of memcached 1.6 on a second
//! listener of the same process (`--memcache-port`), over items kept in their own Orrery
//! index (Mercury by default), with memcached's cache semantics (CAS, expiry, a memory
//! limit with LRU eviction through `crate::memory`).
//!
//! The items have their own keyspace, not the Redis one: memcached's items carry client
//! flags, a CAS and memcached's expiry, and a memcached client's `flush_all` must not touch
//! Redis keys. `docs/server.md` ("The memcached protocol") has the command table and the
//! differences from memcached.
//!
//! | module | what |
//! |---|---|
//! | `conn` | top: the listener (connection limit), a task per connection (framing, pipelining, swallowing refused data), the reaper |
//! | `exec` | runs a parsed request: the classic commands (`get` … `flush_all`) |
//! | `meta_cmd` | runs the meta commands (`mg`, `ms`, `md`, `ma`, `me`) |
//! | `stats` | `stats` and its groups |
//! | `parse` | framing and the typed requests of the text protocol |
//! | `meta` | the meta commands' flags, parsed (and base64 keys) |
//! | `token` | memcached's tokenizer and number readers |
//! | `state` | what connections share: items, counters, settings |
//! | `store` | the items: storage semantics, CAS, expiry, flush, the eviction hooks |
//! | `item` | the compact item header (flags, CAS, expiry, access clock) |
//! | `counters`, `reply` | leaves: `stats` counters; reply lines |

mod conn;
mod counters;
mod exec;
mod item;
mod meta;
mod meta_cmd;
mod parse;
mod reply;
mod state;
mod stats;
mod store;
mod token;

pub(crate) mod fuzzing;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize};

use tokio::net::TcpListener;

pub(crate) use state::Settings;

use crate::memory::{Memory, Policy};
use state::Memcache;
use store::Items;

/// The largest `-I` the items can hold (an Orrery index's value limit, less the header).
pub(crate) const MAX_ITEM_LIMIT: usize =
    orrery::api::MAX_VALUE_LEN - item::MAX_HEADER + store::MEMCACHED_ITEM_OVERHEAD;

/// Builds the items and binds the listener; the address bound.
pub(crate) async fn start(settings: Settings) -> Result<std::net::SocketAddr, String> {
    let mc = Arc::new(build(settings)?);
    let addr = format!("{}:{}", mc.settings.bind, mc.settings.port);
    let listener = TcpListener::bind(&addr)
        .await
        .map_err(|e| format!("cannot listen on {addr} (memcached protocol): {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    tokio::spawn(conn::accept(mc.clone(), listener));
    tokio::spawn(conn::reaper(mc));
    Ok(local)
}

fn build(settings: Settings) -> Result<Memcache, String> {
    if settings.max_item > MAX_ITEM_LIMIT || settings.max_item < 1024 {
        return Err(format!(
            "--memcache-max-item-size must be between 1024 and {MAX_ITEM_LIMIT} bytes"
        ));
    }
    let policy = if settings.no_evict {
        Policy::NoEviction
    } else {
        Policy::Lru
    };
    let memory = Arc::new(Memory::new(settings.memory, policy, settings.samples));
    let items = Items::open(&settings.index, memory.clone(), settings.max_item)?;
    Ok(Memcache {
        items,
        counters: Default::default(),
        verbosity: AtomicU32::new(0),
        curr_conns: AtomicUsize::new(0),
        total_conns: AtomicU64::new(0),
        rejected_conns: AtomicU64::new(0),
        started: crate::clock::now_ms() / 1000,
        memory,
        settings,
    })
}
