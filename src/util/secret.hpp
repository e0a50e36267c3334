#pragma once
// What handling a secret needs, in one place: a comparison whose time tells nothing of where two
// values differ, and HMAC (OpenSSL's). Hook signatures, hooks files' payload-hmac rules, the
// page's session and CSRF token and the ledger's bearer token all go through here.
#include <string>
#include <string_view>

namespace idem::util {

// Whether a and b are equal, in time that depends on their lengths only, never on where they
// differ. Different lengths compare unequal at once: lengths of MACs and tokens are public.
bool same_secret(std::string_view a, std::string_view b);

enum class Digest { sha1, sha256, sha512 };
// HMAC of `data` keyed by `key`: 20, 32 or 64 raw bytes.
std::string hmac(Digest digest, std::string_view key, std::string_view data);
// HMAC-SHA256: 32 raw bytes.
std::string hmac_sha256(std::string_view key, std::string_view data);
// The same in lower-case hex.
std::string hmac_hex(Digest digest, std::string_view key, std::string_view data);

}  // namespace idem::util
