#include "core/json_key.hpp"

#include <nlohmann/json.hpp>

namespace idem::core {

namespace {

// nlohmann's messages start with "[json.exception.parse_error.107] parse error at byte 1: ";
// users need only what follows.
std::string reason(const nlohmann::json::exception& e) {
  std::string text = e.what();
  if (auto end = text.find("] "); text.starts_with("[json.exception.") && end != text.npos)
    text.erase(0, end + 2);
  if (text.starts_with("parse error"))
    if (auto colon = text.find(": "); colon != text.npos) text.erase(0, colon + 2);
  return text;
}

std::string where(const std::string& pointer) {
  return pointer.empty() ? "the document root" : "'" + pointer + "'";
}

std::string describe(const nlohmann::json& value) {
  if (value.is_null()) return "null";
  if (value.is_object()) return "an object";
  if (value.is_array()) return "an array";
  return std::string("a ") + value.type_name() + " value";
}

std::optional<std::string> fail(std::string* problem, std::string why) {
  if (problem) *problem = std::move(why);
  return std::nullopt;
}

}  // namespace

std::optional<std::string> key_from_json(const nlohmann::json& doc, const std::string& pointer,
                                         std::string* problem) {
  // The pointer is parsed on its own first so that a typo in it is reported as such, not as a
  // value missing from every document.
  std::optional<nlohmann::json::json_pointer> parsed;
  try {
    parsed.emplace(pointer);
  } catch (const nlohmann::json::exception& e) {
    if (e.id == 107)
      return fail(problem,
                  "bad JSON pointer '" + pointer + "': it must be empty or start with '/'");
    return fail(problem, "bad JSON pointer '" + pointer + "': " + reason(e));
  }

  const nlohmann::json* value = nullptr;
  try {
    value = &doc.at(*parsed);
  } catch (const nlohmann::json::exception& e) {
    // out_of_range for a missing member or index, parse_error for an array index that is not a
    // number ("/items/01", "/items/+1").
    return fail(problem, "no value at " + where(pointer) + " (" + reason(e) + ")");
  }

  switch (value->type()) {
    case nlohmann::json::value_t::string:
      return value->get_ref<const std::string&>();
    case nlohmann::json::value_t::number_integer:
      return std::to_string(value->get<int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return std::to_string(value->get<uint64_t>());
    case nlohmann::json::value_t::number_float:
      // The parser keeps only a double, not the digits: 7.0 and 7, or two integers past 2^64
      // that round alike, would share a key. Refusing is the only exact answer.
      return fail(problem, "the value at " + where(pointer) +
                               " is a number with a fraction or exponent (or past 64 bits); a key "
                               "must be a string or an integer");
    default:
      return fail(problem, "the value at " + where(pointer) + " is " + describe(*value) +
                               "; a key must be a string or an integer");
  }
}

}  // namespace idem::core
