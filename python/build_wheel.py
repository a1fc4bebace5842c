#!/usr/bin/env python3
"""Builds the `locksmith` wheel: this directory's Python package (the `Server`/`Topology`
wrappers and the pytest plugin) with the release binaries of `locksmith-server` and
`locksmith-harness` inside it, for the machine's platform. Not published: CI builds it,
installs it into a fresh virtual environment and runs the pytest example with it.

    cargo build --release --locked -p locksmith-server -p locksmith-harness
    python3 python/build_wheel.py --bin-dir target/release --out-dir target/wheels

Only the standard library: a wheel is a zip with a `.dist-info` directory (PEP 427).
"""

import argparse
import base64
import hashlib
import os
import re
import sysconfig
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BINARIES = ["locksmith-server", "locksmith-harness"]


def workspace_version():
    """The `version` of `[workspace.package]` in the root Cargo.toml."""
    with open(os.path.join(ROOT, "Cargo.toml"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("[workspace.package]", 1)[1]
    match = re.search(r'^version\s*=\s*"([^"]+)"', section, re.M)
    if not match:
        raise SystemExit("no version in [workspace.package] of Cargo.toml")
    return match.group(1)


def platform_tag():
    """The platform tag of this interpreter's platform (`linux_x86_64`)."""
    return sysconfig.get_platform().replace("-", "_").replace(".", "_")


def digest(data):
    """A RECORD hash: sha256, urlsafe base64 without padding."""
    raw = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin-dir", default=os.path.join(ROOT, "target", "release"))
    parser.add_argument("--out-dir", default=os.path.join(ROOT, "target", "wheels"))
    args = parser.parse_args()

    version = workspace_version()
    tag = f"py3-none-{platform_tag()}"
    dist_info = f"locksmith-{version}.dist-info"
    files = []  # (archive name, bytes, executable)
    package = os.path.join(HERE, "locksmith")
    for name in sorted(os.listdir(package)):
        if name.endswith(".py"):
            with open(os.path.join(package, name), "rb") as f:
                files.append((f"locksmith/{name}", f.read(), False))
    for name in BINARIES:
        path = os.path.join(args.bin_dir, name)
        if not os.access(path, os.X_OK):
            raise SystemExit(f"{path} is missing: build the release binaries first")
        with open(path, "rb") as f:
            files.append((f"locksmith/bin/{name}", f.read(), True))
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    metadata = (
        "Metadata-Version: 2.1\n"
        "Name: locksmith\n"
        f"Version: {version}\n"
        "Summary: A Redis-compatible server and fault-injecting harness for testing distributed "
        "locks, with pytest fixtures\n"
        "License: MIT OR Apache-2.0\n"
        "Requires-Python: >=3.8\n"
        "Description-Content-Type: text/markdown\n\n" + readme
    )
    files.append((f"{dist_info}/METADATA", metadata.encode(), False))
    wheel = (
        "Wheel-Version: 1.0\n"
        "Generator: locksmith python/build_wheel.py\n"
        "Root-Is-Purelib: false\n"
        f"Tag: {tag}\n"
    )
    files.append((f"{dist_info}/WHEEL", wheel.encode(), False))
    entry_points = (
        "[pytest11]\nlocksmith = locksmith.pytest_plugin\n\n"
        "[console_scripts]\n"
        "locksmith-server = locksmith._cli:server\n"
        "locksmith-harness = locksmith._cli:harness\n"
    )
    files.append((f"{dist_info}/entry_points.txt", entry_points.encode(), False))
    record = "".join(f"{name},{digest(data)},{len(data)}\n" for name, data, _ in files)
    record += f"{dist_info}/RECORD,,\n"
    files.append((f"{dist_info}/RECORD", record.encode(), False))

    os.makedirs(args.out_dir, exist_ok=True)
    out = os.path.join(args.out_dir, f"locksmith-{version}-{tag}.whl")
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as wheel_zip:
        for name, data, executable in files:
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = (0o100755 if executable else 0o100644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            wheel_zip.writestr(info, data)
    print(out)


if __name__ == "__main__":
    main()
