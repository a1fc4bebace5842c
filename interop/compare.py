"""Sum up interop results and diff what each client saw from our server against real Redis.

    python3 compare.py RESULT.json... [--pair OURS.json REDIS.json]...

Each RESULT.json is written by a suite run against one target: {"suite", "passed", "failed",
"failures", "obs"}. Each --pair compares the recorded observations of the same suite on both
targets: every observation that differs is one failed check, every equal suite one passed check.
Prints the final `N passed, M failed` line and exits non-zero on any failure.
"""

import json
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def short(v, limit=300):
    s = json.dumps(v, sort_keys=True)
    return s if len(s) <= limit else s[:limit] + "..."


def main(argv):
    results, pairs, missing = [], [], []
    it = iter(argv)
    for arg in it:
        if arg == "--pair":
            pairs.append((next(it), next(it)))
        elif arg.startswith("--missing="):
            missing.append(arg.split("=", 1)[1])
        else:
            results.append(arg)
    passed = failed = 0
    for path in results:
        r = load(path)
        passed += r["passed"]
        failed += r["failed"]
        state = "ok" if not r["failed"] else "FAILED: " + ", ".join(r["failures"])
        print(f"{r['suite']}: {r['passed']} passed, {r['failed']} failed ({state})")
    for name in missing:
        failed += 1
        print(f"{name}: no results (the suite crashed; see its output above)")
    for ours_path, theirs_path in pairs:
        ours, theirs = load(ours_path), load(theirs_path)
        diffs = []
        for key in sorted(set(ours["obs"]) | set(theirs["obs"])):
            a, b = ours["obs"].get(key, "<not recorded>"), theirs["obs"].get(key, "<not recorded>")
            if a != b:
                diffs.append(key)
                print(f"DIFF {ours['suite']} vs {theirs['suite']} {key}\n  ours:  {short(a)}\n  redis: {short(b)}")
        if diffs:
            failed += len(diffs)
        else:
            passed += 1
            print(f"same: {ours['suite']} and {theirs['suite']} saw identical replies "
                  f"({len(ours['obs'])} observations)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
