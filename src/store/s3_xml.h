// The few XML documents an S3 service answers, read without an XML library: the text of named
// elements (entities decoded), the root element's name, and the documents the client relies on
// (a ListObjectsV2 page, an error, an UploadId, a completed upload). Pure functions of the bytes,
// so tests/fuzz/fuzz_s3.cc feeds them anything; a document that is not what S3 answers is refused
// with a message showing its first characters (an HTML page from a proxy or a wrong endpoint).
#pragma once

#include <string>
#include <vector>

#include "dcr/core/status.h"

namespace dcr::s3 {

// `text` with the five named entities and numeric ones (&#38; &#x26;) decoded; anything else as is.
std::string xml_decode(const std::string& text);

// The decoded text of every <tag>...</tag> in `xml`, in order.
std::vector<std::string> xml_texts(const std::string& xml, const std::string& tag);

// The first of xml_texts(), "" when there is none.
std::string xml_text(const std::string& xml, const std::string& tag);

// The name of the document's root element ("ListBucketResult"), after any <?xml ...?>
// declaration, comments and white space; "" when the document does not start with an element.
std::string xml_root(const std::string& xml);

// The body's first ~80 characters for a message, quoted, with each run of white space or
// unprintable bytes shown as one space: '<html> <head><title>Welcome' or "an empty body".
std::string preview(const std::string& body);

// Ok when the document's root element is `root` ("ListBucketResult"), else the refusal showing how
// the body begins.
Status check_root(const std::string& xml, const std::string& root);

// One ListObjectsV2 page.
struct ListPage {
  std::vector<std::string> keys;  // full keys, prefix included
  bool truncated = false;
  std::string next_token;         // NextContinuationToken (set when truncated)
};
Status parse_list_page(const std::string& xml, ListPage* page);

// An <Error> document's Code and Message.
struct ErrorDoc {
  std::string code, message;
};
Status parse_error(const std::string& xml, ErrorDoc* error);

// InitiateMultipartUploadResult's UploadId.
Status parse_upload_id(const std::string& xml, std::string* upload_id);

// CompleteMultipartUpload's answer: ok for a CompleteMultipartUploadResult; an <Error> (which S3
// may send with 200) is io_error with its code and message.
Status parse_complete(const std::string& xml);

}  // namespace dcr::s3
