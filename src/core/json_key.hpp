#pragma once
// Keys read from JSON documents by a JSON Pointer (RFC 6901): how `idem each --key-field` reads a
// key per input line and how `idem serve` reads a {"json": POINTER} key from a request body.
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

namespace idem::core {

// Returns the value at `pointer` in `doc` as key text: a string as is (not validated; callers
// pass it to core::Key::parse), an integer in decimal. Anything else (a malformed pointer, no value
// there, an object, array, boolean, null or a number with a fraction or exponent) gives nullopt
// and, when `problem` is not null, a sentence saying why. Throws nothing: the pointer and the
// document both come from users.
std::optional<std::string> key_from_json(const nlohmann::json& doc, const std::string& pointer,
                                         std::string* problem);

}  // namespace idem::core
