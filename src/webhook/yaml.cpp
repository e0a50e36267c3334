#include "webhook/yaml.hpp"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

namespace idem::webhook {

namespace {

using front::config_fields::fail;
using front::config_fields::Json;
using front::config_fields::printable;
using front::config_fields::quote;

// Aliases share nodes, so a small file can stand for an exponential document ("billion laughs").
constexpr size_t k_max_values = 200'000;
constexpr int k_max_depth = 200;

std::string where(const YAML::Node& node) {
  YAML::Mark mark = node.Mark();
  if (mark.line < 0) return "";
  return "line " + std::to_string(mark.line + 1) + ", column " + std::to_string(mark.column + 1);
}

// Unicode's well-formed UTF-8 (table 3-7). JSON's parser refuses anything else, and so does
// webhook's YAML loader; yaml-cpp does not check.
bool valid_utf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    auto lead = static_cast<unsigned char>(text[i]);
    size_t trail = lead < 0x80                    ? 0
                   : lead >= 0xC2 && lead <= 0xDF ? 1
                   : lead >= 0xE0 && lead <= 0xEF ? 2
                   : lead >= 0xF0 && lead <= 0xF4 ? 3
                                                  : 4;
    if (trail == 4 || i + trail >= text.size()) return false;
    unsigned char low = 0x80, high = 0xBF;  // the range of the first trailing byte
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
    for (size_t k = 1; k <= trail; ++k) {
      auto byte = static_cast<unsigned char>(text[i + k]);
      if (byte < (k == 1 ? low : 0x80) || byte > (k == 1 ? high : 0xBF)) return false;
    }
    i += trail + 1;
  }
  return true;
}

bool one_of(std::string_view text, std::initializer_list<std::string_view> names) {
  for (std::string_view name : names)
    if (text == name) return true;
  return false;
}

// An integer as YAML 1.1 writes one (underscores allowed): sign, then 0x, 0o or 0b, a leading 0
// for octal, or decimal. nullopt when `text` is not one or does not fit 64 bits.
std::optional<Json> resolve_int(std::string text) {
  std::erase(text, '_');
  std::string_view digits = text;
  bool negative = false;
  if (!digits.empty() && (digits[0] == '+' || digits[0] == '-')) {
    negative = digits[0] == '-';
    digits.remove_prefix(1);
  }
  int base = 10;
  if (digits.size() > 2 && digits[0] == '0' &&
      std::string_view("xXoObB").find(digits[1]) != std::string_view::npos) {
    char kind = char(digits[1] | 0x20);
    base = kind == 'x' ? 16 : kind == 'o' ? 8 : 2;
    digits.remove_prefix(2);
  } else if (digits.size() > 1 && digits[0] == '0') {
    base = 8;
    digits.remove_prefix(1);
  }
  if (digits.empty()) return std::nullopt;
  for (char c : digits) {
    int value = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : 99;
    if (value >= base) return std::nullopt;
  }
  errno = 0;
  std::string clean(digits);
  unsigned long long magnitude = std::strtoull(clean.c_str(), nullptr, base);
  if (errno == ERANGE) return std::nullopt;
  if (!negative) {
    if (magnitude <= uint64_t(INT64_MAX)) return Json(int64_t(magnitude));
    return Json(uint64_t(magnitude));
  }
  if (magnitude > uint64_t(INT64_MAX) + 1) return std::nullopt;
  return Json(magnitude == uint64_t(INT64_MAX) + 1 ? INT64_MIN : -int64_t(magnitude));
}

// The floats webhook's YAML library takes a plain scalar for: [-+]?[0-9]*\.?[0-9]+([eE][-+][0-9]+)?
// (the exponent's sign is required: 1e7 stays a string), or, starting with '.', what Go's
// ParseFloat reads (.5, .5e3).
bool is_float_text(std::string_view text) {
  size_t i = 0;
  auto digits = [&] {
    size_t start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    return i - start;
  };
  bool leading_dot = text.starts_with('.');
  if (!leading_dot && i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
  size_t whole = digits();
  if (i < text.size() && text[i] == '.') {
    ++i;
    if (digits() == 0) return false;
  } else if (whole == 0) {
    return false;
  }
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool sign = i < text.size() && (text[i] == '+' || text[i] == '-');
    if (sign) ++i;
    if ((!sign && !leading_dot) || digits() == 0) return false;
  }
  return i == text.size();
}

Json resolve_plain(const std::string& text) {
  if (one_of(text, {"", "~", "null", "Null", "NULL"})) return nullptr;
  if (one_of(text, {"y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "true", "True", "TRUE"}))
    return true;
  if (one_of(text, {"n", "N", "no", "No", "NO", "off", "Off", "OFF", "false", "False", "FALSE"}))
    return false;
  if (one_of(text, {".nan", ".NaN", ".NAN"})) return std::nan("");
  if (one_of(text, {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"})) return HUGE_VAL;
  if (one_of(text, {"-.inf", "-.Inf", "-.INF"})) return -HUGE_VAL;
  char first = text[0];
  if ((first >= '0' && first <= '9') || first == '+' || first == '-' || first == '.') {
    if (auto number = resolve_int(text)) return *number;
    std::string plain = text;
    if (first != '.') std::erase(plain, '_');
    if (is_float_text(plain)) return std::strtod(plain.c_str(), nullptr);
  }
  return text;
}

class Converter {
 public:
  Json convert(const YAML::Node& node, int depth) {
    if (++values_ > k_max_values)
      fail("", "aliases expand to more than " + std::to_string(k_max_values) + " values");
    if (depth > k_max_depth)
      fail(where(node), "nested more than " + std::to_string(k_max_depth) + " deep");
    switch (node.Type()) {
      case YAML::NodeType::Scalar:
        if (!valid_utf8(node.Scalar())) fail(where(node), "not valid UTF-8");
        // Quoted and block scalars are strings, and so is anything tagged; plain ones resolve.
        return node.Tag() == "?" ? resolve_plain(node.Scalar()) : Json(node.Scalar());
      case YAML::NodeType::Sequence: {
        Json array = Json::array();
        for (const YAML::Node& item : node) array.push_back(convert(item, depth + 1));
        return array;
      }
      case YAML::NodeType::Map:
        return convert_map(node, depth);
      default:
        return nullptr;
    }
  }

 private:
  size_t values_ = 0;

  // Keys given in the mapping itself win over those a merge key ("<<: *defaults", or a list of
  // aliases, the first winning) brings in, wherever it stands.
  Json convert_map(const YAML::Node& node, int depth) {
    Json object = Json::object();
    std::vector<Json> merged;
    for (const auto& pair : node) {
      if (!pair.first.IsScalar() && !pair.first.IsNull())
        fail(where(pair.first), "a mapping key must be a plain value");
      std::string name = pair.first.IsNull() ? "" : pair.first.Scalar();
      if (!valid_utf8(name)) fail(where(pair.first), "not valid UTF-8");
      if (name == "<<" && pair.first.Tag() == "?") {
        merge_sources(pair.second, depth, merged);
        continue;
      }
      if (object.contains(name)) fail(where(pair.first), "duplicate field " + quote(name));
      object[name] = convert(pair.second, depth + 1);
    }
    for (const Json& source : merged)
      for (const auto& [name, value] : source.items())
        if (!object.contains(name)) object[name] = value;
    return object;
  }

  void merge_sources(const YAML::Node& value, int depth, std::vector<Json>& merged) {
    auto one = [&](const YAML::Node& source) {
      if (!source.IsMap())
        fail(where(source), "a merge key (<<) takes a mapping or a list of mappings");
      merged.push_back(convert(source, depth + 1));
    };
    if (value.IsSequence())
      for (const YAML::Node& source : value) one(source);
    else
      one(value);
  }
};

}  // namespace

Json parse_yaml(const std::string& text) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    fail("", "not YAML: line " + std::to_string(e.mark.line + 1) + ", column " +
                 std::to_string(e.mark.column + 1) + ": " + printable(e.msg, 300, true));
  } catch (const YAML::Exception& e) {
    fail("", "not YAML: " + printable(e.msg, 300, true));
  }
  return Converter().convert(root, 0);
}

}  // namespace idem::webhook
