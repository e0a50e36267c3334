// tcp_fault_proxy: a TCP proxy in front of a PostgreSQL server on 127.0.0.1 that fails on
// command, so the end-to-end tests can lose a connection, or one answer, at an exact point.
//
//   tcp_fault_proxy UPSTREAM_PORT [--drop-answer-after WORD | --drop-message WORD] [--times N]
//
// Listens on 127.0.0.1 on a port the kernel picks, prints that port on stdout (one line) once
// listening, and forwards every connection it accepts to 127.0.0.1:UPSTREAM_PORT.
//
//   SIGUSR1  cuts every open connection at once (both sides closed); new ones are still accepted.
//   SIGTERM  ends it (so does SIGINT).
//   --drop-answer-after WORD
//            the first N (--times, default 1) client messages holding WORD (libpq sends a
//            statement's text in its Parse message) go to the server with the rest of their
//            batch (up to its Sync); the server's answer is thrown away when it comes, and both
//            sides are closed: the server acted on the statement (a COMMIT committed), the
//            client never learns it. Waiting for the answer first makes that certain.
//   --drop-message WORD
//            the same messages are never forwarded: both sides are closed at once, so the
//            server never sees the statement (the transaction it would have ended rolls back).
//
// Client messages are framed by the protocol (the untyped startup messages, then a type byte
// and a length each), so a WORD split across two reads is still found. A stream that stops
// looking like the protocol (TLS after an SSLRequest) is passed on unread.
// stderr gets one line per connection accepted and per fault, which tests may wait for.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace {

enum class Fault { none, drop_answer, drop_message };

struct Options {
  int upstream_port = 0;
  Fault fault = Fault::none;
  std::string word;
  int times = 1;
};

Options g_options;
std::atomic<int> g_faults_left{0};

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "tcp_fault_proxy: %s\n", message.c_str());
  std::exit(2);
}

void log_line(const std::string& text) {
  const std::string line = "tcp_fault_proxy: " + text + "\n";
  (void)!write(STDERR_FILENO, line.data(), line.size());  // one write: lines never interleave
}

// One forwarded connection: the client's socket and ours to the server.
struct Link {
  int client = -1;
  int server = -1;
  std::atomic<bool> drop_answer{false};  // the server's next bytes are thrown away, then cut
  ~Link() {
    close(client);
    close(server);
  }
  // Both sides at once; wakes both pumps (their reads return 0). The fds stay open, so never
  // reused, until the last owner of the Link lets go.
  void cut() const {
    shutdown(client, SHUT_RDWR);
    shutdown(server, SHUT_RDWR);
  }
};

std::mutex g_links_mutex;
std::list<std::weak_ptr<Link>> g_links;

void cut_all() {
  std::lock_guard lock(g_links_mutex);
  int open = 0;
  for (const auto& weak : g_links)
    if (auto link = weak.lock()) {
      link->cut();
      ++open;
    }
  log_line("cut " + std::to_string(open) + " connection(s)");
}

bool send_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += size_t(n);
  }
  return true;
}

uint32_t be32(const std::string& bytes, size_t at) {
  uint32_t v;
  std::memcpy(&v, bytes.data() + at, 4);
  return ntohl(v);
}

// Splits the client's byte stream into protocol messages: untyped ones first (an SSLRequest or
// GSSENCRequest, then the StartupMessage), then a type byte and a length each.
class ClientFramer {
 public:
  void feed(const char* data, size_t size) { buf_.append(data, size); }

  // The next whole message, or nothing until more bytes come.
  std::optional<std::string> next() {
    const size_t left = buf_.size() - pos_;
    if (left == 0) return std::nullopt;
    if (raw_) return take(left);
    if (typed_ && !std::isalpha(static_cast<unsigned char>(buf_[pos_]))) {
      raw_ = true;  // not the protocol (TLS): pass it on as it comes
      return take(left);
    }
    const size_t type_bytes = typed_ ? 1 : 0;
    if (left < type_bytes + 4) return std::nullopt;
    const size_t length = be32(buf_, pos_ + type_bytes);
    if (length < 4) {
      raw_ = true;  // a length that does not count itself: not the protocol either
      return take(left);
    }
    if (left < type_bytes + length) return std::nullopt;
    std::string message = take(type_bytes + length);
    if (!typed_ && message.size() >= 8) {
      const uint32_t code = be32(message, 4);
      typed_ = code != k_ssl_request && code != k_gssenc_request;
    }
    return message;
  }

 private:
  static constexpr uint32_t k_ssl_request = 80877103;
  static constexpr uint32_t k_gssenc_request = 80877104;

  std::string take(size_t size) {
    std::string message = buf_.substr(pos_, size);
    pos_ += size;
    if (pos_ == buf_.size()) {
      buf_.clear();
      pos_ = 0;
    }
    return message;
  }

  std::string buf_;
  size_t pos_ = 0;
  bool typed_ = false;
  bool raw_ = false;
};

// Whether this message starts a fault (it holds the word and faults are left to make).
bool takes_fault(const std::string& message) {
  if (g_options.fault == Fault::none || message.find(g_options.word) == std::string::npos)
    return false;
  int left = g_faults_left.load();
  while (left > 0 && !g_faults_left.compare_exchange_weak(left, left - 1)) {
  }
  return left > 0;
}

// A Sync ends a batch of extended-protocol messages; a simple Query is a batch of its own.
bool ends_batch(const std::string& message) { return message[0] == 'S' || message[0] == 'Q'; }

// Client to server, message by message, watching for the fault's word.
void pump_client(const std::shared_ptr<Link>& link) {
  ClientFramer framer;
  bool armed = false;  // a message with the word went by: its batch's answer is to be lost
  char chunk[65536];
  for (;;) {
    const ssize_t n = read(link->client, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    framer.feed(chunk, size_t(n));
    std::string out;
    while (std::optional<std::string> message = framer.next()) {
      if (!armed && takes_fault(*message)) {
        armed = true;
        if (g_options.fault == Fault::drop_message) {
          send_all(link->server, out);  // what came before it, whole
          log_line("dropped a message holding '" + g_options.word + "'");
          link->cut();
          return;
        }
      }
      out += *message;
      if (armed && !message->empty() && ends_batch(*message)) {
        armed = false;
        link->drop_answer = true;  // before the server can answer
        log_line("forwarded a message holding '" + g_options.word + "'; its answer is lost");
      }
    }
    if (!send_all(link->server, out)) break;
  }
  link->cut();
}

// Server to client, unless the answer is to be lost.
void pump_server(const std::shared_ptr<Link>& link) {
  char chunk[65536];
  for (;;) {
    const ssize_t n = read(link->server, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (link->drop_answer) {
      log_line("the server answered; the answer is dropped and the connection cut");
      break;
    }
    if (!send_all(link->client, std::string(chunk, size_t(n)))) break;
  }
  link->cut();
}

int connect_upstream() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(g_options.upstream_port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return fd;
  if (fd >= 0) close(fd);
  return -1;
}

int listen_loopback() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof addr;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(fd, 128) != 0 || getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &size) != 0)
    die(std::string("cannot listen on 127.0.0.1: ") + std::strerror(errno));
  std::printf("%d\n", ntohs(addr.sin_port));
  std::fflush(stdout);
  return fd;
}

void serve(int listener) {
  for (long accepted = 1;; ++accepted) {
    const int client = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      die(std::string("accept: ") + std::strerror(errno));
    }
    log_line("connection " + std::to_string(accepted));
    const int server = connect_upstream();
    if (server < 0) {
      log_line("connection " + std::to_string(accepted) + ": upstream refused it");
      close(client);
      continue;
    }
    auto link = std::make_shared<Link>();
    link->client = client;
    link->server = server;
    {
      std::lock_guard lock(g_links_mutex);
      g_links.remove_if([](const std::weak_ptr<Link>& weak) { return weak.expired(); });
      g_links.push_back(link);
    }
    std::thread(pump_client, link).detach();
    std::thread(pump_server, link).detach();
  }
}

// The signals are blocked in every thread and taken here, one at a time.
void handle_signals(sigset_t set) {
  for (;;) {
    int sig = 0;
    if (sigwait(&set, &sig) != 0) continue;
    if (sig == SIGUSR1) {
      cut_all();
    } else {
      log_line("ending");
      _exit(0);
    }
  }
}

Options parse(int argc, char** argv) {
  Options o;
  if (argc < 2)
    die("usage: tcp_fault_proxy UPSTREAM_PORT [--drop-answer-after WORD | --drop-message WORD]"
        " [--times N]");
  o.upstream_port = std::atoi(argv[1]);
  if (o.upstream_port <= 0 || o.upstream_port > 65535)
    die("bad upstream port " + std::string(argv[1]));
  for (int i = 2; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) die(flag + " needs a value");
    const std::string value = argv[i + 1];
    if (flag == "--drop-answer-after" || flag == "--drop-message") {
      o.fault = flag == "--drop-message" ? Fault::drop_message : Fault::drop_answer;
      o.word = value;
    } else if (flag == "--times") {
      o.times = std::atoi(value.c_str());
    } else {
      die("unknown option " + flag);
    }
  }
  if (o.fault != Fault::none && o.word.empty()) die("the word to watch for is empty");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  g_options = parse(argc, argv);
  g_faults_left = g_options.times;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // before any thread starts: they inherit it
  const int listener = listen_loopback();
  std::thread(handle_signals, set).detach();
  serve(listener);
}
