// A SQLite file opened for reading only, as untrusted input: never written (read-only,
// immutable: no journal or lock file next to the user's file, no page rewritten), views and
// non-innocuous schema functions refused, strings and blobs bounded, a small page cache. Every
// failure is one line in error(); nothing throws but out of memory.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace ncclwatch::nsys {

class SqliteFile;

// A prepared query; step() until it returns false, then ok() says whether it ended or failed.
class Query {
 public:
  Query() = default;
  Query(Query&&) noexcept;
  Query& operator=(Query&&) noexcept;
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;
  ~Query();

  bool step();
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

  bool is_null(int column) const;
  bool is_integer(int column) const;  // stored as an INTEGER (not NULL, REAL, TEXT or BLOB)
  int64_t integer(int column) const;  // 0 for NULL; a REAL is truncated, TEXT parsed by SQLite
  std::string_view text(int column) const;  // "" for NULL; valid until the next step()

 private:
  friend class SqliteFile;
  Query(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
  std::string error_;
};

class SqliteFile {
 public:
  // Opens `path` read-only and immutable. ok() false (with error()) when it cannot be opened
  // or is not a SQLite database.
  explicit SqliteFile(const std::string& path);
  ~SqliteFile();
  SqliteFile(const SqliteFile&) = delete;
  SqliteFile& operator=(const SqliteFile&) = delete;

  bool ok() const { return db_ != nullptr && error_.empty(); }
  const std::string& error() const { return error_; }

  // A table (not a view) of that name exists.
  bool has_table(std::string_view name) const;
  // Its columns' names (PRAGMA table_info), empty when there is no such table.
  std::vector<std::string> columns(std::string_view table) const;
  // Prepares `sql`; a failure is in the returned query's error() (and its step() is false).
  Query query(const std::string& sql) const;

  // The longest string or blob SQLite will hand out (longer values fail the query).
  static constexpr int kMaxValueBytes = 1 << 20;

 private:
  sqlite3* db_ = nullptr;
  std::string error_;
  std::vector<std::string> tables_;
};

// "file:/path%3Fx?mode=ro&immutable=1": `path` as an SQLite URI, every byte that could end the
// path ('?', '#', '%') or is not printable escaped.
std::string sqlite_uri(const std::string& path);

// True when `head` starts with SQLite's magic, "SQLite format 3\0".
bool has_sqlite_magic(const unsigned char* head, std::size_t size);

}  // namespace ncclwatch::nsys
