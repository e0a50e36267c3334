// jsonq: prints values out of JSON documents, so shell tests need neither jq nor python.
//
//   jsonq POINTER...   for each JSON value on stdin (JSON Lines or one pretty-printed document),
//                      prints the values at the RFC 6901 pointers, tab-separated, one line each
//   jsonq --keys       for each value, its top-level object keys, sorted, space-separated
//
// Strings print raw (unescaped), numbers as written, true/false/null as such, arrays and objects
// as compact JSON. A pointer that does not resolve prints <missing>. Malformed input exits 2.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace {

struct Member;

struct Value {
  enum Kind { null_v, bool_v, number_v, string_v, array_v, object_v } kind = null_v;
  std::string text;  // bool/number: as written; string: decoded
  std::vector<Value> items;
  std::vector<Member> members;  // a vector of an incomplete type (std::pair of one is not)
};

struct Member {
  std::string name;
  Value value;
};

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "jsonq: %s\n", message.c_str());
  std::exit(2);
}

class Parser {
 public:
  explicit Parser(const std::string& input) : s_(input) {}

  bool at_end() {
    skip_space();
    return pos_ == s_.size();
  }

  Value parse_value() {
    skip_space();
    if (pos_ == s_.size()) die("unexpected end of input");
    char c = s_[pos_];
    Value v;
    if (c == '{') {
      v.kind = Value::object_v;
      ++pos_;
      if (peek() == '}') {
        ++pos_;
        return v;
      }
      for (;;) {
        skip_space();
        if (peek() != '"') die("expected object key at offset " + std::to_string(pos_));
        std::string key = parse_string();
        skip_space();
        expect(':');
        v.members.push_back(Member{key, parse_value()});
        skip_space();
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      v.kind = Value::array_v;
      ++pos_;
      if (peek() == ']') {
        ++pos_;
        return v;
      }
      for (;;) {
        v.items.push_back(parse_value());
        skip_space();
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.kind = Value::string_v;
      v.text = parse_string();
      return v;
    }
    for (const char* word : {"true", "false", "null"}) {
      std::string w = word;
      if (s_.compare(pos_, w.size(), w) == 0) {
        pos_ += w.size();
        v.kind = w == "null" ? Value::null_v : Value::bool_v;
        v.text = w;
        return v;
      }
    }
    size_t start = pos_;
    while (pos_ < s_.size() && std::string("+-0123456789.eE").find(s_[pos_]) != std::string::npos)
      ++pos_;
    if (start == pos_) die("unexpected character at offset " + std::to_string(pos_));
    v.kind = Value::number_v;
    v.text = s_.substr(start, pos_ - start);
    return v;
  }

 private:
  char peek() {
    skip_space();
    return pos_ < s_.size() ? s_[pos_] : '\0';
  }
  void skip_space() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t'))
      ++pos_;
  }
  void expect(char c) {
    if (peek() != c) die(std::string("expected '") + c + "' at offset " + std::to_string(pos_));
    ++pos_;
  }
  unsigned hex4() {
    if (pos_ + 4 > s_.size()) die("short \\u escape");
    unsigned code = std::stoul(s_.substr(pos_, 4), nullptr, 16);
    pos_ += 4;
    return code;
  }
  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  std::string parse_string() {
    ++pos_;  // opening quote
    std::string out;
    for (;;) {
      if (pos_ >= s_.size()) die("unterminated string");
      char c = s_[pos_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) die("unterminated escape");
      char e = s_[pos_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00 && s_.compare(pos_, 2, "\\u") == 0) {
            pos_ += 2;
            unsigned low = hex4();
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          append_utf8(out, cp);
          break;
        }
        default:
          die("bad escape");
      }
    }
  }

  const std::string& s_;
  size_t pos_ = 0;
};

std::string quote(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string compact(const Value& v) {
  switch (v.kind) {
    case Value::string_v:
      return quote(v.text);
    case Value::array_v: {
      std::string out = "[";
      for (size_t i = 0; i < v.items.size(); ++i) out += (i ? "," : "") + compact(v.items[i]);
      return out + "]";
    }
    case Value::object_v: {
      std::string out = "{";
      for (size_t i = 0; i < v.members.size(); ++i)
        out += (i ? "," : "") + quote(v.members[i].name) + ":" + compact(v.members[i].value);
      return out + "}";
    }
    default:
      return v.text;
  }
}

const Value* resolve(const Value& root, const std::string& pointer) {
  if (pointer.empty()) return &root;
  if (pointer[0] != '/') die("pointer must start with '/': " + pointer);
  const Value* at = &root;
  size_t pos = 1;
  for (;;) {
    size_t end = pointer.find('/', pos);
    std::string token =
        pointer.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    std::string name;
    for (size_t i = 0; i < token.size(); ++i) {
      if (token[i] == '~' && i + 1 < token.size()) {
        name += token[i + 1] == '1' ? '/' : '~';
        ++i;
      } else {
        name += token[i];
      }
    }
    const Value* next = nullptr;
    if (at->kind == Value::object_v) {
      for (const auto& [k, member] : at->members)
        if (k == name) next = &member;
    } else if (at->kind == Value::array_v && !name.empty() &&
               name.find_first_not_of("0123456789") == std::string::npos) {
      size_t index = std::stoul(name);
      if (index < at->items.size()) next = &at->items[index];
    }
    if (!next) return nullptr;
    at = next;
    if (end == std::string::npos) return at;
    pos = end + 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) die("usage: jsonq POINTER... | jsonq --keys");
  std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  Parser parser(input);
  const bool keys_mode = std::string(argv[1]) == "--keys";
  while (!parser.at_end()) {
    Value doc = parser.parse_value();
    std::string line;
    if (keys_mode) {
      std::vector<std::string> keys;
      for (const auto& member : doc.members) keys.push_back(member.name);
      std::sort(keys.begin(), keys.end());
      for (size_t i = 0; i < keys.size(); ++i) line += (i ? " " : "") + keys[i];
    } else {
      for (int i = 1; i < argc; ++i) {
        const Value* v = resolve(doc, argv[i]);
        if (i > 1) line += '\t';
        line += !v ? "<missing>" : v->kind == Value::string_v ? v->text : compact(*v);
      }
    }
    std::cout << line << '\n';
  }
  return 0;
}
