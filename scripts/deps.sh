#!/usr/bin/env bash
# Installs the Debian 12 packages idem builds and tests with, plus any package names given as
# arguments. Idempotent; quiet when all are present.
set -euo pipefail
packages=(
  cmake make g++ pkg-config curl openssl
  libcli11-dev nlohmann-json3-dev catch2 libssl-dev libsqlite3-dev libyaml-cpp-dev
  sqlite3 procps scdoc man-db groff-base bash-completion libpq-dev postgresql pgbouncer
  libexpat1-dev  # XML payloads of webhook hooks
  libre2-dev  # the regex match type of webhook hooks (Go's regexp is RE2 syntax)
  nodejs  # tests/helpers/upstream_server.js, the proxy tests' upstream
  webhook  # Debian's Go webhook 2.8: the reference of the hooks-file compatibility tests
  python3 jq
  tzdata  # /usr/share/zoneinfo: the time zones of schedules (src/util/time_zone.cpp) and their tests
  ccache  # the compiler launcher (CMakeLists.txt): the sanitizer lanes share objects across runs
  lld  # the static idem's linker: it lays out the code a run touches first (src/link_order.txt)
  systemd  # systemd-socket-activate, the socket activation test's service manager
  dpkg-dev  # dpkg-shlibdeps: the runtime dependencies of the Debian package (tests/cli/test_package.sh)
  lintian  # checks that package (scripts/lint_deb.sh)
  chromium  # the delivery-log page's browser test (tests/cli/test_ui_browser.sh, puppeteer-core)
  "$@"
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "Installing: ${missing[*]}"
$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
