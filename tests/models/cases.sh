# The case loop of the model tests, sourced by a script that defines all_cases ("name|field|...")
# and run_case NAME FIELD...:
#   run_cases CASE...   runs the cases named (every case of all_cases when none is), each with its
#                       fields, counting them in `passed` and `failed` and naming each failure.
passed=0
failed=0
run_cases() {
  local names=("$@") name spec c fields
  [ ${#names[@]} -gt 0 ] || for c in "${all_cases[@]}"; do names+=("${c%%|*}"); done
  for name in "${names[@]}"; do
    spec=""
    for c in "${all_cases[@]}"; do [ "${c%%|*}" = "$name" ] && spec=$c; done
    [ -n "$spec" ] || { echo "unknown case $name"; exit 2; }
    IFS='|' read -r -a fields <<<"$spec"
    if run_case "${fields[@]}"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL $name"; fi
  done
}
