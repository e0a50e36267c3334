#!/usr/bin/env bash
# lintian over a package of idem: fails on its errors and warnings. scripts/package.sh runs it on
# the Release package, tests/cli/test_package.sh on the test build's.
set -euo pipefail
[[ $# == 1 && -f $1 ]] || { echo "usage: lint_deb.sh PACKAGE.deb" >&2; exit 64; }
# Nothing is suppressed here: the package's own overrides (packaging/debian/lintian-overrides,
# installed where lintian reads them) say why the tags they name do not apply, so lintian run by
# hand on the package finds no warning either.
lintian --fail-on error,warning "$1"
