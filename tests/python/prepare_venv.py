"""Create, or reuse, a virtualenv with Agent-lightning: 0.3.0 and the OTLP/HTTP exporter, or 1.0.2.

Usage: python3 tests/python/prepare_venv.py VENV_DIR [--set 0.3|1.0]

Installs requirements-agl-SET.txt pinned by constraints-agl-SET.txt (both next to this file; the
set is 0.3 unless given). Set 0.3 (`target/py/agl-0.3`) is Agent-lightning 0.3.0's client and
dashboard; set 1.0 (`target/py/agl-1.0`) is `agentlightning==1.0.2` and numpy (which its verl
rollout manager imports but does not declare), installed with pip's `--ignore-requires-python`:
1.0.2 declares Python >= 3.12, and its rollout manager runs on 3.11.
The venv is reused when its stamp (a hash of both files, the pip flags and the Python version)
matches, so only the first run, or a change of pins, pays for pip. Concurrent callers wait on a
lock file. pip's output goes to stderr; the last line on stdout is the venv's python executable.
Only the standard library is used, so any python3 >= 3.10 (3.11 for set 1.0) with the venv module
can run it.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import subprocess
import sys
import venv
from pathlib import Path

HERE = Path(__file__).resolve().parent
STAMP_NAME = ".agl-host-stamp"
#: Per set: the oldest Python it runs on, and pip's extra flags.
SETS = {
    "0.3": ((3, 10), []),
    "1.0": ((3, 11), ["--ignore-requires-python"]),
}


class Pins:
    """The requirements, constraints and pip flags of one set."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.requirements = HERE / f"requirements-agl-{name}.txt"
        self.constraints = HERE / f"constraints-agl-{name}.txt"
        self.min_python, self.flags = SETS[name]


def wanted_stamp(pins: Pins) -> str:
    digest = hashlib.sha256()
    digest.update(sys.version.encode())
    for path in (pins.requirements, pins.constraints):
        digest.update(path.read_bytes())
    # Set 0.3's stamp is what it was before there were sets (no flags): its venvs stay valid.
    for flag in pins.flags:
        digest.update(flag.encode())
    return digest.hexdigest()


def venv_python(venv_dir: Path) -> Path:
    return venv_dir / "bin" / "python"


def is_ready(venv_dir: Path, stamp: str) -> bool:
    stamp_file = venv_dir / STAMP_NAME
    return venv_python(venv_dir).exists() and stamp_file.exists() and stamp_file.read_text() == stamp


def create(venv_dir: Path) -> None:
    print(f"prepare_venv: creating {venv_dir}", file=sys.stderr, flush=True)
    try:
        venv.EnvBuilder(clear=True, with_pip=True).create(venv_dir)
    except (subprocess.CalledProcessError, OSError) as err:
        raise SystemExit(
            f"prepare_venv: `python3 -m venv` failed ({err}); install the venv module and pip, "
            "e.g. `apt-get install python3-venv python3-pip`"
        ) from err


def install(venv_dir: Path, pins: Pins) -> None:
    command = [
        str(venv_python(venv_dir)), "-m", "pip", "install", "--disable-pip-version-check", "--no-input",
        *pins.flags, "-r", str(pins.requirements), "-c", str(pins.constraints),
    ]  # fmt: skip
    print(f"prepare_venv: {' '.join(command)}", file=sys.stderr, flush=True)
    result = subprocess.run(command, stdout=sys.stderr, stderr=sys.stderr, check=False)
    if result.returncode != 0:
        raise SystemExit(f"prepare_venv: pip install failed with exit status {result.returncode} (needs PyPI access)")


def prepare(venv_dir: Path, pins: Pins) -> Path:
    venv_dir.parent.mkdir(parents=True, exist_ok=True)
    stamp = wanted_stamp(pins)
    with open(venv_dir.with_name(venv_dir.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not is_ready(venv_dir, stamp):
            (venv_dir / STAMP_NAME).unlink(missing_ok=True)
            create(venv_dir)
            install(venv_dir, pins)
            (venv_dir / STAMP_NAME).write_text(stamp)
    return venv_python(venv_dir)


def main() -> int:
    parser = argparse.ArgumentParser(usage=__doc__)
    parser.add_argument("venv_dir", type=Path)
    parser.add_argument("--set", choices=sorted(SETS), default="0.3")
    args = parser.parse_args()
    pins = Pins(args.set)
    if sys.version_info < pins.min_python:
        wanted = ".".join(map(str, pins.min_python))
        print(f"prepare_venv: set {pins.name} needs Python >= {wanted}, this is {sys.version}", file=sys.stderr)
        return 1
    print(prepare(args.venv_dir.absolute(), pins))
    return 0


if __name__ == "__main__":
    sys.exit(main())
