#!/usr/bin/env bash
# Builds the Wormhole authors' C implementation as a shared library for the opt-in
# `wormhole-c` peer of orrery-bench (crates/bench/src/peers/wormhole_c.rs).
#
# Usage: scripts/build-wormhole-c.sh SRC_DIR OUT_DIR
#
#   SRC_DIR  a checkout of the C code: git clone https://github.com/wuxb45/wormhole
#            (needs lib.c lib.h kv.c kv.h wh.c wh.h ctypes.h). Nothing of it is part of
#            this repository; keep it outside the git tree.
#   OUT_DIR  where libwh.so goes (also outside the git tree); then
#            export ORRERY_WORMHOLE_C=OUT_DIR/libwh.so
#
# Needs clang and jemalloc (Debian/Ubuntu: apt-get install clang libjemalloc-dev).
# Flags follow the project's release build (clang, -O3 -march=native, gnu18, NDEBUG,
# -pthread) plus -fPIC -shared. The library is linked against libjemalloc; the peer opens
# it with RTLD_DEEPBIND so that the C code's malloc/free resolve to jemalloc while the
# Rust harness keeps its own allocator. A one-line object of ours defines jemalloc's
# `malloc_conf` so that jemalloc backs its memory with transparent huge pages
# (thp:always, metadata_thp:always); MALLOC_CONF in the environment still overrides it.
#
# Source versions: the upstream history renamed the kvmap_api member `set` to `put` in
# kv.h one commit before wh.c followed. When SRC_DIR holds a wh.c that still initialises
# `.set` against a kv.h that declares `put` (a mixed checkout), the script bridges the
# rename with -Dset=put for wh.c only; a consistent checkout needs nothing.
set -euo pipefail

if [[ $# -ne 2 ]]; then
    sed -n '2,12p' "$0" >&2
    exit 2
fi
src=$(cd "$1" && pwd)
mkdir -p "$2"
out=$(cd "$2" && pwd)
for f in lib.c lib.h kv.c kv.h wh.c wh.h ctypes.h; do
    [[ -f "$src/$f" ]] || { echo "missing $src/$f (clone https://github.com/wuxb45/wormhole)" >&2; exit 1; }
done
if git -C "$out" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    echo "warning: $out is inside a git work tree; do not commit libwh.so or the C sources" >&2
fi

CC=${CC:-clang}
command -v "$CC" >/dev/null || { echo "$CC not found (apt-get install clang)" >&2; exit 1; }
CFLAGS=(-std=gnu18 -O3 -march=native -DNDEBUG -pthread -fPIC -Wall -Wno-invalid-noreturn)

whflags=()
if grep -q '^  \.set = ' "$src/wh.c" && grep -q '(\* put)' "$src/kv.h"; then
    echo "note: mixed checkout (wh.c uses .set, kv.h declares put); compiling wh.c with -Dset=put" >&2
    whflags+=(-Dset=put)
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$CC" "${CFLAGS[@]}" -c "$src/lib.c" -o "$tmp/lib.o"
"$CC" "${CFLAGS[@]}" -c "$src/kv.c" -o "$tmp/kv.o"
"$CC" "${CFLAGS[@]}" "${whflags[@]}" -I"$src" -c "$src/wh.c" -o "$tmp/wh.o"
printf '%s\n' 'const char *malloc_conf = "thp:always,metadata_thp:always";' > "$tmp/conf.c"
"$CC" "${CFLAGS[@]}" -c "$tmp/conf.c" -o "$tmp/conf.o"
"$CC" -shared -pthread -o "$out/libwh.so" "$tmp/lib.o" "$tmp/kv.o" "$tmp/wh.o" "$tmp/conf.o" \
    -ljemalloc -lm
echo "built $out/libwh.so; export ORRERY_WORMHOLE_C=$out/libwh.so"
