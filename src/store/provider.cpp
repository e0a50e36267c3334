#include "store/provider.hpp"

#include <exception>
#include <utility>

namespace idem::store {

StoreProvider::StoreProvider(StoreLocation where, StoreOptions options, size_t max_idle)
    : StoreProvider([where = std::move(where), options] { return open_store(where, options); },
                    max_idle) {}

StoreProvider::StoreProvider(Opener open, size_t max_idle)
    : open_(std::move(open)), max_idle_(max_idle) {}

StoreProvider::Lease StoreProvider::lease() {
  {
    std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      std::unique_ptr<Store> store = std::move(idle_.back());
      idle_.pop_back();
      return Lease(*this, std::move(store));
    }
  }
  // Opened outside the lock: an open may wait out a busy store, and other leases must not wait
  // behind it.
  std::unique_ptr<Store> store = open_();
  {
    std::lock_guard lock(mutex_);
    ++opened_;
  }
  return Lease(*this, std::move(store));
}

void StoreProvider::give_back(std::unique_ptr<Store> store, bool reusable) {
  {
    std::lock_guard lock(mutex_);
    if (reusable && idle_.size() < max_idle_) {
      idle_.push_back(std::move(store));
      return;
    }
  }
  store.reset();  // closed outside the lock
}

int64_t StoreProvider::opened() const {
  std::lock_guard lock(mutex_);
  return opened_;
}

size_t StoreProvider::idle() const {
  std::lock_guard lock(mutex_);
  return idle_.size();
}

StoreProvider::Lease::Lease(StoreProvider& provider, std::unique_ptr<Store> store)
    : provider_(&provider),
      store_(std::move(store)),
      exceptions_at_start_(std::uncaught_exceptions()) {}

StoreProvider::Lease::Lease(Lease&& other) noexcept
    : provider_(other.provider_),
      store_(std::move(other.store_)),
      exceptions_at_start_(other.exceptions_at_start_) {}

StoreProvider::Lease::~Lease() {
  if (store_)
    provider_->give_back(std::move(store_), std::uncaught_exceptions() <= exceptions_at_start_);
}

std::unique_ptr<OutputReader> leased_output(StoreProvider::Lease lease, const std::string& key,
                                            int64_t attempt) {
  class LeasedReader final : public OutputReader {
   public:
    LeasedReader(StoreProvider::Lease lease, std::unique_ptr<OutputReader> reader)
        : lease_(std::move(lease)), reader_(std::move(reader)) {}
    std::string read(int64_t offset, int64_t length) override {
      return reader_->read(offset, length);
    }

   private:
    StoreProvider::Lease lease_;            // declared first: given back last,
    std::unique_ptr<OutputReader> reader_;  // after the reader that uses its connection
  };
  std::unique_ptr<OutputReader> reader = lease->open_output(key, attempt);
  if (!reader) return nullptr;
  return std::make_unique<LeasedReader>(std::move(lease), std::move(reader));
}

}  // namespace idem::store
