#pragma once
// Well-formed UTF-8, byte ranges only (no decoding). Knows nothing about idem.
#include <cstddef>
#include <string_view>

namespace idem::util {

// The length of the well-formed UTF-8 sequence that starts at text[at] (RFC 3629, as Go's
// utf8.DecodeRuneInString accepts: no overlong forms, no surrogates, nothing past U+10FFFF): 1
// for an ASCII byte, 0 when the byte there starts none (a stray continuation byte, a cut or
// overlong sequence). `at` < text.size().
size_t utf8_sequence_at(std::string_view text, size_t at);

}  // namespace idem::util
