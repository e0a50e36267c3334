#include "util/random.hpp"

#include <sys/random.h>

#include <cerrno>
#include <system_error>

#include "util/hex.hpp"

namespace idem::util {

std::string random_hex(size_t bytes) {
  std::string raw(bytes, '\0');
  size_t got = 0;
  while (got < bytes) {
    // Blocks only until the kernel's pool is first initialised, early in boot.
    ssize_t n = ::getrandom(raw.data() + got, bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "getrandom");
    }
    got += size_t(n);
  }
  return to_hex(raw);
}

}  // namespace idem::util
