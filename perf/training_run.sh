# Sourced by the benchmarks on a real training run: $run (RUN, default results/training-run) holds
# scripts/make_training_run.py's checkpoints for each of $rates (RATES, default "1 3 5"), made once
# and reused (about 7 minutes here), and build/dcr is built.
[ -x build/dcr ] || scripts/build.sh
run=${RUN:-results/training-run}
rates=${RATES:-1 3 5}
if [ ! -d "$run/rate-${rates##* }" ]; then
  # shellcheck disable=SC2086
  /usr/bin/python3 scripts/make_training_run.py --out "$run" --rates $rates
fi
