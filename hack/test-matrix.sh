#!/usr/bin/env bash
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
#
# The supported-versions matrix: for each line of hack/test-matrix.txt, a virtualenv on the line's Python (found
# by hack/python.sh; cached in $MANENT_CACHE, keyed by its pins and that Python) with the main venv's test pins plus
# the line's overrides, then the unit tests and a playbook deploy + rollback + traffic step
# (tests/integration/test_versions.py) with that venv's ansible-playbook, modules running on that venv's python.
# The entries run concurrently (MANENT_MATRIX_JOBS, default 4); each one writes its log to
# .build/matrix/<name>.log. A line marked `prerelease` is reported but its failure does not fail the matrix.
# Starts the local clusters if none run, stops them at the end if it started them (unless MANENT_KEEP_CLUSTERS=1).
#
#   hack/test-matrix.sh [name ...]      (make test-matrix; MANENT_MATRIX=core-2.16 make test-matrix)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
CACHE="${MANENT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/manent}"
MAIN_PY="${MAIN_PY:-python3}"  # the main venv's python: starts the clusters (make passes it)
LOGS="$root/.build/matrix"
mkdir -p "$CACHE" "$LOGS"

# The main venv's test pins the matrix venvs share (one place: requirements-dev.txt).
base_pins() {
  grep -E '^(ansible-core|kubernetes|PyYAML|pytest|pytest-xdist|hypothesis)==' requirements-dev.txt
}

# The pins of one entry: the base pins with the entry's overrides replacing the same package.
entry_pins() {
  local overrides="$1" pin pkg
  declare -A chosen=()
  while read -r pin; do chosen["${pin%%==*}"]="$pin"; done < <(base_pins)
  for pin in $overrides; do
    pkg="${pin%%==*}"
    [[ -n "${chosen[$pkg]:-}" ]] || { echo "test-matrix: $pin: $pkg is not one of the test pins of requirements-dev.txt" >&2; return 2; }
    chosen["$pkg"]="$pin"
  done
  printf '%s\n' "${chosen[@]}" | sort
}

entries() {  # "name pins..." lines, comments and blanks dropped, optionally only the named ones
  local want=" $* " name rest
  while read -r name rest; do
    [[ -z "$name" || "$name" == \#* ]] && continue
    if [[ $# -eq 0 || "$want" == *" $name "* ]]; then echo "$name $rest"; fi
  done < hack/test-matrix.txt
}

venv_for() {  # create (once) the venv of an entry; prints its path
  local name="$1" pins="$2" python="$3" key venv
  key="$( (printf '%s\n' "$pins"; "$python" -c 'import sys; print(sys.version)') | sha256sum | cut -c1-12)"
  venv="$CACHE/venv-matrix-$name-$key"
  (
    exec 9>"$venv.lock"
    flock 9
    if [[ ! -e "$venv/.complete" ]]; then
      rm -rf "$venv"
      "$python" -m venv "$venv"
      # shellcheck disable=SC2086
      "$venv/bin/python" -m pip install -q --disable-pip-version-check $pins >&2
      touch "$venv/.complete"
    fi
  )
  echo "$venv"
}

run_entry() {  # name words... : venv, unit tests, deploy + rollback + traffic step; the log in .build/matrix/<name>.log
  local name="$1"; shift
  local word version="" prerelease=0 overrides=() pins log venv python core k8s start status=0 label
  for word in "$@"; do
    case "$word" in
      python=*) version="${word#python=}" ;;
      prerelease) prerelease=1 ;;
      *) overrides+=("$word") ;;
    esac
  done
  label="$name"; ((prerelease)) && label="$name (prerelease)"
  log="$LOGS/$name.log"
  start=$(date +%s)
  (
    [[ -n "$version" ]] || { echo "test-matrix: $name: no python=X.Y word in hack/test-matrix.txt"; exit 2; }
    python="$(bash "$root/hack/python.sh" "$version")" || exit 2
    pins="$(entry_pins "${overrides[*]}")" || exit 2
    echo "== $name: python $version ($python) $(echo "$pins" | tr '\n' ' ')"
    venv="$(venv_for "$name" "$pins" "$python")" || exit 2
    core="$(echo "$pins" | sed -n 's/^ansible-core==//p')"
    k8s="$(echo "$pins" | sed -n 's/^kubernetes==//p')"
    export MANENT_MATRIX_ANSIBLE_CORE="$core" MANENT_MATRIX_KUBERNETES="$k8s" MANENT_MATRIX_PYTHON="$version"
    export MANENT_KEEP_CLUSTERS=1 PATH="$venv/bin:$PATH"
    "$venv/bin/python" -m pytest tests/unit -q -p no:cacheprovider || status=1
    "$venv/bin/python" -m pytest tests/integration/test_versions.py -q -p no:cacheprovider || status=1
    exit $status
  ) >"$log" 2>&1 || status=$?
  if ((status == 0)); then
    echo "test-matrix: $label passed in $(( $(date +%s) - start ))s ($(grep -E '^[0-9]+ passed' "$log" | tr '\n' ' '))"
  else
    echo "test-matrix: $label FAILED in $(( $(date +%s) - start ))s; its log, $log, ends with:"
    tail -n 60 "$log" | sed 's/^/    /'
    if ((prerelease)); then
      echo "test-matrix: $name is a prerelease line: reported, not failing the matrix"
      status=0
    fi
  fi
  echo "$status" >"$LOGS/$name.status"
}

mapfile -t selected < <(entries ${MANENT_MATRIX:-} "$@")
((${#selected[@]})) || { echo "test-matrix: no entry of hack/test-matrix.txt matches: ${MANENT_MATRIX:-} $*" >&2; exit 2; }

started=0
if [[ -z "${MANENT_TEST_INVENTORY:-}" ]] && ! "$MAIN_PY" hack/clusters.py status >/dev/null 2>&1; then
  "$MAIN_PY" hack/clusters.py up >"$LOGS/clusters-up.log" 2>&1 || { cat "$LOGS/clusters-up.log"; exit 1; }
  started=1
fi
stop_clusters() {
  if ((started)) && [[ "${MANENT_KEEP_CLUSTERS:-}" != 1 ]]; then "$MAIN_PY" hack/clusters.py down >/dev/null 2>&1 || true; fi
}
trap stop_clusters EXIT

jobs_max="${MANENT_MATRIX_JOBS:-4}"
failed=0
for line in "${selected[@]}"; do
  rm -f "$LOGS/${line%% *}.status"
  # shellcheck disable=SC2086
  run_entry $line &
  while (( $(jobs -rp | wc -l) >= jobs_max )); do wait -n || true; done
done
wait
for line in "${selected[@]}"; do
  [[ "$(cat "$LOGS/${line%% *}.status" 2>/dev/null)" == 0 ]] || failed=1
done
exit $failed
