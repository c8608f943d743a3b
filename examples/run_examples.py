"""Run every example (examples/*.py, jupytext percent scripts) at small size; exit 1 if any fails.

Each runs in its own process and its own temporary directory (the figures and files it writes are
left there), with ATTNPHASE_EXAMPLES_QUICK=1 so that it picks its small sizes. `make examples` runs
this; CI runs `make examples`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    scripts = sorted(p for p in HERE.glob("*.py") if p.name != Path(__file__).name)
    failed = []
    for script in scripts:
        with tempfile.TemporaryDirectory(prefix=f"attnphase-{script.stem}-") as workdir:
            start = time.perf_counter()
            result = subprocess.run([sys.executable, str(script)], cwd=workdir,
                                    env={**os.environ, "ATTNPHASE_EXAMPLES_QUICK": "1", "MPLBACKEND": "Agg"},
                                    capture_output=True, text=True)
            seconds = time.perf_counter() - start
        status = "ok" if result.returncode == 0 else f"FAILED (exit {result.returncode})"
        print(f"{script.name}: {status} in {seconds:.1f} s", flush=True)
        if result.returncode != 0:
            failed.append(script.name)
            print(result.stdout[-4000:] + result.stderr[-4000:], file=sys.stderr)
    print(f"{len(scripts) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
