#!/usr/bin/env bash
# Installs the npm packages of tests/node/package-lock.json (the Stripe SDK the proxy's tests
# drive, express and express-idempotency for bench/proxy_compare.sh) into tests/node/node_modules
# with `npm ci`: exactly the locked versions. Idempotent; quiet when they are already there (a
# stamp holds the SHA-256 of the lock file they were installed from). Needs Node.js >= 20 and npm
# on PATH; fails loudly when either is missing or npm cannot reach its registry.
set -euo pipefail
dir=$(cd "$(dirname "$0")/../tests/node" && pwd)
stamp=$dir/node_modules/.idem-lock-sha256

die() { echo "npm_deps.sh: $*" >&2; exit 1; }
command -v node >/dev/null || die "node is missing: Node.js >= 20 with npm is needed for tests/node"
command -v npm >/dev/null || die "npm is missing: Node.js >= 20 with npm is needed for tests/node"
major=$(node -p 'process.versions.node.split(".")[0]')
((major >= 20)) || die "Node.js $(node --version) is too old: the locked Stripe SDK needs >= 20"

want=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
[[ -f $stamp && $(<"$stamp") == "$want" ]] && exit 0

echo "Installing npm packages of tests/node (npm ci)"
log=$(mktemp "${TMPDIR:-/tmp}/idem-npm-ci.XXXXXX")
trap 'rm -f "$log"' EXIT
# --no-audit --no-fund: nothing but the packages themselves is fetched. npm retries a registry it
# cannot reach for about a minute, then exits non-zero.
if ! (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) >"$log" 2>&1; then
  cat "$log" >&2
  die "npm ci failed in $dir (is the npm registry reachable? npm config get registry: $(npm config get registry))"
fi
echo "$want" >"$stamp"
