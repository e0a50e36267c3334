// SHA-256 (util/sha256.hpp) against FIPS 180-2 vectors.
#include <catch2/catch.hpp>
#include <string>

#include "util/hex.hpp"
#include "util/sha256.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_sha256 {

using idem::util::Sha256;
using idem::util::sha256_hex;
using idem::util::to_hex;

TEST_CASE("sha256: known vectors", "[sha256]") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(sha256_hex(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("sha256: incremental equals one-shot; raw digest is 32 bytes", "[sha256]") {
  Sha256 h;
  h.update("a");
  h.update("");
  h.update("bc");
  std::string raw = h.finish();
  CHECK(raw.size() == 32);
  CHECK(to_hex(raw) == sha256_hex("abc"));
  // Binary input, NUL bytes included.
  Sha256 b;
  b.update(std::string_view("\0\0", 2));
  CHECK(to_hex(b.finish()) == sha256_hex(std::string(2, '\0')));
  CHECK(sha256_hex(std::string(2, '\0')) != sha256_hex(""));
}

}  // namespace unit_sha256
