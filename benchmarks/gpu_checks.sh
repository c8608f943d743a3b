#!/usr/bin/env bash
# The checks that need a GPU, in one run (a few minutes on one H200):
#   1. same seed on the CPU and on CUDA: every simulator of the validate layer agrees to floating-point
#      tolerance (attnphase agreement; the device tests);
#   2. signal-recovery SGA throughput on CUDA against the per-trial numpy loop (benchmarks/bench_sga.py);
#   3. the signal-recovery headline (30 trials, d = 1000, L = 10 500, sqrt-d scaling) with the DENSE
#      sampler on CUDA, an independent check of the projected sampler's headline at full size;
#   4. one copy-heads MALA run (4 chains) at L = 64 on CUDA, timed;
#   5. every GD simulation of the full positional-semantic report (d = 1000 protocol, finite-size scan,
#      random inits), stored as $OUT/gd_runs.tar: unpack it into <out>/positional_semantic/gd_runs/ and
#      `attnphase reproduce positional-semantic --out <out>` reuses the runs.
# Usage: OUT=dir bash benchmarks/gpu_checks.sh   (PYTHON=... to choose the interpreter; DEVICE=cpu for a
# dry run of the same commands on a machine without a GPU; CHECKS="1 5" to run some of the checks).
# Results go to $OUT.
set -u
OUT=${OUT:-gpu-checks}
PY=${PYTHON:-python3}
DEVICE=${DEVICE:-cuda}
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
CHECKS=${CHECKS:-1 2 3 4 5}
step() { echo; echo "== $1 ($(date +%T))"; }
wanted() { [[ " $CHECKS " == *" $1 "* ]]; }

step "environment"
nvidia-smi -L 2>/dev/null || echo "no nvidia-smi"
$PY -c "import torch, numpy, scipy, sympy, numba; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), 'numpy', numpy.__version__)"

if wanted 1; then
step "1. device agreement (seeds 0 and 7)"
timeout 120 $PY -m attnphase agreement --other "$DEVICE" | tee "$OUT/agreement.txt"
timeout 120 $PY -m attnphase agreement --other "$DEVICE" --seed 7 --json > "$OUT/agreement_seed7.json"; echo "rc $?"
timeout 120 $PY -m pytest -q -p no:cacheprovider tests/validate/test_device_agreement.py tests/validate/test_device_and_seeds.py 2>&1 | tail -3
fi

if wanted 2; then
step "2. SGA throughput"
timeout 240 $PY benchmarks/bench_sga.py --quick --rounds 1 2>&1 | tee "$OUT/bench_sga.txt"
fi

if wanted 3; then
step "3. dense headline on $DEVICE"
HEADLINE_STEPS=${HEADLINE_STEPS:-5000}
timeout 240 $PY -m attnphase simulate signal-recovery --d 1000 --L 10500 --R 500 --theta 0.25 --theta-scaling sqrt-d \
  --trials 30 --steps "$HEADLINE_STEPS" --eta0 0.05 --k0 50 --gamma 1 --sampler dense --device "$DEVICE" --json \
  > "$OUT/headline_dense.json"; echo "rc $?"
$PY -c "import json,sys; r=json.load(open(sys.argv[1])); print({k: r[k] for k in ('alignment_mean','alignment_std','positive_fraction','nuisance_mass_mean','seconds','device','status')}); print('min', min(r['alignment']))" "$OUT/headline_dense.json"
fi

if wanted 4; then
step "4. copy-heads MALA, L = 64, V = 8 on $DEVICE"
timeout 150 $PY -m attnphase simulate copy-heads --attention softmax --L 64 --V 8 --P 1700 --trials 4 --steps 4000 \
  --device "$DEVICE" --json > "$OUT/copy_heads_L64.json"; echo "rc $?"
fi

if wanted 5; then
step "5. GD runs of the full positional-semantic report on $DEVICE"
GD_CACHE=$(mktemp -d)
timeout 300 $PY -c "import sys; from attnphase.reproduce.positional_semantic_gd import simulate_gd_plan; print(f'{simulate_gd_plan(sys.argv[1], sys.argv[2]):.1f} s')" "$GD_CACHE" "$DEVICE"; echo "rc $?"
tar -cf "$OUT/gd_runs.tar" -C "$GD_CACHE" . && ls "$GD_CACHE" | wc -l
fi
step "done"
