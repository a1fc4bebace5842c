# What tests/redis-suite/run.sh and tests/valkey-suite/run.sh share: start one server, run a Tcl
# suite's units against it with ../shared/redis-tests/run.sh, compare the failed tests with a
# known-differences file, run a unit with an unexpected failure once more, and fail on anything
# else. Sourced (not run) from the repository root, after the caller has set:
#
#   gate          the name printed in messages ("redis suite")
#   title         the suite's name in the summary line ("Redis 7.0.15 suite")
#   suite         the suite's tree (a tests/ directory with test_helper.tcl inside)
#   known         the known-differences file ("unit :: test name" a line)
#   min_default   the least number of passed tests a run of every unit must reach
#   server_args   an array of extra arguments for the server (may be empty)
#   units         an array of the units to run ("all" for every unit)
#   suite_adapt   (optional) a function given a fresh directory that may set `suite` to an
#                 adapted copy of the suite made there
#
# SERVER (a built binary; default: `cargo build --release` and locksmith-server) may also be
# another server than ours, e.g. valkey-server or redis-server for a baseline: a binary without
# locksmith-server's --port-file is started on a free port of its own choosing by retrying.
# Knobs of the caller's environment: MIN_PASSED, LOG_DIR, TAGS, UNIT_TIMEOUT, HANG_TIMEOUT,
# RETRY (0: no second run), REDIS_TESTS (where ../shared/redis-tests is).

# Exits 0 with a line saying what is missing, or 1 under CI=true.
missing() {
    if [ "${CI:-}" = true ]; then
        echo "$gate: $1 (required under CI)" >&2
        exit 1
    fi
    echo "$gate: $1; skipped"
    exit 0
}

tests_dir=${REDIS_TESTS:-../shared/redis-tests}
[ -f "$tests_dir/run.sh" ] || missing "no runner at $tests_dir/run.sh"
[ -f "$suite/tests/test_helper.tcl" ] || missing "no suite at $suite"
command -v tclsh8.6 >/dev/null || command -v tclsh >/dev/null || missing "no tclsh (apt-get install tcl)"

if [ -z "${SERVER:-}" ]; then
    cargo build --release --locked -q -p locksmith-server || exit 1
    SERVER=target/release/locksmith-server
fi

work=$(mktemp -d -t locksmith-suite.XXXXXX)
LOG_DIR=${LOG_DIR:-$work/logs}
mkdir -p "$LOG_DIR"
server_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
# A caller whose suite needs adapting to the runner defines suite_adapt, which gets a scratch
# directory of its own and may point `suite` at an adapted copy there.
if declare -F suite_adapt >/dev/null; then
    suite_adapt "$work/suite" || exit 1
fi

# True when something on 127.0.0.1:$1 answers PING with +PONG within a second.
answers_ping() {
    local reply=""
    { exec 3<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || return 1
    printf 'PING\r\n' >&3
    read -r -t 1 reply <&3
    exec 3>&-
    [ "${reply%$'\r'}" = +PONG ]
}

if "$SERVER" --help 2>&1 | grep -q -- '--port-file'; then
    # Port 0: the server picks a free port and writes it to the port file once it accepts.
    "$SERVER" --bind 127.0.0.1 --port 0 --port-file "$work/port" --dir "$work" \
        --loglevel warning --enable-debug-command yes "${server_args[@]}" \
        >"$LOG_DIR/server.log" 2>&1 &
    server_pid=$!
    for _ in $(seq 1 200); do
        [ -s "$work/port" ] && break
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.1
    done
    [ -s "$work/port" ] && port=$(cat "$work/port")
else
    # A reference server: a random port, another one if the server exits (port taken).
    for _ in $(seq 1 5); do
        port=$((20000 + RANDOM % 30000))
        "$SERVER" --bind 127.0.0.1 --port "$port" --dir "$work" --save '' --appendonly no \
            --loglevel warning --enable-debug-command yes "${server_args[@]}" \
            >"$LOG_DIR/server.log" 2>&1 &
        server_pid=$!
        for _ in $(seq 1 100); do
            answers_ping "$port" && break
            kill -0 "$server_pid" 2>/dev/null || break
            sleep 0.1
        done
        answers_ping "$port" && break
        kill "$server_pid" 2>/dev/null
        wait "$server_pid" 2>/dev/null
        server_pid=""
        port=""
    done
fi
[ -n "${port:-}" ] || { echo "$gate: the server did not start" >&2; cat "$LOG_DIR/server.log" >&2; exit 1; }

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
    echo "$gate: the server died during the run" >&2
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
    echo "$gate: running ${again[*]} again"
    mkdir -p "$work/again"
    suite_run "$work/again" "${again[@]}" | grep -a '^unit/'
    failed_tests "$work/again" >"$work/failed-again"
    flaky=$(echo "$unexpected" | grep -v -x -F -f "$work/failed-again")
    if [ -n "$flaky" ]; then
        echo "$gate: failed once, passed when run again (flaky):"
        echo "$flaky" | sed 's/^/  /'
    fi
    unexpected=$(echo "$unexpected" | grep -x -F -f "$work/failed-again")
fi
fixed=$(comm -13 "$work/failed" "$work/known")
# Errors outside a test, exceptions, timeouts and units that did not finish are never known.
aborted=$(grep -a -E ' [1-9][0-9]* errors/exceptions' "$work/summary.txt")
passed=$(sed -n -E 's/^TOTAL: ([0-9]+) passed.*/\1/p' "$work/summary.txt")

failed=$(wc -l <"$work/failed")
echo "$title: ${passed:-0} tests passed; $failed failed, of them \
$(echo -n "$unexpected" | grep -c .) not among the known differences"
if [ -n "$unexpected" ]; then
    echo "$gate: failed and not in $known:" >&2
    echo "$unexpected" | sed 's/^/  /' >&2
    status=1
fi
if [ -n "$aborted" ]; then
    echo "$gate: units with errors outside a test, exceptions or hangs:" >&2
    echo "$aborted" | sed 's/^/  /' >&2
    status=1
fi
min_passed=0
[ "${units[*]}" = all ] && min_passed=${MIN_PASSED:-$min_default}
if [ "${passed:-0}" -eq 0 ] || [ "${passed:-0}" -lt "$min_passed" ]; then
    echo "$gate: ${passed:-0} tests passed, fewer than the $min_passed expected" >&2
    status=1
fi
if [ -n "$fixed" ]; then
    echo "$gate: listed in $known but passed now (take them off the list):"
    echo "$fixed" | sed 's/^/  /'
fi
if [ "$status" -ne 0 ]; then
    # What the suite said about each failure, for the CI log.
    grep -a -h -A3 -E '^\[(err|exception|TIMEOUT)\]' "$LOG_DIR"/unit_*.log | head -300 >&2
fi
exit "$status"
