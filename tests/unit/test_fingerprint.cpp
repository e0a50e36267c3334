// Fingerprints: SHA-256 over argv with unambiguous boundaries (+ stdin's hash).
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "core/fingerprint.hpp"
#include "util/sha256.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_fingerprint {

using idem::core::Fingerprinter;
using idem::core::run_fingerprint;
using idem::util::sha256_hex;

namespace {
std::string fp(const std::vector<std::string>& argv) { return run_fingerprint(argv, nullptr); }
}  // namespace

TEST_CASE("fingerprint: 64 lower-case hex digits, stable across calls", "[fingerprint]") {
  std::string a = fp({"echo", "hello world"});
  CHECK(a.size() == 64);
  for (char c : a) CHECK(((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')));
  CHECK(fp({"echo", "hello world"}) == a);
  // Pinned: stored records carry this value; changing the framing would turn every existing key
  // into a conflict after an upgrade.
  CHECK(a == "234921892d47aa9c44343846a16dc646f4165baba7bfb222ba0d099499df6bad");
}

TEST_CASE("fingerprint: the documented framing", "[fingerprint]") {
  // Each field is <name>=<decimal length>:<bytes>.
  std::string framed =
      "kind=3:run"
      "argc=1:2"
      "arg=4:echo"
      "arg=11:hello world";
  CHECK(fp({"echo", "hello world"}) == sha256_hex(framed));
}

TEST_CASE("fingerprint: argument boundaries matter", "[fingerprint]") {
  CHECK(fp({"a", "b c"}) != fp({"a", "b", "c"}));
  CHECK(fp({"ab"}) != fp({"a", "b"}));
  CHECK(fp({"a", "bc"}) != fp({"ab", "c"}));
  CHECK(fp({"a"}) != fp({"a", ""}));
  CHECK(fp({}) != fp({""}));
  CHECK(fp({"", ""}) != fp({""}));
  CHECK(fp({"a", "b"}) != fp({"b", "a"}));
  // Bytes that look like framing inside an argument do not forge a boundary.
  CHECK(fp({"a", "b"}) != fp({"a"
                              "arg=1:b"}));
  CHECK(fp({"x=1:y"}) != fp({"x", "y"}));
  // Binary-safe: NUL bytes are part of the argument.
  CHECK(fp({std::string("a\0b", 3)}) != fp({"a", "b"}));
  CHECK(fp({std::string("a\0b", 3)}) != fp({"a"}));
  // Exact: case and whitespace are not normalised.
  CHECK(fp({"Echo"}) != fp({"echo"}));
  CHECK(fp({"echo "}) != fp({"echo"}));
}

TEST_CASE("fingerprint: stdin's hash changes it", "[fingerprint]") {
  std::string stdin_a = sha256_hex("input\n");
  std::string stdin_b = sha256_hex("other\n");
  CHECK(stdin_a == "7d3f9b6284c6f36e77b425cac882e8fbbcc97a4727ec20790853076d0f463453");
  std::string with_a = run_fingerprint({"echo", "hello world"}, &stdin_a);
  CHECK(with_a == "2c66d55e52f25b500bc0a8c079bbad8b76937afb5a759d87f6c3f41475ff5aef");
  CHECK(with_a != fp({"echo", "hello world"}));
  CHECK(with_a != run_fingerprint({"echo", "hello world"}, &stdin_b));
  CHECK(with_a == run_fingerprint({"echo", "hello world"}, &stdin_a));
  // --hash-stdin with an empty stdin still differs from no --hash-stdin.
  std::string empty = sha256_hex("");
  CHECK(run_fingerprint({"cat"}, &empty) != fp({"cat"}));
}

TEST_CASE("Fingerprinter: fields are framed by length", "[fingerprint]") {
  auto one = [](std::string_view name, std::string_view value) {
    Fingerprinter f;
    f.add_field(name, value);
    return f.hex();
  };
  CHECK(one("body", "abc") == sha256_hex("body=3:abc"));
  CHECK(one("body", "") == sha256_hex("body=0:"));

  Fingerprinter split;
  split.add_field("a", "xy");
  split.add_field("b", "z");
  Fingerprinter moved;
  moved.add_field("a", "x");
  moved.add_field("b", "yz");
  CHECK(split.hex() != moved.hex());
}

TEST_CASE("fingerprint: begin's, with and without what the caller gives", "[fingerprint]") {
  using idem::core::begin_fingerprint;
  const std::string plain = begin_fingerprint(nullptr, nullptr);
  // Pinned: the fingerprint of every begin before --fingerprint existed (its kind alone).
  CHECK(plain == sha256_hex("kind=5:begin"));
  const std::string amount = "amount=42";
  CHECK(begin_fingerprint(&amount, nullptr) == sha256_hex("kind=5:beginfingerprint=9:amount=42"));
  const std::string other = "amount=43";
  CHECK(begin_fingerprint(&other, nullptr) != begin_fingerprint(&amount, nullptr));
  const std::string empty;
  CHECK(begin_fingerprint(&empty, nullptr) != plain);
  const std::string stdin_hash = sha256_hex("payload");
  CHECK(begin_fingerprint(nullptr, &stdin_hash) ==
        sha256_hex("kind=5:beginstdin-sha256=64:" + stdin_hash));
  CHECK(begin_fingerprint(&amount, &stdin_hash) != begin_fingerprint(nullptr, &stdin_hash));
  // A string and a stdin hash are told apart even when their bytes are the same.
  CHECK(begin_fingerprint(&stdin_hash, nullptr) != begin_fingerprint(nullptr, &stdin_hash));
  // Never equal to a run's: a begin and a run of one key conflict.
  CHECK(plain != run_fingerprint({}, nullptr));
}

}  // namespace unit_fingerprint
