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
# logs, kept), TAGS, UNIT_TIMEOUT, HANG_TIMEOUT (passed to the runner).
set -uo pipefail
cd "$(dirname "$0")/../.."
here=tests/redis-suite
known="$here/known-differences.txt"

missing() {
    if [ "${CI:-}" = true ]; then
        echo "redis suite: $1 (required under CI)" >&2
        exit 1
    fi
    echo "redis suite: $1; skipped"
    exit 0
}

tests_dir=${REDIS_TESTS:-../shared/redis-tests}
suite="$tests_dir/redis-7.0.15"
[ -x "$tests_dir/run.sh" ] || [ -f "$tests_dir/run.sh" ] || missing "no runner at $tests_dir/run.sh"
[ -f "$suite/tests/test_helper.tcl" ] || missing "no Redis 7.0.15 suite at $suite"
command -v tclsh8.6 >/dev/null || command -v tclsh >/dev/null || missing "no tclsh (apt-get install tcl)"

if [ -z "${SERVER:-}" ]; then
    cargo build --release --locked -q -p locksmith-server || exit 1
    SERVER=target/release/locksmith-server
fi

work=$(mktemp -d -t locksmith-redis-suite.XXXXXX)
LOG_DIR=${LOG_DIR:-$work/logs}
mkdir -p "$LOG_DIR"
server_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

# Port 0: the server picks a free port and writes it to the port file once it accepts.
"$SERVER" --bind 127.0.0.1 --port 0 --port-file "$work/port" --dir "$work" \
    --loglevel warning --enable-debug-command yes >"$LOG_DIR/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 200); do
    [ -s "$work/port" ] && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
done
[ -s "$work/port" ] || { echo "redis suite: the server did not start" >&2; cat "$LOG_DIR/server.log" >&2; exit 1; }
port=$(cat "$work/port")

units=("$@")
[ ${#units[@]} -gt 0 ] || units=(all)
# Runs the units given after the log directory $1 against the server.
suite_run() {
    local logs=$1
    shift
    TAGS=${TAGS:-"-needs:local-process"} LOG_DIR="$logs" \
        UNIT_TIMEOUT=${UNIT_TIMEOUT:-600} HANG_TIMEOUT=${HANG_TIMEOUT:-120} \
        bash "$tests_dir/run.sh" "$suite" 127.0.0.1 "$port" "$@"
}
suite_run "$LOG_DIR" "${units[@]}" >"$work/summary.txt" 2>&1
# The runner's per-unit lines; its TOTAL line is restated below in words of our own.
grep -a -v -E '^(TOTAL:|# details:)' "$work/summary.txt"

status=0
if ! kill -0 "$server_pid" 2>/dev/null; then
    echo "redis suite: the server died during the run" >&2
    status=1
fi

# Failed tests of the logs in $1 as "unit :: name" (from "[err]: NAME in tests/unit/FILE.tcl"),
# sorted; the units that ran go to $work/ran.
failed_tests() {
    local log unit
    for log in "$1"/unit_*.log; do
        [ -f "$log" ] || continue
        unit=$(basename "$log" .log | sed -e 's/^unit_/unit\//' -e 's/^unit\/type_/unit\/type\//')
        echo "$unit" >>"$work/ran"
        grep -a -E '^\[err\]: .* in tests/[^ ]+\.tcl$' "$log" \
            | sed -E -e 's/^\[err\]: //' -e 's/ in tests\/[^ ]+\.tcl$//' \
            | sed -e "s|^|$unit :: |"
    done | sort -u
}
: >"$work/ran"
failed_tests "$LOG_DIR" >"$work/failed"
# The known differences of the units that ran.
grep -v -E '^(#|[[:space:]]*$)' "$known" | while IFS= read -r line; do
    grep -q -x -F "${line%% :: *}" "$work/ran" && echo "$line"
done | sort -u >"$work/known"
unexpected=$(comm -23 "$work/failed" "$work/known")
# A unit with an unexpected failure runs once more (timing-sensitive tests on a loaded
# machine); a test that passes then is reported as flaky, one that fails again fails the run.
if [ -n "$unexpected" ] && [ "${RETRY:-1}" = 1 ]; then
    mapfile -t again < <(echo "$unexpected" | sed 's/ :: .*//' | sort -u)
    echo "redis suite: running ${again[*]} again"
    mkdir -p "$work/again"
    suite_run "$work/again" "${again[@]}" | grep -a '^unit/'
    failed_tests "$work/again" >"$work/failed-again"
    flaky=$(echo "$unexpected" | grep -v -x -F -f "$work/failed-again")
    if [ -n "$flaky" ]; then
        echo "redis suite: failed once, passed when run again (flaky):"
        echo "$flaky" | sed 's/^/  /'
    fi
    unexpected=$(echo "$unexpected" | grep -x -F -f "$work/failed-again")
fi
fixed=$(comm -13 "$work/failed" "$work/known")
# Errors outside a test, exceptions, timeouts and units that did not finish are never known.
aborted=$(grep -a -E ' [1-9][0-9]* errors/exceptions' "$work/summary.txt")
passed=$(sed -n -E 's/^TOTAL: ([0-9]+) passed.*/\1/p' "$work/summary.txt")

failed=$(wc -l <"$work/failed")
echo "Redis 7.0.15 suite: ${passed:-0} tests passed; $failed failed, of them \
$(echo -n "$unexpected" | grep -c .) not among the known differences"
if [ -n "$unexpected" ]; then
    echo "redis suite: failed and not in $known:" >&2
    echo "$unexpected" | sed 's/^/  /' >&2
    status=1
fi
if [ -n "$aborted" ]; then
    echo "redis suite: units with errors outside a test, exceptions or hangs:" >&2
    echo "$aborted" | sed 's/^/  /' >&2
    status=1
fi
min_passed=0
[ "${units[*]}" = all ] && min_passed=${MIN_PASSED:-1965}
if [ "${passed:-0}" -eq 0 ] || [ "${passed:-0}" -lt "$min_passed" ]; then
    echo "redis suite: ${passed:-0} tests passed, fewer than the $min_passed expected" >&2
    status=1
fi
if [ -n "$fixed" ]; then
    echo "redis suite: listed in $known but passed now (take them off the list):"
    echo "$fixed" | sed 's/^/  /'
fi
if [ "$status" -ne 0 ]; then
    # What the suite said about each failure, for the CI log.
    grep -a -h -A3 -E '^\[(err|exception|TIMEOUT)\]' "$LOG_DIR"/unit_*.log | head -300 >&2
fi
exit "$status"
