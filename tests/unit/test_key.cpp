// Keys: 1-255 bytes of printable UTF-8, exact; and the key derived from cwd + argv.
#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "core/key.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_key {

using idem::core::derived_key;
using idem::core::display_key;
using idem::core::Key;
using idem::core::key_problem;
using idem::core::record_name_problem;
using idem::core::validate_record_name;

namespace {
bool valid(const std::string& key) { return !key_problem(key).has_value(); }
// UTF-8 of a code point of the Basic Multilingual Plane above U+07FF.
std::string utf8_bmp(unsigned cp) {
  return {char(0xe0 | (cp >> 12)), char(0x80 | ((cp >> 6) & 0x3f)), char(0x80 | (cp & 0x3f))};
}
}  // namespace

TEST_CASE("key: ordinary keys are valid", "[key]") {
  CHECK(valid("a"));
  CHECK(valid("order-42"));
  CHECK(valid("deploy:prod/2026-01-01T00:00:00Z"));
  CHECK(valid("with space inside"));
  CHECK(valid("~!@#$%^&*()_+{}|:\"<>?`-=[]\\;',./"));
  CHECK_NOTHROW(Key::of_argument("order-42"));
}

TEST_CASE("key: a Key is made only of a valid text, exact, and says why not", "[key]") {
  std::string why;
  std::optional<Key> key = Key::parse(" order 42 ", why);
  REQUIRE(key);
  CHECK(key->str() == " order 42 ");  // never trimmed
  CHECK(why.empty());
  CHECK_FALSE(Key::parse(std::string(256, 'k'), why));
  CHECK(why == *key_problem(std::string(256, 'k')));
  CHECK_FALSE(Key::parse(std::string("a\x01", 2), why));
  CHECK(why == *key_problem(std::string("a\x01", 2)));
  CHECK_THROWS_WITH(Key::of_argument(""), "bad key: key is empty");
}

TEST_CASE("key: empty key is refused", "[key]") {
  auto problem = key_problem("");
  REQUIRE(problem.has_value());
  CHECK(*problem == "key is empty");
  CHECK_THROWS_AS(Key::of_argument(""), idem::UsageError);
}

TEST_CASE("key: 255 bytes are accepted, 256 refused", "[key]") {
  CHECK(valid(std::string(255, 'k')));
  auto problem = key_problem(std::string(256, 'k'));
  REQUIRE(problem.has_value());
  CHECK(*problem == "key is 256 bytes; the limit is 255");
  // The limit is in bytes, not characters: 127 two-byte characters + 1 byte = 255 bytes.
  std::string multibyte;
  for (int i = 0; i < 127; ++i) multibyte += "\xc3\xa9";  // é
  CHECK(valid(multibyte + "x"));
  CHECK_FALSE(valid(multibyte + "xy"));
  CHECK_FALSE(valid(multibyte + "\xc3\xa9"));  // 256 bytes
}

TEST_CASE("key: UsageError carries exit code 64 and names the problem", "[key]") {
  try {
    (void)Key::of_argument(std::string("a\tb"));
    FAIL("Key::of_argument accepted a tab");
  } catch (const idem::UsageError& e) {
    CHECK(e.code() == idem::k_exit_usage);
    CHECK(int(e.code()) == 64);
    CHECK(std::string(e.what()) == "bad key: key has a control character at byte 1");
  }
}

TEST_CASE("key: control characters are refused", "[key]") {
  // Every C0 control, NUL included.
  for (int c = 0; c < 0x20; ++c) {
    std::string key = "ab";
    key.insert(key.begin() + 1, char(c));
    INFO("control byte " << c);
    auto problem = key_problem(key);
    REQUIRE(problem.has_value());
    CHECK(*problem == "key has a control character at byte 1");
  }
  CHECK_FALSE(valid(std::string("tab\there")));
  CHECK_FALSE(valid(std::string("new\nline")));
  CHECK_FALSE(valid(std::string("cr\r")));
  CHECK_FALSE(valid(std::string(1, '\0')));
  CHECK_FALSE(valid(std::string("nul\0inside", 10)));
  CHECK_FALSE(valid(std::string("esc\x1b[31m")));
  // DEL.
  CHECK(*key_problem("del\x7f") == "key has a control character at byte 3");
  // C1 controls, encoded as UTF-8: U+0080, U+0085 (NEL), U+009F.
  CHECK(*key_problem("a\xc2\x80") == "key has a control character at byte 1");
  CHECK(*key_problem("nel\xc2\x85") == "key has a control character at byte 3");
  CHECK_FALSE(valid("\xc2\x9f"));
  // U+00A0 is the first code point after the C1 block and is not a control.
  CHECK(valid("\xc2\xa0"));
  CHECK(valid(" "));
  CHECK(valid("~"));
}

TEST_CASE("key: bidirectional controls and a byte order mark are refused", "[key]") {
  // Unicode's Bidi_Control set: ALM, LRM, RLM, LRE..RLO, LRI..PDI. Each would let `idem ls`
  // show a key as another ("invoice-" U+202E "fdp.exe" shows as "invoice-exe.pdf").
  const std::vector<unsigned> bidi = {0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d,
                                      0x202e, 0x2066, 0x2067, 0x2068, 0x2069};
  for (unsigned cp : bidi) {
    INFO("code point " << std::hex << cp);
    auto problem = key_problem("ab" + utf8_bmp(cp) + "c");
    REQUIRE(problem);
    CHECK(problem->starts_with("key has a bidirectional control character (U+2"));
    CHECK(problem->ends_with(") at byte 2"));
  }
  CHECK(*key_problem("invoice-" + utf8_bmp(0x202e) + "fdp.exe") ==
        "key has a bidirectional control character (U+202E) at byte 8");
  CHECK(*key_problem("\xd8\x9c") == "key has a bidirectional control character (U+061C) at byte 0");
  CHECK(*key_problem(utf8_bmp(0xfeff) + "key") == "key has a byte order mark (U+FEFF) at byte 0");
  CHECK(*key_problem("key" + utf8_bmp(0xfeff)) == "key has a byte order mark (U+FEFF) at byte 3");
  // Their neighbours are printable and stay valid: U+200D (ZWJ, in emoji sequences), U+2065,
  // U+206A, U+2029's neighbour U+2030 (per mille), U+FEFE, U+FF01.
  for (unsigned cp : {0x200du, 0x2030u, 0x2065u, 0x206au, 0xfefeu, 0xff01u}) {
    INFO("code point " << std::hex << cp);
    CHECK(valid("a" + utf8_bmp(cp)));
  }
  CHECK_THROWS_WITH(Key::of_argument("x" + utf8_bmp(0x2067)),
                    "bad key: key has a bidirectional control character (U+2067) at byte 1");
}

TEST_CASE("key: invalid UTF-8 is refused", "[key]") {
  // Lone continuation byte.
  CHECK(*key_problem("ab\x80") == "key is not valid UTF-8 at byte 2");
  // Raw Latin-1 byte.
  CHECK(*key_problem("caf\xe9") == "key is not valid UTF-8 at byte 3");
  // Truncated sequences.
  CHECK_FALSE(valid("\xc3"));
  CHECK_FALSE(valid("x\xe2\x82"));
  CHECK_FALSE(valid("\xf0\x9f\x98"));
  // A lead byte followed by a non-continuation byte.
  CHECK_FALSE(valid("\xc3(x"));
  CHECK_FALSE(valid("\xe2\x28\xa1"));
  // Bytes never valid in UTF-8.
  CHECK_FALSE(valid("\xfe"));
  CHECK_FALSE(valid("\xff"));
  CHECK_FALSE(valid("\xf8\x88\x80\x80\x80"));
  CHECK_FALSE(valid("\xc0"));
}

TEST_CASE("key: overlong encodings are refused", "[key]") {
  CHECK_FALSE(valid("\xc0\xaf"));          // '/' in two bytes
  CHECK_FALSE(valid("\xc1\xbf"));          // U+007F in two bytes
  CHECK_FALSE(valid("\xc0\x80"));          // NUL in two bytes ("modified UTF-8")
  CHECK_FALSE(valid("\xe0\x80\xaf"));      // '/' in three bytes
  CHECK_FALSE(valid("\xe0\x9f\xbf"));      // U+07FF in three bytes
  CHECK_FALSE(valid("\xf0\x80\x80\xaf"));  // '/' in four bytes
  CHECK_FALSE(valid("\xf0\x8f\xbf\xbf"));  // U+FFFF in four bytes
  // The shortest forms at the same boundaries are fine.
  CHECK(valid("\xdf\xbf"));          // U+07FF
  CHECK(valid("\xe0\xa0\x80"));      // U+0800
  CHECK(valid("\xf0\x90\x80\x80"));  // U+10000
}

TEST_CASE("key: surrogates and code points past U+10FFFF are refused", "[key]") {
  CHECK_FALSE(valid("\xed\xa0\x80"));              // U+D800
  CHECK_FALSE(valid("\xed\xbf\xbf"));              // U+DFFF
  CHECK_FALSE(valid("\xed\xa0\xbd\xed\xb8\x80"));  // CESU-8 pair for U+1F600
  CHECK(valid("\xed\x9f\xbf"));                    // U+D7FF
  CHECK(valid("\xee\x80\x80"));                    // U+E000
  CHECK(valid("\xf4\x8f\xbf\xbf"));                // U+10FFFF
  CHECK_FALSE(valid("\xf4\x90\x80\x80"));          // U+110000
  CHECK_FALSE(valid("\xf5\x80\x80\x80"));
  CHECK_FALSE(valid("\xf7\xbf\xbf\xbf"));
}

TEST_CASE("key: printable multibyte characters are accepted", "[key]") {
  CHECK(valid("caf\xc3\xa9"));                                 // café
  CHECK(valid("\xe6\x97\xa5\xe6\x9c\xac"));                    // 日本
  CHECK(valid("\xf0\x9f\x98\x80"));                            // 😀
  CHECK(valid("\xd0\x97\xd0\xb0\xd0\xba\xd0\xb0\xd0\xb7-1"));  // Заказ-1
  CHECK(
      valid("\xe2\x82\xac"
            "100"));  // €100
}

TEST_CASE("key: keys are exact, never trimmed", "[key]") {
  // Leading and trailing spaces are part of the key, so " k" and "k" are different keys: both
  // valid, neither rewritten.
  CHECK(valid(" k"));
  CHECK(valid("k "));
  CHECK(valid("   "));
  CHECK_NOTHROW(Key::of_argument(" padded "));
  // Trailing newline is a control character, not whitespace to strip.
  CHECK_FALSE(valid("k\n"));
}

TEST_CASE("derived_key: cmd: prefix and 64 hex digits", "[key]") {
  std::string key = derived_key("/srv/app", {"./backup.sh", "--full"});
  CHECK(key.size() == 68);
  CHECK(key.rfind("cmd:", 0) == 0);
  for (char c : key.substr(4)) CHECK(((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')));
  // A fixed value: the derived key of a cron job must not change between versions, or every
  // upgrade would run each job once more.
  CHECK(key == "cmd:1c2871291fd022136cd47e7ceeee5702782e0fd76283bccf3cc2d11cb1d8e0fe");
  CHECK(derived_key("/srv/app", {"./backup.sh", "--full"}) == key);
  CHECK_FALSE(key_problem(key).has_value());
}

TEST_CASE("derived_key: differs by cwd and by argument boundaries", "[key]") {
  const std::vector<std::string> argv{"./backup.sh"};
  CHECK(derived_key("/a", argv) != derived_key("/b", argv));
  CHECK(derived_key("/a", argv) != derived_key("/a/", argv));
  CHECK(derived_key("/srv", {"a", "b c"}) != derived_key("/srv", {"a", "b", "c"}));
  CHECK(derived_key("/srv", {"ab"}) != derived_key("/srv", {"a", "b"}));
  CHECK(derived_key("/srv", {"a", ""}) != derived_key("/srv", {"a"}));
  CHECK(derived_key("/srv", {}) != derived_key("/srv", {""}));
  // cwd and argv are framed separately: moving bytes between them changes the key.
  CHECK(derived_key("/srv/a", {"b"}) != derived_key("/srv", {"a", "b"}));
  CHECK(derived_key("/x", {"a", "b"}) != derived_key("/x", {"b", "a"}));
}

TEST_CASE("display_key: short keys as is, long keys cut on a UTF-8 boundary", "[key]") {
  CHECK(display_key("order-42") == "order-42");
  CHECK(display_key("abcdef", 6) == "abcdef");
  CHECK(display_key("abcdefg", 6) == "abc...");
  // Cutting at byte 2 would split the é (0xc3 0xa9): the cut moves back to byte 1.
  CHECK(display_key("a\xc3\xa9"
                    "bcdefg",
                    5) == "a...");
  CHECK(display_key(std::string(300, 'k')) == std::string(252, 'k') + "...");
}

TEST_CASE("record names: a key, or HOOKPATH#KEY as idem serve writes them", "[key]") {
  auto valid_name = [](const std::string& name) { return !record_name_problem(name).has_value(); };
  // Every valid key is a record name.
  CHECK(valid_name("order-42"));
  CHECK(valid_name(std::string(255, 'k')));
  CHECK(valid_name("/hooks/x#short"));
  // A 255-byte key delivered to a hook: longer than a key, still a record name.
  const std::string key(255, 'k');
  CHECK(valid_name("/hooks/github#" + key));
  CHECK_NOTHROW(validate_record_name("/hooks/github#" + key));
  // The longest path a config accepts with the longest key.
  const std::string path = "/" + std::string(254, 'p');
  CHECK(valid_name(path + "#" + key));
  CHECK((path + "#" + key).size() == idem::core::k_max_record_name_bytes);
  // The key part is a key: any '#' after the first belongs to it.
  CHECK(valid_name("/hooks/x#" + std::string(250, 'k') + "#a#b"));

  // Past the limits, or not of that shape: the key's own problem.
  CHECK(*record_name_problem("/hooks/github#" + key + "k") ==
        "after /hooks/github#: key is 256 bytes; the limit is 255");
  CHECK(*record_name_problem(path + "p#" + key) == "key is 512 bytes; the limit is 255");
  CHECK(*record_name_problem(std::string(256, 'k')) == "key is 256 bytes; the limit is 255");
  CHECK(*record_name_problem("no-slash#" + key) == "key is 264 bytes; the limit is 255");
  CHECK(*record_name_problem("/hooks x#" + key) == "key is 264 bytes; the limit is 255");
  CHECK(*record_name_problem("/hooks?x#" + key) == "key is 264 bytes; the limit is 255");
  CHECK(*record_name_problem("/hooks/x#" + std::string(249, 'k') + "\t" + "kkkkk") ==
        "after /hooks/x#: key has a control character at byte 249");
  CHECK(valid_name("/hooks/x#"));  // short: a valid key as a whole
  CHECK_FALSE(valid_name("/hooks/x#" + std::string(300, 'k')));
  CHECK_FALSE(valid_name(""));
  CHECK_THROWS_AS(validate_record_name(std::string(600, 'k')), idem::UsageError);
}

TEST_CASE("record names: the proxy's proxy#SCOPE#KEY", "[key]") {
  const std::string key(255, 'k');
  CHECK_FALSE(record_name_problem("proxy#-#" + key));
  CHECK_FALSE(record_name_problem("proxy#0123456789abcdef#" + key));
  CHECK(*record_name_problem("proxy#-#" + key + "k") ==
        "after proxy#-#: key is 256 bytes; the limit is 255");
  // Not a scope: the name is judged as a key.
  CHECK(*record_name_problem("proxy#0123#" + key) == "key is 266 bytes; the limit is 255");
  CHECK(*record_name_problem("proxy#0123456789ABCDEF#" + key) ==
        "key is 278 bytes; the limit is 255");
}

TEST_CASE("record names: the fronts of idem serve own their shapes", "[key]") {
  using idem::core::served_front_of;
  CHECK(served_front_of("/hooks/x#k") == "hooks");
  CHECK(served_front_of("/#") == "hooks");
  CHECK(served_front_of("/a b?c#d") == "hooks");  // no hook path, still the shape: kept apart
  CHECK(served_front_of("proxy#-#k") == "proxy");
  CHECK(served_front_of("proxy#") == "proxy");
  CHECK_FALSE(served_front_of("/hooks/x"));
  CHECK_FALSE(served_front_of("order#42"));
  CHECK_FALSE(served_front_of("a/b#c"));
  CHECK_FALSE(served_front_of("Proxy#-#k"));
  CHECK_FALSE(served_front_of("proxy-k"));
  CHECK_FALSE(served_front_of("cmd:0123"));
}

}  // namespace unit_key
