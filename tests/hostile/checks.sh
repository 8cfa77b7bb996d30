# Sourced by the hostile-input scripts: where they are ($here, the repository $root), the system
# Python ($py), the MPI launch settings, a scratch directory ($work, removed on exit), the pass/fail
# counts, and the checks each case ends in. NAME "-" names a case by its command line.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
py=/usr/bin/python3
source "$root/scripts/mpi_env.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0

# report WHY NAME OUTCOME: the case passed when WHY is empty; else print WHY and the output's tail.
report() {
  local name=${2//$work\//}
  if [ -z "$1" ]; then
    passed=$((passed + 1)); echo "  ok   $name: $3"
  else
    failed=$((failed + 1)); echo "FAIL $name: $1"; tail -n 12 "$work/out"
  fi
}
# refused NAME WORD SECONDS CMD...: CMD must exit 1 or 2 within SECONDS, printing WORD.
refused() {
  local name=$1 word=$2 seconds=$3
  shift 3
  [ "$name" = - ] && name="$*"
  timeout "$seconds" "$@" >"$work/out" 2>&1
  local rc=$? why=""
  if [ "$rc" -eq 124 ]; then why="hung (killed after ${seconds}s)"
  elif [ "$rc" -eq 0 ]; then why="accepted it"
  elif [ "$rc" -ne 1 ] && [ "$rc" -ne 2 ]; then why="crashed or a sanitizer stopped it (exit $rc)"
  elif ! grep -qF -- "$word" "$work/out"; then why="no '$word' in its output"
  fi
  report "$why" "$name" "$(grep -oE "dcr [a-z]+: .*" "$work/out" | grep -v 'trainers (fsdp\|trainers on\|NOT auth' | tail -1 | cut -c1-200)"
}
# accepted NAME SECONDS CMD...: CMD must succeed within SECONDS.
accepted() {
  local name=$1 seconds=$2
  shift 2
  [ "$name" = - ] && name="$*"
  timeout "$seconds" "$@" >"$work/out" 2>&1
  local rc=$? why=""
  [ "$rc" -eq 0 ] || why="exit $rc"
  report "$why" "$name" "accepted"
}
# The summary line; the script's exit status.
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
