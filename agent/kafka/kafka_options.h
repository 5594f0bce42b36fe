// The librdkafka properties given with --kafka-option: KEY=VALUE each, and none that
// would weaken the delivery guarantee. An entry leaves the WAL once Kafka acknowledges
// it, so that acknowledgement must be durable (acks=all: every in-sync replica has it),
// free of producer-side duplicates and reordering (enable.idempotence=true) and
// reported for every message (delivery.report.only.error=false); the agent produces
// outside transactions (no transactional.id), routes keys by murmur2 (partitioner
// murmur2 or murmur2_random) and reads the client's statistics (statistics.interval.ms
// above 0).
// Checked when the flags are parsed (so the agent does not start) and again when the
// producer is made (for configurations built in code).
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace kspool::agent {

// OK if `option` is KEY=VALUE with a non-empty key and, for a fixed property (acks,
// its alias request.required.acks, enable.idempotence, delivery.report.only.error,
// transactional.id, partitioner, statistics.interval.ms), a value librdkafka reads as
// an allowed one ("all" or "-1"; "true", "t" or "1"; ...); INVALID_ARGUMENT naming the
// option and saying why otherwise.
absl::Status CheckKafkaOption(const std::string& option);

// --kafka-option-file KEY=PATH, each: appends KEY=<the file's content> to `options`, the
// content read once, now, with one trailing line break removed (a Kubernetes secret file
// or `echo` output). INVALID_ARGUMENT naming the flag, KEY and PATH (never the content)
// if an entry is not KEY=PATH, the file cannot be read or is empty, the result fails
// CheckKafkaOption, or KEY is also given with --kafka-option (which value wins would be
// a guess).
absl::Status AddKafkaOptionFiles(const std::vector<std::string>& key_paths,
                                 std::vector<std::string>* options);

}  // namespace kspool::agent
