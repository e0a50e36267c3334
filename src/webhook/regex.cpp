#include "webhook/regex.hpp"

#include <re2/re2.h>

#include <stdexcept>

#include "util/utf8.hpp"

namespace idem::webhook {

namespace {

// RE2's budget for one pattern's program and its lazily built DFA (its default, written out).
// When the DFA outgrows it on a long value RE2 goes on with its NFA: slower, still linear.
constexpr int64_t k_max_mem = int64_t(8) << 20;

RE2::Options options() {
  RE2::Options o;             // UTF-8, Perl classes and \b, leftmost-first (Go's), case-sensitive
  o.set_log_errors(false);    // a bad pattern is the loader's message, never a line on stderr
  o.set_never_capture(true);  // a boolean is all webhook asks for
  o.set_max_mem(k_max_mem);
  return o;
}

// \C (any byte) is RE2's alone: Go's regexp refuses it, so a file using it must not load here
// and fail every request there. Text between \Q and \E is literal in both.
void refuse_any_byte(std::string_view pattern) {
  for (size_t i = 0; i + 1 < pattern.size(); ++i) {
    if (pattern[i] != '\\') continue;
    char next = pattern[++i];
    if (next == 'C') throw std::invalid_argument("invalid escape sequence: \\C");
    if (next == 'Q') {
      size_t end = pattern.find("\\E", i + 1);
      if (end == std::string_view::npos) return;
      i = end + 1;
    }
  }
}

// In UTF-8 mode RE2 matches bytes: '.', [^a] or \PL never match a byte that is not UTF-8, where
// Go's regexp reads it as U+FFFD and they do. A value holding one is matched as Go sees it, with
// each such byte replaced by U+FFFD (at most three times the value's size, for that match only).
std::string as_go_reads(std::string_view text, size_t first_invalid) {
  std::string out(text.substr(0, first_invalid));
  out.reserve(text.size() + 8);
  for (size_t at = first_invalid; at < text.size();) {
    size_t length = util::utf8_sequence_at(text, at);
    if (length == 0) {
      out += "\xEF\xBF\xBD";
      ++at;
    } else {
      out.append(text, at, length);
      at += length;
    }
  }
  return out;
}

}  // namespace

struct Regex::Impl {
  std::string pattern;
  RE2 re;
  explicit Impl(std::string_view text) : pattern(text), re(pattern, options()) {}
};

Regex::Regex(std::string_view pattern) {
  refuse_any_byte(pattern);
  auto impl = std::make_unique<const Impl>(pattern);
  if (!impl->re.ok()) throw std::invalid_argument(impl->re.error());
  impl_ = std::move(impl);
}

Regex::~Regex() = default;

bool Regex::search(std::string_view text) const {
  for (size_t at = 0; at < text.size();) {
    size_t length = util::utf8_sequence_at(text, at);
    if (length == 0) return RE2::PartialMatch(as_go_reads(text, at), impl_->re);
    at += length;
  }
  return RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), impl_->re);
}

const std::string& Regex::pattern() const { return impl_->pattern; }

std::shared_ptr<const Regex> compile_regex(std::string_view pattern) {
  return std::make_shared<const Regex>(pattern);
}

}  // namespace idem::webhook
