#!/usr/bin/env bash
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Print the path of a working Python X.Y interpreter: python X.Y on PATH if it runs (a pyenv shim of a version
# that is not selected exists but fails), else the newest pyenv install of X.Y ($PYENV_ROOT or ~/.pyenv), else
# /usr/bin/pythonX.Y. Exits 1 with what to do when there is none.
#
#   hack/python.sh 3.13        (the Makefile's main Python; hack/test-matrix.sh per matrix line)
set -euo pipefail
want="${1:?usage: hack/python.sh X.Y}"

works() { [[ -x "$1" ]] && "$1" -c "import sys, venv; assert '%d.%d' % sys.version_info[:2] == '$want'" 2>/dev/null; }

if found="$(command -v "python$want" 2>/dev/null)" && works "$found"; then
  echo "$found"; exit 0
fi
root="${PYENV_ROOT:-$HOME/.pyenv}"
for candidate in $(ls -d "$root/versions/$want".* 2>/dev/null | sort -V -r); do
  if works "$candidate/bin/python$want"; then echo "$candidate/bin/python$want"; exit 0; fi
done
if works "/usr/bin/python$want"; then echo "/usr/bin/python$want"; exit 0; fi
echo "hack/python.sh: no working Python $want (looked on PATH, in $root/versions/$want.*, /usr/bin): install it," \
     "e.g. 'pyenv install $want' or the distribution's python$want and python$want-venv packages" >&2
exit 1
