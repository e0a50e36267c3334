#!/usr/bin/env bash
# The Debian package, packed by CPack from the test build (scripts/package.sh packs a Release
# build the same way): lintian finds no error or warning in it, it installs with apt-get (its
# dependencies, dpkg's triggers), declares its runtime libraries, and gives a working idem, its
# man pages, completions and systemd units; then it is purged. Installed and purged in a
# throwaway root, never in this machine's own system (whose idem, if any, must stay): an overlay
# of / whose writes go to a tmpfs, in a mount namespace of this test's own, chrooted into, so
# apt-get and dpkg run as they would on the machine, on a copy of its package database. Needs
# root (mount, chroot) and skips otherwise.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
tests_dir=$(cd "${IDEM_TESTS_DIR:-$(dirname "$0")/..}" && pwd)
# machine_status [ROOT]: the state and version of the idem package in ROOT's package database
# (default /), empty when dpkg never knew it.
machine_status() {
  dpkg-query --admindir="${1:-}/var/lib/dpkg" -W -f='${db:Status-Status} ${Version}' idem \
    2>/dev/null || true
}

# In the throwaway root (set up below, where this script runs again): install, use, purge.
if [[ -n ${IDEM_PACKAGE_IN_ROOT:-} ]]; then
  deb=$IDEM_PACKAGE_IN_ROOT
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
  # Installed here, and at this very moment not on the machine (its root is bound read-only at
  # $machine): its files and its package database are as they were.
  machine=/run/idem-test-machine
  [[ -x $machine/usr/bin/dpkg ]] || fail "the machine's root is not at $machine"
  assert_eq "$IDEM_PACKAGE_MACHINE_STATUS" "$(machine_status "$machine")" "the machine's idem package"
  [[ -n $IDEM_PACKAGE_MACHINE_STATUS || ! -e $machine/usr/bin/idem ]] ||
    fail "the install put /usr/bin/idem on the machine"
  [[ $(dpkg-query -W -f='${db:Status-Status}' idem) == installed ]] ||
    fail "idem is not installed in the throwaway root: $(dpkg-query -W idem 2>&1)"

  capture version /usr/bin/idem --version
  expect_rc 0
  grep -q '0\.1\.0' "$T/version.out" || fail "idem --version: $(cat "$T/version.out")"
  for page in idem idem-run idem-serve idem-gc; do
    [[ $(man -w "$page") == /usr/share/man/man1/$page.1* ]] || fail "man -w $page: $(man -w "$page")"
  done
  [[ -x /usr/libexec/idem/idem-pg ]] || fail "/usr/libexec/idem/idem-pg is not installed"
  [[ ! -e /usr/libexec/idem/idem-spawn ]] || fail "the package still installs idem-spawn"
  # The installed daemon runs a hook.
  IDEM_BIN=/usr/bin/idem
  source "$tests_dir/cli/serve_lib.sh"
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
  [[ -z $(dpkg-query -W -f='${db:Status-Status}' idem 2>/dev/null | grep -v not-installed) ]] ||
    fail "dpkg still knows idem after the purge: $(dpkg-query -W -f='${db:Status-Status}' idem)"
  exit 0
fi

[[ $(id -u) == 0 ]] || skip "a throwaway root to install into needs root"
for tool in cpack dpkg-shlibdeps apt-get unshare chroot; do
  command -v "$tool" >/dev/null ||
    skip "$tool is missing (scripts/package.sh installs it)"
done
grep -qw overlay /proc/filesystems ||
  skip "this kernel has no overlay file system for a throwaway root"
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
  capture lintian "$tests_dir/../scripts/lint_deb.sh" "$deb"
  expect_rc 0
fi

# The throwaway root: / seen through an overlay whose upper layer is a tmpfs, in a mount
# namespace that ends with the command (nothing stays mounted, the tmpfs is freed); /proc, /sys
# and /dev are the machine's, and its root is bound read-only at /run/idem-test-machine, where
# the install is checked not to reach. Whatever apt-get, dpkg and its triggers write lands in
# the tmpfs.
before=$(machine_status)
mkdir -m 0700 "$T/root"
capture inroot unshare --mount --propagation private sh -c '
  set -e
  root=$1
  shift
  mount -t tmpfs -o mode=0755 idem-test-root "$root"
  mkdir "$root/upper" "$root/work" "$root/merged"
  mount -t overlay idem-test-root \
    -o "lowerdir=/,upperdir=$root/upper,workdir=$root/work" "$root/merged"
  for dir in proc sys dev; do mount --rbind "/$dir" "$root/merged/$dir"; done
  mkdir "$root/merged/run/idem-test-machine"
  mount --bind -o ro / "$root/merged/run/idem-test-machine"
  exec chroot "$root/merged" "$@"' sh "$T/root" \
  env IDEM_PACKAGE_IN_ROOT="$deb" IDEM_PACKAGE_MACHINE_STATUS="$before" IDEM_TESTS_DIR="$tests_dir" \
  bash "$tests_dir/cli/test_package.sh"
expect_rc 0
# The machine's own system is as it was.
assert_eq "$before" "$(machine_status)" "the machine's idem package"
[[ -n $before || ! -e /usr/bin/idem ]] || fail "/usr/bin/idem appeared on the machine"
