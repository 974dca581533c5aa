"""The two scripts of Gradescope's autograder specification, written into the zip by build.py.

Gradescope unpacks the zip at /autograder/source, runs setup.sh there once as root to build the
image, then copies run_autograder to /autograder and runs it once per submission, the files
handed in under /autograder/submission; it reads /autograder/results/results.json. Every path
is Gradescope's by default and taken from the environment where it is set (AUTOGRADER_ROOT,
AUTOGRADER_VENV, AUTOGRADER_PYTHON), so that the same scripts run in a layout elsewhere.
"""

SETUP = """\
#!/usr/bin/env bash
# Gradescope runs this once, as root, with the autograder's zip unpacked at $AUTOGRADER_ROOT/source.
# It installs Python 3.11+ where the image has none, torch's CPU build (with uv; pip's default build
# where uv cannot reach it, said so) and the kit (all from this zip but torch and the kit's
# dependencies) into a virtual environment of its own.
set -euo pipefail
ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
VENV="${{AUTOGRADER_VENV:-$ROOT/venv}}"
PYTHON="${{AUTOGRADER_PYTHON:-}}"
TORCH_INDEX="${{AUTOGRADER_TORCH_INDEX-{torch_index}}}"

new_enough() {{ "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; }}
if [ -z "$PYTHON" ]; then
  for candidate in python3.13 python3.12 python3.11 python3; do
    if command -v "$candidate" >/dev/null && new_enough "$candidate"; then PYTHON="$candidate"; break; fi
  done
fi
if [ -z "$PYTHON" ]; then  # Ubuntu 22.04's python3 is 3.10
  apt-get update && apt-get install -y --no-install-recommends python3.11 python3.11-venv
  PYTHON=python3.11
fi
if [ ! -x "$VENV/bin/python" ]; then
  if ! "$PYTHON" -m venv "$VENV"; then  # Debian splits venv out of the interpreter
    version=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    apt-get update && apt-get install -y --no-install-recommends "python$version-venv"
    "$PYTHON" -m venv "$VENV"
  fi
fi
# torch's CPU build: enough here, and far smaller than the CUDA build pip installs by default on Linux.
# uv knows where PyTorch keeps each build (--torch-backend=cpu); `grade gradescope --torch-index-url URL`
# names an index for pip instead. Where uv cannot reach PyTorch's CPU index, pip's default build, said so.
if [ -n "$TORCH_INDEX" ]; then
  "$VENV/bin/python" -m pip install --index-url "$TORCH_INDEX" "torch=={torch}"
elif ! {{ "$VENV/bin/python" -m pip install uv && \\
         "$VENV/bin/uv" pip install --python "$VENV/bin/python" --torch-backend=cpu "torch=={torch}"; }}; then
  echo "setup.sh: uv could not install torch's CPU build; installing pip's default build of torch=={torch}" >&2
  "$VENV/bin/python" -m pip install "torch=={torch}"
fi
"$VENV/bin/python" -m pip install "$ROOT/source/kit"
"$VENV/bin/python" -c "import torch, grader.gradescope.runner"
# the course (reference, hidden suite) and this zip: root's alone; the submission runs as another user
chmod 700 "$ROOT/source"
"""

RUN = """\
#!/usr/bin/env bash
# Gradescope runs this once per submission, as root: it grades $AUTOGRADER_ROOT/submission for
# {assignment} and writes $AUTOGRADER_ROOT/results/results.json (grader/gradescope/runner.py).
ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
VENV="${{AUTOGRADER_VENV:-$ROOT/venv}}"
cd "$ROOT/source" && exec "$VENV/bin/python" -I -m grader.gradescope.runner --root "$ROOT" \\
  --assignment {assignment}{unsafe}
"""


def setup_sh(*, torch: str, torch_index: str) -> str:
    return SETUP.format(torch=torch, torch_index=torch_index)


def run_autograder(*, assignment: str, unsafe_process_isolation: bool) -> str:
    return RUN.format(assignment=assignment, unsafe=" --unsafe-process-isolation" if unsafe_process_isolation else "")
