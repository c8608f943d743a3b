"""Code generation: one SymPy expression, list or Matrix -> numpy / torch / mpmath kernels.

    kernel = compile_kernel([grad, hess], [x, y, beta], backend="numpy")
    values = kernel(x_array, y_array, 0.5)          # arrays broadcast together

Pipeline (all backends): flatten the outputs, apply the numerical-stability rules of
`attnphase.derive.rewrite` (logaddexp, sigmoid, log1p, expm1), eliminate common subexpressions
(`sympy.cse`), print straight-line Python source with a backend-specific printer (derive.source), and
load it.

* ``numpy``: the CSE'd straight-line code becomes the body of a loop over points compiled with numba
  (`njit`, `error_model="numpy"`, so 1/0 gives inf and log(-1) NaN instead of an exception). Measured on
  the gradient + Hessian of the 4x4 matrix action (272 outputs, ~410 CSE temporaries, 10^5 points, on
  a shared 2-core machine): numba loop 0.06-0.19 s per call and 4-15 s to compile; SymEngine
  `Lambdify(backend="llvm", cse=True)` 0.8 s per call, 0.8 s to compile; vectorised numpy over the
  CSE'd code 0.9 s; `sympy.lambdify` without CSE 10-25 s. The numba loop is used because the runtime
  is what sweeps pay, and because it prints log1p/expm1/erfc/logaddexp directly where SymEngine would
  need them expanded. Compilation is paid once: numba's cache (`cache=True`) stores the machine code
  next to the generated source file, so another process loads it (about 1 s) without compiling.
  With `compiler="none"` the same CSE'd code is printed with vectorised numpy/scipy.special calls and
  runs without compiling (for one-off evaluations).
* ``torch``: straight-line code calling torch functions. Constants are Python floats, so every tensor
  keeps the dtype and device of the inputs; autograd flows through. Non-tensor inputs are converted to
  the dtype/device of the first tensor input (float64 on the CPU if there is none).
* ``mpmath``: straight-line code calling `mpmath.mp` functions; rational constants are built at call
  time (`mpf(p)/q`), so the kernel runs at whatever `mp.dps` is in force when it is called.

Output shapes: a scalar expression -> the broadcast shape `(...)` of the inputs; a list of k ->
`(..., k)`; an n x m Matrix -> `(..., n, m)`. The mpmath backend returns an `mpf` for a scalar output at
scalar inputs and numpy object arrays otherwise.

Caching: a kernel is keyed by a SHA-256 of (CODEGEN_VERSION, backend, options, srepr of the arguments,
and a Merkle hash of the srepr tree of each output, see `structural_digests`). The generated module is
written to `$ATTNPHASE_CACHE_DIR/kernels/` (default `~/.cache/attnphase/kernels/`) and kept in an
in-memory dict, so neither the rewrites, the CSE nor the compilation run twice. Kernels pickle as (key,
source), and unpickling in a worker process imports the cached module (or rewrites it if that cache
directory lacks it).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import sympy

from attnphase.derive import rewrite as _rewrite
from attnphase.derive.source import generate_source
from attnphase.errors import ParameterError
from attnphase.params import check_choice
from attnphase.resume import cache_root, cache_root_error, written_atomically

__all__ = ["CODEGEN_VERSION", "BACKENDS", "Kernel", "BoundKernel", "ActionKernels", "compile_kernel", "compile_action",
           "cache_dir", "clear_memory_cache", "load_generated_module", "structural_digests"]

CODEGEN_VERSION = "4"
BACKENDS = ("numpy", "torch", "mpmath")

# -- kernels ---------------------------------------------------------------------------------------

class Kernel:
    """A compiled kernel: call it with one value per argument (arrays broadcast together).

    Attributes: `backend`, `compiler` ("numba"/"none" for numpy, else None), `arg_names` (the SymPy
    names of the arguments, in order), `output_shape`
    (() for a scalar expression, (k,) for a list, (n, m) for a Matrix), `key` (cache key), `source`
    (the generated module), `path` (its file in the disk cache, or None).
    """

    def __init__(self, key: str, source: str, backend: str, arg_names: tuple, output_shape: tuple, module,
                 path: Path | None, compiler: str = "numba"):
        self.key = key
        self.compiler = compiler if backend == "numpy" else None
        self.source = source
        self.backend = backend
        self.arg_names = tuple(arg_names)
        self.output_shape = tuple(output_shape)
        self.path = path
        self._module = module
        self._n_outputs = int(np.prod(self.output_shape)) if self.output_shape else 1

    @property
    def module_name(self) -> str:
        """Name of the generated module (registered in sys.modules when the kernel lives in the disk
        cache): numba code that calls this kernel's `evaluate` imports it as a module global, the only
        way its own compiled code can be cached."""
        return self._module.__name__

    def __repr__(self):
        return (f"Kernel(backend={self.backend!r}, args={list(self.arg_names)}, "
                f"output_shape={self.output_shape}, key={self.key[:12]})")

    def __reduce__(self):
        # Rebuilt from source in the receiving process (numba loads its compiled code from the disk
        # cache next to the source file when the cache directory is shared).
        meta = (self.backend, self.arg_names, self.output_shape, self.path is not None, self.compiler)
        return (_rebuild_kernel, (self.key, self.source, meta))

    def __call__(self, *values):
        if len(values) != len(self.arg_names):
            raise ParameterError("kernel arguments", len(values),
                                 f"exactly {len(self.arg_names)} values ({', '.join(self.arg_names)})")
        if self.backend == "numpy":
            return self._call_numpy(values)
        if self.backend == "torch":
            return self._call_torch(values)
        return self._call_mpmath(values)

    def bind(self, **fixed) -> "BoundKernel":
        """This kernel with some arguments fixed by name (the SymPy names in `arg_names`).

        The result is called with the remaining arguments, by position in `arg_names` order or by name:
        no positional argument list has to be kept in step with the expression by hand.
        """
        return BoundKernel(self, fixed)

    def call(self, **values):
        """Evaluate with every argument given by name."""
        return self.bind(**values)()

    def _call_numpy(self, values):
        arrays = [np.asarray(v, dtype=np.float64) for v in values]
        shape = np.broadcast_shapes(*(a.shape for a in arrays)) if arrays else ()
        if self.compiler == "none":
            with np.errstate(all="ignore"):  # same semantics as the numba loop: inf/NaN, no warnings
                outs = [np.broadcast_to(np.asarray(o, dtype=np.float64), shape)
                        for o in self._module.evaluate(*arrays)]
            result = np.stack(outs, axis=-1).reshape(shape + self.output_shape)
            return result[()] if result.ndim == 0 else result
        n_points = math.prod(shape)
        inputs = np.empty((len(arrays),) + shape)
        for j, a in enumerate(arrays):
            inputs[j] = a  # broadcast by the assignment (np.broadcast_to per argument cost 20 % of small calls)
        out = np.empty((n_points, self._n_outputs))
        self._module.evaluate_points(inputs.reshape(len(arrays), n_points), out)
        result = out.reshape(shape + self.output_shape)
        return result[()] if result.ndim == 0 else result

    def _call_torch(self, values):
        import torch

        tensors = [v for v in values if isinstance(v, torch.Tensor)]
        floating = [t for t in tensors if t.is_floating_point()]
        if floating:
            dtype, device = floating[0].dtype, floating[0].device
        elif tensors:
            dtype, device = torch.float64, tensors[0].device
        else:
            dtype, device = torch.float64, torch.device("cpu")
        args = [v.to(dtype=dtype, device=device) if isinstance(v, torch.Tensor)
                else torch.as_tensor(v, dtype=dtype, device=device) for v in values]
        shape = torch.broadcast_shapes(*(a.shape for a in args)) if args else torch.Size()
        outs = []
        for o in self._module.evaluate(*args):
            if not isinstance(o, torch.Tensor):
                o = torch.full(shape, float(o), dtype=dtype, device=device)
            outs.append(o.expand(shape) if o.shape != shape else o)
        if not self.output_shape:
            return outs[0]
        return torch.stack(outs, dim=-1).reshape(tuple(shape) + self.output_shape)

    def _call_mpmath(self, values):
        def one_point(point):
            return [_to_mp(r) for r in self._module.evaluate(*(_to_mp(v) for v in point))]

        if not any(isinstance(v, (np.ndarray, list, tuple)) for v in values):
            res = one_point(values)
            if not self.output_shape:
                return res[0]
            return np.array(res, dtype=object).reshape(self.output_shape)
        arrays = np.broadcast_arrays(*(np.asarray(v, dtype=object) for v in values))
        shape = arrays[0].shape
        out = np.empty(shape + (self._n_outputs,), dtype=object)
        for index in np.ndindex(shape):
            out[index] = one_point([a[index] for a in arrays])
        return out.reshape(shape + self.output_shape)


class BoundKernel:
    """A kernel with some arguments fixed by name; see `Kernel.bind`."""

    def __init__(self, kernel: Kernel, fixed: dict):
        unknown = set(fixed) - set(kernel.arg_names)
        if unknown:
            raise ParameterError("kernel argument", sorted(unknown)[0], "one of " + ", ".join(kernel.arg_names))
        self.kernel = kernel
        # Exact parameter values (mpmath numbers: e^{σ²}, 1/(1 + 2^-40), ...) serve the mpmath kernels at any working
        # precision; a float64 or torch kernel takes each of them rounded once.
        self.fixed = dict(fixed) if kernel.backend == "mpmath" else {n: _as_float(v) for n, v in fixed.items()}
        self.free_names = tuple(n for n in kernel.arg_names if n not in fixed)

    def __repr__(self):
        return f"BoundKernel({self.kernel!r}, fixed={sorted(self.fixed)}, free={list(self.free_names)})"

    def bind(self, **more) -> "BoundKernel":
        return BoundKernel(self.kernel, {**self.fixed, **more})

    def __call__(self, *free_values, **named):
        if free_values and named:
            raise ParameterError("kernel arguments", "positional and named",
                                 "either the free arguments by position or by name, not both")
        if named:
            return self.bind(**named)()
        if len(free_values) != len(self.free_names):
            raise ParameterError("kernel arguments", len(free_values),
                                 f"exactly {len(self.free_names)} values ({', '.join(self.free_names)})")
        values = dict(zip(self.free_names, free_values))
        return self.kernel(*(self.fixed[n] if n in self.fixed else values[n] for n in self.kernel.arg_names))


def _as_float(v):
    """An mpmath real as the nearest float64; anything else unchanged."""
    from mpmath import mpf

    return float(v) if isinstance(v, mpf) else v


def _to_mp(v):
    from mpmath import mp, mpf

    if isinstance(v, (mpf, type(mp.mpc(0)))):
        return v
    if isinstance(v, sympy.Basic):
        return mpf(sympy.Float(v, mp.dps + 5)._mpf_) if v.is_real else mp.mpc(complex(v))
    if isinstance(v, np.generic):
        v = v.item()
    return mpf(v) if not isinstance(v, complex) else mp.mpc(v)


# -- caches ----------------------------------------------------------------------------------------

_MEMORY_CACHE: dict[str, Kernel] = {}  # cache key (SHA-256) -> kernel
_OBJECT_CACHE: dict[tuple, Kernel] = {}  # (backend, options, args, outputs as SymPy objects) -> kernel
_LOCK = threading.Lock()


def cache_dir() -> Path:
    """Directory of the on-disk kernel cache: $ATTNPHASE_CACHE_DIR/kernels or ~/.cache/attnphase/kernels."""
    return cache_root() / "kernels"


def clear_memory_cache() -> None:
    """Forget in-memory kernels (the disk cache stays); the next compile_kernel loads from disk."""
    with _LOCK:
        _MEMORY_CACHE.clear()
        _OBJECT_CACHE.clear()


def _module_name(key: str) -> str:
    return f"attnphase_kernel_{key[:40]}"


def _load_module(key: str, source: str, path: Path | None):
    """Import the generated module from its file (so numba can cache next to it) or exec it in memory."""
    return _import_source(_module_name(key), source, path)


def load_generated_module(name: str, source: str, *, on_disk: bool = True):
    """Load generated Python source as the module `name`, through the same cache as the kernels.

    on_disk: written (atomically, only if it changed) to `cache_dir()/<name>.py`, imported from there
    and registered in sys.modules, so that numba caches the machine code of its `cache=True` functions
    next to it and a later process loads them without compiling; else executed in memory. Code that
    calls compiled kernels from numba (e.g. derive.fused) is generated and loaded this way.
    """
    path = None
    if on_disk:
        path = cache_dir() / f"{name}.py"
        if not path.exists() or path.read_text() != source:
            _write_atomic(path, source)
    return _import_source(name, source, path)


def _import_source(name: str, source: str, path: Path | None):
    if path is not None:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # numba's cache locator needs an importable module
        spec.loader.exec_module(module)
        return module
    import types

    module = types.ModuleType(name)
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    return module


def _write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` in the kernel cache (`resume.written_atomically`: a sibling, then a rename, the sibling
    removed when the write fails); a cache that cannot be written is a ParameterError naming $ATTNPHASE_CACHE_DIR."""
    try:
        with written_atomically(path) as partial:
            partial.write_text(text)
    except OSError as exc:
        raise cache_root_error(exc) from None


def _rebuild_kernel(key: str, source: str, meta) -> Kernel:
    backend, arg_names, output_shape, on_disk, compiler = meta
    with _LOCK:
        if key in _MEMORY_CACHE:
            return _MEMORY_CACHE[key]
    path = None
    if on_disk:
        path = cache_dir() / f"k_{key[:40]}.py"
        if not path.exists() or path.read_text() != source:
            _write_atomic(path, source)
    kernel = Kernel(key, source, backend, arg_names, output_shape, _load_module(key, source, path), path,
                    compiler or "numba")
    if on_disk:
        with _LOCK:
            _MEMORY_CACHE[key] = kernel
    return kernel


# -- entry point -----------------------------------------------------------------------------------

def structural_digests(exprs) -> list[str]:
    """Merkle hash of the srepr tree of each expression: atoms hashed by their srepr (symbols with their
    assumptions, exact numbers), compound nodes by class path and their arguments' digests.

    Equivalent to hashing srepr(expr) but linear in the number of distinct subtrees: srepr of the
    4x4 action's Hessian takes 12 s, this 10 ms.
    """
    memo: dict = {}

    def digest(e) -> str:
        done = memo.get(e)
        if done is not None:
            return done
        if not e.args:
            text = sympy.srepr(e)
        else:
            text = f"{type(e).__module__}.{type(e).__qualname__}(" + ",".join(digest(a) for a in e.args) + ")"
        done = hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
        memo[e] = done
        return done

    return [digest(e) for e in exprs]


def _as_expression(e):
    try:
        return sympy.sympify(e, strict=not isinstance(e, str))
    except (sympy.SympifyError, SyntaxError, TypeError, ValueError):
        raise ParameterError("exprs", e, "SymPy expressions (or text SymPy can parse)") from None


def _flatten_outputs(exprs):
    if isinstance(exprs, sympy.MatrixBase):
        if 0 in exprs.shape:
            raise ParameterError("exprs", exprs, "a non-empty Matrix")
        return [_as_expression(e) for e in exprs], tuple(exprs.shape)
    if isinstance(exprs, (list, tuple)):
        if not exprs:
            raise ParameterError("exprs", exprs, "a non-empty list of scalar expressions")
        flat = []
        for e in exprs:
            if isinstance(e, (sympy.MatrixBase, list, tuple)):
                raise ParameterError("exprs", type(e).__name__, "a list of scalar expressions (not nested)")
            flat.append(_as_expression(e))
        return flat, (len(flat),)
    return [_as_expression(exprs)], ()


def _rules_signature(stabilize):
    if stabilize is True:
        rules = _rewrite.STABILITY_RULES
    elif stabilize is False or stabilize is None:
        rules = ()
    else:
        try:
            rules = tuple(stabilize)
        except TypeError:
            raise ParameterError("stabilize", stabilize, "True, False or a sequence of rewrite rules") from None
    known = {id(v): k for k, v in vars(_rewrite).items() if k.isupper()}
    names = [known.get(id(r)) for r in rules]
    return rules, (None if None in names else ",".join(names))


def compile_kernel(exprs, args, backend: str = "numpy", *, cse: bool = True, stabilize=True,
                   cache: bool = True, compiler: str = "numba") -> Kernel:
    """Generate and load a kernel evaluating `exprs` (expression, list or Matrix) at values of `args`.

    backend: "numpy" (numba-compiled loop over broadcast points), "torch" or "mpmath".
    cse: common-subexpression elimination. stabilize: True for rewrite.STABILITY_RULES, False for none,
    or a tuple of rules. cache: use the in-memory and on-disk caches (custom rules outside
    `rewrite` skip the disk cache). compiler (numpy backend only): "numba" (a compiled loop; pays off
    from ~10^3 points or repeated calls) or "none" (vectorised numpy/scipy calls, no compilation: for
    one-off evaluations, or where a compile of several seconds is not worth it).
    """
    backend = check_choice("backend", backend, BACKENDS)
    compiler = check_choice("compiler", compiler, ("numba", "none")) if backend == "numpy" else "numba"
    if isinstance(args, sympy.Symbol):
        args = [args]
    if isinstance(args, sympy.MatrixBase):
        args = list(args)
    if isinstance(args, (str, bytes)) or not hasattr(args, "__iter__"):
        raise ParameterError("args", args, "a list of distinct SymPy symbols")
    args = list(args)
    if not all(isinstance(a, sympy.Symbol) for a in args) or len(set(args)) != len(args):
        raise ParameterError("args", args, "a list of distinct SymPy symbols")
    flat, output_shape = _flatten_outputs(exprs)
    missing = set().union(*(e.free_symbols for e in flat)) - set(args) if flat else set()
    if missing:
        raise ParameterError("args", [str(a) for a in args],
                             "a list containing every free symbol; missing " + ", ".join(sorted(map(str, missing))))
    rules, rules_name = _rules_signature(stabilize)
    # Fast path: the same SymPy objects again in this process (structural hash, no srepr needed).
    object_key = (backend, compiler, bool(cse), rules_name if rules_name is not None else tuple(map(id, rules)),
                  tuple(args), tuple(flat), output_shape)
    if cache:
        with _LOCK:
            if object_key in _OBJECT_CACHE:
                return _OBJECT_CACHE[object_key]
    key_text = "\n".join([CODEGEN_VERSION, backend, f"compiler={compiler}", f"cse={bool(cse)}", f"rules={rules_name}",
                          sympy.srepr(args), *structural_digests(flat), repr(output_shape)])
    key = hashlib.sha256(key_text.encode()).hexdigest()
    on_disk = bool(cache) and rules_name is not None
    if cache:
        with _LOCK:
            if key in _MEMORY_CACHE:
                _OBJECT_CACHE[object_key] = _MEMORY_CACHE[key]
                return _MEMORY_CACHE[key]
    path = cache_dir() / f"k_{key[:40]}.py" if on_disk else None
    if path is not None and path.exists():
        source = path.read_text()
    else:
        stable = _rewrite.stabilize(flat, rules) if rules else flat
        source = generate_source(stable, args, backend, cse=cse, numba_cache=on_disk, compiler=compiler)
        header = "# generated by attnphase.derive.codegen " + json.dumps(
            {"version": CODEGEN_VERSION, "backend": backend, "compiler": compiler, "args": [str(a) for a in args],
             "output_shape": list(output_shape), "key": key}) + "\n"
        source = header + source
        if path is not None:
            _write_atomic(path, source)
    kernel = Kernel(key, source, backend, tuple(str(a) for a in args), output_shape,
                    _load_module(key, source, path), path, compiler)
    if cache:
        with _LOCK:
            _MEMORY_CACHE[key] = kernel
            _OBJECT_CACHE[object_key] = kernel
    return kernel


@dataclass(frozen=True)
class ActionKernels:
    """An action S(variables; parameters) with its gradient and Hessian in the variables, compiled for
    float64 (numpy) and for mpmath: the kernel set every minimisation or saddle-node solve needs.

    `variables` and `parameters` are the SymPy symbols; every kernel takes the variables first, then the
    parameters, and can be bound by name (`kernels.action.bind(n=..., L=...)`).
    """

    variables: tuple
    parameters: tuple
    action: Kernel
    gradient: Kernel
    hessian: Kernel
    action_mp: Kernel
    gradient_mp: Kernel
    hessian_mp: Kernel


def compile_action(expr, variables, parameters) -> ActionKernels:
    """Compile S, its gradient and its Hessian in `variables`, each in float64 and in mpmath (cached)."""
    from attnphase.derive.calculus import gradient, hessian

    variables, parameters = tuple(variables), tuple(parameters)
    args = list(variables) + list(parameters)
    g = list(gradient(expr, list(variables)))
    h = hessian(expr, list(variables))
    return ActionKernels(
        variables, parameters,
        compile_kernel(expr, args), compile_kernel(g, args), compile_kernel(h, args),
        compile_kernel(expr, args, backend="mpmath"), compile_kernel(g, args, backend="mpmath"),
        compile_kernel(h, args, backend="mpmath"),
    )
