#!/usr/bin/env bash
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Build (or reuse) the test control plane binaries and CRDs from the Go module proxy.
# Output: $MANENT_CACHE/<tool>-<version>/... ; prints nothing but progress on stderr.
# Each tool is built in a throwaway module whose go.mod pins it; results are keyed by version,
# so a fresh clone on the same machine reuses them and starts in seconds.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=/dev/null
. "$here/versions.env"
CACHE="${MANENT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/manent}"
mkdir -p "$CACHE"
# One build at a time per cache (tests, make and CI may all ask at once).
exec 9>"$CACHE/.build.lock"
flock 9
export GOFLAGS="${GOFLAGS:--buildvcs=false}"
export CGO_ENABLED=0

log() { echo "[build-tools] $*" >&2; }

modroot() {  # print the module cache dir of module@version (downloads it)
  go mod download -json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])'
}

scratch_module() {  # new throwaway module dir on stdout
  local d; d="$(mktemp -d "$CACHE/.build.XXXXXX")"
  (cd "$d" && go mod init manent.local/tools >/dev/null 2>&1)
  echo "$d"
}

kubernetes_module() {  # new throwaway module dir on stdout whose go.mod resolves k8s.io/kubernetes@$K8S_VERSION
  local d; d="$(scratch_module)"
  local gomod; gomod="$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')"
  local staging="v0.${K8S_VERSION#v1.}"
  # k8s.io/kubernetes requires its staging modules at v0.0.0 with local replaces; point them at the published tags.
  python3 - "$gomod" "$staging" "$d/go.mod" <<'PY'
import re, sys
src, ver, dst = sys.argv[1:]
mods = sorted(set(re.findall(r"^\s*(k8s\.io/[\w.-]+) v0\.0\.0\s*$", open(src).read(), re.M)))
with open(dst, "a") as f:
    f.write("\nreplace (\n")
    for m in mods:
        f.write(f"\t{m} => {m} {ver}\n")
    f.write(")\n")
PY
  echo "$d"
}

kube_ldflags() {
  local minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
  local v
  for v in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    printf -- '-X %s.gitVersion=%s -X %s.gitMajor=1 -X %s.gitMinor=%s -X %s.gitTreeState=clean ' "$v" "$K8S_VERSION" "$v" "$v" "$minor" "$v"
  done
  echo "-s -w"
}

kube_commands() {  # out-dir cmd...: build k8s.io/kubernetes/cmd/<cmd> at K8S_VERSION into out-dir
  local out="$1"; shift
  local pkgs=("${@/#/k8s.io/kubernetes/cmd/}")
  local d; d="$(kubernetes_module)"
  (
    cd "$d"
    go get "${pkgs[@]/%/@$K8S_VERSION}" 2>&1 | grep -v "^go: \(downloading\|added\|upgraded\)" >&2 || true
    mkdir -p "$out.tmp"
    go build -trimpath -ldflags "$(kube_ldflags)" -o "$out.tmp/" "${pkgs[@]}"
  )
  rm -rf "$out" && mkdir -p "$(dirname "$out")" && mv "$out.tmp" "$out"
  rm -rf "$d"
}

build_kubernetes() {
  local out="$CACHE/kubernetes-$K8S_VERSION/bin"
  if [[ -x "$out/kube-apiserver" && -x "$out/kube-controller-manager" && -x "$out/kube-scheduler" ]]; then return; fi
  log "building kube-apiserver, kube-controller-manager, kube-scheduler $K8S_VERSION (cold: ~15-25 min on 2 cores)"
  kube_commands "$out" kube-apiserver kube-controller-manager kube-scheduler
}

build_kubectl() {  # make bench only: kubectl from k8s.io/kubernetes at the control plane's version
  local out="$CACHE/kubectl-$K8S_VERSION/bin"
  if [[ -x "$out/kubectl" ]]; then return; fi
  log "building kubectl $K8S_VERSION (a few minutes when the control plane was built on this machine)"
  kube_commands "$out" kubectl
}

copy_replaces() {  # go.mod dir: the replace directives of go.mod (one per line or in a block) into dir's go.mod
  python3 - "$1" "$2/go.mod" <<'PY'
import re, sys
src, dst = sys.argv[1:]
text = open(src).read()
blocks = re.findall(r"^replace\s*\((.*?)^\)", text, re.M | re.S)
lines = [line for block in blocks for line in block.splitlines()] + re.findall(r"^replace\s+([^(\n].*)$", text, re.M)
lines = [line.split("//")[0].strip() for line in lines]
with open(dst, "a") as f:
    for line in filter(None, lines):
        f.write("replace %s\n" % line)
PY
}

build_simple() {  # name version package [ldflags] [build tags]
  local name="$1" version="$2" pkg="$3" ldflags="${4:-}" tags="${5:-}"
  local out="$CACHE/$name-$version/bin"
  if [[ -x "$out/$name" ]]; then return; fi
  log "building $name $version"
  local d; d="$(scratch_module)"
  (
    cd "$d"
    go get "$pkg@$version" 2>&1 | grep -v "^go: \(downloading\|added\|upgraded\)" >&2 || true
    mkdir -p "$out.tmp"
    go build -trimpath -tags "$tags" -ldflags "-s -w $ldflags" -o "$out.tmp/$name" "$pkg"
  )
  rm -rf "$out" && mkdir -p "$(dirname "$out")" && mv "$out.tmp" "$out"
  rm -rf "$d"
}

fetch_crds() {
  local out="$CACHE/crds-gateway-$GATEWAY_API_VERSION-istio-$ISTIO_API_VERSION"
  if [[ -s "$out/gateway-api.yaml" && -s "$out/istio.yaml" ]]; then return; fi
  log "collecting Gateway API $GATEWAY_API_VERSION and Istio $ISTIO_API_VERSION CRDs"
  mkdir -p "$out.tmp"
  local gw; gw="$(modroot "sigs.k8s.io/gateway-api@$GATEWAY_API_VERSION")"
  : > "$out.tmp/gateway-api.yaml"
  for f in "$gw"/config/crd/standard/*.yaml; do
    { echo "---"; cat "$f"; } >> "$out.tmp/gateway-api.yaml"
  done
  local is; is="$(modroot "istio.io/api@$ISTIO_API_VERSION")"
  cat "$is/kubernetes/customresourcedefinitions.gen.yaml" > "$out.tmp/istio.yaml"
  rm -rf "$out" && mv "$out.tmp" "$out"
}

fetch_capi_crds() {  # the Cluster API Cluster CRD as the module ships it (config/crd/bases: no conversion webhook)
  local out="$CACHE/crds-cluster-api-$CLUSTER_API_VERSION"
  if [[ -s "$out/cluster-api.yaml" ]]; then return; fi
  log "collecting the Cluster API $CLUSTER_API_VERSION Cluster CRD"
  mkdir -p "$out.tmp"
  local root; root="$(modroot "sigs.k8s.io/cluster-api@$CLUSTER_API_VERSION")"
  cat "$root/config/crd/bases/cluster.x-k8s.io_clusters.yaml" > "$out.tmp/cluster-api.yaml"
  cp "$root/LICENSE" "$out.tmp/LICENSE"
  rm -rf "$out" && mv "$out.tmp" "$out"
}

fetch_public_charts() {  # PUBLIC_CHARTS (hack/versions.env): each chart packaged with the pinned helm, unchanged
  local helm="$CACHE/helm-$HELM_VERSION/bin/helm" entry name rest module path out dir
  for entry in $PUBLIC_CHARTS; do
    name="${entry%%=*}"; rest="${entry#*=}"; module="${rest%%:*}"; path="${rest#*:}"
    out="$CACHE/public-chart-$name-${module##*@}-helm-$HELM_VERSION"
    if compgen -G "$out/*.tgz" >/dev/null; then continue; fi
    log "packaging the public chart $name ($module, $path)"
    dir="$(modroot "$module")"
    rm -rf "$out.tmp" && mkdir -p "$out.tmp/src"
    cp -R "$dir/$path" "$out.tmp/src/$name"  # the module cache is read-only
    chmod -R u+w "$out.tmp/src"
    env -i HOME="$out.tmp" PATH=/usr/bin:/bin "$helm" package "$out.tmp/src/$name" --destination "$out.tmp" >&2
    [[ -f "$dir/LICENSE" ]] && cp "$dir/LICENSE" "$out.tmp/LICENSE"
    echo "$module $path" > "$out.tmp/origin.txt"
    rm -rf "$out.tmp/src" "$out" && mv "$out.tmp" "$out"
  done
}

build_helm3() {  # the pinned helm 3: tests render charts with it, make bench runs it, the public charts are packaged with it
  build_simple helm "$HELM_VERSION" helm.sh/helm/v3/cmd/helm "-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
}

build_prometheus() {  # the Prometheus server that the metric-analysis tests query (hack/prometheus.py starts it)
  local release v=github.com/prometheus/common/version
  # Module v0.3MM.P is Prometheus 3.MM.P; the module's VERSION file says which, for the --version output.
  release="$(cat "$(modroot "$PROMETHEUS_MODULE@$PROMETHEUS_VERSION")/VERSION")"
  # The module has no replace directives and needs go >= 1.26.7: the local toolchain builds it as it is.
  # -tags remove_all_sd (Prometheus' own tag): only the static, file and HTTP service discoveries, without the
  # cloud and Kubernetes ones (a third fewer packages to compile); tests scrape static targets.
  # No builtinassets tag: the web UI is not embedded (the module holds only its sources, built with npm). The UI
  # pages then answer 404; the HTTP API (/api/v1/..., /-/ready, /-/reload) is all the tests use.
  build_simple prometheus "$PROMETHEUS_VERSION" "$PROMETHEUS_MODULE/cmd/prometheus" "-X $v.Version=$release" remove_all_sd
}

build_prometheus_lts() {  # Prometheus 2.53 (PROMETHEUS_LTS_VERSION: module v0.53.P is 2.53.P), the same way as 3.x
  local version="$PROMETHEUS_LTS_VERSION" out="$CACHE/prometheus-$PROMETHEUS_LTS_VERSION/bin"
  local root d v=github.com/prometheus/common/version
  if [[ -x "$out/prometheus" ]]; then return; fi
  log "building prometheus $version (cold: ~5-10 min on 2 cores)"
  root="$(modroot "$PROMETHEUS_MODULE@$version")"
  d="$(scratch_module)"
  # 2.x has no remove_all_sd tag: the same trimming on a copy of the module whose plugins/plugins.go (the cloud and
  # Kubernetes discoveries, half of the packages) is emptied; plugins/minimum.go keeps the file and HTTP ones. The
  # module's replace directives (klog by klog-gokit, which cmd/prometheus calls) are kept in the throwaway module.
  cp -R "$root" "$d/prometheus" && chmod -R u+w "$d/prometheus"
  printf 'package plugins\n' > "$d/prometheus/plugins/plugins.go"
  copy_replaces "$root/go.mod" "$d"
  (
    cd "$d"
    go mod edit -replace "$PROMETHEUS_MODULE=./prometheus"
    go get "$PROMETHEUS_MODULE/cmd/prometheus@$version" 2>&1 | grep -v "^go: \(downloading\|added\|upgraded\)" >&2 || true
    mkdir -p "$out.tmp"
    go build -trimpath -ldflags "-s -w -X $v.Version=$(cat "$root/VERSION")" -o "$out.tmp/prometheus" \
      "$PROMETHEUS_MODULE/cmd/prometheus"
  )
  rm -rf "$out" && mkdir -p "$(dirname "$out")" && mv "$out.tmp" "$out"
  rm -rf "$d"
}

what="${1:-all}"
case "$what" in
  all|crds) fetch_crds; fetch_capi_crds ;;&
  all|etcd) build_simple etcd "$ETCD_VERSION" go.etcd.io/etcd/server/v3 ;;&
  all|kwok) build_simple kwok "$KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwok ;;&
  all|helm) build_helm3 ;;&
  all|kubernetes) build_kubernetes ;;&
  all|charts) build_helm3; fetch_public_charts ;;&
  all|prometheus) build_prometheus ;;&
  all|prometheus-lts) build_prometheus_lts ;;&
  # Benchmark peers (make bench), not part of "all": kubectl, and Helm 4 (it applies server-side).
  bench|kubectl) build_kubectl ;;&
  bench|helm4) build_simple helm "$HELM4_VERSION" helm.sh/helm/v4/cmd/helm \
                 "-X helm.sh/helm/v4/internal/version.version=$HELM4_VERSION" ;;&
  bench) build_helm3 ;;
  *) ;;
esac
rm -rf "$CACHE"/.build.?????? 2>/dev/null || true
log "tools ready in $CACHE"
