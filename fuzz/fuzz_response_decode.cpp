// The stored-answer decoder (core/response.hpp). A record's response is read back from a database
// a user can edit, so any text must either decode or be refused, never throw or crash; whatever
// decodes is a response the store could have written, and stores back to a form that decodes to
// the same response.
#include <cstdint>
#include <string>
#include <string_view>

#include "core/response.hpp"
#include "fuzz_check.hpp"

using idem::core::decode_response;
using idem::core::encode_response;
using idem::core::header_value;
using idem::core::response_problem;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto decoded = decode_response(text);  // must not throw: an exception aborts the target
  if (!decoded) return 0;
  FUZZ_CHECK(!response_problem(*decoded));
  FUZZ_CHECK(decoded->status >= 100 && decoded->status <= 599);
  for (const auto& [name, value] : decoded->headers) {
    FUZZ_CHECK(!name.empty());
    FUZZ_CHECK(value.find_first_of("\r\n") == std::string::npos);
    FUZZ_CHECK(header_value(*decoded, name).has_value());
  }
  const std::string stored = encode_response(*decoded);
  auto again = decode_response(stored);
  FUZZ_CHECK(again && *again == *decoded);
  FUZZ_CHECK(encode_response(*again) == stored);
  return 0;
}
