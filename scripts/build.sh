#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to a working idem: installs the packages, builds
# build/idem, and runs its main job on the embedded SQLite store (twice: the second is a replay).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target idem
demo_db="$(mktemp -d)/idem.db"
echo "--- first attempt runs the command:"
build/idem --db "$demo_db" run -v -k readme-demo -- sh -c 'echo "hello from idem, attempt $IDEM_ATTEMPT"; date'
echo "--- second attempt replays the stored outcome (same bytes, same exit code):"
build/idem --db "$demo_db" run -v -k readme-demo -- sh -c 'echo "hello from idem, attempt $IDEM_ATTEMPT"; date'
build/idem --db "$demo_db" ls
rm -rf "$(dirname "$demo_db")"
echo "--- built: $(pwd)/build/idem"
