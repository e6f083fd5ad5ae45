// A hash map that forgets its oldest insertions beyond a fixed capacity: the exporter's joins
// (launch links waiting for their kernel, calls waiting for their GPU interval) must stay bounded
// however long the job runs and however many records never find their partner (drops, graphs).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_map>

namespace ncclwatch::live {

template <typename Key, typename Value, typename Hash = std::hash<Key>>
class BoundedMap {
 public:
  explicit BoundedMap(std::size_t capacity) : capacity_(capacity) {}

  // Inserts or overwrites; evicts the oldest keys while over capacity.
  Value& put(const Key& key, Value value) {
    auto [it, inserted] = map_.insert_or_assign(key, std::move(value));
    if (inserted) {
      order_.push_back(key);
      while (map_.size() > capacity_) evict_oldest();
    }
    return map_.find(key)->second;
  }
  Value* find(const Key& key) {
    auto it = map_.find(key);
    return it == map_.end() ? nullptr : &it->second;
  }
  void erase(const Key& key) {
    map_.erase(key);
    // The key stays in order_ until it reaches the front or the next compaction, which runs once
    // order_ holds twice the live keys (plus slack): memory follows the live entries, not the
    // capacity, at an amortized O(1) per erase.
    if (order_.size() > 2 * map_.size() + 1024) compact();
  }
  // The oldest live entry (first inserted, not erased since), or nullptr when empty.
  Value* oldest() {
    while (!order_.empty()) {
      auto it = map_.find(order_.front());
      if (it != map_.end()) return &it->second;
      order_.pop_front();
    }
    return nullptr;
  }
  std::size_t size() const { return map_.size(); }
  uint64_t evicted() const { return evicted_; }

 private:
  void evict_oldest() {
    while (!order_.empty()) {
      const Key k = order_.front();
      order_.pop_front();
      if (map_.erase(k) != 0) {
        ++evicted_;
        return;
      }
    }
  }
  void compact() {
    std::deque<Key> kept;
    for (const Key& k : order_)
      if (map_.contains(k)) kept.push_back(k);
    order_.swap(kept);
  }

  std::size_t capacity_;
  std::unordered_map<Key, Value, Hash> map_;
  std::deque<Key> order_;
  uint64_t evicted_ = 0;
};

}  // namespace ncclwatch::live
