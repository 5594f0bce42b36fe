// How delivery statuses (kspool.v1.DeliveryStatus: what became of a message, by its
// sequence number) look in kspoolctl's output: `send --wait kafka` and `delivery` print
// a table, `watch` one line per status, and all three the same JSON object with --json.
// Thread safety: pure functions.
#pragma once

#include <string>

#include "kspool/v1/spool.pb.h"
#include "tools/ctl/entry_view.h"
#include "tools/ctl/format.h"

namespace kspool::ctl {

// UNKNOWN, PENDING, DELIVERED, DISCARDED.
const char* StateName(kspool::v1::DeliveryStatus::State state);

// {"sequence", "state", "topic", "partition", "offset", "delivered_time_ms",
//  "discard_reason", "error"}: every field, always present.
Json DeliveryJson(const kspool::v1::DeliveryStatus& d);

// A table with one row per status: SEQ STATE TOPIC PARTITION OFFSET TIME DETAIL
// (partition and offset "-" unless DELIVERED; DETAIL: discard reason and error text).
Table DeliveryTable();
void AddDeliveryRow(const kspool::v1::DeliveryStatus& d, Table* table);

// `watch`: "SEQ STATE topic=T partition=P offset=O time=..." (only the fields that the
// state has; reason= and error= for DISCARDED, error= for UNKNOWN, values quoted when
// they hold spaces).
std::string DeliveryLine(const kspool::v1::DeliveryStatus& d);

}  // namespace kspool::ctl
