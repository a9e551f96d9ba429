#!/bin/bash
# The device checks in one run (tools "device"): `bash tools/gpu_checks.sh STEP ...` with STEP among tc, tests,
# parity, train, profile, torchsuite (issue 17's), optim, division, powf, cudatests, training_bits and pending (the
# recorders of 2026-11-30: PyTorch's CUDA optimizers, division, powf, whole training steps, and the checks the fits
# left open). Logs and recordings land in $OUT. Each step has its own time limit, so one slow step leaves the rest.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD PYTHONDONTWRITEBYTECODE=1
OUT=${OUT:-/tmp/gpu_out}
mkdir -p "$OUT"
# Each step's output goes to $OUT/NAME.txt, or with LOG=1 into one $OUT/steps.log (the tool returns 8 files at most)
step() { local limit=$1 name=$2; shift 2; echo "== $name (limit ${limit}s)"; local t=$SECONDS log="$OUT/$name.txt"
         [ -n "${LOG:-}" ] && log=$(mktemp)
         timeout "$limit" "$@" > "$log" 2>&1; echo "   exit $? in $((SECONDS - t)) s"; tail -n 40 "$log"
         [ -n "${LOG:-}" ] && { echo "== $name"; cat "$log"; } >> "$OUT/steps.log"; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c "import cupy, torch, numba, numpy, ml_dtypes, sys; print(sys.version.split()[0], 'cupy', cupy.__version__, \
'torch', torch.__version__, 'numba', numba.__version__, 'numpy', numpy.__version__, 'ml_dtypes', ml_dtypes.__version__); \
from cupy_backends.cuda.libs import cublas; print('gemmEx', hasattr(cublas, 'gemmEx'), 'COMPUTE_32F', \
getattr(cublas, 'CUBLAS_COMPUTE_32F', None)); print('bfloat16 in cupy', cupy.zeros(2, ml_dtypes.bfloat16).dtype)"
for s in "$@"; do
  case $s in
    tc) step 90 tensorcore python3 benchmarks/gpu_tensorcore.py --record "$OUT/tensorcore.npz" ;;
    tests) step 150 tests python3 -m pytest -q -rs -p no:cacheprovider tests/test_gpu.py ;;
    optim) step 90 optim python3 tools/record_torch_half_optim.py --device cuda "$OUT/optim_cuda.json"
           step 90 optim_minifp python3 tools/record_torch_half_optim.py --device cuda --face minifp \
                "$OUT/optim_cuda_minifp.json" ;;
    training_bits) step 60 training_bits python3 tools/record_cuda_training.py "$OUT/cuda_training.json"
                   step 90 training_bits_minifp python3 tools/record_cuda_training.py --face minifp \
                        "$OUT/cuda_training_minifp.json" ;;
    pending) step 120 pending python3 tools/record_h200_pending.py "$OUT" ;;
    powf) step 30 powf python3 tools/record_cuda_powf.py "$OUT/cuda_powf.json" ;;
    cudatests) step 150 cudatests python3 -m pytest -q -p no:cacheprovider tests/torch/test_optim_cuda.py \
                tests/torch/test_cuda_division.py tests/torch/test_optim_half.py ;;
    division) step 30 division python3 tools/record_cuda_division.py "$OUT/cuda_division.json"
              step 30 division_minifp python3 tools/record_cuda_division.py --face minifp \
                   "$OUT/cuda_division_minifp.json" ;;
    parity) step 70 parity python3 benchmarks/gpu_parity.py ;;
    train) step 45 training python3 benchmarks/gpu_training.py --rounds 5 --steps 10 ;;
    profile) step 60 profile python3 benchmarks/gpu_profile.py ;;
    torchsuite) step 90 torchsuite python3 -m pytest -q -p no:cacheprovider -n 8 tests/torch tests/test_numerics.py ;;
  esac
done
