// interleave: writes pieces to stdout and stderr in a fixed order, waiting after each write until
// the reader has drained the pipe, so the order in which idem reads the two streams is the order
// given here (a test can then assert it byte for byte).
//
//   interleave [--no-wait] o:TEXT e:TEXT ... [x:CODE]
//
// o: writes TEXT to stdout, e: to stderr, x: exits with CODE (default 0). TEXT understands the
// escapes \n \t \r \0 \\ and \xHH. When the fd is not a pipe (FIONREAD fails) there is nothing
// to wait for. The wait gives up after 5 s: a reader that stopped reading must not hang the test.
// --no-wait writes each piece at once, one write(2) each, as a program that flushes after every
// line does: only a reader of one pipe for both streams can then see the order across them.
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <string_view>

namespace {

constexpr long k_poll_interval_ns = 200'000;  // 0.2 ms between FIONREAD checks
constexpr long k_give_up_after_ns = 5'000'000'000;

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "interleave: %s\n", message.c_str());
  std::exit(2);
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string unescape(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\') {
      out += text[i];
      continue;
    }
    if (++i == text.size()) die("trailing backslash");
    switch (text[i]) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case '0':
        out += '\0';
        break;
      case '\\':
        out += '\\';
        break;
      case 'x': {
        int hi = i + 1 < text.size() ? hex_digit(text[i + 1]) : -1;
        int lo = i + 2 < text.size() ? hex_digit(text[i + 2]) : -1;
        if (hi < 0 || lo < 0) die("\\x needs two hex digits");
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
        break;
      }
      default:
        die(std::string("unknown escape \\") + text[i]);
    }
  }
  return out;
}

void write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) die("write failed");
    done += static_cast<size_t>(n);
  }
}

void wait_drained(int fd) {
  const timespec pause{0, k_poll_interval_ns};
  for (long waited = 0; waited < k_give_up_after_ns; waited += k_poll_interval_ns) {
    int pending = 0;
    if (ioctl(fd, FIONREAD, &pending) != 0 || pending == 0) return;
    nanosleep(&pause, nullptr);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int exit_code = 0;
  int first = 1;
  const bool wait = !(argc > 1 && std::string_view(argv[1]) == "--no-wait");
  if (!wait) first = 2;
  for (int i = first; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg.size() < 2 || arg[1] != ':') die("bad piece: " + std::string(arg));
    std::string_view body = arg.substr(2);
    switch (arg[0]) {
      case 'o':
      case 'e': {
        int fd = arg[0] == 'o' ? 1 : 2;
        write_all(fd, unescape(body));
        if (wait) wait_drained(fd);
        break;
      }
      case 'x':
        exit_code = std::atoi(std::string(body).c_str());
        break;
      default:
        die("bad piece: " + std::string(arg));
    }
  }
  return exit_code;
}
