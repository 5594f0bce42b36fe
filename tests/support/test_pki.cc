#include "tests/support/test_pki.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace kspool::testing {
namespace {

void Run(const std::string& dir, const std::string& command) {
  // openssl's chatter goes to a log beside the files, shown when something fails.
  const std::string log = dir + "/openssl.log";
  const std::string full = "cd '" + dir + "' && " + command + " >>'" + log + "' 2>&1";
  if (std::system(full.c_str()) != 0) {
    throw std::runtime_error("openssl failed: " + command + "\n" + ReadWholeFile(log));
  }
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void ReplaceFile(const std::string& from, const std::string& to) {
  const std::string tmp = to + ".new";
  std::filesystem::copy_file(from, tmp, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::rename(tmp, to);
}

TestPki::TestPki(std::string dir, std::string name) : dir_(std::move(dir)), name_(std::move(name)) {
  std::filesystem::create_directories(dir_);
  ca_ = {dir_ + "/" + name_ + "-ca.pem", dir_ + "/" + name_ + "-ca.key"};
  Run(dir_,
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
      " -keyout '" +
          ca_.key + "' -out '" + ca_.cert + "' -days 2 -subj '/CN=" + name_ +
          " test CA' -addext basicConstraints=critical,CA:TRUE"
          " -addext keyUsage=critical,keyCertSign,cRLSign");
}

CertAndKey TestPki::Issue(const std::string& file, const std::string& common_name,
                          const std::vector<std::string>& sans) const {
  CertAndKey out{dir_ + "/" + file + ".pem", dir_ + "/" + file + ".key"};
  const std::string csr = dir_ + "/" + file + ".csr", ext = dir_ + "/" + file + ".ext";
  std::string san;
  for (const std::string& s : sans) san += (san.empty() ? "" : ",") + s;
  WriteFile(ext,
            "basicConstraints=critical,CA:FALSE\n"
            "keyUsage=critical,digitalSignature,keyEncipherment\n"
            "extendedKeyUsage=serverAuth,clientAuth\n" +
                (san.empty() ? std::string() : "subjectAltName=" + san + "\n"));
  Run(dir_, "openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout '" +
                out.key + "' -out '" + csr + "' -subj '/CN=" + common_name + "'");
  // A random serial: two certificates from one CA must never share one.
  Run(dir_, "openssl x509 -req -in '" + csr + "' -CA '" + ca_.cert + "' -CAkey '" + ca_.key +
                "' -set_serial 0x$(openssl rand -hex 8) -days 1 -extfile '" + ext + "' -out '" +
                out.cert + "'");
  return out;
}

}  // namespace kspool::testing
