// What a server that runs a command per delivery cannot go below (issue 39's "serve new
// deliveries" row): HTTP/1.1 on 127.0.0.1 with keep-alive, one thread per connection, and for each
// request only posix_spawn("/bin/true"), waitpid and a 200 with an empty body. No store, no
// claim, no output captured, no cgroup, no log: a strict subset of what `idem serve` does for a
// new delivery, and of what webhook does (it also captures the output). bench/serve_floor.sh
// times it beside both.
//   serve_floor PORT_FILE      listens on 127.0.0.1:0 and writes the port it got to PORT_FILE
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <spawn.h>
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

static void* serve(void* arg) {
  int fd = (int)(long)arg;
  static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
  char buf[k_buffer];
  size_t have = 0;
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
    if (run_true() < 0) break;
    if (write(fd, answer, sizeof answer - 1) != (ssize_t)(sizeof answer - 1)) break;
    memmove(buf, buf + used, have - used);
    have -= used;
  }
done:
  close(fd);
  pthread_mutex_lock(&connections_lock);
  --connections;
  pthread_mutex_unlock(&connections_lock);
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: serve_floor PORT_FILE\n");
    return 2;
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
