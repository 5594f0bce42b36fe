// TopicState::Check (topic_state.h).
#include "agent/drain/topic_state.h"

#include "absl/strings/str_cat.h"

namespace kspool::agent {

absl::Status TopicState::Check(const std::string& topic) const {
  // Mark sets both ends of the range and Clear both; CatchUp, ExpireUnread and the
  // reopen's rewind move scan_from only within a range that has a start.
  if (unread.from == 0 && unread.scan_from != 0) {
    return absl::InternalError(
        absl::StrCat("topic '", topic, "' has nothing unread and scans from ", unread.scan_from));
  }
  if (unread.from != 0 && unread.scan_from < unread.from) {
    return absl::InternalError(absl::StrCat("topic '", topic, "' scans from ", unread.scan_from,
                                            " below its first unread entry ", unread.from));
  }
  return absl::OkStatus();
}

}  // namespace kspool::agent
