#include "src/store/s3_xml.h"

#include <cstdint>
#include <utility>

namespace dcr::s3 {
namespace {

// The longest entity between '&' and ';' decoded ("#x10FFFF", "#1114111", "quot"): a '&' looks
// no further for its ';', so text of many '&' and no ';' decodes in linear time.
constexpr size_t kMaxEntityChars = 8;
constexpr size_t kPreviewChars = 80;
constexpr size_t kMaxCodeChars = 64, kMaxMessageChars = 300;

void append_utf8(uint32_t code, std::string* out) {
  if (code < 0x80) {
    *out += static_cast<char>(code);
  } else if (code < 0x800) {
    *out += static_cast<char>(0xC0 | (code >> 6));
    *out += static_cast<char>(0x80 | (code & 0x3F));
  } else if (code < 0x10000) {
    *out += static_cast<char>(0xE0 | (code >> 12));
    *out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (code & 0x3F));
  } else {
    *out += static_cast<char>(0xF0 | (code >> 18));
    *out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
    *out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (code & 0x3F));
  }
}

int digit_value(char c, int base) {
  int v = 36;
  if (c >= '0' && c <= '9') v = c - '0';
  if (c >= 'a' && c <= 'z') v = c - 'a' + 10;
  if (c >= 'A' && c <= 'Z') v = c - 'A' + 10;
  return v < base ? v : -1;
}

// "#38" or "#x26" to its code point; false when it is not one XML allows (NUL, a surrogate,
// past U+10FFFF, or not all digits).
bool numeric_entity(const std::string& name, uint32_t* code) {
  const bool is_hex = name.size() > 1 && (name[1] == 'x' || name[1] == 'X');
  const int base = is_hex ? 16 : 10;
  const size_t first = is_hex ? 2 : 1;
  if (name.size() <= first) return false;
  uint32_t value = 0;
  for (size_t i = first; i < name.size(); ++i) {
    const int d = digit_value(name[i], base);
    if (d < 0) return false;
    value = value * base + static_cast<uint32_t>(d);  // at most 7 digits: no overflow
  }
  if (value == 0 || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) return false;
  *code = value;
  return true;
}

// One entity ("amp", "#38", "#x26") to *out; false when it is none of these.
bool decode_entity(const std::string& name, std::string* out) {
  static const std::pair<const char*, char> named[] = {
      {"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}};
  for (const auto& n : named) {
    if (name == n.first) return *out += n.second, true;
  }
  uint32_t code = 0;
  if (name.empty() || name[0] != '#' || !numeric_entity(name, &code)) return false;
  append_utf8(code, out);
  return true;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// Past what may precede the root element: white space, a UTF-8 byte order mark, <?...?>,
// <!--...--> and <!DOCTYPE ...>; `at` is then at the root's '<' (or wherever the prologue ends).
size_t skip_prologue(const std::string& xml) {
  size_t at = xml.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
  while (at < xml.size()) {
    if (is_space(xml[at])) {
      ++at;
      continue;
    }
    const char* end = xml.compare(at, 2, "<?") == 0     ? "?>"
                      : xml.compare(at, 4, "<!--") == 0 ? "-->"
                      : xml.compare(at, 2, "<!") == 0   ? ">"
                                                        : nullptr;
    if (end == nullptr) return at;
    const size_t close = xml.find(end, at + 2);
    if (close == std::string::npos) return xml.size();
    at = close + std::char_traits<char>::length(end);
  }
  return at;
}

// At most `n` characters of a server's text for a message ("..." marks the cut).
std::string clipped(const std::string& text, size_t n) { return text.size() <= n ? text : text.substr(0, n) + "..."; }

std::string not_a(const std::string& what, const std::string& xml) {
  return "the answer is not an S3 " + what + " document (it begins " + preview(xml) + ")";
}

}  // namespace

std::string xml_decode(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const size_t semi = text[i] == '&' ? text.find(';', i) : std::string::npos;
    const bool near = semi != std::string::npos && semi - i - 1 <= kMaxEntityChars;
    if (near && decode_entity(text.substr(i + 1, semi - i - 1), &out)) {
      i = semi;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::vector<std::string> xml_texts(const std::string& xml, const std::string& tag) {
  const std::string open = "<" + tag + ">", close = "</" + tag + ">";
  std::vector<std::string> out;
  for (size_t at = xml.find(open); at != std::string::npos; at = xml.find(open, at)) {
    const size_t begin = at + open.size(), end = xml.find(close, begin);
    if (end == std::string::npos) break;
    out.push_back(xml_decode(xml.substr(begin, end - begin)));
    at = end + close.size();
  }
  return out;
}

std::string xml_text(const std::string& xml, const std::string& tag) {
  const std::string open = "<" + tag + ">", close = "</" + tag + ">";
  const size_t at = xml.find(open);
  if (at == std::string::npos) return "";
  const size_t begin = at + open.size(), end = xml.find(close, begin);
  return end == std::string::npos ? "" : xml_decode(xml.substr(begin, end - begin));
}

std::string xml_root(const std::string& xml) {
  const size_t at = skip_prologue(xml);
  if (at >= xml.size() || xml[at] != '<') return "";
  size_t end = at + 1;
  while (end < xml.size() && !is_space(xml[end]) && xml[end] != '>' && xml[end] != '/') ++end;
  return xml.substr(at + 1, end - at - 1);
}

std::string preview(const std::string& body) {
  std::string out;
  bool gap = false;
  size_t i = 0;
  for (; i < body.size() && out.size() < kPreviewChars; ++i) {
    const unsigned char c = static_cast<unsigned char>(body[i]);
    if (c > 0x20 && c < 0x7F) {
      if (gap && !out.empty()) out += ' ';
      out += static_cast<char>(c);
      gap = false;
    } else {
      gap = true;
    }
  }
  if (out.empty()) return body.empty() ? "an empty body" : "no printable character";
  return "'" + out + (i < body.size() ? "...'" : "'");
}

Status check_root(const std::string& xml, const std::string& root) {
  DCR_REQUIRE(xml_root(xml) == root, Code::io_error, not_a(root, xml));
  return Status::ok();
}

Status parse_list_page(const std::string& xml, ListPage* page) {
  *page = ListPage();
  DCR_TRY(check_root(xml, "ListBucketResult"));
  const std::string truncated = xml_text(xml, "IsTruncated");
  DCR_REQUIRE(truncated == "true" || truncated == "false", Code::io_error,
              "the ListBucketResult's IsTruncated is '" + clipped(truncated, kPreviewChars) + "', not true or false");
  page->truncated = truncated == "true";
  if (page->truncated) page->next_token = xml_text(xml, "NextContinuationToken");
  DCR_REQUIRE(!page->truncated || !page->next_token.empty(), Code::io_error,
              "a truncated ListBucketResult without a NextContinuationToken");
  page->keys = xml_texts(xml, "Key");
  return Status::ok();
}

Status parse_error(const std::string& xml, ErrorDoc* error) {
  *error = ErrorDoc();
  DCR_TRY(check_root(xml, "Error"));
  // S3's codes and messages are short; a hostile server's need not be, and they go into messages.
  error->code = clipped(xml_text(xml, "Code"), kMaxCodeChars);
  error->message = clipped(xml_text(xml, "Message"), kMaxMessageChars);
  DCR_REQUIRE(!error->code.empty(), Code::io_error, "the S3 Error document names no Code: " + preview(xml));
  return Status::ok();
}

Status parse_upload_id(const std::string& xml, std::string* upload_id) {
  upload_id->clear();
  DCR_TRY(check_root(xml, "InitiateMultipartUploadResult"));
  *upload_id = xml_text(xml, "UploadId");
  DCR_REQUIRE(!upload_id->empty(), Code::io_error,
              "the InitiateMultipartUploadResult names no UploadId: " + preview(xml));
  return Status::ok();
}

Status parse_complete(const std::string& xml) {
  ErrorDoc error;
  if (parse_error(xml, &error).is_ok()) {
    return Status(Code::io_error, error.code + (error.message.empty() ? "" : ": " + error.message));
  }
  return check_root(xml, "CompleteMultipartUploadResult");
}

}  // namespace dcr::s3
