// heap_probe [--prefault]: in a new process, allocates and writes 96 blocks of 4000 bytes, and
// prints how many page faults (minor and major) that took. With --prefault, the heap is faulted
// in ahead first (util::prefault_heap, as `idem run` does at its start); "unsupported" when this
// system cannot.
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "util/heap.hpp"

int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "--prefault" &&
      !idem::util::prefault_heap(512 * 1024, 256 * 1024)) {
    std::puts("unsupported");
    return 0;
  }
  constexpr int k_blocks = 96;
  static char* blocks[k_blocks];
  rusage before{};
  rusage after{};
  ::getrusage(RUSAGE_SELF, &before);
  for (char*& block : blocks) {
    block = static_cast<char*>(std::malloc(4000));
    if (block == nullptr) return 1;
    std::memset(block, 1, 4000);
  }
  ::getrusage(RUSAGE_SELF, &after);
  std::printf("%ld\n", (after.ru_minflt - before.ru_minflt) + (after.ru_majflt - before.ru_majflt));
  for (char* block : blocks) std::free(block);
  return 0;
}
