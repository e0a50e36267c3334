#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests (Debian's postgresql package):
#
#   scripts/pg_cluster.sh start   initdb in a new temp dir, start the server on a free loopback
#                                 port with its sockets in that dir, and print `export` lines to
#                                 eval: IDEM_TEST_PG_URL, PGPASSFILE, IDEM_TEST_PG_DIR and
#                                 IDEM_TEST_PG_PID
#   scripts/pg_cluster.sh stop DIR   stop the server of IDEM_TEST_PG_DIR (by its pid), remove DIR
#
# The server listens on 127.0.0.1 only, fsync on (the durability tests need it), scram-sha-256
# over TCP with a random password that only the 0600 PGPASSFILE holds (never argv, never the
# URL). initdb refuses to run as root, so as root the cluster runs as Debian's `postgres` user.
set -euo pipefail

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[[ -x ${bindir:-}/initdb ]] || { echo "pg_cluster: no PostgreSQL server (apt-get install postgresql)" >&2; exit 69; }

as_owner() {
  if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start() {
  local dir data port password tries
  # Under /tmp itself, so the server's user can reach it when we are root.
  dir=$(mktemp -d /tmp/idem-pg.XXXXXX)
  data=$dir/data
  password=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
  printf '%s\n' "$password" >"$dir/pwfile"
  [[ $(id -u) -ne 0 ]] || chown postgres: "$dir" "$dir/pwfile"
  chmod 0700 "$dir"
  as_owner "$bindir/initdb" -D "$data" -U idem --pwfile="$dir/pwfile" -A scram-sha-256 \
    --auth-local=trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
    { cat "$dir/initdb.log" >&2; exit 70; }
  rm -f "$dir/pwfile"
  for tries in 1 2 3 4 5 6 7 8 9 10; do
    port=$((20000 + RANDOM % 40000))
    # A port someone else holds makes the server exit at once: try another.
    if as_owner "$bindir/pg_ctl" -D "$data" -l "$dir/server.log" -w -t 60 start \
      -o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories=$dir -c fsync=on -c max_connections=300" \
      >/dev/null 2>&1; then
      break
    fi
    port=""
  done
  [[ -n $port ]] || { cat "$dir/server.log" >&2; exit 70; }
  local passfile=$dir/pgpass
  printf '127.0.0.1:%s:*:idem:%s\n' "$port" "$password" >"$passfile"
  chmod 0600 "$passfile"
  printf 'export IDEM_TEST_PG_URL=%q\n' "postgresql://idem@127.0.0.1:$port/postgres"
  printf 'export PGPASSFILE=%q\n' "$passfile"
  printf 'export IDEM_TEST_PG_DIR=%q\n' "$dir"
  printf 'export IDEM_TEST_PG_PID=%q\n' "$(head -n 1 "$data/postmaster.pid")"
}

# By the pid in postmaster.pid: SIGINT is a fast shutdown (sessions ended, no waiting for
# clients); SIGQUIT after 30 s.
stop() {
  local dir=$1 pid waited=0
  [[ $dir == /tmp/idem-pg.* && -d $dir ]] || { echo "pg_cluster: $dir is not a cluster dir" >&2; exit 64; }
  if [[ -f $dir/data/postmaster.pid ]]; then
    pid=$(head -n 1 "$dir/data/postmaster.pid")
    if kill -INT "$pid" 2>/dev/null; then
      while kill -0 "$pid" 2>/dev/null; do
        ((waited++ < 300)) || { kill -QUIT "$pid" 2>/dev/null || true; }
        sleep 0.1
      done
    fi
  fi
  rm -rf "$dir"
}

case "${1:-}" in
  start) start ;;
  stop) stop "${2:?usage: pg_cluster.sh stop DIR}" ;;
  *) echo "usage: pg_cluster.sh start | stop DIR" >&2; exit 64 ;;
esac
