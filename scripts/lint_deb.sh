#!/usr/bin/env bash
# lintian over a package of idem: fails on its errors and warnings. scripts/package.sh runs it on
# the Release package, tests/cli/test_package.sh on the test build's.
set -euo pipefail
[[ $# == 1 && -f $1 ]] || { echo "usage: lint_deb.sh PACKAGE.deb" >&2; exit 64; }
# Tags lintian is right about but that do not apply: no licence has been chosen yet, and the
# package is not uploaded to Debian (no bug tracker to close a first-upload bug in). The package's
# own overrides (packaging/debian/lintian-overrides) say why the rest do not apply.
lintian --fail-on error,warning --suppress-tags \
  copyright-without-copyright-notice,initial-upload-closes-no-bugs "$1"
