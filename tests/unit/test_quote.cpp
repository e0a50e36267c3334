// Text quoted for one-line messages (util/quote.hpp).
#include <catch2/catch.hpp>
#include <string>

#include "util/quote.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_quote {

using idem::util::quote;

TEST_CASE("quote: printable ASCII as is, the rest escaped, always one line", "[quote]") {
  CHECK(quote("") == "\"\"");
  CHECK(quote("Europe/Paris") == "\"Europe/Paris\"");
  CHECK(quote("a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(quote("1\n2\t3\r") == "\"1\\n2\\t3\\r\"");
  CHECK(quote(std::string("\x00\x1f\x7f\xc3\xa9", 5)) == "\"\\x00\\x1f\\x7f\\xc3\\xa9\"");
}

}  // namespace unit_quote
