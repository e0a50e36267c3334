#pragma once
// The two databases of /etc that idem needs, read as NSS's "files" module reads them, without NSS:
// a static glibc must not load NSS modules (docs/internals.md, "No NSS in the static idem").
// Knows nothing about idem.
#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace idem::util {

// The home folder (an absolute path) of `uid`'s first entry in `path` (passwd(5)), or nullopt
// when there is no such entry, its home is not absolute, or the file cannot be read.
std::optional<std::string> passwd_home(uid_t uid, const std::string& path = "/etc/passwd");

// The addresses `name` has in `path` (hosts(5): "ADDRESS NAME [ALIAS...]", '#' comments), in the
// file's order, the name compared without case; empty when it has none.
std::vector<std::string> hosts_addresses(std::string_view name,
                                         const std::string& path = "/etc/hosts");

}  // namespace idem::util
