#pragma once
// YAML hooks files as the JSON document webhook's loader makes of them (it converts YAML to
// JSON, then reads that): plain scalars resolved as YAML 1.1 does (null and ~, true/false and
// yes/no/on/off, integers in decimal, 0x, 0o, 0b or a leading 0 for octal, floats, .inf, .nan),
// quoted and block scalars kept as strings, aliases expanded. The only file that includes
// yaml-cpp.
#include <string>

#include "front/config_fields.hpp"

namespace idem::webhook {

// The first document of `text` (null when there is none). Throws front::config_fields::Problem for
// a text that is not YAML (with its line and column), a key given twice in one mapping, a key that
// is not a scalar, or aliases that expand to more values than a hooks file can sensibly hold.
front::config_fields::Json parse_yaml(const std::string& text);

}  // namespace idem::webhook
