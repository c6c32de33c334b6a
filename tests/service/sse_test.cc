#include "service/sse.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace h0::service {
namespace {

// A stream with every feature: \n, \r\n and \r line ends, comments, a multi-line event, an
// event type, an id and retry field, a field without a colon, then [DONE] and trailing bytes.
const std::string kStream =
    ": ping\r\n"
    "\r\n"
    "data: {\"a\": 1}\r\n"
    "\r\n"
    "event: error\n"
    "data: line one\n"
    "data:line two\n"
    "id: 7\n"
    "retry: 100\n"
    "\n"
    "data\r"
    "\r"
    ":\n"
    "data: {\"b\": \"\\u00e9\"}\r\n\r\n"
    "data: [DONE]\n\n"
    "data: after the end\n\n";

const std::vector<SseEvent> kEvents = {
    {"", "{\"a\": 1}"}, {"error", "line one\nline two"}, {"", ""}, {"", "{\"b\": \"\\u00e9\"}"}};

void expect_events(const std::vector<SseEvent>& got, const std::string& context) {
  ASSERT_EQ(got.size(), kEvents.size()) << context;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].type, kEvents[i].type) << context << " event " << i;
    EXPECT_EQ(got[i].data, kEvents[i].data) << context << " event " << i;
  }
}

TEST(SseParser, WholeStream) {
  SseParser parser;
  std::vector<SseEvent> events;
  ASSERT_TRUE(parser.feed(kStream, &events)) << parser.error();
  expect_events(events, "whole");
  EXPECT_TRUE(parser.done());
  EXPECT_EQ(parser.events(), kEvents.size());
}

TEST(SseParser, EverySplitIntoTwoAndThreeParts) {
  for (size_t i = 0; i <= kStream.size(); ++i) {
    for (size_t j = i; j <= kStream.size(); ++j) {
      SseParser parser;
      std::vector<SseEvent> events;
      std::string context = "split at " + std::to_string(i) + " and " + std::to_string(j);
      ASSERT_TRUE(parser.feed(std::string_view(kStream).substr(0, i), &events)) << context;
      ASSERT_TRUE(parser.feed(std::string_view(kStream).substr(i, j - i), &events)) << context;
      ASSERT_TRUE(parser.feed(std::string_view(kStream).substr(j), &events)) << context;
      expect_events(events, context);
      ASSERT_TRUE(parser.done()) << context;
    }
  }
}

TEST(SseParser, ByteByByte) {
  SseParser parser;
  std::vector<SseEvent> events;
  for (char c : kStream) ASSERT_TRUE(parser.feed(std::string_view(&c, 1), &events));
  expect_events(events, "byte by byte");
}

TEST(SseParser, CrLfSplitDoesNotMakeAnEmptyLine) {
  // "data: x\r" then "\ndata: y\n\n": one event "x\ny", not two.
  SseParser parser;
  std::vector<SseEvent> events;
  ASSERT_TRUE(parser.feed("data: x\r", &events));
  ASSERT_TRUE(parser.feed("\ndata: y\n\n", &events));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, "x\ny");
}

TEST(SseParser, BogusLineIsMalformed) {
  SseParser parser;
  std::vector<SseEvent> events;
  ASSERT_TRUE(parser.feed("data: {}\n\n", &events));
  EXPECT_FALSE(parser.feed("this is not sse\n", &events));
  EXPECT_NE(parser.error().find("not an SSE field or comment: \"this is not sse\""),
            std::string::npos)
      << parser.error();
  EXPECT_FALSE(parser.feed("data: {}\n\n", &events));  // stays failed
  EXPECT_EQ(events.size(), 1u);
}

TEST(SseParser, PartialWhenCutMidEvent) {
  SseParser parser;
  std::vector<SseEvent> events;
  EXPECT_FALSE(parser.partial());
  ASSERT_TRUE(parser.feed("data: {\"a\"", &events));
  EXPECT_TRUE(parser.partial());
  ASSERT_TRUE(parser.feed(": 1}\n", &events));
  EXPECT_TRUE(parser.partial());  // the line ended, the event did not
  ASSERT_TRUE(parser.feed("\n", &events));
  EXPECT_FALSE(parser.partial());
  EXPECT_FALSE(parser.done());
  ASSERT_EQ(events.size(), 1u);
}

TEST(SseParser, ByteOrderMarkAtStartIsSkipped) {
  SseParser parser;
  std::vector<SseEvent> events;
  ASSERT_TRUE(
      parser.feed("\xEF\xBB\xBF"
                  "data: 1\n\n",
                  &events))
      << parser.error();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, "1");
}

}  // namespace
}  // namespace h0::service
