// The daemon's background work (serve/background.hpp): nobody waits for its answer, so what it
// throws is logged, one JSON line on stderr, and the drain still joins it.
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "serve/background.hpp"

// The cases and helpers of this file, apart from every other unit file's (unity builds).
namespace unit_background {

namespace {

// std::cerr into a string while it lives.
class CerrCapture {
 public:
  CerrCapture() : saved_(std::cerr.rdbuf(captured_.rdbuf())) {}
  ~CerrCapture() { std::cerr.rdbuf(saved_); }
  CerrCapture(const CerrCapture&) = delete;
  CerrCapture& operator=(const CerrCapture&) = delete;
  std::string text() const { return captured_.str(); }

 private:
  std::ostringstream captured_;
  std::streambuf* saved_;
};

}  // namespace

TEST_CASE("background: what background work throws is logged as background_failed", "[serve]") {
  CerrCapture err;
  int ran = 0;
  {
    idem::serve::Background background;
    background.spawn([] { throw std::runtime_error("store idem.db: disk I/O error"); });
    background.spawn([&] { ++ran; });
    background.wait();
  }
  CHECK(ran == 1);
  std::istringstream lines(err.text());
  std::string line;
  REQUIRE(std::getline(lines, line));
  const auto logged = nlohmann::json::parse(line);
  CHECK(logged.at("event") == "background_failed");
  CHECK(logged.at("error") == "store idem.db: disk I/O error");
  CHECK(logged.at("time").get<std::string>().size() >= 20);
  CHECK_FALSE(std::getline(lines, line));
}

// A thread that finished its job takes the next one: no thread is made and torn down per job.
TEST_CASE("background: a thread that finished a job takes the next one", "[serve]") {
  idem::serve::Background background;
  std::promise<std::thread::id> first;
  background.spawn([&] { first.set_value(std::this_thread::get_id()); });
  const std::thread::id ran_first = first.get_future().get();
  // Until the thread says it waits for work (it does so right after its job).
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (background.idle_threads() == 0 && std::chrono::steady_clock::now() < give_up)
    std::this_thread::yield();
  REQUIRE(background.idle_threads() == 1);
  std::promise<std::thread::id> second;
  background.spawn([&] { second.set_value(std::this_thread::get_id()); });
  CHECK(second.get_future().get() == ran_first);
  background.wait();
  CHECK(background.idle_threads() == 0);
}

}  // namespace unit_background
