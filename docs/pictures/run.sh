#!/usr/bin/env bash
# The pictures hold up: produces fresh pages and checks each in headless Chromium
# (docs/pictures/check.mjs): three scenario timelines (a failover, a pause with fencing tokens,
# a clock jump; seeded and on virtual time, so the same picture every run), the observed-locks
# timeline of the README's "Fault testing from any language" example (the harness test
# `observe::the_readme_example_draws_its_observed_timeline`, also on virtual time) and a
# `locksmith-bench --html` report against in-process servers (and one refused loopback target,
# for the legend's "failed" entry). A page fails on a console error or exception, a missing
# element, ticks that are not round, or a mark without a legend entry. A deliberately broken
# page must fail too, so a checker that passes everything is caught.
#
#   bash docs/pictures/run.sh                # check (CI runs this)
#   bash docs/pictures/run.sh --screenshot   # also rewrite docs/pictures/failover-timeline.png
#                                            # and docs/pictures/observed-timeline.png
#
# Needs node and Chromium (`apt-get install chromium`; env CHROMIUM to use another binary).
# Without them it prints one line and exits 0, except under CI=true, where it fails.
# The last line is `N passed, M failed`; the exit status is non-zero on any failure.
set -uo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
HERE="$ROOT/docs/pictures"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
TIMELINES="$TARGET_DIR/tmp/locksmith-timelines"
export CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
SHOT=""
OBSERVED_SHOT=""
if [ "${1:-}" = "--screenshot" ]; then
    SHOT="$HERE/failover-timeline.png"
    OBSERVED_SHOT="$HERE/observed-timeline.png"
elif [ -n "${1:-}" ]; then
    echo "usage: bash docs/pictures/run.sh [--screenshot]" >&2
    exit 2
fi

missing=""
command -v node >/dev/null || missing="node"
[ -x "$CHROMIUM" ] || missing="${missing:+$missing and }Chromium ($CHROMIUM)"
if [ -n "$missing" ]; then
    if [ "${CI:-}" = "true" ]; then
        echo "pictures: $missing missing"
        echo "0 passed, 1 failed"
        exit 1
    fi
    echo "pictures: skipping: $missing missing (apt-get install chromium)"
    exit 0
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/locksmith-pictures.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
passed=0
failed=0

# check NAME ARGS...: one page through check.mjs, counted.
check() {
    local name="$1"
    shift
    if node "$HERE/check.mjs" "$@"; then
        passed=$((passed + 1))
    else
        echo "pictures: FAILED: $name"
        failed=$((failed + 1))
    fi
}

# ---------------------------------------------------------------- fresh pages

FAILOVER=plain_lock_double_grants_after_failover
PAUSED=paused_holder_overlaps_and_fencing_rejects_it
CLOCK=redlock_clock_jump_breaks_mutual_exclusion
OBSERVED=observed_failover
for name in "$FAILOVER" "$PAUSED" "$CLOCK" "$OBSERVED"; do
    rm -f "$TIMELINES/$name.html"
done
# `--workspace`, as CI's `cargo test`, so the build is the one already made.
echo "pictures: the scenarios write their timelines"
if ! (cd "$ROOT" && cargo test --workspace --locked -q --test scenarios -- "$FAILOVER" "$PAUSED" "$CLOCK" \
    >"$WORK/scenarios.log" 2>&1); then
    tail -30 "$WORK/scenarios.log"
    echo "pictures: the scenarios failed"
fi
echo "pictures: the README's observed example writes its timeline"
if ! (cd "$ROOT" && cargo test --workspace --locked -q --test harness -- \
    observe::the_readme_example_draws_its_observed_timeline >"$WORK/observed.log" 2>&1); then
    tail -30 "$WORK/observed.log"
    echo "pictures: the observed example failed"
fi

echo "pictures: locksmith-bench writes its report"
if ! (cd "$ROOT" && cargo run --locked -q -p locksmith-bench -- \
    --scenario acquire --clients 4 --duration 1 --warmup 0 --quiet \
    --target locksmith=in-process --target second=in-process --target refused=redis://127.0.0.1:1/ \
    --html "$WORK/bench.html" >"$WORK/bench.log" 2>&1) && [ ! -s "$WORK/bench.html" ]; then
    tail -30 "$WORK/bench.log"
fi

# ---------------------------------------------------------------- checks

for page in "$TIMELINES/$FAILOVER.html" "$TIMELINES/$PAUSED.html" "$TIMELINES/$CLOCK.html" \
    "$TIMELINES/$OBSERVED.html" "$WORK/bench.html"; do
    if [ ! -s "$page" ]; then
        echo "pictures: FAILED: $page was not written"
        failed=$((failed + 1))
    fi
done

if [ -s "$TIMELINES/$FAILOVER.html" ]; then
    check failover ${SHOT:+--screenshot "$SHOT"} timeline "$TIMELINES/$FAILOVER.html" \
        holders:2 fault:failover lost violation
fi
if [ -s "$TIMELINES/$PAUSED.html" ]; then
    check pause timeline "$TIMELINES/$PAUSED.html" \
        holders:2 fault:pause fault-span token write-accepted write-rejected violation
fi
if [ -s "$TIMELINES/$CLOCK.html" ]; then
    check clock-jump timeline "$TIMELINES/$CLOCK.html" \
        holders:2 fault:clock fault:node acquire-failed violation
fi
if [ -s "$TIMELINES/$OBSERVED.html" ]; then
    check observed ${OBSERVED_SHOT:+--screenshot "$OBSERVED_SHOT"} timeline "$TIMELINES/$OBSERVED.html" \
        holders:2 fault:failover violation
fi
if [ -s "$WORK/bench.html" ]; then
    check bench bench "$WORK/bench.html"
fi

# The checker itself: a page with a script error and a mark left out of the legend must fail.
if [ -s "$TIMELINES/$FAILOVER.html" ]; then
    sed -e 's|<g class="legend-entry" data-mark="lost">|<g data-mark="lost">|' \
        -e 's|</body>|<script>null.x</script></body>|' \
        "$TIMELINES/$FAILOVER.html" >"$WORK/broken.html"
    if node "$HERE/check.mjs" timeline "$WORK/broken.html" >"$WORK/broken.log" 2>&1; then
        echo "pictures: FAILED: the checker passed a broken page"
        failed=$((failed + 1))
    elif grep -q "uncaught" "$WORK/broken.log" && grep -q "not in the legend: lost" "$WORK/broken.log"; then
        passed=$((passed + 1))
    else
        cat "$WORK/broken.log"
        echo "pictures: FAILED: the checker failed the broken page for other reasons"
        failed=$((failed + 1))
    fi
fi

for shot in "$SHOT" "$OBSERVED_SHOT"; do
    if [ -n "$shot" ] && [ -s "$shot" ]; then
        echo "pictures: $(du -k "$shot" | cut -f1) KiB in ${shot#"$ROOT"/}"
    fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
