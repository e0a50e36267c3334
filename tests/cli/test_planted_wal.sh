#!/usr/bin/env bash
# SQLite believes what a store's companions hold (a -wal's frames, a hot -journal), so a companion
# another user put beside the store would replay their record and run nothing. A store in a
# folder others can create files in (world-writable, sticky or not) is refused unless
# IDEM_ALLOW_SHARED_FOLDER=1; a -wal, -shm or -journal that is someone else's, or writable by
# others, is refused (74, one line, nothing run, the file left as it was), in any folder; doctor
# says which holds. The planting user is `nobody` when the test runs as root.
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"

chmod 0711 "$T"  # `nobody` may reach the shared folder, not list or read the rest
shared=$T/shared
mkdir -m 1777 "$shared"
db=$shared/idem.db
as_other=()
if [[ $(id -u) == 0 ]] && command -v setpriv >/dev/null; then
  as_other=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
fi

# --- A folder anyone can write: refused before anything is made ----------------------------------
capture shared idem --db "$db" run -k k -- touch "$T/ran"
expect_rc 74
assert_idem_error shared
file_has "$T/shared.err" "store folder $shared is mode 1777: anyone can put files beside the store" ||
  fail "unexpected message: $(cat "$T/shared.err")"
file_has "$T/shared.err" "IDEM_ALLOW_SHARED_FOLDER=1" || fail "no way out named: $(cat "$T/shared.err")"
[[ ! -e $T/ran && ! -e $db ]] || fail "something ran or was made in the shared folder"
capture doc env IDEM_DB="$db" "$IDEM_BIN" doctor --json
expect_rc 1
file_has "$T/doc.out" '"check":"folder-world-writable"' || fail "doctor: $(cat "$T/doc.out")"

# --- Allowed: it runs, and every open checks the companions ---------------------------------------
export IDEM_ALLOW_SHARED_FOLDER=1
idem --db "$db" run -k first -- true
capture allowed env IDEM_DB="$db" "$IDEM_BIN" doctor --json
file_has "$T/allowed.out" '"check":"folder-shared"' || fail "doctor, allowed: $(cat "$T/allowed.out")"
file_has "$T/allowed.out" 'one planted between that check and' ||
  fail "doctor does not say what the variable leaves: $(cat "$T/allowed.out")"

# plant SUFFIX: another user's (or, not as root, a file writable by others) companion, put there
# once the store's own was removed, as any SQLite client's last close removes its -wal and -shm.
plant() {
  rm -f "$db-wal" "$db-shm" "$db-journal"
  if ((${#as_other[@]})); then
    "${as_other[@]}" sh -c 'umask 0; printf planted > "$1"' sh "$db$1"
  else
    printf planted >"$db$1"
    chmod 0666 "$db$1"
  fi
}
for suffix in -wal -shm -journal; do
  plant "$suffix"
  capture planted idem --db "$db" run -k second -- touch "$T/ran"
  expect_rc 74
  assert_idem_error planted
  if ((${#as_other[@]})); then
    file_has "$T/planted.err" "store $db$suffix is owned by uid $(id -u nobody), not by you" ||
      fail "$suffix: unexpected message: $(cat "$T/planted.err")"
  else
    file_has "$T/planted.err" "store $db$suffix is mode 0666: others can write it" ||
      fail "$suffix: unexpected message: $(cat "$T/planted.err")"
  fi
  [[ ! -e $T/ran ]] || fail "$suffix: the command ran beside a planted companion"
  assert_eq planted "$(cat "$db$suffix")" "$suffix left as it was"
  capture planted_doc env IDEM_DB="$db" "$IDEM_BIN" doctor
  [[ $(cat "$T/planted_doc.out") == *"$db$suffix"* ]] ||
    fail "doctor does not name $suffix: $(cat "$T/planted_doc.out")"
  rm -f "$db$suffix"
done
idem --db "$db" run -k second -- touch "$T/ran"
[[ -e $T/ran ]] || fail "the store was not usable again once the planted files were gone"
unset IDEM_ALLOW_SHARED_FOLDER

# --- A private folder: one's own companion left writable by others is refused too ----------------
idem run -k mine -- true
chmod 0666 "$IDEM_DB-wal"
capture loose idem run -k mine2 -- true
expect_rc 74
file_has "$T/loose.err" "store $IDEM_DB-wal is mode 0666: others can write it" ||
  fail "unexpected message: $(cat "$T/loose.err")"
chmod 0600 "$IDEM_DB-wal"
idem run -k mine2 -- true
integrity_ok
