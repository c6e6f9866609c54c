#!/usr/bin/env bash
# The `orrery` Python package's tests: builds the wheel with maturin, installs it into a fresh
# virtual environment with pytest, Hypothesis and sortedcontainers from PyPI, and runs the
# pytest suite in crates/python/tests. Exits non-zero on any failure.
#
#   scripts/test-python.sh [pytest args...]
#
# Needs python3 with the venv module (Debian: python3-venv) and cargo. The wheel is built in
# its own target directory (target/python-test) with the release profile minus LTO, plus
# debug assertions and overflow checks (as the workspace's test profile has them), so it
# neither waits for a fat-LTO link nor disturbs the artifacts of the cargo builds.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=target/python-test/venv
WHEELS=target/python-test/wheels
python3 -m venv --clear "$VENV"
"$VENV/bin/python" -m pip install -q "maturin>=1.9.4,<2" "pytest>=8" "hypothesis>=6.100" "sortedcontainers>=2.4"

rm -rf "$WHEELS"
CARGO_TARGET_DIR=target/python-test/cargo \
CARGO_PROFILE_RELEASE_LTO=off \
CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS=true \
CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS=true \
  "$VENV/bin/maturin" build --quiet -m crates/python/Cargo.toml --release \
    -i "$VENV/bin/python" -o "$WHEELS"
"$VENV/bin/python" -m pip install -q "$WHEELS"/orrery-*.whl

# Run from the tests' folder so that `import orrery` finds the installed wheel, not the
# source tree's python/ folder.
cd crates/python/tests
exec "../../../$VENV/bin/python" -m pytest -p no:cacheprovider "$@"
