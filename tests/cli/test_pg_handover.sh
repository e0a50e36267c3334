#!/usr/bin/env bash
# The static idem's hand-over of a PostgreSQL store to idem-pg (src/cli/common.cpp): idem-pg is
# exec'd with GNUTLS_NO_IMPLICIT_INIT=1, so that libgnutls (loaded with libpq) skips its
# initialisation at load time; the command and the notify command idem-pg runs never see it nor
# the marker that goes with it; a user's own GNUTLS_NO_IMPLICIT_INIT, whatever its value, reaches
# them unchanged. Then, on a cluster of the test's own that takes TLS connections only, idem-pg
# connects with sslmode=require and verify-full (libpq's TLS is OpenSSL's: nothing needs GnuTLS's
# implicit initialisation).
source "${IDEM_TESTS_DIR:-$(dirname "$0")/..}/cli/lib.sh"
[[ -n ${IDEM_TEST_PG_URL:-} ]] ||
  skip "IDEM_TEST_PG_URL is not set (scripts/test.sh starts a test cluster)"
[[ -x $(dirname "$IDEM_BIN")/idem-pg ]] || skip "this idem has no idem-pg (not a static build)"
unset GNUTLS_NO_IMPLICIT_INIT IDEM_PG_ADDED_GNUTLS_NO_IMPLICIT_INIT

_pg_schema=idem_test_$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')  # dropped by lib.sh's cleanup
psql -qX "$IDEM_TEST_PG_URL" -c "CREATE SCHEMA $_pg_schema"
export IDEM_STORE="$IDEM_TEST_PG_URL?options=-csearch_path%3D$_pg_schema"

# The command writes its environment, and the environment its parent (idem-pg) was exec'd with:
# /proc/PID/environ is the block the exec gave, which unsetenv does not change.
report_env='env >"$1.env"; tr "\0" "\n" <"/proc/$PPID/environ" >"$1.exec"; readlink "/proc/$PPID/exe" >"$1.exe"'
gnutls_lines() { grep -E '^(GNUTLS_NO_IMPLICIT_INIT|IDEM_PG_ADDED_GNUTLS_NO_IMPLICIT_INIT)=' "$1" || true; }

# a. No GNUTLS_NO_IMPLICIT_INIT of the user's: idem-pg gets it (and the marker) at exec, the
# command does not see either.
capture added idem run -k added -- sh -c "$report_env" sh "$T/added"
expect_rc 0
assert_eq "$(dirname "$IDEM_BIN")/idem-pg" "$(cat "$T/added.exe")" "the command's parent"
assert_eq $'GNUTLS_NO_IMPLICIT_INIT=1\nIDEM_PG_ADDED_GNUTLS_NO_IMPLICIT_INIT=1' \
  "$(gnutls_lines "$T/added.exec" | sort)" "what idem-pg was exec'd with"
assert_eq "" "$(gnutls_lines "$T/added.env")" "what the command sees"
# The rest of the environment is the user's, as it was.
file_has "$T/added.env" "IDEM_TEST_DIR=$T" || fail "the command lost the user's variables"

# The notify command, run by idem-pg too, does not see them either.
capture notified idem run -k notified --on-failure "env >'$T/notify.env'" -- false
expect_rc 1
file_has "$T/notify.env" "IDEM_EVENT=failed" || fail "no notify command ran: $(cat "$T/notified.err")"
assert_eq "" "$(gnutls_lines "$T/notify.env")" "what the notify command sees"

# b. The user's own GNUTLS_NO_IMPLICIT_INIT, whatever its value, reaches the command as it is,
# and no marker is added with it.
for value in 0 1 "" yes; do
  capture "user-$value" env GNUTLS_NO_IMPLICIT_INIT="$value" \
    "$IDEM_BIN" run -k "user-$value" -- sh -c "$report_env" sh "$T/user-$value"
  expect_rc 0
  assert_eq "GNUTLS_NO_IMPLICIT_INIT=$value" "$(gnutls_lines "$T/user-$value.env")" \
    "what the command sees with the user's value '$value'"
  assert_eq "GNUTLS_NO_IMPLICIT_INIT=$value" "$(gnutls_lines "$T/user-$value.exec")" \
    "what idem-pg was exec'd with for the user's value '$value'"
done

# c. TLS, on a cluster of the test's own whose pg_hba.conf takes TLS connections only: a
# self-signed certificate for 127.0.0.1, turned on by a reload.
own_pg_cluster
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$own_dir/server.key" -out "$own_dir/server.crt" \
  >/dev/null 2>&1 || fail "openssl could not make a certificate"
cp "$own_dir/server.crt" "$T/root.crt"
chmod 0600 "$own_dir/server.key"
(($(id -u) != 0)) || chown postgres: "$own_dir/server.key" "$own_dir/server.crt"
own_sql() { psql -qXAt -v ON_ERROR_STOP=1 "$own_url" -c "$1"; }
own_sql "ALTER SYSTEM SET ssl_cert_file = '$own_dir/server.crt'"
own_sql "ALTER SYSTEM SET ssl_key_file = '$own_dir/server.key'"
own_sql "ALTER SYSTEM SET ssl = on"
hba=$(own_sql "SHOW hba_file")
printf 'local all all trust\nhostssl all all 127.0.0.1/32 scram-sha-256\n' >"$hba"
own_sql "SELECT pg_reload_conf()" >/dev/null
wait_until "the server takes TLS" psql -qXAt -o /dev/null "$own_url?sslmode=require" -c "SELECT 1"

# A connection without TLS is refused (so the runs below that succeed used it), then
# sslmode=require and verify-full run the command once each and replay it.
capture plain env IDEM_STORE="$own_url?sslmode=disable" "$IDEM_BIN" run -k tls -- true
expect_rc 74
for mode in "sslmode=require" "sslmode=verify-full&sslrootcert=$T/root.crt"; do
  key="tls-${mode%%&*}"
  for attempt in first replay; do
    capture "$key-$attempt" env IDEM_STORE="$own_url?$mode" \
      "$IDEM_BIN" run -k "$key" -- sh -c 'echo x >>"$1"' sh "$T/$key.count"
    expect_rc 0
  done
  assert_lines 1 "$T/$key.count"
done
# verify-full checks the certificate: another root is refused.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=other -keyout "$T/other.key" \
  -out "$T/other.crt" >/dev/null 2>&1
capture wrong-root env IDEM_STORE="$own_url?sslmode=verify-full&sslrootcert=$T/other.crt" \
  "$IDEM_BIN" run -k wrong-root -- true
expect_rc 74
assert_idem_error
