// The regex match type's patterns (webhook/regex.hpp): Go's regexp syntax through RE2, and
// values that are not UTF-8 read as Go reads them.
#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "webhook/regex.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_webhook_regex {

using idem::webhook::compile_regex;
using idem::webhook::Regex;

namespace {

bool search(const char* pattern, const std::string& text) { return Regex(pattern).search(text); }

std::string refusal(const char* pattern) {
  try {
    Regex{pattern};
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(compiled)";
}

}  // namespace

TEST_CASE("webhook regex: Go's syntax", "[webhook]") {
  CHECK(search("ell", "hello"));  // anywhere in the value, as regexp.MatchString
  CHECK(search("^a\\z", "a"));
  CHECK_FALSE(search("^a\\z", "a\n"));
  CHECK_FALSE(search("^a$", "a\n"));  // $ is the end of text without (?m), as in Go
  CHECK(search("(?m)^b$", "a\nb\nc"));
  CHECK(search("^\\pL\\PL\\p{Greek}\\P{Greek}$", "é1λx"));
  CHECK(search("(?s)a.b", "a\nb"));
  CHECK_FALSE(search("a.b", "a\nb"));
  CHECK(search("(?P<year>[0-9]{4})-(?P<month>[0-9]{2})", "on 2024-05"));
  CHECK(search("^v(?i)RC$", "vrc"));
  CHECK_FALSE(search("^v(?i)RC$", "Vrc"));
  CHECK(search("^[[:alpha:]][[:digit:]]$", "a1"));
  CHECK(search("^\\Qa.b\\E$", "a.b"));
  CHECK_FALSE(search("^\\Qa.b\\E$", "axb"));
  CHECK(search("\\bword\\b", "a word."));
  CHECK(search("^(?U)a+$", "aaa"));
  CHECK(search("(?i)straße", "STRAßE"));
  CHECK(compile_regex("^x$")->pattern() == "^x$");
}

TEST_CASE("webhook regex: what Go's regexp refuses is refused", "[webhook]") {
  CHECK(refusal("(") == "missing ): (");
  CHECK(refusal("(a)\\1") == "invalid escape sequence: \\1");
  CHECK(refusal("(?=a)") == "invalid perl operator: (?=");
  CHECK(refusal("(?<!a)b") == "invalid perl operator: (?<");
  CHECK(refusal("a\\Z") == "invalid escape sequence: \\Z");
  CHECK(refusal("a{1001}") == "invalid repetition size: {1001}");
  CHECK(refusal("\xff") == "invalid UTF-8");
  // RE2's memory budget (8 MiB) is smaller than Go's: this one compiles there.
  CHECK(refusal("\\pL{1000}") == "pattern too large - compile failed");
  // \C, RE2's any byte, is unknown to Go; inside \Q...\E it is two literal characters.
  CHECK(refusal("a\\C") == "invalid escape sequence: \\C");
  CHECK(refusal("[\\C]") == "invalid escape sequence: \\C");
  CHECK(refusal("\\\\C") == "(compiled)");
  CHECK(search("^\\Q\\C\\E$", "\\C"));
}

TEST_CASE("webhook regex: bytes that are not UTF-8 are U+FFFD, as Go reads them", "[webhook]") {
  CHECK(search("^.$", "\xff"));
  CHECK(search("^a.b$",
               "a\xff"
               "b"));
  CHECK(search("^[^x]$", "\x80"));
  CHECK(search("^\\x{FFFD}$", "\xc0"));
  // Each byte of an invalid or truncated sequence is one: an overlong "/", a surrogate, a code
  // point past U+10FFFF, a three-byte sequence cut short.
  CHECK(search("^..$", "\xc0\xaf"));
  CHECK(search("^...$", "\xed\xa0\x80"));
  CHECK(search("^....$", "\xf4\x90\x80\x80"));
  CHECK(search("^..x$", "\xe2\x82x"));
  // Valid sequences around them are kept as they are.
  CHECK(search("^é.€$", "é\xff€"));
  CHECK(search("^\\pL\\PL$", "\xce\xbb\xfe"));
  CHECK_FALSE(search("^.$", "\xff\xff"));
  CHECK(search("^a\\x00b$", std::string("a\0b", 3)));
}

TEST_CASE("webhook regex: one pattern matched by several threads at once", "[webhook]") {
  // The daemon's threads share each hook's compiled pattern; RE2 builds its DFA as they match.
  const Regex regex("(?i)^(push|tag)-[[:alnum:]]+\\z|\\pL{3}$");
  std::vector<std::thread> threads;
  std::vector<int> found(4, 0);
  for (size_t t = 0; t < found.size(); ++t) {
    threads.emplace_back([&regex, &found, t] {
      for (int i = 0; i < 200; ++i) {
        std::string value = (i % 2 ? "PUSH-" : "tag-") + std::to_string(i * 7919 + int(t));
        found[t] += regex.search(value) + regex.search(std::string(i, 'x') + "\xff" + "ab") +
                    regex.search("λμν");
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int count : found) CHECK(count == 400);
}

}  // namespace unit_webhook_regex
