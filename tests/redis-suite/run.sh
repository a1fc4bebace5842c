#!/usr/bin/env bash
# Redis 7.0.15's own Tcl suite against a freshly built locksmith-server, as CI runs it.
#
# usage: tests/redis-suite/run.sh [unit ...]        (default: every unit, "all")
#
# Runs every unit that can run against an external server, with the widest tag filter that
# works there (only tests that start servers of their own are left out: -needs:local-process),
# against one release server process from start to end (DEBUG enabled, as the suite expects).
# Fails on any failed test not listed in known-differences.txt beside this script, and on any
# error outside a test, aborted unit or hang. The suite is read from ../shared/redis-tests
# (beside the checkout; REDIS_TESTS to point elsewhere); where it or tclsh is missing the script
# says so in one line and exits 0, except under CI=true, where that is a failure.
#
# Knobs: MIN_PASSED (a run of every unit must pass at least this many tests, so a block that
# stops running silently is seen; default 1965, the count when this gate was set up),
# SERVER=path (a built binary instead of `cargo build --release`), LOG_DIR=dir (per-unit
# logs, kept), TAGS, UNIT_TIMEOUT, HANG_TIMEOUT (passed to the runner). The work itself is
# tests/suite-gate.sh's, shared with tests/valkey-suite/run.sh.
set -uo pipefail
cd "$(dirname "$0")/../.."
gate="redis suite"
title="Redis 7.0.15 suite"
suite="${REDIS_TESTS:-../shared/redis-tests}/redis-7.0.15"
known=tests/redis-suite/known-differences.txt
min_default=1965
server_args=()
units=("$@")
# shellcheck source=../suite-gate.sh
. tests/suite-gate.sh
