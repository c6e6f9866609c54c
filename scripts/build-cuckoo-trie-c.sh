#!/usr/bin/env bash
# Builds the Cuckoo Trie authors' C implementation (Zeitak & Morrison, SOSP '21) as a
# shared library for the opt-in `cuckoo-trie-c` peer of orrery-bench
# (crates/bench/src/peers/cuckoo_trie_c.rs), plus the authors' own `benchmark` tool (for
# its `mem-usage` figure), and reserves the hugetlb pages the library's table needs.
#
# Usage: scripts/build-cuckoo-trie-c.sh [SRC] [OUT_DIR]
#
#   SRC      a bare git repository or a checkout of https://github.com/cuckoo-trie/cuckoo-trie-code
#            (default: the mirror /work/.mirror/cuckoo-trie+cuckoo-trie-code/repo). A bare
#            repository is checked out (git archive HEAD) into OUT_DIR/src. Nothing of it is
#            part of this repository; keep it outside the git tree.
#   OUT_DIR  where libcuckoo_trie.so and benchmark go (default: /work/.cache/cuckoo-trie-c,
#            outside the git tree); then export ORRERY_CUCKOO_TRIE_C=OUT_DIR/libcuckoo_trie.so
#
# Environment: CT_HUGEPAGES (default 1024, i.e. 2 GiB) 2 MiB huge pages to reserve with
# `sudo sysctl -w vm.nr_hugepages=N` when fewer are reserved (CT_HUGEPAGES=0 skips it).
# The C code maps its whole hash table with MAP_HUGETLB and fails without them (its
# README: "The Cuckoo Trie requires 2MB huge pages to store the hash table"). The table is
# 16 bytes per cell; orrery-bench sizes it at 3 cells per key by default (see the peer's
# docs), so 1024 pages hold the table for about 40M keys. Reserved pages are taken out of
# the machine's free memory until released: `sudo sysctl -w vm.nr_hugepages=0`.
#
# Flags: gcc -O3 -march=native (the authors' Makefile uses -march=haswell; native is a
# superset here) with the Makefile's -fvisibility=hidden -flto -fno-strict-aliasing,
# -DNDEBUG, MULTITHREADING on (config.h's default; checked). The library is linked against
# jemalloc (apt-get install libjemalloc-dev; installed here when missing), and the peer
# opens it with RTLD_DEEPBIND so that the C code's malloc/free and the records the
# adapter allocates through the small glue below resolve to jemalloc; jemalloc's
# `malloc_conf` is compiled in as "thp:always,metadata_thp:always" (the authors' README
# runs with MALLOC_CONF=thp:always), so the records sit on transparent huge pages.
#
# The glue (orrery_ctc.c, written here, ours) exports: record allocation and freeing on
# the library's allocator, freeing an iterator (the C API has ct_iter_alloc but no free),
# the table's byte size (read from the trie's header, which cuckoo_trie_internal.h
# declares) and the number of cells in use (the trie's nodes).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
src_arg=${1:-/work/.mirror/cuckoo-trie+cuckoo-trie-code/repo}
out_arg=${2:-/work/.cache/cuckoo-trie-c}
mkdir -p "$out_arg"
out=$(cd "$out_arg" && pwd)
case "$out/" in
"$here"/*) echo "error: OUT_DIR $out is inside this repository; choose a directory outside it" >&2; exit 1 ;;
esac

# The sources: a checkout as given, or HEAD of a bare repository archived into OUT_DIR/src.
if [[ -f "$src_arg/main.c" && -f "$src_arg/cuckoo_trie.h" ]]; then
    src=$(cd "$src_arg" && pwd)
elif git --git-dir="$src_arg" rev-parse --verify -q HEAD >/dev/null 2>&1; then
    src="$out/src"
    rm -rf "$src"
    mkdir -p "$src"
    git --git-dir="$src_arg" archive HEAD | tar -x -C "$src"
    echo "checked out $(git --git-dir="$src_arg" rev-parse --short=12 HEAD) of $src_arg into $src"
else
    echo "error: $src_arg is neither a checkout nor a git repository of cuckoo-trie-code" >&2
    sed -n '2,16p' "$0" >&2
    exit 1
fi
for f in main.c util.c verify_trie.c random.c atomics.c mt_debug.c cuckoo_trie.h \
    cuckoo_trie_internal.h config.h benchmark.c dataset.c random_dist.c; do
    [[ -f "$src/$f" ]] || { echo "missing $src/$f" >&2; exit 1; }
done
grep -q '^#define MULTITHREADING' "$src/config.h" || {
    echo "error: $src/config.h does not define MULTITHREADING (the thread-safe build)" >&2
    exit 1
}

CC=${CC:-gcc}
command -v "$CC" >/dev/null || { echo "$CC not found (apt-get install gcc)" >&2; exit 1; }
sudo_() { if [[ $(id -u) == 0 ]]; then "$@"; else sudo "$@"; fi; }
if [[ ! -f /usr/include/jemalloc/jemalloc.h ]]; then
    echo "installing libjemalloc-dev"
    sudo_ apt-get install -y -qq libjemalloc-dev
fi

cat >"$out/orrery_ctc.c" <<'EOF'
/* Glue for orrery-bench's cuckoo-trie-c peer (Orrery's own code, not the authors'). */
#include <stdlib.h>
#include <string.h>
#include <malloc.h>
#include <stdint.h>
#include "cuckoo_trie_internal.h"
#include "util.h"

/* jemalloc: back everything with transparent huge pages (MALLOC_CONF still overrides). */
EXPORT const char *malloc_conf = "thp:always,metadata_thp:always";

/* A record {key_size, value_size, key bytes, value bytes} on the library's allocator;
 * *usable receives the bytes the allocator really holds for it. NULL when out of memory. */
EXPORT ct_kv *orrery_ctc_kv_new(const uint8_t *key, int key_size, const uint8_t *value,
                                int value_size, size_t *usable) {
    ct_kv *kv = malloc(sizeof(ct_kv) + (size_t)key_size + (size_t)value_size);
    if (!kv)
        return NULL;
    kv->key_size = key_size;
    kv->value_size = value_size;
    memcpy(kv->bytes, key, (size_t)key_size);
    memcpy(kv->bytes + key_size, value, (size_t)value_size);
    *usable = malloc_usable_size(kv);
    return kv;
}

/* Frees a record from orrery_ctc_kv_new; returns the bytes it held. */
EXPORT size_t orrery_ctc_kv_free(ct_kv *kv) {
    size_t n = malloc_usable_size(kv);
    free(kv);
    return n;
}

/* Frees an iterator from ct_iter_alloc (which mallocs it). */
EXPORT void orrery_ctc_iter_free(ct_iter *it) { free(it); }

/* Bytes of the trie's bucket table (buckets plus the min-leaf bucket), as mapped by
 * ct_alloc rounded to whole 2 MiB pages, and the number of cells. */
EXPORT uint64_t orrery_ctc_table_bytes(cuckoo_trie *t) {
    return ((t->num_buckets * sizeof(ct_bucket)) / HUGEPAGE_SIZE + 1) * HUGEPAGE_SIZE;
}
EXPORT uint64_t orrery_ctc_cells(cuckoo_trie *t) { return t->num_buckets * CUCKOO_BUCKET_SIZE; }

/* Cells holding a node (any type but TYPE_UNUSED), counted by reading every bucket: the
 * trie's node count, from which the paper's Fig 11 memory figure (the table at 85% load)
 * is computed. Read without locks: call it when no writer runs. */
EXPORT uint64_t orrery_ctc_used_cells(cuckoo_trie *t) {
    uint64_t used = 0;
    for (uint64_t b = 0; b < t->num_buckets; b++)
        for (int i = 0; i < CUCKOO_BUCKET_SIZE; i++)
            if ((t->buckets[b].cells[i].bytes[0] & TYPE_MASK) != TYPE_UNUSED)
                used++;
    return used;
}
EOF
grep -q 'HUGEPAGE_SIZE' "$src"/*.h || { echo "error: HUGEPAGE_SIZE not found in the headers" >&2; exit 1; }

CFLAGS=(-O3 -march=native -fvisibility=hidden -flto -fno-strict-aliasing -DNDEBUG -fPIC
    -Wreturn-type -Wuninitialized)
echo "compiling libcuckoo_trie.so ($CC ${CFLAGS[*]})"
"$CC" "${CFLAGS[@]}" -shared -I"$src" -o "$out/libcuckoo_trie.so" \
    "$src/main.c" "$src/util.c" "$src/verify_trie.c" "$src/random.c" "$src/atomics.c" \
    "$src/mt_debug.c" "$out/orrery_ctc.c" -ljemalloc -lpthread
echo "compiling the authors' benchmark tool (for its mem-usage figure)"
"$CC" -O3 -march=native -fvisibility=hidden -flto -fno-strict-aliasing -I"$src" \
    -Wl,-rpath="$out" -o "$out/benchmark" "$src/benchmark.c" "$src/random.c" \
    "$src/dataset.c" "$src/util.c" "$src/random_dist.c" "$out/libcuckoo_trie.so" -lpthread -lm

want=${CT_HUGEPAGES:-1024}
have=$(awk '/^HugePages_Total:/ {print $2}' /proc/meminfo)
if [[ $want -gt 0 && $have -lt $want ]]; then
    echo "reserving $want huge pages of 2 MiB (have $have): sudo sysctl -w vm.nr_hugepages=$want"
    sudo_ sysctl -w vm.nr_hugepages="$want" >/dev/null
    have=$(awk '/^HugePages_Total:/ {print $2}' /proc/meminfo)
    [[ $have -ge $want ]] || echo "warning: only $have huge pages could be reserved" >&2
fi
echo "huge pages: $(awk '/^HugePages_Total:/ {t=$2} /^HugePages_Free:/ {f=$2} END {print t " reserved, " f " free"}' /proc/meminfo) (release: sudo sysctl -w vm.nr_hugepages=0)"
echo "built $out/libcuckoo_trie.so; export ORRERY_CUCKOO_TRIE_C=$out/libcuckoo_trie.so"
