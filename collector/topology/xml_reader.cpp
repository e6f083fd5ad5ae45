#include "topology/xml_reader.h"

#include <string>

namespace ncclwatch::topology {

const std::string* XmlElement::attribute(std::string_view key) const {
  for (const auto& [k, v] : attributes)
    if (k == key) return &v;
  return nullptr;
}

namespace {

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == ':' || c == '.';
}
bool space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

// Replaces the five predefined entities; anything else stays as written.
std::string unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  static const std::pair<std::string_view, char> kEntities[] = {
      {"&lt;", '<'}, {"&gt;", '>'}, {"&amp;", '&'}, {"&quot;", '"'}, {"&apos;", '\''}};
  for (std::size_t i = 0; i < s.size();) {
    bool done = false;
    if (s[i] == '&')
      for (const auto& [e, c] : kEntities)
        if (s.substr(i, e.size()) == e) {
          out += c;
          i += e.size();
          done = true;
          break;
        }
    if (!done) out += s[i++];
  }
  return out;
}

class Reader {
 public:
  explicit Reader(std::string_view text) : s_(text) {}

  XmlDocument run() {
    doc_.elements.emplace_back();  // synthetic root
    std::size_t current = 0, depth = 0;
    while (pos_ < s_.size()) {
      std::size_t lt = s_.find('<', pos_);
      if (lt == std::string_view::npos) break;  // trailing text
      pos_ = lt;
      if (starts("<!--")) {
        if (!skip_past("-->")) return fail("unterminated comment");
      } else if (starts("<?")) {
        if (!skip_past("?>")) return fail("unterminated declaration");
      } else if (starts("<!")) {
        if (!skip_past(">")) return fail("unterminated <! ... >");
      } else if (starts("</")) {
        pos_ += 2;
        std::string_view name = read_name();
        skip_spaces();
        if (!starts(">")) return fail("bad closing tag");
        ++pos_;
        if (depth == 0 || name != doc_.elements[current].name)
          return fail("closing tag </" + std::string(name) + "> does not match");
        current = doc_.elements[current].parent;
        --depth;
      } else {
        ++pos_;
        std::size_t index = doc_.elements.size();
        if (index >= kXmlMaxElements) return fail("too many elements");
        XmlElement e;
        e.name = std::string(read_name());
        if (e.name.empty()) return fail("element without a name");
        e.parent = current;
        bool self_closing = false;
        if (!read_attributes(e, self_closing)) return fail("bad attributes in <" + e.name + ">");
        doc_.elements.push_back(std::move(e));
        doc_.elements[current].children.push_back(index);
        if (!self_closing) {
          if (++depth > kXmlMaxDepth) return fail("nested too deep");
          current = index;
        }
      }
    }
    if (depth != 0) return fail("unexpected end: <" + doc_.elements[current].name + "> not closed");
    return std::move(doc_);
  }

 private:
  bool starts(std::string_view w) const { return s_.substr(pos_, w.size()) == w; }
  bool skip_past(std::string_view w) {
    std::size_t e = s_.find(w, pos_);
    if (e == std::string_view::npos) return false;
    pos_ = e + w.size();
    return true;
  }
  void skip_spaces() {
    while (pos_ < s_.size() && space(s_[pos_])) ++pos_;
  }
  std::string_view read_name() {
    std::size_t b = pos_;
    while (pos_ < s_.size() && name_char(s_[pos_])) ++pos_;
    return s_.substr(b, pos_ - b);
  }
  bool read_attributes(XmlElement& e, bool& self_closing) {
    for (;;) {
      skip_spaces();
      if (pos_ >= s_.size()) return false;
      if (starts("/>")) {
        pos_ += 2;
        self_closing = true;
        return true;
      }
      if (starts(">")) {
        ++pos_;
        return true;
      }
      std::string_view key = read_name();
      if (key.empty()) return false;
      skip_spaces();
      if (!starts("=")) return false;
      ++pos_;
      skip_spaces();
      if (pos_ >= s_.size() || (s_[pos_] != '"' && s_[pos_] != '\'')) return false;
      char q = s_[pos_++];
      std::size_t end = s_.find(q, pos_);
      if (end == std::string_view::npos) return false;
      e.attributes.emplace_back(std::string(key), unescape(s_.substr(pos_, end - pos_)));
      pos_ = end + 1;
    }
  }
  XmlDocument fail(std::string why) {
    doc_.error = why + " at byte " + std::to_string(pos_);
    return std::move(doc_);
  }

  std::string_view s_;
  std::size_t pos_ = 0;
  XmlDocument doc_;
};

}  // namespace

XmlDocument read_xml(std::string_view text) {
  return Reader(text).run();
}

}  // namespace ncclwatch::topology
