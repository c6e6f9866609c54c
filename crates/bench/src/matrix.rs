//! A run matrix: indexes × datasets × workloads × threads, repeated, with the median kept.
//!
//! Order of work, per dataset: the keys are generated once (the loaded `N`, `N` absent keys
//! if `lookup-neg` runs, and the fresh keys every inserting run needs). Per index, one
//! freshly loaded index serves all repeats of the read- and update-only workloads; `load`,
//! `delete` and every inserting workload (`d`, `e`, `mix-*`) get a fresh index per repeat,
//! so that each repeat starts from the same index (inserting runs take fresh keys no
//! earlier run used). Each repeat uses a different stream seed. Loads are timed on their own and their memory growth measured
//! (allocator, RSS, `memory_usage()`); freed memory is handed back to the OS between
//! indexes so RSS growth stays meaningful. The result of a cell is its median repeat by
//! wall-clock throughput.
//!
//! The index a workload runs on is loaded with [`Matrix::load_threads`] threads (default 1),
//! whatever thread counts the matrix's cells have; only the `load` workload itself loads with
//! each cell's thread count. A structure built by two threads can be laid out differently
//! from one built by one (congee's ART: its 1-thread lookups are slower after a 2-thread
//! load; measured: `docs/results/wormhole.md`, "Lookups at 10M keys"), so loading with the
//! matrix's largest thread count would make the 1-thread cells of a 1- and 2-thread matrix
//! depend on the other cells.
//!
//! Every lookup of a loaded key must find it, and no lookup of an absent key may: a miss
//! there is reported as an error, so a broken index cannot produce a fast-looking number.
//!
//! # The memory ceiling
//!
//! Every load runs under [`Matrix::max_rss`] (`--max-rss`; `exec` and `metrics::ceiling`
//! say how it stops). A load that stops there is a result, not an error: its record (the
//! `load` cell's, or one made for it when the matrix has no `load` cell) carries the keys
//! held and the RSS then (`held_keys`, `held_rss_bytes`), and its per-key figures are
//! over the keys held. The group's other cells are skipped, with the reason printed: their
//! workloads assume keys `0..N` loaded, and a load stopped early by several threads holds
//! a slice of each thread's range instead.

use crate::datasets::{KeySet, Spec, StreamKind};
use crate::dist::Dist;
use crate::exec::{self, Knobs, MAX_GET_MANY, Phase, PhaseSpec};
use crate::machine::Machine;
use crate::metrics::{alloc_count, cpu, index_stats, latency, rss};
use crate::output::Record;
use crate::output::record::{git_rev, loadavg};
use crate::progress::Progress;
use crate::registry::{self, AnyIndex, Caps, Probe, Resolved};
use crate::settings::{Recorded, Settings, defaults};
use crate::workloads::Workload;

/// Everything one matrix needs.
#[derive(Clone, Debug)]
pub(crate) struct Matrix {
    /// Index names.
    pub(crate) indexes: Vec<String>,
    /// Dataset names.
    pub(crate) datasets: Vec<String>,
    /// Loaded key counts: the matrix runs once per count (a sweep), smallest first as given.
    pub(crate) keys: Vec<u64>,
    /// Workloads.
    pub(crate) workloads: Vec<Workload>,
    /// Thread counts.
    pub(crate) threads: Vec<usize>,
    /// Distribution (None: each workload's default).
    pub(crate) dist: Option<Dist>,
    /// Value size.
    pub(crate) value_size: usize,
    /// Repeats.
    pub(crate) repeat: usize,
    /// Operations per thread.
    pub(crate) ops: u64,
    /// Warm-up lookups per thread (None: 10% of ops, at most 1M).
    pub(crate) warmup: Option<u64>,
    /// Time one op in this many.
    pub(crate) sample_every: usize,
    /// Keys per get_many.
    pub(crate) get_many_batch: usize,
    /// Per-phase time limit, seconds.
    pub(crate) max_secs: Option<f64>,
    /// Memory ceiling of every load, bytes (`--max-rss`; `None`: none). See "The memory
    /// ceiling" in the module docs.
    pub(crate) max_rss: Option<u64>,
    /// Seed.
    pub(crate) seed: u64,
    /// Skip unsupported index/dataset/workload/thread combinations instead of failing.
    pub(crate) skip_unsupported: bool,
    /// Threads that load the index the cells run on (1 for an index that is not concurrent).
    pub(crate) load_threads: usize,
    /// Switches the indexes are built with (and the epoch pin the measuring process needs).
    pub(crate) settings: Settings,
}

/// A validated matrix.
pub(crate) struct Plan {
    m: Matrix,
    indexes: Vec<Resolved>,
    datasets: Vec<(String, Spec)>,
    skipped: Vec<String>,
}

/// Why `index` cannot run `workload` on `dataset` with `threads`, if it cannot.
fn unsupported(
    r: &Resolved,
    spec: &Spec,
    dataset: &str,
    w: Workload,
    threads: usize,
    value_size: usize,
) -> Option<String> {
    let c = r.caps;
    if let Some(len) = c.key_len
        && spec.fixed_len() != Some(len)
    {
        return Some(format!(
            "{} takes only {len}-byte keys; dataset {dataset} has {}",
            r.name,
            spec.fixed_len()
                .map_or("variable-length keys".into(), |l| format!("{l}-byte keys"))
        ));
    }
    if let Some(len) = c.value_len
        && value_size != len
    {
        return Some(format!(
            "{} takes only {len}-byte values, not --value-size {value_size}",
            r.name
        ));
    }
    if w.deletes() && !c.removes {
        return Some(format!(
            "{} cannot remove keys: workload {w} deletes",
            r.name
        ));
    }
    if c.nul_only_in_8_byte_keys && spec.may_contain_nul() && spec.fixed_len() != Some(8) {
        return Some(format!(
            "{} takes 0x00 only in 8-byte keys (JudySL keys are C strings); dataset \
             {dataset}'s keys may contain it",
            r.name
        ));
    }
    if w.scans() && !c.ordered {
        return Some(format!("{} is a point index: workload {w} scans", r.name));
    }
    if threads > 1 && !c.concurrent {
        return Some(format!(
            "{} is single-threaded: cannot run {threads} threads",
            r.name
        ));
    }
    None
}

impl Plan {
    /// Checks names, numbers and pairings.
    pub(crate) fn new(m: Matrix) -> Result<Plan, String> {
        if m.indexes.is_empty() || m.datasets.is_empty() || m.workloads.is_empty() {
            return Err("need at least one index, dataset and workload".into());
        }
        if m.threads.is_empty() || m.threads.iter().any(|&t| t == 0 || t > 1024) {
            return Err("thread counts must be between 1 and 1024".into());
        }
        if m.load_threads == 0 || m.load_threads > 1024 {
            return Err("--load-threads must be between 1 and 1024".into());
        }
        if m.keys.is_empty() {
            return Err("need at least one key count".into());
        }
        if let Some(k) = m.keys.iter().find(|&&k| k == 0 || k >= 1 << 40) {
            return Err(format!("--keys must be between 1 and 2^40, got {k}"));
        }
        if m.ops == 0 || m.ops >= 1 << 40 {
            return Err(format!("--ops must be between 1 and 2^40, got {}", m.ops));
        }
        if m.repeat == 0 || m.repeat > 100 {
            return Err(format!(
                "--repeat must be between 1 and 100, got {}",
                m.repeat
            ));
        }
        if m.value_size > orrery::api::MAX_VALUE_LEN {
            return Err(format!(
                "--value-size {} exceeds the API's limit of {} bytes",
                m.value_size,
                orrery::api::MAX_VALUE_LEN
            ));
        }
        if m.sample_every == 0 {
            return Err("--sample-every must be at least 1".into());
        }
        if m.get_many_batch == 0 || m.get_many_batch > MAX_GET_MANY {
            return Err(format!("--batch must be between 1 and {MAX_GET_MANY}"));
        }
        if m.settings.mercury_load_percent == 0 {
            return Err("--mercury-load-percent must be at least 1".into());
        }
        if m.max_secs.is_some_and(|s| s.is_nan() || s <= 0.0) {
            return Err("--max-secs must be positive".into());
        }
        // An opt-in peer that cannot run here (its library is not built) is skipped with a
        // note when unsupported combinations are skipped (suites); otherwise it is an error.
        let mut problems = Vec::new();
        let mut indexes = Vec::new();
        for n in &m.indexes {
            match registry::resolve(n) {
                Ok(r) => indexes.push(r),
                Err(e) if m.skip_unsupported && registry::is_unavailable_opt_in(n) => {
                    problems.push(e)
                }
                Err(e) => return Err(e),
            }
        }
        if indexes.is_empty() {
            return Err(format!(
                "no index can run here:\n  {}",
                problems.join("\n  ")
            ));
        }
        let datasets = m
            .datasets
            .iter()
            .map(|d| Spec::parse(d).map(|s| (d.clone(), s)))
            .collect::<Result<Vec<_>, _>>()?;
        for r in &indexes {
            for (name, spec) in &datasets {
                for &w in &m.workloads {
                    for &t in &m.threads {
                        if let Some(p) = unsupported(r, spec, name, w, t, m.value_size)
                            && !problems.contains(&p)
                        {
                            problems.push(p);
                        }
                    }
                }
            }
        }
        if !problems.is_empty() && !m.skip_unsupported {
            return Err(format!(
                "unsupported combinations (drop them, or pass --skip-unsupported):\n  {}",
                problems.join("\n  ")
            ));
        }
        Ok(Plan {
            m,
            indexes,
            datasets,
            skipped: problems,
        })
    }

    /// Combinations that will be skipped.
    pub(crate) fn skipped(&self) -> &[String] {
        &self.skipped
    }

    /// The warm-up per thread.
    fn warmup(&self) -> u64 {
        self.m.warmup.unwrap_or(defaults::warmup(self.m.ops))
    }

    /// The loaded key count of a single-count plan (see [`Plan::run`]).
    fn n(&self) -> u64 {
        self.m.keys[0]
    }

    /// Runs the plan, handing each result to `emit` as soon as it is final: the whole
    /// matrix once per key count, in the order given.
    pub(crate) fn run(
        &self,
        machine: Option<&Machine>,
        suite: Option<&str>,
        progress: &Progress,
        emit: &mut dyn FnMut(Record) -> Result<(), String>,
    ) -> Result<(), String> {
        for &k in &self.m.keys {
            self.with_keys(k)
                .run_one(None, machine, suite, progress, emit)?;
        }
        Ok(())
    }

    /// This plan restricted to one key count.
    fn with_keys(&self, k: u64) -> Plan {
        Plan {
            m: Matrix {
                keys: vec![k],
                ..self.m.clone()
            },
            indexes: self.indexes.clone(),
            datasets: self.datasets.clone(),
            skipped: Vec::new(),
        }
    }

    /// The groups of cells that share a loaded index (one key count, one dataset, one
    /// index), in the order [`Plan::run`] measures them. Each group runs in a process of its
    /// own when `run` isolates (see `crate::isolate`).
    pub(crate) fn groups(&self) -> Vec<Group> {
        let mut v = Vec::new();
        for &keys in &self.m.keys {
            for (dataset, (ds_name, spec)) in self.datasets.iter().enumerate() {
                for (index, r) in self.indexes.iter().enumerate() {
                    let cells = self.cells(r, spec, ds_name).len();
                    if cells > 0 {
                        v.push(Group {
                            keys,
                            dataset,
                            index,
                            cells,
                            index_name: r.name.clone(),
                            label: format!("index {}, dataset {ds_name}, {keys} keys", r.name),
                        });
                    }
                }
            }
        }
        v
    }

    /// The group of `keys`, dataset number `dataset` and index number `index`, if the plan
    /// has it.
    pub(crate) fn group(&self, keys: u64, dataset: usize, index: usize) -> Option<Group> {
        self.groups()
            .into_iter()
            .find(|g| g.keys == keys && g.dataset == dataset && g.index == index)
    }

    /// Runs one group exactly as [`Plan::run`] runs it within the whole plan (the same
    /// key set, including the fresh keys other indexes' inserting runs would need, the
    /// same seeds), handing its results to `emit`.
    pub(crate) fn run_group(
        &self,
        g: &Group,
        machine: Option<&Machine>,
        suite: Option<&str>,
        progress: &Progress,
        emit: &mut dyn FnMut(Record) -> Result<(), String>,
    ) -> Result<(), String> {
        self.with_keys(g.keys)
            .run_one(Some((g.dataset, g.index)), machine, suite, progress, emit)
    }

    /// The (workload, threads) cells `r` runs on dataset `ds_name`, in the shared-index
    /// order: read/update-only runs first, inserting runs after.
    fn cells(&self, r: &Resolved, spec: &Spec, ds_name: &str) -> Vec<(Workload, usize)> {
        let m = &self.m;
        let mut v = Vec::new();
        for &w in &m.workloads {
            for &t in &m.threads {
                if unsupported(r, spec, ds_name, w, t, m.value_size).is_none() {
                    v.push((w, t));
                }
            }
        }
        v.sort_by_key(|(w, _)| w.run_order());
        v
    }

    /// Runs a plan of one key count; with `only = Some((dataset, index))`, only that
    /// group (the key set is still sized for the whole plan, so it is the same).
    fn run_one(
        &self,
        only: Option<(usize, usize)>,
        machine: Option<&Machine>,
        suite: Option<&str>,
        progress: &Progress,
        emit: &mut dyn FnMut(Record) -> Result<(), String>,
    ) -> Result<(), String> {
        let m = &self.m;
        let n = self.n();
        let rev = git_rev();
        let timer_ns = latency::timer_overhead_ns();
        let latency_label = format!(
            "sampled single-operation latency in ns, 1 op in {} timed with Instant::now() \
             (clock overhead ~{timer_ns} ns included; a scan is one op; get-many: one batch)",
            m.sample_every
        );
        for (di, (ds_name, spec)) in self.datasets.iter().enumerate() {
            if only.is_some_and(|(d, _)| d != di) {
                continue;
            }
            let cells_of = |r: &Resolved| self.cells(r, spec, ds_name);
            // Key pool: 0..N loaded, N..2N absent (lookup-neg), then fresh keys for inserts.
            let neg = m.workloads.contains(&Workload::LookupNeg);
            let fresh_start = n + if neg { n } else { 0 };
            let inserts_needed = self
                .indexes
                .iter()
                .map(|r| {
                    cells_of(r)
                        .iter()
                        .map(|(w, t)| w.inserts(m.ops, *t as u64))
                        .sum::<u64>()
                        * m.repeat as u64
                })
                .max();
            let Some(inserts_needed) = inserts_needed else {
                continue;
            };
            let total = fresh_start
                .checked_add(inserts_needed)
                .filter(|&t| t < 1 << 52)
                .ok_or("too many keys")?;
            if self.indexes.iter().all(|r| cells_of(r).is_empty()) {
                continue;
            }
            let keys = spec.generate(total as usize, n as usize, m.seed, progress)?;
            for (ii, r) in self.indexes.iter().enumerate() {
                if only.is_some_and(|(_, i)| i != ii) {
                    continue;
                }
                let cells = cells_of(r);
                if cells.is_empty() {
                    continue;
                }
                let mut samples: Vec<Vec<Sample>> = cells.iter().map(|_| Vec::new()).collect();
                let load_threads = if r.caps.concurrent { m.load_threads } else { 1 };
                let shared: Vec<usize> = (0..cells.len())
                    .filter(|&i| !cells[i].0.needs_fresh_index())
                    .collect();
                // A load stopped at the memory ceiling (module docs), for the record made
                // for it when no `load` cell records it.
                let mut stop: Option<Sample> = None;
                let skip = |w: Workload, t: usize, load: &Load| {
                    eprintln!(
                        "skipped: {} {ds_name} {w} x{t}: the load stopped at the memory \
                         ceiling with {} of {n} keys",
                        r.name,
                        load.held.map_or(0, |h| h.0)
                    );
                };
                // One loaded index serves every repeat of the shared cells.
                if !shared.is_empty() {
                    let tag = format!("{} {ds_name}", r.name);
                    let (index, lphase, load) =
                        self.load(r, &keys, load_threads, progress, &format!("{tag} load"))?;
                    let mut next_fresh = fresh_start;
                    if load.held.is_some() {
                        shared
                            .iter()
                            .for_each(|&i| skip(cells[i].0, cells[i].1, &load));
                        stop = Some(Sample {
                            phase: lphase,
                            load: load.clone(),
                        });
                    }
                    for rep in 0..m.repeat {
                        if stop.is_some() {
                            break;
                        }
                        for &i in &shared {
                            let (w, t) = cells[i];
                            let tag = format!("{tag} #{}", rep + 1);
                            let ps = self.phase_spec(w, t, next_fresh, rep);
                            next_fresh += w.inserts(m.ops, t as u64);
                            let phase = self.phase(r.caps, &index, &keys, &ps, progress, &tag)?;
                            samples[i].push(Sample {
                                phase,
                                load: load.clone(),
                            });
                        }
                    }
                    drop(index);
                    rss::trim_heap();
                }
                for i in (0..cells.len()).filter(|i| !shared.contains(i)) {
                    let (w, t) = cells[i];
                    for rep in 0..m.repeat {
                        let tag = format!("{} {ds_name} #{}", r.name, rep + 1);
                        let sample = if w == Workload::Load {
                            let (index, phase, load) =
                                self.load(r, &keys, t, progress, &format!("{tag} load"))?;
                            drop(index);
                            Sample { phase, load }
                        } else {
                            if let Some(s) = &stop {
                                skip(w, t, &s.load);
                                break;
                            }
                            let (index, lphase, load) = self.load(
                                r,
                                &keys,
                                load_threads,
                                progress,
                                &format!("{tag} load"),
                            )?;
                            if load.held.is_some() {
                                skip(w, t, &load);
                                stop = Some(Sample {
                                    phase: lphase,
                                    load,
                                });
                                break;
                            }
                            let ps = self.phase_spec(w, t, fresh_start, rep);
                            let phase = self.phase(r.caps, &index, &keys, &ps, progress, &tag)?;
                            drop(index);
                            Sample { phase, load }
                        };
                        rss::trim_heap();
                        samples[i].push(sample);
                    }
                }
                if let Some(s) = stop.filter(|_| !cells.iter().any(|c| c.0 == Workload::Load)) {
                    let t = s.load.threads;
                    emit(self.record(
                        r,
                        ds_name,
                        Workload::Load,
                        t,
                        vec![s],
                        machine,
                        suite,
                        &rev,
                        &latency_label,
                    ))?;
                }
                for (i, (w, t)) in cells.iter().enumerate() {
                    if samples[i].is_empty() {
                        continue;
                    }
                    let rec = self.record(
                        r,
                        ds_name,
                        *w,
                        *t,
                        std::mem::take(&mut samples[i]),
                        machine,
                        suite,
                        &rev,
                        &latency_label,
                    );
                    emit(rec)?;
                }
            }
        }
        Ok(())
    }

    fn phase_spec(&self, w: Workload, threads: usize, insert_base: u64, rep: usize) -> PhaseSpec {
        let m = &self.m;
        PhaseSpec {
            workload: w,
            dist: m.dist.unwrap_or_else(|| w.default_dist()),
            threads,
            ops: m.ops,
            n: self.n(),
            insert_base,
            seed: m.seed.wrapping_add(rep as u64 * 0x9E37_79B9),
        }
    }

    /// Builds a fresh index and loads keys `0..N` with `threads` threads.
    fn load(
        &self,
        r: &Resolved,
        keys: &KeySet,
        threads: usize,
        progress: &Progress,
        label: &str,
    ) -> Result<(Loaded, Phase, Load), String> {
        let m = &self.m;
        rss::trim_heap();
        let alloc0 = alloc_count::live_bytes();
        let rss0 = rss::resident_bytes();
        // Every key of the run's pool may end up inserted: indexes that cannot grow are
        // sized for all of them.
        let registry::Built {
            index,
            probe,
            stats,
        } = r.make_probed(&m.settings, keys.len() as u64)?;
        let bar = progress.bar(self.n(), label);
        // A load always completes: no time limit.
        let knobs = Knobs {
            max_secs: None,
            max_rss: m.max_rss,
            ..self.knobs()
        };
        let ps = PhaseSpec {
            workload: Workload::Load,
            dist: Dist::Uniform,
            threads,
            ops: self.n(),
            n: self.n(),
            insert_base: 0,
            seed: m.seed,
        };
        let mut phase = exec::run(&index, probe.as_ref(), keys, &ps, &knobs, &bar)
            .map_err(|e| format!("{}: loading failed: {e}", r.name))?;
        // Restructuring the load left in progress is the load's work: timed with it. Not
        // after a load the ceiling stopped: finishing a table doubling there would need the
        // rest of the successor at once, past the ceiling (a 2G-key Mercury load stopped at
        // the ceiling was killed by the kernel in its settle); the held keys are the figure.
        if let Some(p) = probe.as_ref().filter(|_| phase.ceiling_rss.is_none()) {
            let (t0, cpu0) = (std::time::Instant::now(), cpu::thread_cpu_secs());
            (p.settle)();
            phase.secs += t0.elapsed().as_secs_f64();
            if let Some(first) = phase.per_thread.first_mut() {
                first.1 += cpu::thread_cpu_secs() - cpu0;
            }
        }
        bar.finish_and_clear();
        let alloc1 = alloc_count::live_bytes();
        let rss1 = rss::resident_bytes();
        let len = index.len();
        // Stopped at the ceiling: the figures are over the keys held (module docs).
        let held = phase.ceiling_rss.map(|rss| (len as u64, rss));
        let n = if held.is_some() {
            len.max(1) as f64
        } else {
            self.n() as f64
        };
        if held.is_none() && len as u64 != self.n() {
            return Err(format!(
                "{}: after loading {} distinct keys the index reports len() = {len}",
                r.name,
                self.n()
            ));
        }
        let complete = !r.caps.memory_only_8_byte_keys
            || match keys.stream() {
                Some(s) => s.kind() != StreamKind::Ngram,
                None => (0..keys.len().min(self.n() as usize)).all(|i| keys.get(i).len() == 8),
            };
        let usage = (r.caps.reports_memory && complete).then(|| index.memory_usage());
        let mem = usage.map(|u| u.total() as f64 / n);
        let struct_bpk = usage.map(|u| u.structure_bytes as f64 / n);
        let load = Load {
            mops: phase.mops(),
            threads,
            alloc_bpk: (alloc1 - alloc0) as f64 / n,
            rss_bpk: rss0.zip(rss1).map(|(a, b)| (b as f64 - a as f64) / n),
            mem_bpk: mem,
            struct_bpk,
            index_stats: stats.map(|f| f()),
            held,
        };
        Ok((Loaded { index, probe }, phase, load))
    }

    /// The settings a record of this plan carries, as this process has them.
    fn recorded(&self) -> Recorded {
        Recorded {
            switches: self.m.settings.effective(),
            ops_per_thread: self.m.ops,
            warmup: self.warmup(),
            sample_every: self.m.sample_every,
            get_many_batch: self.m.get_many_batch,
            max_secs: self.m.max_secs,
        }
    }

    /// The settings of this plan.
    pub(crate) fn settings(&self) -> &Settings {
        &self.m.settings
    }

    fn knobs(&self) -> Knobs {
        Knobs {
            value_size: self.m.value_size,
            sample_every: self.m.sample_every,
            get_many_batch: self.m.get_many_batch,
            warmup: self.warmup(),
            max_secs: self.m.max_secs,
            max_rss: None,
        }
    }

    /// Runs one workload on a loaded index and checks its lookups.
    fn phase(
        &self,
        caps: Caps,
        index: &Loaded,
        keys: &KeySet,
        ps: &PhaseSpec,
        progress: &Progress,
        tag: &str,
    ) -> Result<Phase, String> {
        let m = &self.m;
        let (w, threads) = (ps.workload, ps.threads);
        let per = w.ops_per_thread(self.n(), m.ops, threads as u64);
        let bar = progress.bar(per * threads as u64, &format!("{tag} {w} x{threads}"));
        let phase = exec::run(
            &index.index,
            index.probe.as_ref(),
            keys,
            ps,
            &self.knobs(),
            &bar,
        )?;
        bar.finish_and_clear();
        // `fb-*` deletes (and refills) loaded keys: their GETs may miss meanwhile.
        let expect_all = !matches!(w, Workload::LookupNeg | Workload::Facebook(_));
        if expect_all && phase.found != phase.probes && !caps.atomic_upsert && threads > 1 {
            // A documented property of the peer, not a harness fault: say it, keep the figure.
            eprintln!(
                "warning: workload {w}: {} of {} lookups of present keys missed while other \
                 threads replaced values (this peer's upsert is remove-then-insert)",
                phase.probes - phase.found,
                phase.probes
            );
        } else if expect_all && phase.found != phase.probes {
            return Err(format!(
                "workload {w}: {} of {} lookups/removals of present keys found nothing: \
                 the index lost keys",
                phase.probes - phase.found,
                phase.probes
            ));
        }
        // A full-range scan of the shared index (which holds exactly the loaded keys: no
        // shared cell inserts or removes) must visit every key, once per thread.
        if w == Workload::ScanAll && phase.ops != self.n() * threads as u64 {
            return Err(format!(
                "workload {w}: {threads} full scans visited {} pairs; {} keys are loaded",
                phase.ops,
                self.n()
            ));
        }
        // A `verify` looks every loaded key up once (the misses were checked above).
        if w == Workload::Verify && phase.probes != self.n() {
            return Err(format!(
                "workload {w}: checked {} of {} keys",
                phase.probes,
                self.n()
            ));
        }
        if w == Workload::LookupNeg && phase.found != 0 {
            return Err(format!(
                "workload {w}: {} lookups of absent keys found something",
                phase.found
            ));
        }
        Ok(phase)
    }

    #[allow(clippy::too_many_arguments)]
    fn record(
        &self,
        r: &Resolved,
        dataset: &str,
        w: Workload,
        threads: usize,
        mut samples: Vec<Sample>,
        machine: Option<&Machine>,
        suite: Option<&str>,
        rev: &str,
        latency_label: &str,
    ) -> Record {
        let m = &self.m;
        let mops_repeats: Vec<f64> = samples.iter().map(|s| s.phase.mops()).collect();
        let mops_cpu_repeats: Vec<f64> = samples.iter().map(|s| s.phase.mops_cpu()).collect();
        samples.sort_by(|a, b| a.phase.mops().total_cmp(&b.phase.mops()));
        let med = &samples[(samples.len() - 1) / 2];
        let mops = med.phase.mops();
        let ns_per_op = if mops > 0.0 {
            1e3 * threads as f64 / mops
        } else {
            0.0
        };
        let pct = latency::percentiles(&med.phase.hist);
        let dist = m.dist.unwrap_or_else(|| w.default_dist());
        Record {
            index: r.name.clone(),
            dataset: dataset.to_string(),
            keys: self.n(),
            value_size: m.value_size,
            workload: w.to_string(),
            dist: if w == Workload::Load {
                "-".into()
            } else {
                dist.to_string()
            },
            threads,
            ops: med.phase.ops,
            secs: med.phase.secs,
            mops,
            mops_repeats,
            mops_cpu: med.phase.mops_cpu(),
            mops_cpu_repeats,
            bytes_per_key: med.load.alloc_bpk,
            rss_bytes_per_key: med.load.rss_bpk,
            mem_usage_bytes_per_key: med.load.mem_bpk,
            structure_bytes_per_key: med.load.struct_bpk,
            index_stats: med.load.index_stats.clone(),
            p50_ns: pct.map(|p| p.0),
            p99_ns: pct.map(|p| p.1),
            p999_ns: pct.map(|p| p.2),
            latency: latency_label.to_string(),
            dram_rt_per_op: machine.map(|mc| med.phase.cpu_ns_per_op() / mc.lat_4k_ns),
            ns_per_op,
            cpu_ns_per_op: med.phase.cpu_ns_per_op(),
            load_mops: med.load.mops,
            max_rss_bytes: m.max_rss,
            held_keys: med.load.held.map(|h| h.0),
            held_rss_bytes: med.load.held.map(|h| h.1),
            load_threads: med.load.threads,
            repeats: samples.len(),
            seed: m.seed,
            loadavg: loadavg(),
            git_rev: rev.to_string(),
            machine: machine.map_or(serde_json::Value::Null, |mc| mc.summary_json()),
            malloc: Some(crate::machine::malloc::describe()),
            split: med.phase.split.clone(),
            pid: Some(std::process::id()),
            // Set by the command line, which knows how the run is split into processes.
            isolated: None,
            suite: suite.map(str::to_string),
            settings: Some(self.recorded()),
            unix_time: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        }
    }
}

/// The cells of one index on one dataset at one key count: everything that shares a loaded
/// index (and its key set), the unit a child process measures.
#[derive(Clone, Debug)]
pub(crate) struct Group {
    /// Loaded key count.
    pub(crate) keys: u64,
    /// Position of the dataset in the matrix.
    pub(crate) dataset: usize,
    /// Position of the index in the matrix.
    pub(crate) index: usize,
    /// Results the group produces (one per cell).
    pub(crate) cells: usize,
    /// The index's name.
    pub(crate) index_name: String,
    /// For people: `index congee, dataset rand-8, 10000000 keys`.
    pub(crate) label: String,
}

/// A loaded index and its probe, if it has one.
struct Loaded {
    index: AnyIndex,
    probe: Option<Probe>,
}

/// A load's measurements.
#[derive(Clone)]
struct Load {
    mops: f64,
    threads: usize,
    alloc_bpk: f64,
    rss_bpk: Option<f64>,
    mem_bpk: Option<f64>,
    /// `memory_usage().structure_bytes` per key.
    struct_bpk: Option<f64>,
    /// The index's own statistics right after the load (`metrics::index_stats::IndexStats`).
    index_stats: Option<index_stats::IndexStats>,
    /// Keys held and RSS when the load stopped at the memory ceiling.
    held: Option<(u64, u64)>,
}

/// One repeat of one cell.
struct Sample {
    phase: Phase,
    load: Load,
}

#[cfg(test)]
mod caps_tests {
    use super::*;

    /// Judy refuses datasets whose keys may hold 0x00 unless all are 8 bytes (JudySL keys are
    /// C strings), and takes the text sets and the 8-byte binary sets.
    #[test]
    fn judy_refuses_binary_keys_of_other_lengths() {
        let Ok(r) = registry::resolve("judy") else {
            eprintln!("libJudy missing (apt-get install libjudy-dev): skipping");
            return;
        };
        let check = |d: &str| {
            let spec = Spec::parse(d).unwrap();
            unsupported(&r, &spec, d, Workload::Lookup, 1, 8)
        };
        let why = check("rand-16").expect("rand-16 keys may hold 0x00");
        assert!(why.contains("0x00"), "{why}");
        for ok in ["rand-8", "rand-int", "seq-int", "ngram", "url", "az"] {
            assert_eq!(check(ok), None, "{ok}");
        }
        let spec = Spec::parse("rand-8").unwrap();
        let why = unsupported(&r, &spec, "rand-8", Workload::Lookup, 1, 16).unwrap();
        assert!(why.contains("8-byte values"), "{why}");
    }

    /// A peer that cannot remove is refused workloads that delete.
    #[test]
    fn no_remove_refuses_deleting_workloads() {
        let mut r = registry::resolve("btreemap").unwrap();
        r.caps.removes = false;
        let spec = Spec::parse("rand-8").unwrap();
        let why = unsupported(&r, &spec, "rand-8", Workload::Delete, 1, 8).unwrap();
        assert!(why.contains("cannot remove"), "{why}");
        assert_eq!(
            unsupported(&r, &spec, "rand-8", Workload::Ycsb('a'), 1, 8),
            None
        );
    }
}
