"""Fast standard-normal arrays on the CPU: a vectorised ziggurat over counter-based SplitMix64 streams.

Why: dense-token SGA at d = 1000, L = 10 500 draws 10⁷ Gaussians per sequence, and on the CPU the
draw, not the arithmetic, is the cost: torch's `normal_` (Mersenne Twister + Box–Muller) takes ≈ 4 ns
per number on one thread and numpy's `standard_normal` (PCG64 + ziggurat, one number at a time) ≈ 10,
while the four mat-vec passes of the gradient over the same numbers take ≈ 1 ns in all.

Method:

* Bits. Every row of the output (last axis) has its own SplitMix64 sequence (Steele, Lea & Flood
  2014; passes BigCrush): word k is mix(s + (k + 1)γ), γ the 64-bit golden ratio, mix the SplitMix64
  finaliser, and the start s = mix(key ⊕ mix(row + γ)) depends only on the key and the row index. A
  word depends only on its index, so a row is computed in one vectorisable loop, rows run in parallel,
  and the numbers do not depend on the thread count.
* Normals: the 256-layer ziggurat of Marsaglia & Tsang (2000) in Doornik's (2005) form. The area under
  f(x) = e^{−x²/2} is covered by 256 layers of equal area v = 4.92867323399e-3; layer i spans
  |x| ≤ X_i, with X_1 = r = 3.6541528853610088 (start of the tail), X_0 = v/f(r) (the base layer
  carries the tail), X_{i+1} = √(−2 ln(v/X_i + f(X_i))), X_256 = 0 (`layer_edges`). Each 64-bit word
  is cut into two 32-bit draws, one per output number: the low 8 bits pick the layer i, the other 24
  give u ∈ (−1, 1) on the midpoints of a 2⁻²³ grid (disjoint bits, so layer and value are
  independent — the flaw of the original version, which reused bits). Pass 1: x = u X_i is final
  when |u| < X_{i+1}/X_i (≈ 98.5% of draws). Pass 2, for the rest, with fresh draws from a second
  sequence of the row (53-bit uniforms): in the base layer, Marsaglia's exact tail x = r + E₁/r
  accepted when 2E₂ > (E₁/r)² (E₁, E₂ exponential); otherwise the wedge test f(X_i) + U(f(X_{i+1}) −
  f(X_i)) < f(x); on rejection a fresh candidate. The law is exact up to the 2⁻²³ grid of u in pass 1
  (values on a grid of spacing X_i·2⁻²³ ≤ 4.4e-7), far below float32 sampling resolution needs.

The result is written into a caller's float32 or float64 array (e.g. the numpy view of a CPU torch
buffer), so nothing of the output's size is allocated per call.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

LAYERS = 256
TAIL_START = 3.6541528853610088  # r: start of the tail, the right edge of layer 1
LAYER_AREA = 4.92867323399e-3  # v: area of each layer (rectangle + wedge; base layer + tail)


def layer_edges() -> np.ndarray:
    """X_0, ..., X_256 of the 256-layer ziggurat (X_0 = v/f(r) for the base layer, X_256 = 0)."""
    edges = np.empty(LAYERS + 1)
    density = math.exp(-0.5 * TAIL_START**2)
    edges[0] = LAYER_AREA / density
    edges[1] = TAIL_START
    for i in range(2, LAYERS):
        edges[i] = math.sqrt(-2.0 * math.log(LAYER_AREA / edges[i - 1] + density))
        density = math.exp(-0.5 * edges[i] ** 2)
    edges[LAYERS] = 0.0
    return edges


_EDGES = layer_edges()
_INNER_RATIO = _EDGES[1:] / _EDGES[:-1]  # |u| below this: inside the layer's rectangle, accept
_DENSITIES = np.exp(-0.5 * _EDGES**2)  # f(X_i)

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_LAYER_MASK = np.uint64(LAYERS - 1)
_TO_UNIT = 2.0**-53
_TO_HALF_GRID = 2.0**-23


@njit(inline="always")
def _mix(z):
    """SplitMix64 output function (a bijection of 64-bit words with full avalanche)."""
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


@njit(inline="always")
def _next(state):
    state = state + _GOLDEN
    return state, _mix(state)


@njit(inline="always")
def _unit(bits):
    """Uniform on [0, 1) from the high 53 bits (through int64: the uint64 → float conversion is slow)."""
    return np.float64(np.int64(bits >> np.uint64(11))) * _TO_UNIT


@njit(inline="always")
def _open_unit(bits):
    """Uniform on (0, 1) from the high 53 bits (never 0, so its logarithm is finite)."""
    return (np.float64(np.int64(bits >> np.uint64(11))) + 0.5) * _TO_UNIT


@njit
def _outside_rectangle(state, layer, u, edges, inner_ratio, densities):
    """Finish a draw whose candidate x = u X_layer fell outside the layer's rectangle (≈ 1.5% of draws):
    the tail (base layer) or the wedge test; on rejection, fresh candidates from `state`'s sequence."""
    while True:
        if layer == 0:  # base layer outside its rectangle: the tail |x| > r, exactly
            while True:
                state, bits = _next(state)
                excess = -math.log(_open_unit(bits)) / TAIL_START
                state, bits = _next(state)
                if -2.0 * math.log(_open_unit(bits)) > excess * excess:
                    return state, (TAIL_START + excess) if u > 0 else -(TAIL_START + excess)
        x = u * edges[layer]
        # A point uniform in the wedge's box, height between f(X_i) and f(X_{i+1}), is under f at x.
        state, bits = _next(state)
        height = densities[layer] + _open_unit(bits) * (densities[layer + 1] - densities[layer])
        if height < math.exp(-0.5 * x * x):
            return state, x
        # rejected: a fresh candidate (low 8 bits: layer; high 53 bits: u), final if inside its rectangle
        state, bits = _next(state)
        layer = np.int64(bits & _LAYER_MASK)
        u = 2.0 * _unit(bits) - 1.0
        if abs(u) < inner_ratio[layer]:
            return state, u * edges[layer]


@njit(inline="always")
def _candidate(bits32):
    """Layer (low 8 bits) and u ∈ (−1, 1) (the other 24 bits, midpoints of a 2⁻²³ grid) of one draw."""
    layer = np.int64(bits32 & np.uint32(LAYERS - 1))
    u = (np.float64(np.int32(bits32 >> np.uint32(8))) + 0.5) * _TO_HALF_GRID - 1.0
    return layer, u


@njit(inline="always")
def _word_half(start, index):
    """The 32 bits of element `index`: half (index mod 2) of word index // 2 of the row's stream."""
    bits = _mix(start + np.uint64(index // 2 + 1) * _GOLDEN)
    return np.uint32((bits >> np.uint64(32 * (index % 2))) & np.uint64(0xFFFFFFFF))


def _fill_rows_body(out, key, scale, edges, inner_ratio, densities):
    rows, cols = out.shape
    pairs = cols // 2
    for row in prange(rows):
        start = _mix(key ^ _mix(np.uint64(row) + _GOLDEN))
        # uint8, not bool (bool stores stop LLVM vectorising the loop), padded to whole uint64 words
        outside = np.zeros(8 * ((cols + 7) // 8), np.uint8)
        # Pass 1, vectorisable: word k = mix(start + (k + 1)γ) (SplitMix64 as a counter-based generator)
        # holds the candidates of elements 2k (low half) and 2k + 1 (high half).
        for k in range(pairs):
            bits = _mix(start + np.uint64(k + 1) * _GOLDEN)
            layer, u = _candidate(np.uint32(bits & np.uint64(0xFFFFFFFF)))
            out[row, 2 * k] = scale * (u * edges[layer])
            outside[2 * k] = np.uint8(abs(u) >= inner_ratio[layer])
            layer, u = _candidate(np.uint32(bits >> np.uint64(32)))
            out[row, 2 * k + 1] = scale * (u * edges[layer])
            outside[2 * k + 1] = np.uint8(abs(u) >= inner_ratio[layer])
        if cols % 2:
            layer, u = _candidate(_word_half(start, cols - 1))
            out[row, cols - 1] = scale * (u * edges[layer])
            outside[cols - 1] = np.uint8(abs(u) >= inner_ratio[layer])
        # Pass 2 (≈ 1.5% of the elements): the wedge or tail test, with fresh draws from a second stream.
        # The flags are scanned eight at a time (as uint64 words): a byte-by-byte branchy scan cost as
        # much as pass 1.
        state = _mix(start ^ _MIX2)
        words = outside.view(np.uint64)
        for w in range(words.size):
            if words[w] != 0:
                for j in range(8 * w, 8 * w + 8):
                    if outside[j]:
                        layer, u = _candidate(_word_half(start, j))
                        state, value = _outside_rectangle(state, layer, u, edges, inner_ratio, densities)
                        out[row, j] = scale * value


# Threads only pay for large fills: a parallel launch costs tens of µs, and far more when the cores are
# oversubscribed, while one thread fills ~10⁶ numbers in ~2 ms.
_fill_rows_parallel = njit(parallel=True, fastmath=True, cache=True)(_fill_rows_body)
_fill_rows_serial = njit(fastmath=True, cache=True)(_fill_rows_body)
PARALLEL_MIN_SIZE = 1 << 20


def fill_normal(out: np.ndarray, key: int, scale: float = 1.0) -> np.ndarray:
    """Overwrite `out` (C-contiguous float32/float64, at least 1-D) with i.i.d. N(0, scale²) numbers.

    Rows of the last axis are independent streams indexed by their flat row number, so the same `key`
    and shape give the same numbers whatever the thread count. Different keys give independent fills
    (distinct stream starts; overlaps of the 2⁶⁴-long sequence are negligible).
    """
    if out.dtype not in (np.float32, np.float64) or not out.flags.c_contiguous or out.ndim == 0:
        raise TypeError("fill_normal needs a C-contiguous float32 or float64 array with at least one axis")
    rows = out.reshape(-1, out.shape[-1]) if out.size else out.reshape(0, 1)
    fill = _fill_rows_parallel if out.size >= PARALLEL_MIN_SIZE else _fill_rows_serial
    fill(rows, np.uint64(key % 2**64), float(scale), _EDGES, _INNER_RATIO, _DENSITIES)
    return out
