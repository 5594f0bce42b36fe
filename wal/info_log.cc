// NewInfoLog (info_log.h): RocksDB's log lines, formatted, to the caller's sink.
#include "wal/info_log.h"

#include <cstdarg>
#include <cstdio>
#include <string>

namespace kspool::wal {
namespace {

InfoLogLevel LevelOf(rocksdb::InfoLogLevel level) {
  switch (level) {
    case rocksdb::InfoLogLevel::DEBUG_LEVEL:
      return InfoLogLevel::kDebug;
    case rocksdb::InfoLogLevel::INFO_LEVEL:
    case rocksdb::InfoLogLevel::HEADER_LEVEL:
      return InfoLogLevel::kInfo;
    case rocksdb::InfoLogLevel::WARN_LEVEL:
      return InfoLogLevel::kWarning;
    default:
      return InfoLogLevel::kError;  // ERROR, FATAL
  }
}

class SinkLogger final : public rocksdb::Logger {
 public:
  explicit SinkLogger(InfoLogSink sink)
      : rocksdb::Logger(rocksdb::InfoLogLevel::INFO_LEVEL), sink_(std::move(sink)) {}

  void Logv(const char* format, va_list ap) override {
    Logv(rocksdb::InfoLogLevel::INFO_LEVEL, format, ap);
  }
  void Logv(const rocksdb::InfoLogLevel level, const char* format, va_list ap) override {
    if (level < GetInfoLogLevel()) return;
    const InfoLogLevel ours = LevelOf(level);
    if (!sink_ && ours < InfoLogLevel::kWarning) return;
    std::string message(512, '\0');
    va_list copy;
    va_copy(copy, ap);
    const int n = vsnprintf(message.data(), message.size(), format, copy);
    va_end(copy);
    if (n < 0) return;
    if (static_cast<size_t>(n) >= message.size()) {  // RocksDB's longest: stats dumps
      message.resize(static_cast<size_t>(n) + 1);
      va_copy(copy, ap);
      vsnprintf(message.data(), message.size(), format, copy);
      va_end(copy);
    }
    message.resize(static_cast<size_t>(n));
    while (!message.empty() && message.back() == '\n') message.pop_back();
    if (sink_) {
      sink_(ours, message);
    } else {
      fprintf(stderr, "rocksdb: %s\n", message.c_str());
    }
  }

 private:
  const InfoLogSink sink_;
};

}  // namespace

std::shared_ptr<rocksdb::Logger> NewInfoLog(InfoLogSink sink) {
  return std::make_shared<SinkLogger>(std::move(sink));
}

}  // namespace kspool::wal
