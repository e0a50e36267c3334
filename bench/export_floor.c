/* The least an OTLP/HTTP export can cost a process that ends right after it (bench/traces.sh):
 * a static program that, given a port, connects to 127.0.0.1:PORT, writes one small export
 * request and closes, without reading the answer, as idem's CLI does; given nothing, it only
 * starts and exits. The difference of the two is what the kernel's loopback TCP (handshake,
 * delivery, close) costs, which no exporter over TCP avoids. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 2) return 0;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in to;
  memset(&to, 0, sizeof to);
  to.sin_family = AF_INET;
  to.sin_port = htons((unsigned short)atoi(argv[1]));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || connect(fd, (struct sockaddr*)&to, sizeof to) != 0) return 1;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  const char* body =
      "{\"resourceSpans\":[{\"resource\":{\"attributes\":[]},\"scopeSpans\":[{\"scope\":"
      "{\"name\":\"floor\"},\"spans\":[]}]}]}";
  char request[1024];
  int n = snprintf(request, sizeof request,
                   "POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                   "application/json\r\nConnection: close\r\nContent-Length: %zu\r\n\r\n%s",
                   strlen(body), body);
  if (send(fd, request, (size_t)n, MSG_NOSIGNAL) != n) return 1;
  close(fd);
  return 0;
}
