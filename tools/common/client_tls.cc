#include "tools/common/client_tls.h"

#include <fstream>
#include <sstream>

namespace kspool::tools {
namespace {

std::string ReadFile(const std::string& path) {
  if (path.empty()) return {};
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

std::shared_ptr<grpc::ChannelCredentials> ClientChannelCredentials(const std::string& ca,
                                                                   const std::string& cert,
                                                                   const std::string& key) {
  if (ca.empty() && cert.empty()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions o;
  o.pem_root_certs = ReadFile(ca);
  o.pem_cert_chain = ReadFile(cert);
  o.pem_private_key = ReadFile(key);
  return grpc::SslCredentials(o);
}

}  // namespace kspool::tools
