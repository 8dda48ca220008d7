#!/usr/bin/env bash
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# `ansible-builder create` on the example execution environment, then check that the generated build
# context installs exactly the collection's requirements.txt and bindep.txt (no container runtime needed).
set -euo pipefail
cd "$(dirname "$0")/.."
out=.build/ee
rm -rf "$out"
ansible-builder create -f examples/execution-environment/execution-environment.yml -c "$out" >/dev/null
fail=0
for pair in "requirements.txt:_build/requirements.txt" "bindep.txt:_build/bindep.txt"; do
  ours=${pair%%:*}; generated="$out/${pair#*:}"
  if ! cmp -s "$ours" "$generated"; then
    echo "check-ee: $generated differs from $ours" >&2; diff "$ours" "$generated" >&2 || true; fail=1
  fi
done
grep -q "requirements.txt" "$out/Dockerfile" || { echo "check-ee: the Dockerfile does not install requirements.txt" >&2; fail=1; }
grep -q "bindep.txt" "$out/Dockerfile" || { echo "check-ee: the Dockerfile does not install bindep.txt" >&2; fail=1; }
[ $fail = 0 ] && echo "check-ee: build context in $out installs exactly requirements.txt and bindep.txt"
exit $fail
