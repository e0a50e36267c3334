#!/usr/bin/env bash
# One command from the tree to a Debian package: installs the packages it needs, builds a Release
# idem without test hooks in build-pkg/, packs it with CPack's DEB generator (binary, idem-pg
# in /usr/libexec/idem, man pages, completions, systemd units; runtime dependencies
# found by dpkg-shlibdeps) and runs lintian over it. Prints the package's path last.
# Install it with: apt-get install ./build-pkg/idem_*.deb
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh dpkg-dev lintian
build="build-pkg"
# Warnings are enforced by the test build (scripts/test.sh), as for bench/compare.sh's Release.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DIDEM_TESTS=OFF -DIDEM_TEST_HOOKS=OFF >/dev/null
cmake --build "$build" -j"$(nproc)"
rm -f "$build"/idem_*.deb
(cd "$build" && cpack -G DEB >/dev/null)
debs=("$build"/idem_*.deb)
deb=${debs[0]}
scripts/lint_deb.sh "$deb"
echo "$(pwd)/$deb"
