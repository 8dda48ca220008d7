#!/usr/bin/env bash
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Regenerate the packaged test charts in tests/data/charts/ (see tests/data/charts/README.md).
#
# Sources: kwok's charts and helm's own test charts, taken from the Go module cache at the versions
# pinned in hack/versions.env (downloaded through the Go module proxy when missing), and our own charts
# in tests/data/charts/src/ (manent-sample, strict-schema, strict-schema-slot, ttl-hooks, hook-parity). Each
# chart is copied to a scratch directory (the module cache is read-only) and packaged with the pinned helm
# (hack/build-tools.sh helm), whose path can be overridden with MANENT_HELM. The upstream LICENSE files
# are copied next to the packages.
#
# Usage: hack/package-test-charts.sh      (then run the unit tests: tests/unit/test_helm.py and
#                                          tests/unit/test_chart_conformance.py)
#        hack/package-test-charts.sh NAME... (re)package only our charts src/NAME, leaving the other
#                                          packages as they are (packaging is not byte-reproducible, and
#                                          examples/envconfig pins the sha256 of manent-sample)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
# shellcheck source=/dev/null
. "$here/versions.env"
CACHE="${MANENT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/manent}"
HELM="${MANENT_HELM:-$CACHE/helm-$HELM_VERSION/bin/helm}"
out="$root/tests/data/charts"

log() { echo "[package-test-charts] $*" >&2; }

if [[ ! -x "$HELM" ]]; then
  log "helm not found at $HELM: run hack/build-tools.sh helm (or set MANENT_HELM)"
  exit 1
fi

modroot() {  # module@version -> its directory in the Go module cache (downloaded when missing)
  (cd "$scratch" && go mod download -json "$1") | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])'
}

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

package() {  # source-dir
  local name; name="$(basename "$1")"
  rm -rf "${scratch:?}/$name"
  cp -R "$1" "$scratch/$name"
  chmod -R u+w "$scratch/$name"
  env -i HOME="$scratch" PATH=/usr/bin:/bin "$HELM" package "$scratch/$name" --destination "$out" >&2
}

if [[ $# -gt 0 ]]; then
  for name in "$@"; do
    [[ -f "$out/src/$name/Chart.yaml" ]] || { log "no chart $out/src/$name"; exit 1; }
    package "$out/src/$name"
  done
  chmod 0644 "$out"/*.tgz
  log "packaged: $*"
  exit 0
fi

rm -f "$out"/*.tgz

kwok="$(modroot "sigs.k8s.io/kwok@$KWOK_VERSION")"
package "$kwok/charts/kwok"
package "$kwok/charts/stage-fast"
cp "$kwok/LICENSE" "$out/LICENSE.kwok"

helm_src="$(modroot "helm.sh/helm/v3@$HELM_VERSION")"
testcharts="$helm_src/cmd/helm/testdata/testcharts"
package "$testcharts/subchart"
package "$testcharts/object-order"
package "$testcharts/chart-with-only-crds"
cp "$helm_src/LICENSE" "$out/LICENSE.helm"

package "$out/src/manent-sample"
package "$out/src/strict-schema"
package "$out/src/strict-schema-slot"
package "$out/src/ttl-hooks"
package "$out/src/hook-parity"

chmod 0644 "$out"/*.tgz "$out"/LICENSE.*
log "packaged: $(cd "$out" && ls -1 ./*.tgz | tr '\n' ' ')"
