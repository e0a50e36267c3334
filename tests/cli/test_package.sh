#!/usr/bin/env bash
# The Debian package, packed by CPack from the test build (scripts/package.sh packs a Release
# build the same way): lintian finds no error or warning in it, it installs with apt-get, declares its runtime libraries, and gives a
# working idem, its man pages, completions and systemd units; then it is purged. Needs root (CI
# runs as root on a throwaway machine) and skips otherwise, or when an idem package is already
# installed (it is not this test's to remove).
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
[[ $(id -u) == 0 ]] || skip "installing a package needs root"
for tool in cpack dpkg-shlibdeps apt-get; do
  command -v "$tool" >/dev/null ||
    skip "$tool is missing (scripts/package.sh installs it)"
done
if dpkg-query -W -f='${Status}' idem 2>/dev/null | grep -q installed; then
  skip "an idem package is installed already"
fi
build=$(dirname "$IDEM_BIN")
[[ -f $build/CPackConfig.cmake ]] || fail "$build is not idem's build folder"

# Packed from an install of the build into $T/stage (what CPack itself does, minus its
# "preinstall" step, which would run the build system from inside the suite); gzip: xz takes
# several times as long, for a package that is thrown away.
capture stage env DESTDIR="$T/stage" cmake --install "$build" --prefix /usr --strip
expect_rc 0
capture cpack cpack -G DEB --config "$build/CPackConfig.cmake" -B "$T/pack" \
  -D CPACK_INSTALL_CMAKE_PROJECTS= -D "CPACK_INSTALLED_DIRECTORIES=$T/stage;." \
  -D CPACK_DEBIAN_COMPRESSION_TYPE=gzip
expect_rc 0
debs=("$T"/pack/idem_*.deb)
[[ ${#debs[@]} == 1 && -f ${debs[0]} ]] || fail "cpack made no single idem_*.deb: $(ls "$T/pack")"
deb=${debs[0]}
depends=$(dpkg-deb -f "$deb" Depends)
for library in libc6 libpq5; do
  [[ $depends == *"$library "* ]] || fail "Depends lacks $library: $depends"
done
# lintian: no errors, no warnings (what scripts/package.sh asks of the Release package).
if command -v lintian >/dev/null; then
  capture lintian "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/../scripts/lint_deb.sh" "$deb"
  expect_rc 0
fi

# Purged however the test ends, then lib.sh's cleanup (which reads the exit code from $?).
_purge_then_cleanup() {
  local code=$?
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=120 purge -y -qq idem \
    >/dev/null 2>&1 || true
  set +e
  (exit "$code")
  _cleanup
}
trap _purge_then_cleanup EXIT
apt_get() {
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=120 -y -qq \
    --no-install-recommends "$@"
}
capture install apt_get install "$deb"
expect_rc 0

capture version /usr/bin/idem --version
expect_rc 0
grep -q '0\.1\.0' "$T/version.out" || fail "idem --version: $(cat "$T/version.out")"
for page in idem idem-run idem-serve idem-gc; do
  [[ $(man -w "$page") == /usr/share/man/man1/$page.1* ]] || fail "man -w $page: $(man -w "$page")"
done
for helper in idem-spawn idem-pg; do
  [[ -x /usr/libexec/idem/$helper ]] || fail "/usr/libexec/idem/$helper is not installed"
done
# The daemon finds its spawn helper where the package put it: a hook runs.
IDEM_BIN=/usr/bin/idem
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/serve_lib.sh"
printf '%s\n' '{"hooks": [{"path": "/hooks/x", "command": ["/bin/echo", "ran"],
                           "key": {"header": "X-Key"}}]}' >"$T/serve.json"
start_daemon "$T/serve.json"
post /hooks/x hello 'X-Key: a'
expect_http 200
assert_body 'ran\n'
stop_daemon

# bash: the installed completion offers the subcommands (as test_completion.sh checks in depth).
got=$(bash --norc --noprofile -c '
  source /usr/share/bash-completion/completions/idem
  COMP_WORDS=(idem r) COMP_CWORD=1 COMP_LINE="idem r" COMP_POINT=6
  fn=$(complete -p idem); fn=${fn#* -F }; fn=${fn%% *}
  PATH=/usr/bin:/bin "$fn" idem r idem
  printf "%s\n" "${COMPREPLY[@]}" | LC_ALL=C sort')
assert_eq $'rm\nrun' "$got" "the installed bash completion of 'idem r'"
[[ -f /usr/share/zsh/vendor-completions/_idem ]] || fail "the zsh completion is not installed"
[[ -f /usr/share/fish/vendor_completions.d/idem.fish ]] || fail "the fish completion is not installed"

capture verify systemd-analyze verify /usr/lib/systemd/system/idem-*
expect_rc 0

capture purge apt_get purge idem
expect_rc 0
[[ ! -e /usr/bin/idem ]] || fail "/usr/bin/idem is left after the purge"
