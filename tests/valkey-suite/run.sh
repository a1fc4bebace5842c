#!/usr/bin/env bash
# Valkey's own Tcl suite against locksmith-server started with --compat valkey-8.1 (or against
# any server given by SERVER, e.g. valkey-server 8.1.8 for the baseline). A local gate: the suite
# is not in the repository and CI cannot fetch it, so .ci/run does not call this script.
#
# usage: tests/valkey-suite/run.sh [unit ...]       (default: every unit, "all")
#
# The suite: the tests/ directory (with runtest and COPYING) of valkey-io/valkey, kept outside
# the repository at ../valkey-tests/valkey-55bbbe09 beside the checkout (VALKEY_TESTS to point
# elsewhere). The stored snapshot of the repository has no 8.1 tag, so it is the last commit
# before 8.1 it has: 55bbbe09a3b37a98c907dbfbc225768ff253e84f (unstable, 2024-10-25, after
# 8.0.1); get it with `git archive 55bbbe09 tests runtest COPYING | tar -x -C DIR`.
# Runs every unit that can run against an external server (-needs:local-process, the same
# filter as tests/redis-suite/run.sh, through the same ../shared/redis-tests/run.sh: lenient
# setup, config restored between units, hang timeouts), against one server process from start
# to end. Fails on any failed test not listed in known-differences.txt beside this script, and
# on any error outside a test, aborted unit or hang; where the suite or tclsh is missing it says
# so in one line and exits 0.
#
# Knobs: SERVER=path (a built binary, ours or valkey-server; default: `cargo build --release`),
# COMPAT (the target ours is started with; default valkey-8.1; not passed to another server),
# MIN_PASSED (a run of every unit must pass at least this many tests; default 0 until the
# gate's count is set), LOG_DIR=dir (per-unit logs, kept), TAGS, UNIT_TIMEOUT, HANG_TIMEOUT,
# RETRY, REDIS_TESTS (where ../shared/redis-tests is). The work itself is
# tests/suite-gate.sh's, shared with tests/redis-suite/run.sh.
set -uo pipefail
cd "$(dirname "$0")/../.."
gate="valkey suite"
title="Valkey suite (55bbbe09)"
suite="${VALKEY_TESTS:-../valkey-tests/valkey-55bbbe09}"
known=tests/valkey-suite/known-differences.txt
min_default=0
server_args=()
if [ -z "${SERVER:-}" ] || "$SERVER" --help 2>&1 | grep -q -- '--port-file'; then
    [ -n "${COMPAT-valkey-8.1}" ] && server_args=(--compat "${COMPAT-valkey-8.1}")
fi
units=("$@")
# The runner's config guard (../shared/redis-tests/config_guard.tcl restores the server's
# CONFIG before every unit) talks to the server through the suite's tests/support/redis.tcl,
# which Valkey renamed valkey.tcl: without it the guard failed in silence and a unit's changed
# parameter (e.g. lazyfree-lazy-expire, left at no by a failed unit/latency-monitor test)
# stayed for the units after it. The copy gets a redis.tcl that is Valkey's client.
# The guard connects before every unit, and that connection also turns the periodic task and
# active expiry back on (DEBUG PAUSE-CRON 0, SET-ACTIVE-EXPIRE 1, what every test that turns
# them off does at its end): a test that fails between the two, as unit/querybuf's three
# query-buffer tests do on ours (a known difference), left the cron paused for every later
# unit, so no key expired actively again (unit/latency-monitor, multi and expire failed their
# expiry tests, and unit/tracking waited forever for an expired key's invalidation).
suite_adapt() {
    mkdir -p "$1" && cp -r "$suite/tests" "$1/tests" || return 1
    printf '%s\n' '# Added by tests/valkey-suite/run.sh for the runner'"'"'s config guard.' \
        'source tests/support/valkey.tcl' \
        'proc redis {args} {' \
        '    set r [valkey {*}$args]' \
        '    catch {$r debug pause-cron 0}' \
        '    catch {$r debug set-active-expire 1}' \
        '    return $r' \
        '}' \
        >"$1/tests/support/redis.tcl"
    suite=$1
}
# shellcheck source=../suite-gate.sh
. tests/suite-gate.sh
