#pragma once
// Threads racing: n threads released together by one barrier, each running the same function
// with its own index, all joined before race() returns. What each thread returned is kept by its
// index, what it threw as text, for the case to check once every thread is done (Catch2's
// assertions are not for other threads: the function must not use them).
#include <cstddef>
#include <exception>
#include <latch>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace idem::test {

template <class T>
struct RaceResults {
  std::vector<std::optional<T>> results;  // by thread index; none where the thread threw
  std::string errors;                     // one line per thread that threw: "thread 3: <what>"

  // The indexes of the threads whose result `pred` holds for.
  template <class Pred>
  std::vector<int> which(Pred pred) const {
    std::vector<int> indexes;
    for (size_t t = 0; t < results.size(); ++t)
      if (results[t] && pred(*results[t])) indexes.push_back(int(t));
    return indexes;
  }
  // How many threads returned a result `pred` holds for.
  template <class Pred>
  int count(Pred pred) const {
    return int(which(pred).size());
  }
};

// Runs fn(0) .. fn(n - 1) on n threads at once. A function that returns nothing has `true` as
// the result of each thread that returned.
template <class F>
auto race(int n, F fn) {
  using Returned = std::invoke_result_t<F&, int>;
  using Result = std::conditional_t<std::is_void_v<Returned>, bool, Returned>;
  RaceResults<Result> raced;
  raced.results.resize(size_t(n));
  std::vector<std::string> errors(static_cast<size_t>(n));  // "thread 3: <what>"
  std::latch start(n);
  std::vector<std::thread> threads;
  auto run = [&](int t) {
    const std::string thread_name = "thread " + std::to_string(t) + ": ";
    try {
      start.arrive_and_wait();
      if constexpr (std::is_void_v<Returned>) {
        fn(t);
        raced.results[size_t(t)] = true;
      } else {
        raced.results[size_t(t)] = fn(t);
      }
    } catch (const std::exception& e) {
      errors[size_t(t)] = thread_name + e.what();
    } catch (...) {
      errors[size_t(t)] = thread_name + "an exception that is not a std::exception";
    }
  };
  try {
    for (int t = 0; t < n; ++t) threads.emplace_back(run, t);
  } catch (...) {
    // A thread that could not be started: release the others, wait for them, say so.
    start.count_down(n - std::ptrdiff_t(threads.size()));
    for (auto& thread : threads) thread.join();
    throw;
  }
  for (auto& thread : threads) thread.join();
  for (const std::string& error : errors)
    if (!error.empty()) raced.errors += error + "\n";
  return raced;
}

}  // namespace idem::test
