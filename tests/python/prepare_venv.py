"""Create, or reuse, the virtualenv with Agent-lightning 0.3.0 and the OTLP/HTTP exporter.

Usage: python3 tests/python/prepare_venv.py VENV_DIR

Installs requirements-agl-0.3.txt pinned by constraints-agl-0.3.txt (both next to this file).
The venv is reused when its stamp (a hash of both files and of the Python version) matches, so
only the first run, or a change of pins, pays for pip. Concurrent callers wait on a lock file.
pip's output goes to stderr; the last line on stdout is the venv's python executable.
Only the standard library is used, so any python3 >= 3.10 with the venv module can run it.
"""

from __future__ import annotations

import fcntl
import hashlib
import subprocess
import sys
import venv
from pathlib import Path

HERE = Path(__file__).resolve().parent
REQUIREMENTS = HERE / "requirements-agl-0.3.txt"
CONSTRAINTS = HERE / "constraints-agl-0.3.txt"
STAMP_NAME = ".agl-host-stamp"


def wanted_stamp() -> str:
    digest = hashlib.sha256()
    digest.update(sys.version.encode())
    for path in (REQUIREMENTS, CONSTRAINTS):
        digest.update(path.read_bytes())
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


def install(venv_dir: Path) -> None:
    command = [
        str(venv_python(venv_dir)), "-m", "pip", "install", "--disable-pip-version-check", "--no-input",
        "-r", str(REQUIREMENTS), "-c", str(CONSTRAINTS),
    ]  # fmt: skip
    print(f"prepare_venv: {' '.join(command)}", file=sys.stderr, flush=True)
    result = subprocess.run(command, stdout=sys.stderr, stderr=sys.stderr, check=False)
    if result.returncode != 0:
        raise SystemExit(f"prepare_venv: pip install failed with exit status {result.returncode} (needs PyPI access)")


def prepare(venv_dir: Path) -> Path:
    venv_dir.parent.mkdir(parents=True, exist_ok=True)
    stamp = wanted_stamp()
    with open(venv_dir.with_name(venv_dir.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not is_ready(venv_dir, stamp):
            (venv_dir / STAMP_NAME).unlink(missing_ok=True)
            create(venv_dir)
            install(venv_dir)
            (venv_dir / STAMP_NAME).write_text(stamp)
    return venv_python(venv_dir)


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    if sys.version_info < (3, 10):
        print(f"prepare_venv: agentlightning 0.3.0 needs Python >= 3.10, this is {sys.version}", file=sys.stderr)
        return 1
    print(prepare(Path(sys.argv[1]).absolute()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
