#!/usr/bin/env bash
# Hostile inputs (from an outside test of dcr as a hostile user would run it) each end in a clear
# error naming what is wrong: no crash (signal), no hang (timeout), no silent success. Cases that
# should succeed (100,000 tensors, a file holding every dtype) must succeed quickly.
# Usage: hostile_inputs.sh DCR_BINARY
set -uo pipefail
dcr=$1
source "$(dirname "$0")/checks.sh"  # $here, $root, $py, the MPI settings, $work, the checks
/usr/bin/python3 "$here/make_inputs.py" "$work" || exit 1
mkfifo "$work/fifo.safetensors" "$work/fifo.h5" "$work/fifo.ini"
mkdir "$work/a_directory.safetensors"
refit=(mpirun --oversubscribe -np 5 "$dcr" refit --model tiny --trainers 2 --relays 1
  --compare-full false --compare-bcast false)

# Readers.
refused - "not valid JSON" 20 "$dcr" convert "$work/overflow_float.safetensors" "$work/o.h5"
refused - "shape" 20 "$dcr" convert "$work/overflow_int.safetensors" "$work/o.h5"
refused - "nests deeper" 20 "$dcr" convert "$work/deep.safetensors" "$work/o.h5"
refused - "100 MB limit" 20 "$dcr" convert "$work/giant_header.safetensors" "$work/o.h5"
refused - "names no tensors" 20 "$dcr" convert "$work/no_tensors.safetensors" "$work/o.h5"
refused - "control character" 20 "$dcr" convert "$work/nul_name.safetensors" "$work/o.h5"
refused - "a FIFO" 20 "$dcr" convert "$work/fifo.safetensors" "$work/o.h5"
refused - "a directory" 20 "$dcr" convert "$work/a_directory.safetensors" "$work/o.h5"
refused - "a FIFO" 20 "$dcr" convert "$work/fifo.h5" "$work/o.safetensors"
# An HDF5 checkpoint with flipped metadata bytes (libhdf5 read out of bounds on some): its seal refuses it.
"$dcr" convert preset:tiny "$work/flipped.h5" >/dev/null
printf '\xff\xff' | dd of="$work/flipped.h5" bs=1 seek=600 conv=notrunc status=none
refused - "does not match its seal" 20 "$dcr" convert "$work/flipped.h5" "$work/o.safetensors"
accepted - 30 "$dcr" convert "$work/many.safetensors" "$work/many_out.safetensors"
accepted - 30 "$dcr" convert "$work/every_dtype.safetensors" "$work/every_dtype.h5"

# Configurations that cannot work, refused at start-up.
refused - "a FIFO" 30 "${refit[@]}" --config "$work/fifo.ini"
refused - "a device" 30 "${refit[@]}" --config /dev/zero
refused - "--timeout must be in" 30 "${refit[@]}" --timeout 1e30
refused - "--fault" 30 "${refit[@]}" --fault corrupt@-1
refused - "--rates: '0x10' is not a number" 30 "${refit[@]}" --rates 0x10
refused - "frames" 60 "${refit[@]}" --frame-elements 1
refused - "--window must be at least 1" 30 "${refit[@]}" --window 0
refused - "no such directory" 30 "${refit[@]}" --watch "$work/no_such_dir"
refused - "does not exist or is not writable" 30 "${refit[@]}" --json "$work/no/such/dir/r.json"

# One rank failing while setting up stops every rank, with its message.
refused - "bogus" 60 "${refit[@]}" --weights bogus
if [ ! -e "$here/../../.weights/esrgan-medium" ] && [ -z "${DCR_WEIGHTS_DIR:-}" ]; then
  refused - "fetch_weights" 60 "${refit[@]}" --weights esrgan-medium  # named but not fetched
fi
refused - "(trainer 0 on $(hostname)): set-up: invalid argument: parameter" 60 "${refit[@]}" --rollout-tp 1 --init-checkpoint "$work/every_dtype.safetensors"

# State directories.
mkdir -p "$work/state_fifo" && mkfifo "$work/state_fifo/rank-1.journal"
refused - "not a regular file" 60 "${refit[@]}" --state-dir "$work/state_fifo"
mkdir -p "$work/state_zero" && ln -s /dev/zero "$work/state_zero/rank-3.journal"
refused - "not a regular file" 60 "${refit[@]}" --state-dir "$work/state_zero"
mkdir -p "$work/state_dir" && mkdir "$work/state_dir/rank-2.journal"
refused - "state_dir/rank-2.journal': Is a directory" 60 "${refit[@]}" --state-dir "$work/state_dir"
# A state directory after a good run (v1 committed everywhere), then damaged.
good_state() { "${refit[@]}" --steps 1 --state-dir "$1" >"$1.log" 2>&1; }
good_state "$work/snapdir" && rm "$work/snapdir/rollout-0.h5" && mkdir "$work/snapdir/rollout-0.h5"
accepted - 60 "${refit[@]}" --state-dir "$work/snapdir" --steps 2  # a snapshot that is a directory: full sync
good_state "$work/snapwrite" && rm "$work/snapwrite/rollout-1.h5" && mkdir "$work/snapwrite/rollout-1.h5.tmp"
accepted - 60 "${refit[@]}" --state-dir "$work/snapwrite" --steps 2  # a snapshot that cannot be written: reported
# (A forged root record for 2^64 - 2 and a spool manifest whose base is its target: unit tests,
# tests/refit/test_commit.cc and tests/spool/test_frame_spool.cc.)
mkdir -p "$work/state_names" && touch "$work/state_names/rank-x.journal" "$work/state_names/rank-99999999999.journal"
refused - "no journals" 20 "$dcr" state "$work/state_names"

finish
