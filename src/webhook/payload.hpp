#pragma once
// The payloads of webhook hooks (webhook/request.hpp) as the Go `webhook` server decodes and
// renders them: JSON whose numbers keep the text they were written with (Go's json.Number), XML
// in the conventions of the mxj package it uses, and Go's json.Marshal for values that are passed
// on as JSON. Pure.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace idem::webhook {

// Nesting deeper than this is refused when decoding (JSON and XML alike), so that rendering and
// destroying a payload never recurse without bound.
inline constexpr size_t k_max_payload_depth = 512;

// A JSON number as written ("1.50", "1e3", "18446744073709551616"): stored as a binary value of
// subtype k_number_subtype holding the text, which no JSON text can produce otherwise.
inline constexpr std::uint64_t k_number_subtype = 0x4e;
nlohmann::json json_number(std::string_view text);
// The text of a json_number, or nullptr when `value` is not one.
const std::vector<std::uint8_t>* number_text(const nlohmann::json& value);

// A Go map that is nil: what webhook puts in the payload for a multipart file part it decodes
// as JSON when that part holds no JSON object. go_json and go_string both render it "null"
// (where go_string renders a JSON null "<nil>"); it is no object, so nothing is found below it.
inline constexpr std::uint64_t k_nil_map_subtype = 0x6d;
nlohmann::json nil_map();
bool is_nil_map(const nlohmann::json& value);

struct Decoded {
  nlohmann::json value;  // null when `error` is set
  std::string error;     // "" when it parsed
};

// The first JSON value of `text`, as Go's json.Decoder reads it (what follows that value is
// never looked at); numbers are json_number values, a repeated name keeps its last value.
Decoded decode_json(std::string_view text);

// An XML document as mxj's NewMapXmlReader maps it: {root: value}, where an element's value is
// its text when it has neither attributes nor child elements (trimmed; "" when empty), else an
// object of its attributes ("-" + local name), its child elements by local name (repeated ones
// as arrays) and its text as "#text". What follows the root element is never looked at. A
// reference to an entity a DTD declares is an error (Go's decoder expands none).
Decoded decode_xml(std::string_view text);

// The JSON object that starts `text`, as a Go json.Decoder with UseNumber decodes it into a
// map[string]interface{} (webhook's multipart file parts): nil_map when the text holds null,
// another JSON value or no valid JSON (`error` says which, for the log).
Decoded decode_json_object(std::string_view text);

// `value` as Go's json.Marshal writes it: compact, object members sorted by name, json_number
// values as their text, strings with <, >, & and U+2028/U+2029 escaped and invalid UTF-8
// replaced by U+FFFD.
std::string go_json(const nlohmann::json& value);

// A value as webhook passes a parameter on: a string as it is, a number as written, "true" or
// "false", "<nil>" for null (Go's fmt of a nil interface), objects and arrays as go_json.
std::string go_string(const nlohmann::json& value);

}  // namespace idem::webhook
