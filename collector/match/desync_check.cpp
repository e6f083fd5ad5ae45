#include "match/desync_check.h"

#include <algorithm>
#include <functional>
#include <string>

#include <fmt/format.h>

#include "match/func_name.h"
#include "match/rank_list.h"

namespace ncclwatch::match {

namespace {

struct Field {
  const char* name;
  std::function<uint64_t(const model::CallEvent&)> get;
  std::function<std::string(uint64_t)> show;
};

const std::vector<Field>& fields() {
  static const std::vector<Field> kFields = {
      {"op", [](const model::CallEvent& c) { return static_cast<uint64_t>(c.func); },
       [](uint64_t v) { return std::string(func_name(static_cast<format::Func>(v))); }},
      {"count", [](const model::CallEvent& c) { return c.count; },
       [](uint64_t v) { return std::to_string(v); }},
      {"datatype", [](const model::CallEvent& c) { return uint64_t{c.datatype}; },
       [](uint64_t v) { return datatype_name(static_cast<uint8_t>(v)); }},
      {"redop", [](const model::CallEvent& c) { return has_redop(c.func) ? uint64_t{c.redop} : 0; },
       [](uint64_t v) { return redop_name(static_cast<uint8_t>(v)); }},
      {"root",
       [](const model::CallEvent& c) {
         return is_rooted(c.func) ? static_cast<uint64_t>(static_cast<int64_t>(c.peer)) : 0;
       },
       [](uint64_t v) { return std::to_string(static_cast<int64_t>(v)); }},
  };
  return kFields;
}

}  // namespace

std::size_t DesyncCheck::check(const std::vector<const model::CallEvent*>& calls,
                               const std::vector<int32_t>& ranks,
                               std::optional<model::Desync>& desync) {
  desync.reset();
  std::size_t n = calls.size();
  bool all = true;
  for (std::size_t i = 1; i < n && all; ++i) all = agree(*calls[0], *calls[i]);
  if (all) return 0;

  // Slow path (rare): per field, the majority value, and who differs.
  std::vector<bool> odd(n, false);
  std::string what;
  std::size_t reference = 0;
  std::vector<bool> reference_ok(n, true);
  for (const Field& field : fields()) {
    values_.resize(n);
    for (std::size_t i = 0; i < n; ++i) values_[i] = field.get(*calls[i]);
    // Majority by counting each distinct value; n is the size of one comm, and this path is rare.
    uint64_t best = values_[0];
    std::size_t best_count = 0;
    for (std::size_t i = 0; i < n; ++i) {
      std::size_t c =
          static_cast<std::size_t>(std::count(values_.begin(), values_.end(), values_[i]));
      if (c > best_count) best = values_[i], best_count = c;
    }
    if (best_count == n) continue;
    std::vector<uint64_t> others;
    for (std::size_t i = 0; i < n; ++i) {
      if (values_[i] == best) continue;
      odd[i] = true;
      reference_ok[i] = false;
      if (std::find(others.begin(), others.end(), values_[i]) == others.end())
        others.push_back(values_[i]);
    }
    std::string shown;
    for (uint64_t v : others) shown += (shown.empty() ? "" : "/") + field.show(v);
    if (!what.empty()) what += "; ";
    what += fmt::format("{} {} vs {} (majority)", field.name, shown, field.show(best));
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (reference_ok[i]) {
      reference = i;
      break;
    }
  }
  model::Desync d;
  for (std::size_t i = 0; i < n; ++i) {
    if (odd[i]) d.ranks.push_back(ranks[i]);
  }
  d.what = std::move(what);
  desync = std::move(d);
  return reference;
}

}  // namespace ncclwatch::match
