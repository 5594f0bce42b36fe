// TestPki: a throwaway certificate authority for TLS tests, made with the `openssl`
// command line in a directory the test owns. Keys are EC P-256 (fast to generate);
// certificates are valid from an hour ago (clock skew) for a day.
// Thread safety: one owning thread. Errors throw std::runtime_error (test code only).
#pragma once

#include <string>
#include <vector>

namespace kspool::testing {

struct CertAndKey {
  std::string cert;  // PEM file path
  std::string key;   // PEM file path
};

class TestPki {
 public:
  // Makes a CA named `name` (its files are DIR/NAME-ca.pem and DIR/NAME-ca.key).
  TestPki(std::string dir, std::string name);
  const std::string& ca_cert() const { return ca_.cert; }

  // A certificate signed by this CA, with subject CN `common_name` and the subject
  // alternative names `sans` in openssl's syntax ("DNS:localhost", "IP:127.0.0.1",
  // "URI:spiffe://test/ns/a/sa/b"), usable by servers and clients.
  // Files: DIR/FILE.pem and DIR/FILE.key.
  CertAndKey Issue(const std::string& file, const std::string& common_name,
                   const std::vector<std::string>& sans) const;
  // A server certificate for 127.0.0.1, ::1 and localhost.
  CertAndKey IssueLocalServer(const std::string& file) const {
    return Issue(file, "localhost", {"DNS:localhost", "IP:127.0.0.1", "IP:::1"});
  }

 private:
  std::string dir_;
  std::string name_;
  CertAndKey ca_;
};

std::string ReadWholeFile(const std::string& path);
// Replaces `to` by a copy of `from` atomically (write beside, then rename), as
// cert-manager and most rotation tools do.
void ReplaceFile(const std::string& from, const std::string& to);

}  // namespace kspool::testing
