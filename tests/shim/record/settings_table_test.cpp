// The settings table (ncclwatch/settings_table.h) is the one place NCCLWATCH_* variables are
// declared: README's "Settings" tables list exactly its variables with its defaults, the shim
// reads them only in its settings module, and no code spells a name out or names a variable the
// table does not have. Reads README.md and the sources from NCCLWATCH_SOURCE_DIR.
#include "ncclwatch/settings_table.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace ncclwatch::settings {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string trim(std::string s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  const auto last = s.find_last_not_of(" \t");
  return s.substr(first, last - first + 1);
}

std::string without_backticks(std::string s) {
  std::erase(s, '`');
  return trim(s);
}

// ---- README ----

struct ReadmeRow {
  int table = 0;  // 0: the settings, 1: the variables the shim sets, ...
  std::string default_text;
  std::string read_by;
};

// Rows of the tables in README's "## Settings" section whose first cell names NCCLWATCH
// variables (`NCCLWATCH_X`, possibly several), by name.
std::map<std::string, ReadmeRow> readme_settings(const std::string& readme) {
  std::map<std::string, ReadmeRow> rows;
  std::istringstream in(readme);
  std::string line;
  bool in_section = false, in_table = false;
  int table = -1;
  const std::regex name_re("`(NCCLWATCH(?:_[A-Z0-9_]+)?)`");
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) {
      in_section = line == "## Settings" || line.rfind("## Settings ", 0) == 0;
      continue;
    }
    if (!in_section) continue;
    if (line.rfind("|", 0) != 0) {
      in_table = false;
      continue;
    }
    if (!in_table) {
      in_table = true;
      ++table;
    }
    std::vector<std::string> cells;
    std::string cell;
    for (std::size_t i = 1; i < line.size(); ++i) {
      if (line[i] == '|' && line[i - 1] != '\\') {
        cells.push_back(trim(cell));
        cell.clear();
      } else {
        cell += line[i];
      }
    }
    if (cells.empty()) continue;
    for (std::sregex_iterator m(cells[0].begin(), cells[0].end(), name_re), end; m != end; ++m) {
      ReadmeRow row;
      row.table = table;
      if (cells.size() > 1) row.default_text = without_backticks(cells[1]);
      if (cells.size() > 2) row.read_by = without_backticks(cells[2]);
      rows[(*m)[1]] = row;
    }
  }
  return rows;
}

TEST(SettingsTable, NamesAreUniqueAndComplete) {
  std::set<std::string_view> names;
  for (const Variable& v : kVariables) {
    EXPECT_TRUE(names.insert(v.name).second) << v.name << " twice";
    EXPECT_TRUE(v.name == "NCCLWATCH" || v.name.rfind("NCCLWATCH_", 0) == 0) << v.name;
    EXPECT_FALSE(v.default_text.empty()) << v.name;
    EXPECT_FALSE(v.doc.empty()) << v.name;
    const bool checked = v.type == Type::kSwitch || v.type == Type::kInteger ||
                         v.type == Type::kDecimal || v.type == Type::kChoice ||
                         v.type == Type::kSpec;
    EXPECT_EQ(checked, !v.expected.empty()) << v.name << ": checked values say what they accept";
  }
}

TEST(SettingsTable, ReadmeListsExactlyTheTablesVariablesAndDefaults) {
  const std::string readme = read_file(fs::path(NCCLWATCH_SOURCE_DIR) / "README.md");
  ASSERT_FALSE(readme.empty());
  const auto rows = readme_settings(readme);
  std::vector<std::string> missing, extra, wrong;
  for (const Variable& v : kVariables) {
    const std::string name(v.name);
    auto it = rows.find(name);
    const int table = v.reader == Reader::kSetByShim ? 1 : 0;
    if (it == rows.end() || it->second.table != table) {
      missing.push_back(name + (table == 0 ? " (settings table)" : " (variables the shim sets)"));
      continue;
    }
    if (table != 0) continue;
    if (it->second.default_text != v.default_text)
      wrong.push_back(name + ": README's default is '" + it->second.default_text +
                      "', the table's '" + std::string(v.default_text) + "'");
    if (it->second.read_by != reader_text(v.reader))
      wrong.push_back(name + ": README's 'read by' is '" + it->second.read_by + "', the table's '" +
                      std::string(reader_text(v.reader)) + "'");
  }
  std::set<std::string_view> names;
  for (const Variable& v : kVariables) names.insert(v.name);
  for (const auto& [name, row] : rows)
    if (!names.contains(name)) extra.push_back(name);
  auto list = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += "\n  " + x;
    return s;
  };
  EXPECT_TRUE(missing.empty()) << "in the table, not in README's Settings section:"
                               << list(missing);
  EXPECT_TRUE(extra.empty()) << "in README's Settings section, not in the table:" << list(extra);
  EXPECT_TRUE(wrong.empty()) << list(wrong);
}

// ---- sources ----

struct Literal {
  int line;
  std::string text;
};
struct Scan {
  std::vector<Literal> literals;
  std::vector<int> getenv_lines;  // lines with a getenv/secure_getenv token outside comments
};

// C++ string literals (plain and raw) and getenv tokens, comments skipped.
Scan scan_cpp(const std::string& src) {
  Scan out;
  int line = 1;
  std::size_t i = 0;
  const std::size_t n = src.size();
  auto is_ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  while (i < n) {
    const char c = src[i];
    if (c == '\n') {
      ++line;
      ++i;
    } else if (c == '/' && i + 1 < n && src[i + 1] == '/') {
      while (i < n && src[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < n && src[i + 1] == '*') {
      i += 2;
      while (i + 1 < n && !(src[i] == '*' && src[i + 1] == '/')) line += src[i++] == '\n';
      i += 2;
    } else if (c == 'R' && i + 1 < n && src[i + 1] == '"' && (i == 0 || !is_ident(src[i - 1]))) {
      const std::size_t open = src.find('(', i + 2);
      if (open == std::string::npos) break;
      const std::string close = ")" + src.substr(i + 2, open - i - 2) + "\"";
      const std::size_t end = src.find(close, open);
      if (end == std::string::npos) break;
      out.literals.push_back({line, src.substr(open + 1, end - open - 1)});
      for (std::size_t k = i; k < end; ++k) line += src[k] == '\n';
      i = end + close.size();
    } else if (c == '"') {
      std::string text;
      ++i;
      while (i < n && src[i] != '"' && src[i] != '\n') {
        if (src[i] == '\\' && i + 1 < n) text += src[i++];
        text += src[i++];
      }
      out.literals.push_back({line, text});
      ++i;
    } else if (c == '\'') {
      ++i;
      while (i < n && src[i] != '\'' && src[i] != '\n') i += src[i] == '\\' ? 2 : 1;
      ++i;
    } else if (is_ident(c)) {
      const std::size_t start = i;
      while (i < n && is_ident(src[i])) ++i;
      const std::string word = src.substr(start, i - start);
      if (word == "getenv" || word == "secure_getenv") out.getenv_lines.push_back(line);
    } else {
      ++i;
    }
  }
  return out;
}

const std::regex& variable_token() {
  static const std::regex re("NCCLWATCH(_[A-Z0-9_]*[A-Z0-9])?(?![A-Za-z0-9_])");
  return re;
}

bool in_table(const std::string& name) {
  for (const Variable& v : kVariables)
    if (v.name == name) return true;
  return false;
}

// What `path` (relative to the source dir) does wrong with NCCLWATCH_* names: one line each.
std::vector<std::string> check_source(const std::string& path, const std::string& src) {
  std::vector<std::string> problems;
  const bool is_table = path == "shim/include/ncclwatch/settings_table.h";
  const bool product = path.rfind("shim/", 0) == 0 || path.rfind("tools/", 0) == 0;
  const Scan scan = scan_cpp(src);
  for (const Literal& lit : scan.literals) {
    const std::string where = path + ":" + std::to_string(lit.line) + ": ";
    // A variable's name alone in a literal is what getenv/setenv take: use settings::name(Id).
    if (product && !is_table && std::regex_match(lit.text, variable_token()))
      problems.push_back(where + "spells out \"" + lit.text + "\" (use settings::name)");
    // Any mention of a variable in a message or help text must name one that exists.
    for (std::sregex_iterator m(lit.text.begin(), lit.text.end(), variable_token()), end; m != end;
         ++m) {
      if (!in_table(m->str()))
        problems.push_back(where + "names " + m->str() + ", which the settings table lacks");
    }
  }
  // Only the settings module reads the shim's environment; the other readers, for variables
  // that are not the shim's settings, are listed here.
  static const std::set<std::string> other_readers = {
      "shim/record/settings.cpp",
      "shim/record/nccl_log_capture.cpp",  // NCCL_* and the launchers' rank variables
      "shim/gpu/library_finder.cpp",       // CUDA_HOME
  };
  if (path.rfind("shim/", 0) == 0 && !other_readers.contains(path)) {
    for (int line : scan.getenv_lines)
      problems.push_back(path + ":" + std::to_string(line) +
                         ": reads the environment (only shim/record/settings.cpp may: settings.h)");
  }
  if (path != "shim/record/settings.cpp" && other_readers.contains(path)) {
    // ... and never a table variable, not even by settings::name.
    std::istringstream in(src);
    std::string text;
    for (int line = 1; std::getline(in, text); ++line) {
      const bool reads = std::find(scan.getenv_lines.begin(), scan.getenv_lines.end(), line) !=
                         scan.getenv_lines.end();
      if (reads && (text.find("settings::") != std::string::npos ||
                    text.find("kNcclEnvMarker") != std::string::npos ||
                    text.find("NCCLWATCH") != std::string::npos))
        problems.push_back(path + ":" + std::to_string(line) + ": reads a settings variable");
    }
  }
  return problems;
}

TEST(SettingsTable, TheCheckerCatchesWhatItLooksFor) {
  EXPECT_EQ(check_source("shim/gpu/x.cpp", "auto v = std::getenv(\"NCCLWATCH_MODE\");").size(),
            2u);  // the spelled-out name and the read
  EXPECT_EQ(check_source("shim/gpu/x.cpp", "const char* k = \"NCCLWATCH\";").size(), 1u);
  EXPECT_EQ(check_source("tools/commands/x.cpp", "setenv(\"NCCLWATCH_DIR\", d, 1);").size(), 1u);
  EXPECT_EQ(check_source("collector/x.cpp", "puts(\"set NCCLWATCH_NO_SUCH=1\");").size(), 1u);
  EXPECT_EQ(check_source("shim/record/nccl_log_capture.cpp",
                         "x = getenv(settings::name(settings::Id::kDir));")
                .size(),
            1u);
  EXPECT_EQ(check_source("shim/gpu/x.cpp", "x = secure_getenv(name);").size(), 1u);
  EXPECT_EQ(check_source("shim/gpu/x.cpp", "auto r = R\"(NCCLWATCH_GONE)\";").size(), 2u);
  // Fine: comments, known names in messages, the module itself, the CLI reading by the table.
  EXPECT_TRUE(
      check_source("shim/gpu/x.cpp", "// getenv(\"NCCLWATCH_MODE\")\n/* getenv */").empty());
  EXPECT_TRUE(
      check_source("shim/gpu/x.cpp", "puts(\"set NCCLWATCH_CUPTI_CLOCK=measured\");").empty());
  EXPECT_TRUE(check_source("shim/record/settings.cpp", "return std::getenv(name);").empty());
  EXPECT_TRUE(check_source("tools/commands/run.cpp", "getenv(settings::name(settings::Id::kLib));")
                  .empty());
  EXPECT_TRUE(check_source("shim/gpu/library_finder.cpp", "getenv(\"CUDA_HOME\");").empty());
}

TEST(SettingsTable, OnlyTheSettingsModuleReadsAndNothingSpellsANameOut) {
  const fs::path root(NCCLWATCH_SOURCE_DIR);
  std::vector<std::string> problems;
  int files = 0;
  for (const char* dir : {"shim", "tools", "collector"}) {
    for (const auto& entry : fs::recursive_directory_iterator(root / dir)) {
      const std::string ext = entry.path().extension().string();
      if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".h" && ext != ".def")) continue;
      ++files;
      const std::string rel = fs::relative(entry.path(), root).generic_string();
      for (auto& p : check_source(rel, read_file(entry.path()))) problems.push_back(std::move(p));
    }
  }
  EXPECT_GT(files, 50);
  std::string all;
  for (const auto& p : problems) all += "\n  " + p;
  EXPECT_TRUE(problems.empty()) << all;
}

}  // namespace
}  // namespace ncclwatch::settings
