#pragma once
// The files of tests/unit/fixtures/: inputs the cases read as they are, such as the stores old
// versions of idem wrote (fixtures/schema/, frozen history: never regenerated from the code).
#include <string>

namespace idem::test {

// The bytes of tests/unit/fixtures/<name> (e.g. "schema/sqlite-v5.sql"). A file that is missing
// or unreadable fails the case, naming the path it looked for.
std::string fixture(const std::string& name);

}  // namespace idem::test
