#pragma once
// The regular expressions of webhook's regex match type, as Go's regexp.MatchString reads and
// matches them: RE2 syntax (\z, \pL, \p{Greek}, (?s), (?P<name>...), (?i) anywhere, [[:alpha:]];
// no back-references, no lookaround), matched anywhere in the value, in time linear in its
// length. RE2 itself stays in webhook/regex.cpp (ARCHITECTURE.md's header table). Pure.
#include <memory>
#include <string>
#include <string_view>

namespace idem::webhook {

class Regex {
 public:
  // Throws std::invalid_argument with RE2's reason ("missing ): (") when `pattern` is not one
  // Go's regexp compiles, or needs more than RE2's memory budget.
  explicit Regex(std::string_view pattern);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Whether the pattern matches somewhere in `text` (regexp.MatchString). Text that is not
  // UTF-8 is read as Go reads it: each byte that starts no valid sequence is one U+FFFD. Safe to
  // call from several threads at once.
  bool search(std::string_view text) const;

  const std::string& pattern() const;

 private:
  struct Impl;
  std::unique_ptr<const Impl> impl_;
};

// A compiled pattern to share between the hooks that use it and the threads that match it.
// Throws as Regex's constructor.
std::shared_ptr<const Regex> compile_regex(std::string_view pattern);

}  // namespace idem::webhook
