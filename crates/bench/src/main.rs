//! `orrery-bench`: the benchmark CLI of Orrery.
//!
//! It runs the papers' datasets and workloads over Orrery's structures and well-known
//! peers through one code path, and reports throughput, memory per key, sampled latency and
//! DRAM round trips per operation. Start with `orrery-bench --help`; the parts:
//!
//! | module | concern |
//! |---|---|
//! | [`datasets`] | deterministic key sets (`rand-8`, `k3`…, `az`, `url`, `ngram`, `file:`) and key streams (`stream:rand-int`…: computed, none stored) |
//! | [`op`], [`dist`], [`workloads`], [`facebook`] | one packed operation; request distributions; YCSB, paper and Facebook workloads as op streams |
//! | [`exec`], [`matrix`] | threads, warm-up, batches, repeats and medians |
//! | [`isolate`] | each index group of a run measured in a fresh process |
//! | [`metrics`], [`machine`] | counting allocator, RSS and the loads' memory ceiling (`--max-rss`), latency; DRAM latency and MLP |
//! | [`registry`], [`peers`] | names → indexes with capability flags; peer adapters |
//! | [`output`], [`report`] | table, JSON lines, markdown and plots |
//! | [`settings`] | the run's defaults and recorded switches, written once |
//! | [`suites`], [`cli`] | named matrices; the command line |
//! | [`lab`] | the structures' measurement programs (`orrery-bench lab`) |
//! | [`torture`] | correctness campaigns: torture streams and linearizability (`orrery-bench torture`) |
//! | [`resp_zipf`] | a cache-aside Zipf GET/SET load against a Redis-protocol server (`orrery-bench resp-zipf`) |

mod cli;
mod datasets;
mod dist;
mod exec;
mod facebook;
mod isolate;
mod lab;
mod machine;
mod matrix;
mod metrics;
mod op;
mod output;
mod peers;
mod progress;
mod registry;
mod report;
mod resp_zipf;
mod rng;
mod settings;
mod suites;
mod torture;
mod workloads;

use std::process::ExitCode;

/// Every heap allocation of the benchmark (and of its tests) is counted for bytes/key.
#[global_allocator]
static ALLOC: metrics::alloc_count::CountingAlloc = metrics::alloc_count::CountingAlloc;

fn main() -> ExitCode {
    // `orrery-bench run ... | head`: when the reader of stdout goes away, end quietly as
    // command-line tools do (killed by SIGPIPE), instead of panicking in `println!` on
    // EPIPE (Rust ignores SIGPIPE by default).
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE at start-up, before any thread
    // exists; no handler runs Rust code.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // Every index gets THP-backed malloc memory, as in the papers' setups (machine::malloc).
    machine::malloc::reexec_if_needed();
    cli::main(std::env::args_os())
}
