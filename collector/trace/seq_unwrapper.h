// Reconstructs 64-bit sequence numbers from the low 32 bits a CallRecord holds. Sequence numbers
// grow by one per call of a comm (collectives) or of a (comm, peer) pair in one direction (p2p), so
// each new value is taken as the 64-bit number closest to the last one of its key. Records of
// one key may arrive slightly out of order (several threads share the ring); that stays correct
// as long as neighbours are less than 2^31 apart.
#pragma once

#include <cstdint>
#include <unordered_map>

namespace ncclwatch::trace {

class SeqUnwrapper {
 public:
  enum class Lane : uint8_t { kCollective = 0, kSend = 1, kRecv = 2 };

  uint64_t unwrap(uint64_t comm_id, Lane lane, int32_t peer, uint32_t low) {
    const Key key{comm_id, static_cast<uint64_t>(static_cast<uint32_t>(peer)) << 8 |
                               static_cast<uint64_t>(lane)};
    uint64_t& last = (has_cached_ && key == cached_key_) ? *cached_ : lookup(key, low);
    const auto delta = static_cast<int32_t>(low - static_cast<uint32_t>(last));
    uint64_t value = last + static_cast<uint64_t>(static_cast<int64_t>(delta));
    if (delta < 0 && static_cast<uint64_t>(-static_cast<int64_t>(delta)) > last) value = low;
    if (value > last) last = value;
    return value;
  }

 private:
  struct Key {
    uint64_t comm;
    uint64_t lane_peer;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const {
      return static_cast<std::size_t>(k.comm * 0x9E3779B97F4A7C15ULL ^
                                      (k.lane_peer + (k.comm >> 29)));
    }
  };

  uint64_t& lookup(const Key& key, uint32_t low) {
    auto [it, inserted] = last_.try_emplace(key, low);
    cached_key_ = key;
    cached_ = &it->second;  // unordered_map references stay valid across inserts
    has_cached_ = true;
    return it->second;
  }

  std::unordered_map<Key, uint64_t, KeyHash> last_;
  Key cached_key_{};
  uint64_t* cached_ = nullptr;
  bool has_cached_ = false;
};

}  // namespace ncclwatch::trace
