# %% [markdown]
# # The positional-semantic phase diagram
#
# Tied dot-product attention trained on a teacher that mixes a semantic softmax (weight 1 − ω) with a
# positional matrix (weight ω): below α_c(ω) samples per dimension the positional solution has the lower
# training loss, above it the semantic one, and above α_l(ω) attention beats the best linear predictor.
#
# Every threshold here comes with an error verified on finer quadrature rules. The full-accuracy curve
# (`tol=1e-3` on the default ladder of split-line rules) takes minutes per ω; this example uses a cheaper
# ladder (split-line rules with 4, 6 and 8 outer nodes) and a tolerance of 0.05, and still draws every value
# with the error that ladder verifies. Set `ATTNPHASE_EXAMPLES_QUICK=1` for the small version that CI runs.

# %%
import os

import numpy as np

from attnphase.api import positional_semantic as ps

quick = os.environ.get("ATTNPHASE_EXAMPLES_QUICK") == "1"
omegas = [0.45, 0.3] if quick else list(np.linspace(0.0, 0.45, 10))
rules = tuple(ps.Rule.split_line(n) for n in (4, 6, 8))

# %% [markdown]
# ## α_c(ω) and α_l(ω)
#
# `phase_curve` computes both thresholds at the largest ω from a scan of the followed branches, then continues
# downwards in ω from the previous ω's solutions. `which` selects the thresholds; here only α_c in the quick
# version (α_l at ω = 0.45 lies above α = 3 and needs a longer scan).

# %%
curve = ps.phase_curve(omegas, tol=0.05, rules=rules, which=("alpha_c",) if quick else ("alpha_c", "alpha_l"))
print(f"{curve.status}: {curve.message} ({curve.wall_time:.0f} s)")
for row in curve.rows():
    print(f"ω = {row['omega']:.3f}: α_c = {row['alpha_c']:.4f} ± {row['alpha_c_error']:.4f} ({row['alpha_c_status']})")

# %% [markdown]
# Each value lies within its error of the converged one (docs: α_c(0.3) = 1.25154 ± 0.00005,
# α_c(0.45) from benchmarks/positional_semantic_reference.json); the error is the spread over the three rules.

# %%
fig = ps.plot_phase_diagram(curve)
fig.savefig("positional_semantic_phase_diagram.png", dpi=120)
