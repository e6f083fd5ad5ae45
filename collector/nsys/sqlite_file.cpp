#include "nsys/sqlite_file.h"

#include <sqlite3.h>

#include <cstring>

#include <fmt/format.h>

namespace ncclwatch::nsys {

Query::Query(Query&& o) noexcept : db_(o.db_), stmt_(o.stmt_), error_(std::move(o.error_)) {
  o.stmt_ = nullptr;
}

Query& Query::operator=(Query&& o) noexcept {
  if (this != &o) {
    sqlite3_finalize(stmt_);
    db_ = o.db_;
    stmt_ = o.stmt_;
    error_ = std::move(o.error_);
    o.stmt_ = nullptr;
  }
  return *this;
}

Query::~Query() {
  sqlite3_finalize(stmt_);
}

bool Query::step() {
  if (stmt_ == nullptr || !error_.empty()) return false;
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc != SQLITE_DONE) error_ = sqlite3_errmsg(db_);
  sqlite3_finalize(stmt_);
  stmt_ = nullptr;
  return false;
}

bool Query::is_null(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

bool Query::is_integer(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_INTEGER;
}

int64_t Query::integer(int column) const {
  return sqlite3_column_int64(stmt_, column);
}

std::string_view Query::text(int column) const {
  const auto* p = sqlite3_column_text(stmt_, column);
  if (p == nullptr) return {};
  return {reinterpret_cast<const char*>(p),
          static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column))};
}

std::string sqlite_uri(const std::string& path) {
  std::string uri = "file:";
  for (unsigned char c : path) {
    if (c == '?' || c == '#' || c == '%' || c < 0x21 || c > 0x7e) {
      uri += fmt::format("%{:02X}", c);
    } else {
      uri.push_back(static_cast<char>(c));
    }
  }
  return uri + "?mode=ro&immutable=1";
}

bool has_sqlite_magic(const unsigned char* head, std::size_t size) {
  static constexpr char kMagic[] = "SQLite format 3";  // + its terminating '\0': 16 bytes
  return size >= sizeof kMagic && std::memcmp(head, kMagic, sizeof kMagic) == 0;
}

SqliteFile::SqliteFile(const std::string& path) {
  const int flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX;
  if (sqlite3_open_v2(sqlite_uri(path).c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    error_ = db_ != nullptr ? sqlite3_errmsg(db_) : "cannot open (out of memory)";
    sqlite3_close(db_);
    db_ = nullptr;
    return;
  }
  // Untrusted schema: no functions with side effects from views, triggers or generated columns;
  // no edits even if asked; bounded values; 8 MiB of page cache.
  sqlite3_db_config(db_, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  sqlite3_db_config(db_, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_limit(db_, SQLITE_LIMIT_LENGTH, kMaxValueBytes);
  sqlite3_limit(db_, SQLITE_LIMIT_SQL_LENGTH, 1 << 16);
  sqlite3_exec(db_, "PRAGMA cache_size = -8192", nullptr, nullptr, nullptr);
  Query q = query("SELECT name FROM sqlite_master WHERE type = 'table'");
  while (q.step()) tables_.emplace_back(q.text(0));
  if (!q.ok()) error_ = q.error();  // "file is not a database", "database disk image is malformed"
}

SqliteFile::~SqliteFile() {
  sqlite3_close(db_);
}

bool SqliteFile::has_table(std::string_view name) const {
  for (const auto& t : tables_)
    if (t == name) return true;
  return false;
}

std::vector<std::string> SqliteFile::columns(std::string_view table) const {
  std::vector<std::string> out;
  if (!has_table(table)) return out;
  // The name comes from the file's own table list (has_table); quoted all the same.
  std::string quoted;
  for (char c : table) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  Query q = query("PRAGMA table_info(\"" + quoted + "\")");
  while (q.step()) out.emplace_back(q.text(1));
  return out;
}

Query SqliteFile::query(const std::string& sql) const {
  Query q;
  if (db_ == nullptr) {
    q.error_ = "no database";
    return q;
  }
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db_, sql.c_str(), static_cast<int>(sql.size()), &stmt, nullptr) !=
      SQLITE_OK) {
    q.error_ = sqlite3_errmsg(db_);
    sqlite3_finalize(stmt);
    return q;
  }
  return Query(db_, stmt);
}

}  // namespace ncclwatch::nsys
