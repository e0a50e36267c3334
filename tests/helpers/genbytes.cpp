// genbytes: writes COUNT deterministic pseudo-random bytes (splitmix64 from SEED) to stdout, so
// tests get the same binary payload, every byte value included, on every run and machine.
//
//   genbytes COUNT [SEED]
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: genbytes COUNT [SEED]\n");
    return 2;
  }
  uint64_t remaining = std::strtoull(argv[1], nullptr, 10);
  uint64_t state = argc == 3 ? std::strtoull(argv[2], nullptr, 10) : 1;
  std::vector<unsigned char> block(64 * 1024);
  while (remaining > 0) {
    size_t size = remaining < block.size() ? static_cast<size_t>(remaining) : block.size();
    for (size_t i = 0; i < size; i += 8) {
      uint64_t word = splitmix64(state);
      for (size_t b = 0; b < 8 && i + b < size; ++b) block[i + b] = (word >> (8 * b)) & 0xff;
    }
    size_t done = 0;
    while (done < size) {
      ssize_t n = write(1, block.data() + done, size - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return 1;
      done += static_cast<size_t>(n);
    }
    remaining -= size;
  }
  return 0;
}
