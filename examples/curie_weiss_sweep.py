# %% [markdown]
# # A resumable sweep: the Curie-Weiss magnet
#
# `attnphase sweep` evaluates a *point function* on a grid and commits every point to the results store
# as it finishes. The built-in `demo` point is the Curie-Weiss (mean-field Ising) magnet, whose
# magnetisation solves m = tanh(β (m + h)): cheap, with closed forms to check against, and with a
# phase transition at β = 1 like the attention models' thresholds.
#
# Set `ATTNPHASE_EXAMPLES_QUICK=1` for the small version that CI runs.

# %%
import os
import tempfile
from pathlib import Path

import numpy as np

from attnphase.store import ResultStore
from attnphase.sweep import run_sweep

quick = os.environ.get("ATTNPHASE_EXAMPLES_QUICK") == "1"
n_beta = 41 if quick else 301
store_path = Path(tempfile.mkdtemp()) / "curie_weiss.sqlite"

# %% [markdown]
# ## The sweep
#
# Two grids, β from 0.5 to 2 and three fields h. The points are cheap, so they run in this process
# (`workers=1`); `workers=N` runs them on N local processes (in a script, call it under
# `if __name__ == "__main__":`, since the workers import the main module) and `scheduler="tcp://..."`
# sends them to a dask cluster.

# %%
report = run_sweep("demo", {"beta": np.linspace(0.5, 2.0, n_beta), "h": [0.0, 0.02, 0.1]},
                   store=store_path, workers=1)
print(f"{report.n_computed} points computed, {report.n_cached} already stored, {report.elapsed_s:.1f} s")

# %% [markdown]
# Running it again finds every point in the store (same model, parameters and code version) and
# computes nothing: this is how an interrupted sweep is resumed.

# %%
again = run_sweep("demo", {"beta": np.linspace(0.5, 2.0, n_beta), "h": [0.0, 0.02, 0.1]},
                  store=store_path, workers=1)
assert (again.n_computed, again.n_cached) == (0, report.n_points)

# %% [markdown]
# ## Reading the store as a table
#
# `store.rows(model)` gives every stored point; a pandas DataFrame is one line away (or
# `attnphase store export --format csv` from the shell).

# %%
import pandas as pd

with ResultStore(store_path) as store:
    table = pd.DataFrame([{**point.params, **point.result} for point in store.rows("demo")])
print(table.sort_values(["h", "beta"]).head())

# %% [markdown]
# ## Checks against closed forms
#
# At h = 0 the magnetisation vanishes for β ≤ 1 and grows as √(3(β − 1)) just above; at every point
# the equation inverts exactly: β = atanh(m)/m at h = 0.

# %%
zero_field = table[table.h == 0].sort_values("beta")
assert (zero_field[zero_field.beta <= 1].m == 0).all()
ordered = zero_field[zero_field.beta > 1]
inverse = np.arctanh(ordered.m) / ordered.m
assert np.allclose(inverse, ordered.beta, rtol=1e-12)
near = ordered[ordered.beta < 1.02]
if len(near):
    print("m / sqrt(3 (beta - 1)) just above beta = 1:", (near.m / np.sqrt(3 * (near.beta - 1))).round(4).tolist())

# %% [markdown]
# ## The figure

# %%
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(5, 3.5))
for h, group in table.sort_values("beta").groupby("h"):
    ax.plot(group.beta, group.m, label=f"h = {h:g}")
beta = np.linspace(1.0, 1.3, 50)
ax.plot(beta, np.sqrt(3 * (beta - 1)), "k:", label=r"$\sqrt{3(\beta - 1)}$")
ax.set_xlabel(r"$\beta$")
ax.set_ylabel("magnetisation m")
ax.legend()
fig.tight_layout()
fig.savefig("curie_weiss.png", dpi=100)
print("wrote curie_weiss.png")
