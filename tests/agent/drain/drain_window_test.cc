// DrainWindow: the window's counters and the topics' charges across the reader's
// reservations, admissions of entries offered again, and erasures.
#include "agent/drain/drain_window.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace kspool::agent {
namespace {

wal::Entry MakeEntry(uint64_t seq, const std::string& topic, size_t size, bool decodes = true) {
  wal::Entry e;
  e.seq = seq;
  e.size = size;
  e.record.topic = topic;
  if (!decodes) e.status = absl::DataLossError("bad record");
  return e;
}

class DrainWindowTest : public ::testing::Test {
 protected:
  DrainWindow window_;
  std::map<std::string, TopicState, std::less<>> topics_;
};

TEST_F(DrainWindowTest, AReservedEntryAdmittedKeepsItsChargeAndTheCountsAgree) {
  TopicState& a = topics_["a"];
  Room room{10, 1000};
  room.Take(a, 100);
  EXPECT_EQ(a.window.messages(), 1u);
  EXPECT_FALSE(window_.CheckCounts(topics_).ok()) << "charged, not admitted yet";
  bool fresh = false;
  window_.Admit(window_.end(), MakeEntry(7, "a", 100), a.window, /*reserved=*/true, &fresh);
  EXPECT_TRUE(fresh);
  EXPECT_EQ(a.window.messages(), 1u);
  EXPECT_EQ(a.window.bytes(), 100u);
  EXPECT_EQ(window_.bytes(), 100u);
  EXPECT_EQ(room.messages, 9u);
  EXPECT_EQ(room.bytes, 900u);
  EXPECT_TRUE(window_.CheckCounts(topics_).ok()) << window_.CheckCounts(topics_);
}

TEST_F(DrainWindowTest, AnEntryOfferedAgainTakesBackOnlyTheReadersCharge) {
  TopicState& a = topics_["a"];
  bool fresh = false;
  auto first = window_.Admit(window_.end(), MakeEntry(7, "a", 100), a.window, false, &fresh);
  ASSERT_TRUE(fresh);
  first->second.state = Slot::kInKafka;  // the producer points into this slot
  DrainWindow::Reserve(a.window, 100);
  auto again = window_.Admit(window_.end(), MakeEntry(7, "a", 100), a.window, true, &fresh);
  EXPECT_FALSE(fresh);
  EXPECT_EQ(again, first);
  EXPECT_EQ(again->second.state, Slot::kInKafka) << "the slot being sent is kept as it is";
  EXPECT_EQ(a.window.messages(), 1u);
  EXPECT_EQ(window_.size(), 1u);
  EXPECT_EQ(window_.bytes(), 100u);
  EXPECT_TRUE(window_.CheckCounts(topics_).ok()) << window_.CheckCounts(topics_);
}

TEST_F(DrainWindowTest, ErasingGivesBackWhatAdmittingChargedUndecodableEntriesIncluded) {
  TopicState& a = topics_["a"];
  TopicState& b = topics_["b"];
  bool fresh = false;
  window_.Admit(window_.end(), MakeEntry(1, "a", 10), a.window, false, &fresh);
  window_.Admit(window_.end(), MakeEntry(2, "b", 20, /*decodes=*/false), b.window, false, &fresh);
  window_.Admit(window_.end(), MakeEntry(3, "a", 30), a.window, false, &fresh);
  EXPECT_EQ(window_.undecodable(), 1u);
  EXPECT_EQ(window_.bytes(), 60u);
  EXPECT_TRUE(window_.Full(3, 1000));
  EXPECT_TRUE(window_.Full(10, 60));
  EXPECT_FALSE(window_.Full(4, 61));
  window_.Erase(window_.find(2), b.window);
  EXPECT_EQ(window_.undecodable(), 0u);
  EXPECT_EQ(b.window.messages(), 0u);
  window_.Erase(window_.find(1), a.window);
  EXPECT_EQ(a.window.messages(), 1u);
  EXPECT_EQ(a.window.bytes(), 30u);
  EXPECT_EQ(window_.bytes(), 30u);
  EXPECT_TRUE(window_.CheckCounts(topics_).ok()) << window_.CheckCounts(topics_);
}

TEST_F(DrainWindowTest, CheckCountsNamesTheTopicWhoseChargeDisagreesOrThatHasNoState) {
  TopicState& a = topics_["a"];
  bool fresh = false;
  window_.Admit(window_.end(), MakeEntry(1, "a", 10), a.window, false, &fresh);
  DrainWindow::Reserve(a.window, 5);  // a charge no admission followed
  absl::Status s = window_.CheckCounts(topics_);
  EXPECT_NE(s.message().find("topic 'a' counts 2 entries / 15 bytes"), std::string::npos) << s;
  DrainWindow::Unreserve(a.window, 5);
  TopicCharge orphan;
  window_.Admit(window_.end(), MakeEntry(2, "z", 10), orphan, false, &fresh);
  s = window_.CheckCounts(topics_);
  EXPECT_NE(s.message().find("topic 'z' has 1 slots and no state"), std::string::npos) << s;
}

TEST_F(DrainWindowTest, FindNearLooksAtTheSlotGivenAndTheNextBeforeSearching) {
  TopicState& a = topics_["a"];
  bool fresh = false;
  for (uint64_t seq : {10, 11, 20}) {
    window_.Admit(window_.end(), MakeEntry(seq, "a", 1), a.window, false, &fresh);
  }
  auto near = window_.FindNear(10, window_.end());
  ASSERT_EQ(near->first, 10u);
  EXPECT_EQ(window_.FindNear(11, near)->first, 11u);
  near = window_.FindNear(11, window_.end());
  EXPECT_EQ(window_.FindNear(20, near)->first, 20u);
  near = window_.FindNear(20, window_.end());
  EXPECT_EQ(window_.FindNear(15, near), window_.end());
}

}  // namespace
}  // namespace kspool::agent
