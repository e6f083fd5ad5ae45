// The shared vocabulary (docs/hacking.md, "Shared vocabulary") is written once: no second
// severity_name, us() or comm_hex in collector/ or tools/, and no name of the one function-name
// table (model/func_names.h) spelt out as a string in code elsewhere — a second table drifts
// from the first (the exporter's op labels had their own). Reads the sources from
// NCCLWATCH_SOURCE_DIR.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "model/func_names.h"

namespace ncclwatch::model {
namespace {

namespace fs = std::filesystem;

struct Literal {
  std::string text;
  int line = 0;
};

// `source` with comments and string/char literals blanked (newlines kept), and its literals.
struct Split {
  std::string code;
  std::vector<Literal> literals;
};

Split split_source(const std::string& s) {
  Split out;
  out.code.reserve(s.size());
  int line = 1;
  std::size_t i = 0;
  auto keep_newline = [&](char c) {
    if (c == '\n') ++line;
    out.code.push_back(c == '\n' ? '\n' : ' ');
  };
  while (i < s.size()) {
    if (s.compare(i, 2, "//") == 0) {
      while (i < s.size() && s[i] != '\n') keep_newline(s[i++]);
    } else if (s.compare(i, 2, "/*") == 0) {
      const std::size_t end = s.find("*/", i + 2);
      const std::size_t stop = end == std::string::npos ? s.size() : end + 2;
      while (i < stop) keep_newline(s[i++]);
    } else if (s[i] == 'R' && i + 1 < s.size() && s[i + 1] == '"') {
      const std::size_t open = s.find('(', i + 2);
      const std::string close = ")" + s.substr(i + 2, open - i - 2) + "\"";
      const std::size_t end = s.find(close, open);
      const std::size_t stop = end == std::string::npos ? s.size() : end + close.size();
      out.literals.push_back({s.substr(open + 1, end - open - 1), line});
      while (i < stop) keep_newline(s[i++]);
    } else if (s[i] == '"' || s[i] == '\'') {
      const char quote = s[i];
      const int first_line = line;
      std::string text;
      keep_newline(s[i++]);
      while (i < s.size() && s[i] != quote && s[i] != '\n') {
        if (s[i] == '\\' && i + 1 < s.size()) {
          text.push_back(s[i]);
          keep_newline(s[i++]);
        }
        text.push_back(s[i]);
        keep_newline(s[i++]);
      }
      if (i < s.size()) keep_newline(s[i++]);
      if (quote == '"') out.literals.push_back({text, first_line});
    } else {
      if (s[i] == '\n') ++line;
      out.code.push_back(s[i++]);
    }
  }
  return out;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Every .h/.cpp under collector/ and tools/, relative to the source dir.
std::vector<std::string> product_sources() {
  std::vector<std::string> out;
  const fs::path root = NCCLWATCH_SOURCE_DIR;
  for (const char* part : {"collector", "tools"}) {
    for (const auto& e : fs::recursive_directory_iterator(root / part)) {
      const auto ext = e.path().extension();
      if (e.is_regular_file() && (ext == ".h" || ext == ".cpp"))
        out.push_back(fs::relative(e.path(), root).string());
    }
  }
  return out;
}

int line_of(const std::string& code, std::size_t offset) {
  return 1 + static_cast<int>(std::count(code.begin(), code.begin() + offset, '\n'));
}

TEST(Vocabulary, TheSharedWordsAreDefinedOnce) {
  // A function definition or declaration of one of the shared words: a return type, the name,
  // its parameters.
  const std::regex definition(
      R"((?:double|char\s*\*|std::string|auto)\s+(severity_name|us|comm_hex)\s*\()");
  std::vector<std::string> found;
  const auto sources = product_sources();
  ASSERT_GT(sources.size(), 50u) << "sources not found under " << NCCLWATCH_SOURCE_DIR;
  for (const auto& rel : sources) {
    if (rel == "collector/model/vocabulary.h") continue;
    const Split s = split_source(read_file(fs::path(NCCLWATCH_SOURCE_DIR) / rel));
    for (std::sregex_iterator it(s.code.begin(), s.code.end(), definition), end; it != end; ++it)
      found.push_back(rel + ":" + std::to_string(line_of(s.code, it->position())) + ": " +
                      (*it)[1].str() + "() again (use model/vocabulary.h)");
  }
  EXPECT_TRUE(found.empty()) << ::testing::PrintToString(found);
}

TEST(Vocabulary, FunctionNamesComeFromTheOneTable) {
  // The table's names that cannot be ordinary words ("all_reduce", "comm_split"): spelt out as a
  // string anywhere else, they are a second table.
  std::set<std::string> names;
  for (std::size_t f = 1; f < static_cast<std::size_t>(format::Func::kCount); ++f) {
    const std::string name = func_name(static_cast<format::Func>(f));
    if (name.find('_') != std::string::npos) names.insert(name);
  }
  ASSERT_TRUE(names.contains("all_reduce"));
  std::vector<std::string> found;
  for (const auto& rel : product_sources()) {
    if (rel == "collector/model/func_names.h") continue;
    const Split s = split_source(read_file(fs::path(NCCLWATCH_SOURCE_DIR) / rel));
    for (const Literal& l : s.literals)
      if (names.contains(l.text))
        found.push_back(rel + ":" + std::to_string(l.line) + ": \"" + l.text +
                        "\" (use model::func_name)");
  }
  EXPECT_TRUE(found.empty()) << ::testing::PrintToString(found);
}

TEST(Vocabulary, TheScannerSeesCodeNotCommentsOrStrings) {
  const Split s = split_source(
      "double us(int64_t ns);  // double us(\n/* double us( */ const char* a = \"all_reduce\";\n"
      "auto b = R\"x(comm_split)x\"; char c = '\"';\n");
  EXPECT_EQ(s.code.find("double us(", 10), std::string::npos);
  EXPECT_EQ(s.code.find("double us("), 0u);
  ASSERT_EQ(s.literals.size(), 2u);
  EXPECT_EQ(s.literals[0].text, "all_reduce");
  EXPECT_EQ(s.literals[0].line, 2);
  EXPECT_EQ(s.literals[1].text, "comm_split");
  EXPECT_EQ(s.literals[1].line, 3);
}

}  // namespace
}  // namespace ncclwatch::model
