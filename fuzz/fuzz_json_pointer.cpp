// Keys read by a JSON Pointer (core/json_key.hpp), as `idem each --key-field` and `idem serve`'s
// {"json": POINTER} key will read them. The input is the pointer, a newline, then the document.
// key_from_json must throw nothing and agree with a lookup done another way (contains() then
// the value's type); nlohmann itself may throw only its own exceptions while parsing.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/json_key.hpp"
#include "fuzz_check.hpp"

using nlohmann::json;

namespace {

// A document with every kind of value, for inputs whose own document does not parse.
const json& fixed_document() {
  static const json doc = json::parse(R"({"id": "k-1", "n": 17, "neg": -3,
    "u": 18446744073709551615, "f": 1.5, "e": 1e3, "t": true, "z": null, "o": {"a": {"b": "deep"}},
    "arr": ["x", 2, [3], {"y": "z"}], "a/b": "slash", "m~n": "tilde", "": "empty", "~1": "t1"})");
  return doc;
}

// The key the value at `pointer` should give, found with contains() rather than at().
std::optional<std::string> expected_key(const json& doc, const std::string& pointer) {
  try {
    json::json_pointer parsed(pointer);
    if (!doc.contains(parsed)) return std::nullopt;
    const json& value = doc[parsed];
    if (value.is_string()) return value.get<std::string>();
    if (value.is_number_unsigned()) return std::to_string(value.get<uint64_t>());
    if (value.is_number_integer()) return std::to_string(value.get<int64_t>());
    return std::nullopt;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

std::string escape_token(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out.push_back(c);
  }
  return out;
}

void check_lookup(const json& doc, const std::string& pointer) {
  std::optional<std::string> key;
  std::string problem = "unset";
  try {
    key = idem::core::key_from_json(doc, pointer, &problem);
    // Without a place for the problem it must give the same answer.
    FUZZ_CHECK(idem::core::key_from_json(doc, pointer, nullptr) == key);
  } catch (...) {
    FUZZ_CHECK(!"key_from_json threw");
  }
  FUZZ_CHECK(key == expected_key(doc, pointer));
  if (key) {
    FUZZ_CHECK(problem == "unset");
  } else {
    FUZZ_CHECK(!problem.empty() && problem != "unset");
    // Users see the problem: nlohmann's internal prefixes are stripped (the problem quotes the
    // pointer, so a pointer that spells one out is exempt).
    if (pointer.find("[json.exception") == std::string::npos)
      FUZZ_CHECK(problem.find("[json.exception") == std::string::npos);
  }
}

// Every member or element one level down, by its escaped name: this is where ~0 and ~1 matter.
void check_children(const json& doc) {
  size_t seen = 0;
  for (auto it = doc.begin(); it != doc.end() && seen < 16; ++it, ++seen) {
    std::string token = doc.is_object() ? escape_token(it.key()) : std::to_string(seen);
    std::optional<std::string> key;
    try {
      key = idem::core::key_from_json(doc, "/" + token, nullptr);
    } catch (...) {
      FUZZ_CHECK(!"key_from_json threw");
    }
    const json& value = it.value();
    if (value.is_string())
      FUZZ_CHECK(key == value.get<std::string>());
    else if (value.is_number_unsigned())
      FUZZ_CHECK(key == std::to_string(value.get<uint64_t>()));
    else if (value.is_number_integer())
      FUZZ_CHECK(key == std::to_string(value.get<int64_t>()));
    else
      FUZZ_CHECK(!key);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  size_t newline = input.find('\n');
  std::string pointer(input.substr(0, newline));
  std::string_view text = newline == input.npos ? std::string_view() : input.substr(newline + 1);

  check_lookup(fixed_document(), pointer);

  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception&) {
    // Not JSON: what `each` and `serve` report as a bad line or body.
    return 0;
  } catch (...) {
    FUZZ_CHECK(!"json::parse threw something other than json::exception");
  }
  check_lookup(doc, pointer);
  if (doc.is_structured()) check_children(doc);
  return 0;
}
