#pragma once
// The heap of a short-lived process, faulted in ahead.
#include <cstddef>

namespace idem::util {

// Makes the next `bytes` of glibc's heap resident and writable in one system call
// (MADV_POPULATE_WRITE), for a process that is about to allocate about that much: each page it
// would otherwise fault in on first touch costs a trap of its own, and on a virtual machine a
// trap costs several times the page's zeroing. The heap keeps them: glibc trims it no more while
// less than twice `bytes` is free at its top. Blocks above `mmap_threshold` come from mmap
// afterwards (malloc's M_MMAP_THRESHOLD, fixed from then on): the thresholds are set wherever
// the C library is glibc, also where the pages cannot be populated (a kernel before Linux 5.14,
// headers without MADV_POPULATE_WRITE). Returns whether the pages were made resident.
bool prefault_heap(size_t bytes, size_t mmap_threshold);

}  // namespace idem::util
