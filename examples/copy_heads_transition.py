# %% [markdown]
# # The first-order copy transition of softmax attention
#
# One softmax head learning to copy the previous token (Lavie et al., arXiv 2606.12058): sequences of L tokens
# from a vocabulary of V, P target tokens. Integrating out the read-out leaves an action S(x; P) in the logit x of
# the weight each row puts on the previous position. This example shows, at L = 16 and V = 4 (about a minute on
# one core):
#
# * the landscape S at three values of P: one uniform minimum, two coexisting minima, one copy minimum;
# * the threshold P*, where the two minima are equally deep, with its spinodals (where a minimum appears or
#   disappears), found on the stationary branches followed in P;
# * the copy strength against P: it jumps at P*.
#
# Set `ATTNPHASE_EXAMPLES_QUICK=1` for the small version that CI runs.

# %%
import os

import matplotlib.pyplot as plt
import numpy as np

from attnphase.api import copy_heads as api

quick = os.environ.get("ATTNPHASE_EXAMPLES_QUICK") == "1"
L, V = 16, 4

# %% [markdown]
# ## The threshold
#
# `threshold` follows every stationary branch of S(x; P) in P through its folds (the spinodals) and reads the
# order of the transition off the global minimum: "first" when it jumps from one branch to another. P* is
# polished in mpmath to the digits asked.

# %%
transition = api.threshold("softmax", L, V, digits=20)
print(f"order: {transition.order}")
print(f"P* = {transition.P_star_digits} (target tokens)")
low, high = transition.spinodals
print(f"spinodals: the copy minimum appears at P = {low:.6g}, the uniform one disappears at P = {high:.6g}")
print(f"jump of the previous-position weight at P*: {transition.a_uniform:.3f} -> {transition.a_copy:.3f}")
assert transition.order == "first" and low < transition.P_star < high

# %% [markdown]
# ## The landscape around P*
#
# Below the lower spinodal the only minimum is the uniform one (attention spread evenly over the row); between the
# spinodals a copy minimum coexists with it, and at P* the two are equally deep; above the upper spinodal only the
# copy minimum is left.

# %%
fig, axes = plt.subplots(1, 3, figsize=(15, 4))
for ax, P in zip(axes, (0.8 * low, transition.P_star, 1.2 * high)):
    api.plot_landscape("softmax", L, V, P, ax=ax)
fig.tight_layout()
fig.savefig("copy_heads_landscape.png", dpi=100)

# %% [markdown]
# ## The jump of the copy strength
#
# The global minimum's copy strength c against P, the line broken where it jumps; the dots are the other
# (metastable) minimum between the spinodals.

# %%
P_values = np.geomspace(0.5 * transition.P_star, 2.0 * transition.P_star, 20 if quick else 60)
fig = api.plot_order_parameters("softmax", L, V, P_values)
fig.axes[0].axvline(transition.P_star, color="tab:red", lw=0.8, ls="--")
fig.savefig("copy_heads_jump.png", dpi=100)
