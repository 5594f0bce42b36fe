// The agent parses Spool requests with its wire mirror (proto/kspool/v1/spool_wire.proto);
// it must stay the same on the wire as the public spool.proto, or clients' fields would
// be misread or dropped.
#include <gtest/gtest.h>

#include "kspool/v1/spool.pb.h"
#include "kspool/v1/spool_wire.pb.h"

namespace kspool::agent {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

// Every field of `pub` has a twin in `wire` with the same number, name, cardinality and
// presence, and a type with the same wire encoding (string is bytes with a UTF-8 rule).
void ExpectMirrors(const Descriptor* pub, const Descriptor* wire) {
  SCOPED_TRACE(pub->full_name());
  ASSERT_EQ(pub->field_count(), wire->field_count());
  for (int i = 0; i < pub->field_count(); ++i) {
    const FieldDescriptor* p = pub->field(i);
    const FieldDescriptor* w = wire->FindFieldByNumber(p->number());
    ASSERT_NE(w, nullptr) << p->name();
    EXPECT_EQ(w->name(), p->name());
    EXPECT_EQ(w->label(), p->label()) << p->name();
    EXPECT_EQ(w->has_presence(), p->has_presence()) << p->name();
    const auto type = p->type() == FieldDescriptor::TYPE_STRING ? FieldDescriptor::TYPE_BYTES
                                                                : p->type();
    EXPECT_EQ(w->type(), type) << p->name();
    if (p->type() == FieldDescriptor::TYPE_MESSAGE) ExpectMirrors(p->message_type(), w->message_type());
  }
}

TEST(WireMirror, SendRequestHasTheSameFieldsOnTheWire) {
  ExpectMirrors(kspool::v1::SendRequest::descriptor(), kspool::v1::wire::SendRequest::descriptor());
}

TEST(WireMirror, BroadcastRequestHasTheSameFieldsOnTheWire) {
  ExpectMirrors(kspool::v1::BroadcastRequest::descriptor(),
                kspool::v1::wire::BroadcastRequest::descriptor());
}

TEST(WireMirror, AFullPublicRequestParsesIntoTheMirrorUnchanged) {
  kspool::v1::SendRequest pub;
  auto* m = pub.add_messages();
  m->set_topic("t");
  m->set_key("");  // present but empty
  m->set_value("v");
  m->set_partition(3);
  m->set_timestamp_ms(0);  // present, zero
  auto* h = m->add_headers();
  h->set_key("k");
  h->set_value("hv");
  kspool::v1::wire::SendRequest wire;
  ASSERT_TRUE(wire.ParseFromString(pub.SerializeAsString()));
  ASSERT_EQ(wire.messages_size(), 1);
  const auto& w = wire.messages(0);
  EXPECT_EQ(w.topic(), "t");
  EXPECT_TRUE(w.has_key());
  EXPECT_EQ(w.value(), "v");
  EXPECT_EQ(w.partition(), 3);
  EXPECT_TRUE(w.has_timestamp_ms());
  EXPECT_EQ(w.timestamp_ms(), 0);
  ASSERT_EQ(w.headers_size(), 1);
  EXPECT_EQ(w.headers(0).key(), "k");
  EXPECT_EQ(w.headers(0).value(), "hv");
}

}  // namespace
}  // namespace kspool::agent
