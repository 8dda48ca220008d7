#!/usr/bin/env bash
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
#
# The generated docs site (make docs): antsibull-docs `sphinx-init` and `collection` for manent.kubernetes
# (module, filter plugin and role pages from their docs and meta/argument_specs.yml), README.md and docs/*.md
# through myst-parser (hack/docs_site.py), the release notes from changelogs/changelog.yaml (antsibull-changelog), then `sphinx-build -W --keep-going`: any warning fails the build.
# Output: .build/docs-site/html/index.html (never committed). Needs no network but PyPI, once, for its
# virtualenv: requirements-docs.txt plus the antsibull-docs and ansible-core pins of requirements-dev.txt,
# cached in $MANENT_CACHE keyed by those pins. The collection is found through ANSIBLE_COLLECTIONS_PATH
# (default .build/collections, made by `make collection-link`).
#
#   hack/docs-site.sh          (make docs)
#
# Measured on a shared 2-core machine: about 2 minutes the first time (the virtualenv), then 14-24 s; with
# the virtualenv in place it builds with no network at all (checked with `unshare -n hack/docs-site.sh`).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
CACHE="${MANENT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/manent}"
PYTHON="${PYTHON:-$(bash "$root/hack/python.sh" 3.13)}"
out="$root/.build/docs-site"
export ANSIBLE_COLLECTIONS_PATH="${ANSIBLE_COLLECTIONS_PATH:-$root/.build/collections}"
collection=manent.kubernetes
CHANGELOG_PAGE=changelog.rst  # the release notes page (docs_site.py: RELEASE_NOTES)
start=$(date +%s)

fail() { echo "docs-site: $*" >&2; exit 1; }

# antsibull-docs and ansible-core (ansible-doc reads the collection) at the main venv's versions.
shared_pins() { grep -E '^(ansible-core|antsibull-docs)==' requirements-dev.txt; }

docs_venv() {  # create (once) the docs virtualenv; prints its path
  local key venv
  key="$( (cat requirements-docs.txt; shared_pins; "$PYTHON" -c 'import sys; print(sys.version)') | sha256sum | cut -c1-12)"
  venv="$CACHE/docs-venv-$key"
  mkdir -p "$CACHE"
  (
    exec 9>"$venv.lock"
    flock 9
    if [[ ! -e "$venv/.complete" ]]; then
      rm -rf "$venv"
      "$PYTHON" -m venv "$venv"
      # shellcheck disable=SC2046
      "$venv/bin/python" -m pip install -q --disable-pip-version-check -r requirements-docs.txt $(shared_pins) >&2 \
        || { echo "docs-site: could not install requirements-docs.txt into $venv (PyPI reachable?)" >&2; exit 1; }
      touch "$venv/.complete"
    fi
  ) || exit 1
  echo "$venv"
}

found=""
IFS=: read -r -a paths <<<"$ANSIBLE_COLLECTIONS_PATH"
for dir in "${paths[@]}"; do
  [[ -e "$dir/ansible_collections/manent/kubernetes/galaxy.yml" ]] && found="$dir" && break
done
[[ -n "$found" ]] || fail "the collection $collection is not under ANSIBLE_COLLECTIONS_PATH=$ANSIBLE_COLLECTIONS_PATH; run \`make collection-link\` (or point ANSIBLE_COLLECTIONS_PATH at a directory holding ansible_collections/manent/kubernetes)"

venv="$(docs_venv)"
export PATH="$venv/bin:$PATH"
rm -rf "$out"
mkdir -p "$out"
site="$out/src"
log="$out/build.log"
mkdir -p "$site/rst"
chmod og-w "$site" "$site/rst"  # antsibull-docs wants its directories writable only by itself

antsibull-docs sphinx-init --use-current --squash-hierarchy --fail-on-error --dest-dir "$site" \
  --project "$collection" --copyright "manent developers, GPL-3.0-or-later" --title "$collection" \
  "$collection" >"$log" 2>&1 || { cat "$log" >&2; fail "antsibull-docs sphinx-init failed (above)"; }
# --fail-on-error: a module, filter or role doc that does not parse stops the build instead of becoming an error page
antsibull-docs --config-file "$site/antsibull-docs.cfg" collection --cleanup everything --fail-on-error --use-current \
  --squash-hierarchy --dest-dir "$site/rst" "$collection" >>"$log" 2>&1 \
  || { tail -n 40 "$log" >&2; fail "antsibull-docs could not generate the pages of $collection (above; full log: $log)"; }
# The release notes page from changelogs/changelog.yaml, rendered by antsibull-changelog as it renders CHANGELOG.rst:
# every release `antsibull-changelog release` recorded there (docs_site.py puts it in the index).
antsibull-changelog generate --output "$site/rst/$CHANGELOG_PAGE" --output-format rst >>"$log" 2>&1 \
  || { tail -n 20 "$log" >&2; fail "antsibull-changelog could not render changelogs/changelog.yaml (above)"; }
python hack/docs_site.py "$site" "$root"

# sphinx-init's conf.py is nitpicky (every reference must resolve); -W makes each warning an error.
if ! sphinx-build -b html -W --keep-going -q -c "$site" "$site/rst" "$out/html" >>"$log" 2>"$out/warnings.log"; then
  echo "docs-site: sphinx-build found problems (each warning is an error); fix the file named in each line:" >&2
  # project/README.md and project/*.md are copies of README.md and docs/*.md; the other pages come from the
  # DOCUMENTATION of plugins/modules and plugins/filter and from roles/*/meta/argument_specs.yml
  sed -e "s#^$site/rst/project/README.md#README.md#" -e "s#^$site/rst/project/#docs/#" -e 's/^/    /' \
    "$out/warnings.log" >&2
  echo "    (the other pages, in $site/rst, are generated from plugins/*/ and roles/*/meta/argument_specs.yml)" >&2
  exit 1
fi
echo "docs-site: $out/html/index.html built in $(( $(date +%s) - start ))s ($(find "$out/html" -name '*.html' | wc -l) pages)"
