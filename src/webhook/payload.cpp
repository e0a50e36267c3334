#include "webhook/payload.hpp"

#include <expat.h>

#include <memory>
#include <optional>
#include <utility>

#include "util/utf8.hpp"

namespace idem::webhook {

using nlohmann::json;

json json_number(std::string_view text) {
  return json::binary(std::vector<std::uint8_t>(text.begin(), text.end()), k_number_subtype);
}

const std::vector<std::uint8_t>* number_text(const json& value) {
  if (!value.is_binary()) return nullptr;
  const json::binary_t& binary = value.get_binary();
  if (!binary.has_subtype() || binary.subtype() != k_number_subtype) return nullptr;
  return &binary;
}

json nil_map() { return json::binary({}, k_nil_map_subtype); }

bool is_nil_map(const json& value) {
  return value.is_binary() && value.get_binary().has_subtype() &&
         value.get_binary().subtype() == k_nil_map_subtype;
}

namespace {

// `text` with each byte that starts no valid UTF-8 sequence replaced by U+FFFD, as Go's JSON
// decoder reads strings (nlohmann's refuses them); nullopt when all of it is valid.
std::optional<std::string> replace_invalid_utf8(std::string_view text) {
  std::optional<std::string> out;
  for (size_t i = 0; i < text.size();) {
    size_t size = util::utf8_sequence_at(text, i);
    if (size == 0 && !out) out = std::string(text.substr(0, i));
    if (out) out->append(size == 0 ? std::string_view("\xef\xbf\xbd") : text.substr(i, size));
    i += size == 0 ? 1 : size;
  }
  return out;
}

// Builds the tree of one JSON value from nlohmann's SAX events, so that numbers keep their text.
class JsonBuilder final : public nlohmann::json_sax<json> {
 public:
  json root;
  std::string error;

  bool null() override { return put(nullptr) != nullptr; }
  bool boolean(bool value) override { return put(value) != nullptr; }
  bool number_integer(number_integer_t value) override {
    return put(json_number(std::to_string(value))) != nullptr;
  }
  bool number_unsigned(number_unsigned_t value) override {
    return put(json_number(std::to_string(value))) != nullptr;
  }
  // Floats and integers too large for 64 bits: `text` is the number as written.
  bool number_float(number_float_t, const string_t& text) override {
    return put(json_number(text)) != nullptr;
  }
  bool string(string_t& value) override { return put(std::move(value)) != nullptr; }
  bool binary(binary_t&) override { return false; }  // never from JSON text
  bool start_object(std::size_t) override { return open(json::object()); }
  bool key(string_t& name) override {
    key_ = std::move(name);
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(json::array()); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&,
                   const nlohmann::detail::exception& problem) override {
    error = problem.what();
    return false;
  }

 private:
  // Places a value in the container being read (an object member replaces an earlier one of
  // the same name, as Go's decoder does), or as the root. Returns where it went.
  json* put(json value) {
    if (open_.empty()) {
      root = std::move(value);
      return &root;
    }
    json& container = *open_.back();
    if (container.is_object()) return &(container[key_] = std::move(value));
    container.push_back(std::move(value));
    return &container.back();
  }
  bool open(json container) {
    if (open_.size() >= k_max_payload_depth) {
      error = "nested deeper than " + std::to_string(k_max_payload_depth) + " levels";
      return false;
    }
    // Pointers to open containers stay valid: a container only grows while it is the innermost
    // open one, and its ancestors hold it in place meanwhile.
    open_.push_back(put(std::move(container)));
    return true;
  }
  bool close() {
    open_.pop_back();
    return true;
  }

  std::vector<json*> open_;
  std::string key_;
};

}  // namespace

Decoded decode_json(std::string_view text) {
  std::optional<std::string> replaced = replace_invalid_utf8(text);
  if (replaced) text = *replaced;
  JsonBuilder builder;
  // Not strict: like Go's json.Decoder, whatever follows the first value is left unread.
  bool ok = json::sax_parse(text.begin(), text.end(), &builder, json::input_format_t::json,
                            /*strict=*/false);
  if (!ok) {
    if (builder.error.empty()) builder.error = "not valid JSON";
    return {nullptr, builder.error};
  }
  return {std::move(builder.root), {}};
}

Decoded decode_json_object(std::string_view text) {
  Decoded decoded = decode_json(text);
  if (decoded.error.empty() && !decoded.value.is_object() && !decoded.value.is_null())
    decoded.error = "not a JSON object";
  if (!decoded.value.is_object()) decoded.value = nil_map();
  return decoded;
}

namespace {

// The local part of an XML name, as Go's encoding/xml splits "prefix:local" (at the first colon,
// when both sides are non-empty).
std::string local_name(const char* name) {
  std::string_view text(name);
  size_t colon = text.find(':');
  if (colon == std::string_view::npos || colon < 1 || colon + 1 >= text.size())
    return std::string(text);
  return std::string(text.substr(colon + 1));
}

// mxj's trim of character data: tab, CR, backspace, LF and space.
std::string_view trim_xml_text(std::string_view text) {
  constexpr std::string_view k_noise = "\t\r\b\n ";
  size_t first = text.find_first_not_of(k_noise);
  if (first == std::string_view::npos) return {};
  size_t last = text.find_last_not_of(k_noise);
  return text.substr(first, last - first + 1);
}

// One open element: mxj's `n` (its text, when it took one before anything else) and `na` (its
// attributes, children and "#text").
struct Element {
  std::string key;
  std::optional<std::string> text;
  json members = json::object();
};

// Builds mxj's map from expat's events. Go's decoder hands over character data in runs ended by
// any markup (an element tag, a comment, a processing instruction, a CDATA section's bounds), so
// text is gathered until the next such event and then handled as one run, as mxj does.
class XmlBuilder {
 public:
  explicit XmlBuilder(XML_Parser parser) : parser_(parser) {}

  json root;
  bool done = false;
  std::string error;

  // After XML_StopParser expat may still deliver an event or two (the end of an empty element
  // stopped at its start): they are ignored.
  bool stopped() const { return done || !error.empty(); }

  void start(const char* name, const char** attributes) {
    if (stopped()) return;
    flush();
    if (open_.size() >= k_max_payload_depth) {
      abort("nested deeper than " + std::to_string(k_max_payload_depth) + " levels");
      return;
    }
    Element element{local_name(name), std::nullopt, json::object()};
    for (const char** a = attributes; a[0] != nullptr; a += 2)
      element.members["-" + local_name(a[0])] = std::string(a[1]);
    open_.push_back(std::move(element));
  }

  void end() {
    if (stopped() || open_.empty()) return;
    flush();
    Element element = std::move(open_.back());
    open_.pop_back();
    json value = element.text              ? json(std::move(*element.text))
                 : element.members.empty() ? json("")
                                           : std::move(element.members);
    if (open_.empty()) {
      root = json::object();
      root[element.key] = std::move(value);
      done = true;
      XML_StopParser(parser_, XML_FALSE);  // mxj reads no further than the root element
      return;
    }
    json& siblings = open_.back().members;
    auto found = siblings.find(element.key);
    if (found == siblings.end()) {
      siblings[element.key] = std::move(value);
    } else {
      if (!found->is_array()) *found = json::array({std::move(*found)});
      found->push_back(std::move(value));
    }
  }

  void text(const char* data, int size) {
    if (!stopped() && !open_.empty()) pending_.append(data, size_t(size));
  }

  // Ends a run of character data.
  void flush() {
    std::string_view run = trim_xml_text(pending_);
    if (!run.empty() && !open_.empty()) {
      Element& element = open_.back();
      if (!element.members.empty())
        element.members["#text"] = std::string(run);
      else
        element.text = std::string(run);
    }
    pending_.clear();
  }

  void abort(std::string why) {
    if (error.empty()) error = std::move(why);
    XML_StopParser(parser_, XML_FALSE);
  }

 private:
  XML_Parser parser_;
  std::vector<Element> open_;
  std::string pending_;
};

XmlBuilder& builder_of(void* data) { return *static_cast<XmlBuilder*>(data); }

void set_xml_handlers(XML_Parser parser) {
  XML_SetElementHandler(
      parser,
      [](void* data, const XML_Char* name, const XML_Char** attributes) {
        builder_of(data).start(name, attributes);
      },
      [](void* data, const XML_Char*) { builder_of(data).end(); });
  XML_SetCharacterDataHandler(parser, [](void* data, const XML_Char* text, int size) {
    builder_of(data).text(text, size);
  });
  XML_SetCommentHandler(parser, [](void* data, const XML_Char*) { builder_of(data).flush(); });
  XML_SetProcessingInstructionHandler(
      parser, [](void* data, const XML_Char*, const XML_Char*) { builder_of(data).flush(); });
  XML_SetCdataSectionHandler(
      parser, [](void* data) { builder_of(data).flush(); },
      [](void* data) { builder_of(data).flush(); });
  // Setting a default handler leaves references to entities a DTD declares unexpanded and hands
  // them here: refused, as Go's decoder refuses any entity but XML's own (and so no entity
  // expansion bomb goes off). Everything else the default handler gets (the prolog) is ignored.
  XML_SetDefaultHandler(parser, [](void* data, const XML_Char* text, int size) {
    if (size > 0 && text[0] == '&') builder_of(data).abort("invalid character entity");
  });
}

}  // namespace

Decoded decode_xml(std::string_view text) {
  std::unique_ptr<XML_ParserStruct, decltype(&XML_ParserFree)> parser(XML_ParserCreate("UTF-8"),
                                                                      &XML_ParserFree);
  if (!parser) return {nullptr, "out of memory"};
  XmlBuilder builder(parser.get());
  XML_SetUserData(parser.get(), &builder);
  set_xml_handlers(parser.get());
  // Go's decoder passes over text before the first tag (mxj ignores it); expat would refuse it.
  size_t first_tag = text.find('<');
  text.remove_prefix(first_tag == std::string_view::npos ? text.size() : first_tag);
  // Fed in pieces: XML_Parse takes an int length.
  constexpr size_t k_piece = 1 << 20;
  do {
    std::string_view piece = text.substr(0, k_piece);
    text.remove_prefix(piece.size());
    if (XML_Parse(parser.get(), piece.data(), int(piece.size()), text.empty()) != XML_STATUS_OK) {
      if (!builder.done && builder.error.empty()) {
        builder.error = std::string(XML_ErrorString(XML_GetErrorCode(parser.get()))) + " at line " +
                        std::to_string(XML_GetCurrentLineNumber(parser.get()));
      }
      break;
    }
  } while (!text.empty());
  if (!builder.error.empty()) return {nullptr, builder.error};
  if (!builder.done) return {nullptr, "no root element"};
  return {std::move(builder.root), {}};
}

namespace {

constexpr char k_hex_digits[] = "0123456789abcdef";

void quote_ascii(unsigned char c, std::string& out) {
  switch (c) {
    case '"':
      out += "\\\"";
      return;
    case '\\':
      out += "\\\\";
      return;
    case '\n':
      out += "\\n";
      return;
    case '\r':
      out += "\\r";
      return;
    case '\t':
      out += "\\t";
      return;
    default:
      break;
  }
  if (c < 0x20 || c == '<' || c == '>' || c == '&') {
    out += "\\u00";
    out.push_back(k_hex_digits[c >> 4]);
    out.push_back(k_hex_digits[c & 0xf]);
    return;
  }
  out.push_back(char(c));
}

// Go's encodeState.string with HTML escaping (json.Marshal), as of Go 1.19.
void go_quote(std::string_view s, std::string& out) {
  out.push_back('"');
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      quote_ascii(c, out);
      ++i;
      continue;
    }
    size_t size = util::utf8_sequence_at(s, i);
    if (size == 0) {
      out += "\\ufffd";
      ++i;
      continue;
    }
    std::string_view sequence = s.substr(i, size);
    if (sequence == "\xe2\x80\xa8" || sequence == "\xe2\x80\xa9")
      out += sequence.back() == '\xa8' ? "\\u2028" : "\\u2029";
    else
      out.append(sequence);
    i += size;
  }
  out.push_back('"');
}

void go_json_into(const json& value, std::string& out) {
  if (const auto* text = number_text(value)) {
    out.append(text->begin(), text->end());
  } else if (is_nil_map(value)) {
    out += "null";
  } else if (value.is_string()) {
    go_quote(value.get_ref<const std::string&>(), out);
  } else if (value.is_object()) {
    out.push_back('{');
    bool first = true;
    for (const auto& [name, member] : value.items()) {  // std::map: sorted by bytes, as Go
      if (!first) out.push_back(',');
      first = false;
      go_quote(name, out);
      out.push_back(':');
      go_json_into(member, out);
    }
    out.push_back('}');
  } else if (value.is_array()) {
    out.push_back('[');
    for (size_t i = 0; i < value.size(); ++i) {
      if (i > 0) out.push_back(',');
      go_json_into(value[i], out);
    }
    out.push_back(']');
  } else {
    out += value.dump();  // null, booleans, and numbers put there by C++ code
  }
}

}  // namespace

std::string go_json(const json& value) {
  std::string out;
  go_json_into(value, out);
  return out;
}

std::string go_string(const json& value) {
  if (const auto* text = number_text(value)) return std::string(text->begin(), text->end());
  if (value.is_string()) return value.get<std::string>();
  if (value.is_null()) return "<nil>";
  if (is_nil_map(value)) return "null";
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  if (value.is_object() || value.is_array()) return go_json(value);
  return value.dump();
}

}  // namespace idem::webhook
