// Hex and base64 (util/hex.hpp).
#include <catch2/catch.hpp>
#include <random>
#include <string>

#include "util/hex.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_hex {

using idem::util::from_base64;
using idem::util::to_base64;
using idem::util::to_hex;

TEST_CASE("to_hex: lower case, two digits per byte", "[hex]") {
  CHECK(to_hex("") == "");
  CHECK(to_hex("abc") == "616263");
  CHECK(to_hex(std::string("\x00\x01\x0f\x10\x7f\x80\xfe\xff", 8)) == "00010f107f80feff");
}

TEST_CASE("base64: RFC 4648 test vectors", "[base64]") {
  const std::pair<const char*, const char*> vectors[] = {
      {"", ""},
      {"f", "Zg=="},
      {"fo", "Zm8="},
      {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="},
      {"fooba", "Zm9vYmE="},
      {"foobar", "Zm9vYmFy"},
  };
  for (auto [plain, encoded] : vectors) {
    INFO(plain);
    CHECK(to_base64(plain) == encoded);
    auto decoded = from_base64(encoded);
    REQUIRE(decoded.has_value());
    CHECK(*decoded == plain);
  }
  // Both extra characters of the standard alphabet (not the URL-safe one).
  CHECK(to_base64("\xfb\xff") == "+/8=");
  CHECK(from_base64("+/8=") == std::string("\xfb\xff"));
}

TEST_CASE("base64: round trip of every byte value and random binary", "[base64]") {
  std::string all;
  for (int c = 0; c < 256; ++c) all.push_back(char(c));
  CHECK(from_base64(to_base64(all)) == all);

  std::mt19937 rng(12345);
  for (size_t len = 0; len < 200; ++len) {
    std::string bytes;
    for (size_t i = 0; i < len; ++i) bytes.push_back(char(rng() & 0xff));
    std::string encoded = to_base64(bytes);
    CHECK(encoded.size() == (len + 2) / 3 * 4);
    auto decoded = from_base64(encoded);
    REQUIRE(decoded.has_value());
    CHECK(*decoded == bytes);
  }
}

TEST_CASE("base64: malformed input is refused", "[base64]") {
  const char* bad[] = {
      "Z",        "Zg",   "Zg=",      "Zm9",       // length not a multiple of 4
      "Zm9vY",    "=",    "====",     "Z===",      // padding in the wrong places
      "=Zg=",     "Zg=a", "Z=g=",     "Zg==Zg==",  // padding not trailing / not last
      "Zm9v====", "Zm9!", "Zm9v\n",   "Zm 9v",     // bad characters
      "Zm9-",     "Zm9_", "Zm9v\r\n", " Zm9v",    "Zg==\n", "Zm9v.", "Zm\xc3\xa9", "Zm9vYg=.",
  };
  for (const char* text : bad) {
    INFO("'" << text << "'");
    CHECK_FALSE(from_base64(text).has_value());
  }
  CHECK_FALSE(from_base64(std::string_view("Zm\0v", 4)).has_value());
}

TEST_CASE("base64: any input decodes or is refused, without crashing", "[base64]") {
  std::mt19937 rng(777);
  const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=";
  for (int round = 0; round < 2000; ++round) {
    std::string text;
    size_t len = rng() % 13;
    for (size_t i = 0; i < len; ++i) text.push_back(alphabet[rng() % alphabet.size()]);
    auto decoded = from_base64(text);
    if (decoded) {
      // Whatever decodes has the length its padding says.
      size_t pad =
          text.size() >= 1 && text.back() == '=' ? (text[text.size() - 2] == '=' ? 2 : 1) : 0;
      CHECK(decoded->size() == text.size() / 4 * 3 - pad);
    }
  }
}

}  // namespace unit_hex
