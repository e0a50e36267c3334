// What a claim on PostgreSQL cannot go below while each run is a process of its own (issue 39's
// PostgreSQL row): a C program linked with Debian's libpq as idem-pg is, which connects, claims a
// new key (the INSERT ... ON CONFLICT DO NOTHING of compare_pg.sh's pgbench script, on its copy
// of idem's table), runs /bin/true, records the outcome (its UPDATE), and exits: what `idem run`
// does, without idem's own start, checks, history or output. bench/pg_floor.sh times it beside
// `idem run` and pgbench -C.
//   PG_FLOOR_URL=postgresql://... pg_floor KEY     (the password from PGPASSFILE)
#include <libpq-fe.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

extern char** environ;

static const char k_claim[] =
    "INSERT INTO bench_floor.idem_records (key, fingerprint, kind, status, attempt, owner_host, "
    "owner_boot_id, owner_pid, owner_start, started_at, ttl_ms, request, attempt_token, "
    "lease_expires, replay_failures, owner_machine_id, owner_pid_ns) VALUES ($1, repeat('f', 64), "
    "'run', 'running', 1, 'host', 'boot', 4242, 1234567, 1700000000000, 86400000, "
    "'{\"argv\":[\"true\"],\"cwd\":\"/\"}', 'token0123456789abcdef', NULL, false, 'machine', "
    "4026531836) ON CONFLICT (key) DO NOTHING RETURNING attempt";
static const char k_outcome[] =
    "UPDATE bench_floor.idem_records SET status = 'succeeded', finished_at = 1700000000005, "
    "expires_at = 1700086400005, exit_code = 0, signal = NULL, timed_out = false, output = "
    "''::bytea, output_bytes = 0, output_truncated = false, note = '', response = NULL, "
    "attempt_token = '', lease_expires = NULL WHERE key = $1 AND attempt = 1 AND status = "
    "'running'";

static int fail(PGconn* c, const char* what) {
  fprintf(stderr, "pg_floor: %s: %s", what, PQerrorMessage(c));
  PQfinish(c);
  return 1;
}

int main(int argc, char** argv) {
  const char* url = getenv("PG_FLOOR_URL");
  if (argc != 2 || url == NULL) {
    fprintf(stderr, "usage: PG_FLOOR_URL=URL pg_floor KEY\n");
    return 2;
  }
  PGconn* c = PQconnectdb(url);
  if (PQstatus(c) != CONNECTION_OK) return fail(c, "connect");
  const char* key[1] = {argv[1]};
  PGresult* r = PQexecParams(c, k_claim, 1, NULL, key, NULL, NULL, 0);
  int claimed = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
  PQclear(r);
  if (!claimed) return fail(c, "claim");
  char* args[] = {"true", 0};
  pid_t pid;
  int status = 0;
  if (posix_spawnp(&pid, "true", 0, 0, args, environ) != 0 || waitpid(pid, &status, 0) != pid)
    return fail(c, "spawn");
  r = PQexecParams(c, k_outcome, 1, NULL, key, NULL, NULL, 0);
  int recorded = PQresultStatus(r) == PGRES_COMMAND_OK && atoi(PQcmdTuples(r)) == 1;
  PQclear(r);
  if (!recorded) return fail(c, "outcome");
  PQfinish(c);
  return 0;
}
