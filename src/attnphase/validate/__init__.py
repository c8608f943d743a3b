"""Finite-size torch simulations held against the theory (CPU or CUDA), batched over seeds."""
