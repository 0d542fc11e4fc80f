#!/usr/bin/env bash
# The package as users get it (issue 16 §4): build the sdist and, from it, the wheel with `python -m build`;
# check both hold the whole package and its data; install the wheel into a fresh venv with no extras
# (`import openmirror_nb` must pull in no optional dependency), then add `[all]` to that install (pip
# resolves the same set as in a fresh venv; the base dependencies are not installed twice), and run the
# CLI demo from it, outside this tree. Each step prints how long it took; a failed step prints
# its log. Venvs and builds live in a temp folder; pip's cache (~/.cache/pip: the pyspark wheel it built)
# is reused; `--no-compile`: throwaway venvs need no .pyc, and compiling pyspark's doubles the install.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
PY=${PYTHON:-python3}
work=$(mktemp -d "${TMPDIR:-/tmp}/openmirror-package.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/cwd" # where installed code runs: `import openmirror_nb` cannot find this tree from there
pip_install=(-m pip install -q --no-compile --disable-pip-version-check -c "$root/constraints.txt")
exec 3>&1 # steps write what the CI log should show to fd 3; the rest goes to the step's log
total=$SECONDS

step() { # step NAME COMMAND...: COMMAND runs in a subshell with `set -e` in force
  local name=$1 t0=$SECONDS rc=0
  shift
  set +e
  (
    set -e
    "$@"
  ) >"$work/step.log" 2>&1
  rc=$?
  set -e
  if [ "$rc" -ne 0 ]; then
    cat "$work/step.log" >&2
    echo "check-package: $name: FAILED (exit $rc) after $((SECONDS - t0)) s" >&2
    exit "$rc"
  fi
  echo "check-package: $name: $((SECONDS - t0)) s"
}

build_tools() {
  "$PY" -m venv "$work/tools"
  "$work/tools/bin/python" -m pip install -q --no-compile --disable-pip-version-check build
}

build() {
  "$work/tools/bin/python" -m build --outdir "$work/dist" . >"$work/build.log" 2>&1 || {
    cat "$work/build.log"
    return 1
  }
  # setuptools warns in a `!!` box of metadata it will refuse later (e.g. a TOML-table `license`)
  if grep -m1 -n -i -A12 'deprecat' "$work/build.log"; then
    echo "the build warns of a deprecation (above): fix pyproject.toml" >&2
    return 1
  fi
  ls "$work/dist" | sed "s/^/  built /" >&3
}

contents() {
  # Every file of the package in this tree (tracked or new, not ignored) must be in the sdist and in the
  # wheel (non-Python files through [tool.setuptools.package-data]); the wheel holds nothing else.
  local files
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    files=$(git ls-files --cached --others --exclude-standard -- openmirror_nb)
  else
    files=$(find openmirror_nb -type f ! -path '*/__pycache__/*' ! -name '*.pyc')
  fi
  printf '%s\n' "$files" >"$work/files.txt"
  "$work/tools/bin/python" - "$work/dist" "$work/files.txt" <<'EOF'
import email.parser
import pathlib
import sys
import tarfile
import zipfile

dist = pathlib.Path(sys.argv[1])
want = {f for f in pathlib.Path(sys.argv[2]).read_text().split() if pathlib.Path(f).is_file()}
[whl] = dist.glob("*.whl")
[sdist] = dist.glob("*.tar.gz")
wheel_names = set(zipfile.ZipFile(whl).namelist())
with tarfile.open(sdist) as tar:
    sdist_names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
bad = []
for label, names in (("wheel", wheel_names), ("sdist", sdist_names)):
    if missing := sorted(want - names):
        bad.append(f"{label} lacks {', '.join(missing)} (non-Python files: [tool.setuptools.package-data])")
info = next(n.split("/")[0] for n in wheel_names if n.endswith(".dist-info/METADATA"))
if stray := sorted(n for n in wheel_names if not n.startswith(("openmirror_nb/", info + "/"))):
    bad.append(f"wheel holds files outside the package: {', '.join(stray)}")
zf = zipfile.ZipFile(whl)
meta = email.parser.Parser().parsestr(zf.read(f"{info}/METADATA").decode())
if meta["License-Expression"] != "MIT":
    bad.append(f"wheel METADATA License-Expression is {meta['License-Expression']!r}, not 'MIT'")
if "openmirror = openmirror_nb._core.cli:main" not in zf.read(f"{info}/entry_points.txt").decode():
    bad.append("wheel declares no `openmirror` command")
if bad:
    sys.exit("\n".join(bad))
data = sorted(n for n in want if not n.endswith(".py"))
with open(3, "w") as out:
    print(f"  {len(want)} package files in wheel and sdist, data: {', '.join(data)}", file=out)
EOF
}

venv_install() { # venv_install DIR REQUIREMENT
  "$PY" -m venv "$1"
  "$1/bin/python" "${pip_install[@]}" "$2"
}

import_light() {
  # the base install (pyarrow, deltalake, pandas, numpy) holds none of the extras, and importing the
  # package loads none of them either
  cd "$work/cwd"
  "$work/base/bin/python" - "$work/base" <<'EOF'
import importlib.util
import sys

EXTRAS = ("pyspark", "py4j", "ipywidgets", "IPython", "azure", "sempy")
installed = [m for m in EXTRAS if importlib.util.find_spec(m) is not None]
import openmirror_nb

assert openmirror_nb.__file__.startswith(sys.argv[1]), f"imported {openmirror_nb.__file__}, not the wheel"
loaded = sorted({m.split(".")[0] for m in sys.modules} & set(EXTRAS))
if installed or loaded:
    sys.exit(f"with no extras: installed {installed}, imported by `import openmirror_nb` {loaded}")
with open(3, "w") as out:
    print(f"  no extras: {openmirror_nb.__file__} imports none of {', '.join(EXTRAS)}", file=out)
EOF
  "$work/base/bin/openmirror" --help >/dev/null
}

demo() {
  local out
  cd "$work/cwd"
  out=$("$work/base/bin/python" -c 'import openmirror_nb; print(openmirror_nb.__file__)')
  echo "  [all]: $out" >&3
  case $out in "$work/base/"*) ;; *) echo "imported $out, not the wheel's install" >&2; return 1 ;; esac
  SPARK_LOCAL_IP=127.0.0.1 "$work/base/bin/openmirror" demo "$work/db" --rows 2000 >"$work/demo.log" 2>&1 || {
    cat "$work/demo.log"
    return 1
  }
  grep -q '^Read back demo.orders: ' "$work/demo.log" || {
    cat "$work/demo.log"
    echo "the demo printed no read-back line" >&2
    return 1
  }
  grep -E '^(Read back|Row counts:)' "$work/demo.log" | sed 's/^/  demo: /' >&3
}

step "build tools venv (build)" build_tools
step "python -m build (sdist, wheel from it)" build
step "sdist and wheel contents" contents
whl=$(echo "$work"/dist/*.whl)
step "fresh venv + wheel, no extras" venv_install "$work/base" "$whl"
step "import openmirror_nb with no extras" import_light
step "+ wheel[all] in that venv" "$work/base/bin/python" "${pip_install[@]}" "$whl[all]"
step "openmirror demo --rows 2000 from the install" demo
step "remove the venvs" rm -rf "$work/tools" "$work/base"
echo "check-package: total: $((SECONDS - total)) s"
