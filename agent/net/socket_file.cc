#include "agent/net/socket_file.h"

#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace kspool::agent {

absl::StatusOr<gid_t> LookupGroup(const std::string& name) {
  struct group gr {};
  struct group* found = nullptr;
  std::vector<char> buf(16384);
  if (name.empty() || getgrnam_r(name.c_str(), &gr, buf.data(), buf.size(), &found) != 0 ||
      found == nullptr) {
    return absl::InvalidArgumentError("no group named '" + name + "'");
  }
  return found->gr_gid;
}

absl::Status ApplySocketFileOptions(const std::string& path, const SocketFileOptions& o,
                                    const SocketFileFlags& flags) {
  if (!o.group.empty()) {
    absl::StatusOr<gid_t> gid = LookupGroup(o.group);
    if (!gid.ok()) {
      return absl::InvalidArgumentError(flags.group_flag + ": " +
                                        std::string(gid.status().message()));
    }
    if (chown(path.c_str(), static_cast<uid_t>(-1), *gid) != 0) {
      return absl::UnavailableError(flags.socket_flag + " " + path + ": cannot give it group " +
                                    o.group + ": " + std::strerror(errno));
    }
  }
  if (chmod(path.c_str(), o.mode) != 0) {
    return absl::UnavailableError(flags.socket_flag + " " + path +
                                  ": cannot set its mode: " + std::strerror(errno));
  }
  return absl::OkStatus();
}

}  // namespace kspool::agent
