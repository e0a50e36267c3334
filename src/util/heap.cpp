// See heap.hpp.
#include "util/heap.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace idem::util {

bool prefault_heap(size_t bytes, size_t mmap_threshold) {
  bool resident = false;
#if defined(__GLIBC__)
  ::mallopt(M_TRIM_THRESHOLD, int(2 * bytes));
#if defined(MADV_POPULATE_WRITE)
  ::mallopt(M_MMAP_THRESHOLD, int(2 * bytes));  // this block from the heap, not its own mapping
  if (char* block = static_cast<char*>(::malloc(bytes)); block != nullptr) {
    // The block's whole pages: what the heap gives the allocations after it is freed.
    const auto page = uintptr_t(::sysconf(_SC_PAGESIZE));
    const uintptr_t from = (uintptr_t(block) + page - 1) & ~(page - 1);
    const uintptr_t to = (uintptr_t(block) + bytes) & ~(page - 1);
    resident =
        to > from && ::madvise(reinterpret_cast<void*>(from), to - from, MADV_POPULATE_WRITE) == 0;
    ::free(block);
  }
#endif
  ::mallopt(M_MMAP_THRESHOLD, int(mmap_threshold));
#else
  (void)bytes;
  (void)mmap_threshold;
#endif
  return resident;
}

}  // namespace idem::util
