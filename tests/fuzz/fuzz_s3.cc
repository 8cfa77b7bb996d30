// libFuzzer target for the S3 client's readers of what a server answers (src/store/s3_xml.h):
// every input goes to each of them, as a ListObjectsV2 page, an error, an initiated and a completed
// multipart upload, and through the text helpers. Each must end in a value or a Status, never a
// crash or a hang, and keep its promises: decoding never grows the text, a preview is short and
// printable, a truncated page has its token, an UploadId is never empty, a message stays short
// (it quotes a preview of the body, never the body).
#include <cstdint>
#include <string>
#include <vector>

#include "src/store/s3_xml.h"

namespace {

constexpr size_t kMaxMessage = 400;

void check(bool promise) {
  if (!promise) __builtin_trap();
}

void check_status(const dcr::Status& st) { check(st.is_ok() || (st.message().size() < kMaxMessage)); }

void text_helpers(const std::string& body) {
  check(dcr::s3::xml_decode(body).size() <= body.size());
  const std::string shown = dcr::s3::preview(body);
  check(shown.size() <= 90);
  for (char c : shown) check(c >= 0x20 && c < 0x7F);
  check(dcr::s3::xml_root(body).size() <= body.size());
  size_t texts = 0;
  for (const std::string& key : dcr::s3::xml_texts(body, "Key")) texts += key.size();
  check(texts <= body.size());
}

void documents(const std::string& body) {
  dcr::s3::ListPage page;
  const dcr::Status listed = dcr::s3::parse_list_page(body, &page);
  check_status(listed);
  check(!listed.is_ok() || !page.truncated || !page.next_token.empty());
  dcr::s3::ErrorDoc error;
  const dcr::Status parsed = dcr::s3::parse_error(body, &error);
  check_status(parsed);
  check(!parsed.is_ok() || !error.code.empty());
  std::string upload_id;
  const dcr::Status started = dcr::s3::parse_upload_id(body, &upload_id);
  check_status(started);
  check(started.is_ok() == !upload_id.empty());
  check_status(dcr::s3::parse_complete(body));
  check_status(dcr::s3::check_root(body, "ListBucketResult"));
}

std::vector<uint8_t> bytes(const std::string& text) { return std::vector<uint8_t>(text.begin(), text.end()); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  text_helpers(body);
  documents(body);
  return 0;
}

// Answers as AWS and radosgw give them, and a web page in place of one.
std::vector<std::vector<uint8_t>> dcr_fuzz_seeds() {
  return {
      bytes("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult "
            "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>dcr-test</Name><Prefix>run/v1/</Prefix>"
            "<KeyCount>2</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>true</IsTruncated>"
            "<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>"
            "<Contents><Key>run/v1/MANIFEST</Key><LastModified>2026-12-04T03:03:19.000Z</LastModified>"
            "<ETag>&quot;9b2cf535f27731c974343645a3985328&quot;</ETag><Size>812</Size>"
            "<StorageClass>STANDARD</StorageClass></Contents><Contents><Key>run/v1/w0-000000.frame</Key>"
            "<Size>4096</Size></Contents></ListBucketResult>"),
      bytes("<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>"),
      bytes("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchBucket</Code><Message>The specified "
            "bucket does not exist</Message><BucketName>dcr-test</BucketName><RequestId>tx0000</RequestId></Error>"),
      bytes("<InitiateMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Bucket>b</Bucket>"
            "<Key>big</Key><UploadId>2~iCw_lDY8VoFNpG6_1ue4yR</UploadId></InitiateMultipartUploadResult>"),
      bytes("\n\n<CompleteMultipartUploadResult><Location>http://h/b/big</Location><ETag>&quot;e-2&quot;</ETag>"
            "</CompleteMultipartUploadResult>"),
      bytes("<Contents><Key>a&amp;b&lt;c&gt;&quot;&apos;&#38;&#x263A;&#1114111;&#xD800;&#0;&bogus;&#x;&</Key>"),
      bytes("<!DOCTYPE html>\n<html><head><title>Welcome to nginx!</title></head><body>It works</body></html>"),
  };
}
