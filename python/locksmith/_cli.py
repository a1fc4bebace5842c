"""The wheel's console scripts: `locksmith-server` and `locksmith-harness` run the binaries the
package carries, with the arguments given."""

import os
import sys

_BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin")


def _exec(name):
    # The package's own binary only: a lookup on the PATH could find this script again.
    path = os.path.join(_BIN, name)
    os.execv(path, [path, *sys.argv[1:]])


def server():
    """`locksmith-server ...`."""
    _exec("locksmith-server")


def harness():
    """`locksmith-harness ...`."""
    _exec("locksmith-harness")
