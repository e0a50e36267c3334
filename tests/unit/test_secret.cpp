// util/secret: the one constant-time comparison and the one HMAC every secret goes through (hook
// signatures, hooks files' payload-hmac rules, the page's session and CSRF token, the ledger's
// bearer token).
#include <catch2/catch.hpp>
#include <string>

#include "util/hex.hpp"
#include "util/secret.hpp"

namespace unit_secret {

using idem::util::Digest;
using idem::util::hmac_hex;
using idem::util::hmac_sha256;
using idem::util::same_secret;
using idem::util::to_hex;

TEST_CASE("hmac_sha256: RFC 4231 test cases", "[secret]") {
  // RFC 4231 "Identifiers and Test Vectors for HMAC-SHA-224, ..., HMAC-SHA-512", sections 4.2,
  // 4.3 and 4.7 (test cases 1, 2 and 6: a short key, a text key, a key longer than the block).
  CHECK(to_hex(hmac_sha256(std::string(20, '\x0b'), "Hi There")) ==
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  CHECK(to_hex(hmac_sha256("Jefe", "what do ya want for nothing?")) ==
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  CHECK(to_hex(hmac_sha256(std::string(131, '\xaa'),
                           "Test Using Larger Than Block-Size Key - Hash Key First")) ==
        "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  // Empty key and message (Python's hmac): the function itself accepts them; verify() refuses an
  // empty secret separately.
  CHECK(to_hex(hmac_sha256("", "")) ==
        "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
  CHECK(hmac_sha256("k", "m").size() == 32);
}

TEST_CASE("same_secret: bytes and lengths, one comparison for every secret", "[secret]") {
  CHECK(same_secret("", ""));
  CHECK(same_secret("abc", "abc"));
  CHECK(same_secret(std::string("a\0b", 3), std::string("a\0b", 3)));
  CHECK_FALSE(same_secret("abc", "abd"));
  CHECK_FALSE(same_secret("abc", "xbc"));
  // Different lengths, one a prefix of the other: unequal, whatever the shared bytes.
  CHECK_FALSE(same_secret("abc", "abcd"));
  CHECK_FALSE(same_secret("abcd", "abc"));
  CHECK_FALSE(same_secret("", "a"));
  CHECK_FALSE(same_secret(std::string("a\0", 2), "a"));
}

TEST_CASE("hmac_hex: SHA-1 and SHA-512 as webhook's senders write them", "[secret]") {
  // RFC 2202 test case 2 (SHA-1) and RFC 4231 test case 2 (SHA-512).
  CHECK(hmac_hex(Digest::sha1, "Jefe", "what do ya want for nothing?") ==
        "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79");
  CHECK(hmac_hex(Digest::sha512, "Jefe", "what do ya want for nothing?") ==
        "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f65f8"
        "f0e6fdcaeab1a34d4a6b4b636e070a38bce737");
  CHECK(hmac_hex(Digest::sha256, "Jefe", "what do ya want for nothing?") ==
        to_hex(hmac_sha256("Jefe", "what do ya want for nothing?")));
}

}  // namespace unit_secret
