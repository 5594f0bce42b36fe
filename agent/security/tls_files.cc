#include "agent/security/tls_files.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

namespace kspool::agent {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;

absl::Status Bad(const std::string& flag, const std::string& path, const std::string& why) {
  return absl::InvalidArgumentError(flag + " " + path + ": " + why);
}

// The whole file, or an error naming the flag (missing, unreadable, empty).
absl::Status ReadPem(const std::string& flag, const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Bad(flag, path, "cannot be read");
  std::ostringstream s;
  s << in.rdbuf();
  *out = s.str();
  if (out->empty()) return Bad(flag, path, "is empty");
  return absl::OkStatus();
}

BioPtr MemBio(const std::string& pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

// The first certificate of `pem` (the leaf of a chain), and how many there are.
X509Ptr FirstCert(const std::string& pem, int* count) {
  BioPtr bio = MemBio(pem);
  X509Ptr first;
  *count = 0;
  while (X509* x = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    if (!first) {
      first.reset(x);
    } else {
      X509_free(x);
    }
    ++*count;
  }
  ERR_clear_error();  // the read that ends the loop leaves "no start line" behind
  return first;
}

}  // namespace

absl::StatusOr<TlsPem> ReadTlsFiles(const TlsFiles& files, const TlsFlagNames& flags) {
  TlsPem pem;
  if (absl::Status s = ReadPem(flags.cert, files.cert, &pem.cert); !s.ok()) return s;
  if (absl::Status s = ReadPem(flags.key, files.key, &pem.key); !s.ok()) return s;
  int certs = 0;
  X509Ptr leaf = FirstCert(pem.cert, &certs);
  if (!leaf) return Bad(flags.cert, files.cert, "holds no PEM certificate");
  BioPtr key_bio = MemBio(pem.key);
  KeyPtr key(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (!key) return Bad(flags.key, files.key, "holds no PEM private key (or it is encrypted)");
  if (X509_check_private_key(leaf.get(), key.get()) != 1) {
    ERR_clear_error();
    return Bad(flags.key, files.key,
               std::string("the private key does not match the certificate of ") + flags.cert +
                   " " + files.cert);
  }
  if (!files.client_ca.empty()) {
    if (absl::Status s = ReadPem(flags.client_ca, files.client_ca, &pem.client_ca); !s.ok()) {
      return s;
    }
    int cas = 0;
    if (!FirstCert(pem.client_ca, &cas)) {
      return Bad(flags.client_ca, files.client_ca, "holds no PEM certificate");
    }
  }
  return pem;
}

absl::Status CheckTlsFiles(const TlsFiles& files, const TlsFlagNames& flags) {
  return ReadTlsFiles(files, flags).status();
}

std::string TlsFilesFingerprint(const TlsFiles& files) {
  std::string f;
  for (const std::string* path : {&files.cert, &files.key, &files.client_ca}) {
    struct stat st {};
    if (path->empty() || stat(path->c_str(), &st) != 0) {
      f += "-;";
      continue;
    }
    f += std::to_string(st.st_ino) + "," + std::to_string(st.st_size) + "," +
         std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + ";";
  }
  return f;
}

bool IsLoopbackAddress(const std::string& listen_address) {
  const std::string& a = listen_address;
  if (a.rfind("unix:", 0) == 0) return true;
  const size_t colon = a.rfind(':');
  std::string host = colon == std::string::npos ? a : a.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

}  // namespace kspool::agent
