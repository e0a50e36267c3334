// Where the fixtures are is compiled in (IDEM_TEST_FIXTURES, tests/CMakeLists.txt: the source
// tree's folder), so that a case finds them however it is run: by CTest one case at a time, or
// the binary by hand from any folder.
#include "fixtures.hpp"

#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>

namespace idem::test {

std::string fixture(const std::string& name) {
  const std::string path = std::string(IDEM_TEST_FIXTURES) + "/" + name;
  std::ifstream in(path, std::ios::binary);
  if (!in) FAIL("fixture " << path << " cannot be read");
  std::string bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>{});
  if (in.bad()) FAIL("fixture " << path << " cannot be read");
  return bytes;
}

}  // namespace idem::test
