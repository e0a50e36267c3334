// What a server that runs a command per delivery cannot go below (issue 39's "serve new
// deliveries" row): HTTP/1.1 on 127.0.0.1 with keep-alive, one thread per connection, and for each
// request only posix_spawn("/bin/true"), waitpid and a 200 with an empty body. No store, no
// claim, no output captured, no cgroup, no log: a strict subset of what `idem serve` does for a
// new delivery, and of what webhook does (it also captures the output). bench/serve_floor.sh
// times it beside both.
// Given a store, what a server that answers duplicates from SQLite cannot go below ("serve
// replays"): the same HTTP, and for each request one read of the record named PREFIX + the
// request's X-Delivery from idem's store (its status and stored response, by the key's index, on
// the connection's own SQLite connection, opened once), then a 200 with an empty body; 404 when
// there is no finished record. No body read back, no replay counted, no log, no metrics.
//   serve_floor PORT_FILE                listens on 127.0.0.1:0 and writes the port it got to
//                                        PORT_FILE
//   serve_floor PORT_FILE STORE PREFIX   answers from STORE instead of running /bin/true
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <spawn.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

enum { k_max_connections = 256, k_buffer = 16384 };
static int connections;  // open connections, at most k_max_connections
static pthread_mutex_t connections_lock = PTHREAD_MUTEX_INITIALIZER;
static const char* store;       // replays: idem's store, NULL: run /bin/true
static const char* key_prefix;  // replays: what the record's key starts with ("/hook#")

static int run_true(void) {
  char* argv[] = {"/bin/true", 0};
  pid_t pid;
  if (posix_spawn(&pid, "/bin/true", 0, 0, argv, environ) != 0) return -1;
  int status;
  while (waitpid(pid, &status, 0) < 0)
    ;
  return status;
}

// The request's body length from its head (0 without Content-Length).
static long body_length(const char* head, const char* end) {
  for (const char* p = head; p < end; ++p) {
    if (p[0] == '\n' && end - p > 16 && strncasecmp(p + 1, "content-length:", 15) == 0)
      return strtol(p + 16, 0, 10);
  }
  return 0;
}

// The value of the request's X-Delivery header, copied into `out` (empty when there is none).
static void delivery_id(const char* head, const char* end, char* out, size_t size) {
  out[0] = 0;
  for (const char* p = head; p < end; ++p) {
    if (p[0] != '\n' || end - p < 13 || strncasecmp(p + 1, "x-delivery:", 11) != 0) continue;
    const char* v = p + 12;
    while (v < end && *v == ' ') ++v;
    size_t n = 0;
    while (v + n < end && v[n] != '\r' && n + 1 < size) ++n;
    memcpy(out, v, n);
    out[n] = 0;
    return;
  }
}

// Replays: 1 when the record of `id` is finished, 0 when not, -1 on a store error.
static int finished(sqlite3_stmt* select, const char* id) {
  char key[512];
  snprintf(key, sizeof key, "%s%s", key_prefix, id);
  sqlite3_bind_text(select, 1, key, -1, SQLITE_TRANSIENT);
  int rc = sqlite3_step(select);
  int done =
      rc == SQLITE_ROW && strcmp((const char*)sqlite3_column_text(select, 0), "succeeded") == 0;
  sqlite3_reset(select);
  return rc == SQLITE_ROW || rc == SQLITE_DONE ? done : -1;
}

static void* serve(void* arg) {
  int fd = (int)(long)arg;
  static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
  static const char missing[] = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
  char buf[k_buffer];
  size_t have = 0;
  sqlite3* db = 0;
  sqlite3_stmt* select = 0;
  if (store && (sqlite3_open_v2(store, &db, SQLITE_OPEN_READWRITE, 0) != SQLITE_OK ||
                sqlite3_busy_timeout(db, 5000) != SQLITE_OK ||
                sqlite3_prepare_v2(db, "SELECT status, response FROM records WHERE key = ?1", -1,
                                   &select, 0) != SQLITE_OK)) {
    fprintf(stderr, "serve_floor: %s: %s\n", store, sqlite3_errmsg(db));
    goto done;
  }
  for (;;) {
    char* head_end = have ? memmem(buf, have, "\r\n\r\n", 4) : 0;
    if (!head_end) {
      if (have == sizeof buf) break;  // a head larger than the buffer: not served
      ssize_t n = read(fd, buf + have, sizeof buf - have);
      if (n <= 0) break;
      have += (size_t)n;
      continue;
    }
    size_t used = (size_t)(head_end + 4 - buf) + (size_t)body_length(buf, head_end);
    if (used > sizeof buf) break;  // a body larger than the buffer: not served
    while (have < used) {
      ssize_t n = read(fd, buf + have, sizeof buf - have);
      if (n <= 0) goto done;
      have += (size_t)n;
    }
    if (store) {
      char id[256];
      delivery_id(buf, head_end, id, sizeof id);
      int found = finished(select, id);
      if (found < 0) break;
      const char* reply = found ? answer : missing;
      size_t n = found ? sizeof answer - 1 : sizeof missing - 1;
      if (write(fd, reply, n) != (ssize_t)n) break;
    } else {
      if (run_true() < 0) break;
      if (write(fd, answer, sizeof answer - 1) != (ssize_t)(sizeof answer - 1)) break;
    }
    memmove(buf, buf + used, have - used);
    have -= used;
  }
done:
  sqlite3_finalize(select);
  sqlite3_close(db);
  close(fd);
  pthread_mutex_lock(&connections_lock);
  --connections;
  pthread_mutex_unlock(&connections_lock);
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 2 && argc != 4) {
    fprintf(stderr, "usage: serve_floor PORT_FILE [STORE PREFIX]\n");
    return 2;
  }
  if (argc == 4) {
    store = argv[2];
    key_prefix = argv[3];
  }
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (bind(s, (struct sockaddr*)&a, sizeof a) != 0 || listen(s, 128) != 0 ||
      getsockname(s, (struct sockaddr*)&a, &len) != 0) {
    perror("serve_floor: listen");
    return 1;
  }
  FILE* f = fopen(argv[1], "w");
  if (!f || fprintf(f, "%d\n", ntohs(a.sin_port)) < 0 || fclose(f) != 0) {
    perror("serve_floor: port file");
    return 1;
  }
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  for (;;) {
    int c = accept4(s, 0, 0, SOCK_CLOEXEC);
    if (c < 0) continue;
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    pthread_mutex_lock(&connections_lock);
    int full = connections >= k_max_connections;
    if (!full) ++connections;
    pthread_mutex_unlock(&connections_lock);
    pthread_t t;
    if (full || pthread_create(&t, &attr, serve, (void*)(long)c) != 0) {
      if (!full) {
        pthread_mutex_lock(&connections_lock);
        --connections;
        pthread_mutex_unlock(&connections_lock);
      }
      close(c);
    }
  }
}
