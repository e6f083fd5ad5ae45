#include "kineto/trace_event.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace ncclwatch::kineto {
namespace {

using simdjson::ondemand::json_type;
using simdjson::ondemand::value;

std::string_view trim_token(std::string_view t) {
  while (!t.empty() && (t.back() == ' ' || t.back() == '\n' || t.back() == '\r' ||
                        t.back() == '\t' || t.back() == ',' || t.back() == '}' || t.back() == ']'))
    t.remove_suffix(1);
  if (t.size() >= 2 && t.front() == '"' && t.back() == '"') t = t.substr(1, t.size() - 2);
  return t;
}

// Integer value of a number (or numeric string); doubles are rounded. False when not numeric.
bool get_int(value v, int64_t& out) {
  json_type type;
  if (v.type().get(type) != simdjson::SUCCESS) return false;
  if (type == json_type::number) {
    int64_t i;
    if (v.get_int64().get(i) == simdjson::SUCCESS) {
      out = i;
      return true;
    }
    double d;
    if (v.get_double().get(d) != simdjson::SUCCESS || !std::isfinite(d) || std::fabs(d) > 9e18)
      return false;
    out = std::llround(d);
    return true;
  }
  if (type == json_type::string) {
    std::string_view s;
    if (v.get_string().get(s) != simdjson::SUCCESS || s.empty() || s.size() > 20) return false;
    char buf[24];
    s.copy(buf, s.size());
    buf[s.size()] = '\0';
    char* end = nullptr;
    const long long r = std::strtoll(buf, &end, 10);
    if (end != buf + s.size()) return false;
    out = r;
    return true;
  }
  return false;
}

bool get_str(value v, std::string_view& out) {
  json_type type;
  if (v.type().get(type) != simdjson::SUCCESS) return false;
  if (type == json_type::string) return v.get_string().get(out) == simdjson::SUCCESS;
  return false;
}

// "Process Group Ranks": a string "[0, 1]" in the traces seen so far, but accept an array too
// (copied into `storage` as text, since the array has no string form to point at).
bool get_ranks(value v, std::string_view& out, std::string& storage) {
  json_type type;
  if (v.type().get(type) != simdjson::SUCCESS) return false;
  if (type == json_type::string) return v.get_string().get(out) == simdjson::SUCCESS;
  if (type != json_type::array) return false;
  simdjson::ondemand::array arr;
  if (v.get_array().get(arr) != simdjson::SUCCESS) return false;
  storage.assign(1, '[');
  for (auto item : arr) {
    int64_t r;
    if (item.get_int64().get(r) != simdjson::SUCCESS) return false;
    char buf[24];
    const int n = std::snprintf(buf, sizeof buf, storage.size() > 1 ? ",%lld" : "%lld",
                                static_cast<long long>(r));
    storage.append(buf, static_cast<std::size_t>(n));
  }
  storage.push_back(']');
  out = storage;
  return true;
}

// A tid: a number, a numeric string, or "stream 7" (PyTorch 1.8-1.9 name GPU tracks so). The
// value is read once (simdjson's on-demand values are consumed by reading).
bool get_tid(value v, int64_t& out) {
  json_type type;
  if (v.type().get(type) != simdjson::SUCCESS) return false;
  if (type != json_type::string) return get_int(v, out);
  std::string_view s;
  if (v.get_string().get(s) != simdjson::SUCCESS) return false;
  constexpr std::string_view kStream = "stream ";
  if (s.substr(0, kStream.size()) == kStream) s.remove_prefix(kStream.size());
  if (s.empty() || s.size() > 18) return false;
  int64_t n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + (c - '0');
  }
  out = n;
  return true;
}

bool get_time(value v, int64_t& ns) {
  return parse_us_to_ns(v.raw_json_token(), ns);
}

bool equals_nocase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char c = a[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != b[i]) return false;
  }
  return true;
}

}  // namespace

Category category_of(std::string_view cat) {
  struct Name {
    std::string_view name;  // lower case
    Category category;
  };
  static constexpr Name kNames[] = {
      {"kernel", Category::kKernel},
      {"gpu_memcpy", Category::kMemcpy},
      {"memcpy", Category::kMemcpy},
      {"gpu_memset", Category::kMemset},
      {"memset", Category::kMemset},
      {"cuda_runtime", Category::kRuntime},
      {"runtime", Category::kRuntime},
      {"cuda_driver", Category::kDriver},
      {"cpu_op", Category::kCpuOp},
      {"operator", Category::kCpuOp},
      {"user_annotation", Category::kUserAnnotation},
      {"gpu_user_annotation", Category::kGpuUserAnnotation},
  };
  for (const Name& n : kNames)
    if (equals_nocase(cat, n.name)) return n.category;
  return Category::kOther;
}

bool parse_us_to_ns(std::string_view token, int64_t& ns) {
  constexpr uint64_t kMaxUs = static_cast<uint64_t>(INT64_MAX) / 1000 - 1;
  std::string_view t = trim_token(token);
  if (t.empty()) return false;
  bool neg = false;
  std::size_t i = 0;
  if (t[0] == '-') {
    neg = true;
    ++i;
  }
  uint64_t whole = 0;
  std::size_t digits = 0;
  for (; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i, ++digits) {
    if (whole > kMaxUs) return false;  // beyond int64 ns
    whole = whole * 10 + static_cast<uint64_t>(t[i] - '0');
  }
  uint64_t frac = 0;  // ns part
  if (i < t.size() && t[i] == '.') {
    ++i;
    int k = 0;
    bool round_up = false;
    for (; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i, ++k) {
      if (k < 3)
        frac = frac * 10 + static_cast<uint64_t>(t[i] - '0');
      else if (k == 3)
        round_up = t[i] >= '5';
    }
    if (k == 0 && digits == 0) return false;
    for (int j = std::min(k, 3); j < 3; ++j) frac *= 10;
    if (round_up) ++frac;
  } else if (digits == 0) {
    return false;
  }
  if (i < t.size()) {
    // An exponent or other form: rare; fall back to double.
    if (t[i] != 'e' && t[i] != 'E') return false;
    std::string s(t);
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size() || !std::isfinite(d) || std::fabs(d) > 9e15) return false;
    ns = std::llround(d * 1000.0);
    return true;
  }
  if (whole > kMaxUs) return false;
  const int64_t v = static_cast<int64_t>(whole * 1000 + frac);
  ns = neg ? -v : v;
  return true;
}

bool TraceEventParser::parse(std::string_view json, TraceEvent& out) {
  out = TraceEvent{};
  simdjson::ondemand::document doc;
  auto err = parser_
                 .iterate(simdjson::padded_string_view(json.data(), json.size(),
                                                       json.size() + simdjson::SIMDJSON_PADDING))
                 .get(doc);
  if (err) return error_ = simdjson::error_message(err), false;
  simdjson::ondemand::object obj;
  if ((err = doc.get_object().get(obj))) return error_ = simdjson::error_message(err), false;
  for (auto field : obj) {
    std::string_view key;
    if ((err = field.unescaped_key().get(key))) return error_ = simdjson::error_message(err), false;
    value v;
    if ((err = field.value().get(v))) return error_ = simdjson::error_message(err), false;
    if (key.size() == 2 && key == "ph") {
      get_str(v, out.ph);
    } else if (key == "cat") {
      if (get_str(v, out.cat)) out.category = category_of(out.cat);
    } else if (key == "name") {
      get_str(v, out.name);
    } else if (key == "ts") {
      out.has_ts = get_time(v, out.ts_ns);
      out.bad_ts = !out.has_ts;
    } else if (key == "dur") {
      out.bad_dur = !get_time(v, out.dur_ns);
    } else if (key == "pid") {
      get_int(v, out.pid);
    } else if (key == "tid") {
      get_tid(v, out.tid);
    } else if (key == "args") {
      if (!parse_args(v, out)) return false;
    }
  }
  return true;
}

bool TraceEventParser::parse_args(value args, TraceEvent& out) {
  simdjson::ondemand::object obj;
  auto err = args.get_object().get(obj);
  if (err) return true;  // args that are not an object are ignored, not an error
  for (auto field : obj) {
    std::string_view key;
    if ((err = field.unescaped_key().get(key))) return error_ = simdjson::error_message(err), false;
    value v;
    if ((err = field.value().get(v))) return error_ = simdjson::error_message(err), false;
    switch (key.size()) {
      case 3:
        if (key == "Seq" || key == "seq") get_int(v, out.seq);
        break;
      case 4:
        if (key == "Rank") get_int(v, out.rank);
        break;
      case 5:
        if (key == "bytes")
          get_int(v, out.bytes);
        else if (key == "dtype")
          get_str(v, out.dtype);
        break;
      case 6:
        if (key == "device")
          get_int(v, out.device);
        else if (key == "stream")
          get_int(v, out.stream);
        break;
      case 10:
        if (key == "Group size") get_int(v, out.group_size);
        break;
      case 11:
        if (key == "External id" || key == "external id")
          get_int(v, out.external_id);
        else if (key == "correlation")
          get_int(v, out.correlation);
        break;
      case 13:
        if (key == "In msg nelems") get_int(v, out.in_nelems);
        break;
      case 14:
        if (key == "Out msg nelems") get_int(v, out.out_nelems);
        break;
      case 15:
        if (key == "Collective name") get_str(v, out.collective);
        break;
      case 18:
        if (key == "Process Group Name") get_str(v, out.pg_name);
        break;
      case 19:
        if (key == "Process Group Ranks") get_ranks(v, out.pg_ranks, ranks_storage_);
        break;
      case 25:
        if (key == "Process Group Description") get_str(v, out.pg_desc);
        break;
      default:
        break;
    }
  }
  return true;
}

}  // namespace ncclwatch::kineto
