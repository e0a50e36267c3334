#pragma once
// Unguessable random bytes from the kernel (getrandom). Knows nothing about idem.
#include <cstddef>
#include <string>

namespace idem::util {

// `bytes` random bytes as 2*bytes lower-case hex digits. Throws std::system_error when the kernel
// cannot supply them.
std::string random_hex(size_t bytes);

}  // namespace idem::util
