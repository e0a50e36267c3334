#pragma once
// Text from a user or a file shown inside a one-line message. Knows nothing about idem.
#include <string>
#include <string_view>

namespace idem::util {

// `text` in double quotes, with '"' and '\' escaped by a backslash, \n, \t and \r as such, and
// every other byte outside printable ASCII as \xNN: the message stays one line of ASCII.
std::string quote(std::string_view text);

}  // namespace idem::util
