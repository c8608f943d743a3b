"""Signal subspace recovery by a learned softmax-attention query (arXiv 2606.22406), one module per idea:

* `symbolic` — the symbolic source: the exact scalar reduction, the large-L limits, the drift;
* `derivation` — its rendering, derivations/signal_recovery.md;
* `parameters` — `Parameters` (the model) and the settings of `solve` and `simulate`, ranges declared once;
* `closed_form` — the large-L closed form, its accuracy and its overflow: `large_L`, `large_L_accuracy`;
* `population` — J(ρ), J′, the drift and the noise-token mass: `curve`, `solve`, `finite_reduction`;
* `reduction_range` — where the finite-L reduction and the large-L form overflow float64: the largest θ (σ, score
  scale) each takes;
* `dynamics` — the limiting ODE: its drift, fixed points, trajectories;
* `schedules` — finite steps: the retraction-corrected ODE, the tangent noise, step schedules and predictions;
* `escape` — when a prediction describes a run: the escape region of unstable fixed points, the verdict;
* `network` — the planted tokens in torch, the pooling gradient and its dense / projected samplers;
* `simulate` — projected SGA through `attnphase.validate.sphere_sga`, and the sweep point;
* `results` — the result types;
* `plots` — the model's figures (J(ρ) and the drift; SGA against the ODE).

Importing the package imports none of them; `attnphase.api.signal_recovery` gathers the public names.
"""

__all__ = ["symbolic", "derivation", "parameters", "closed_form", "population", "reduction_range", "dynamics",
           "schedules", "escape", "network", "simulate", "results", "plots"]
