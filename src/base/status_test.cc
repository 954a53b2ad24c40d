#include "kope/base/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace kope {
namespace {

TEST(StatusTest, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(StatusTest, CarriesCodeAndMessage) {
  Status s = Status::NotFound("no such task");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "no such task");
  EXPECT_EQ(s.ToString(), "NotFound: no such task");
}

TEST(StatusTest, EveryCodeHasAName) {
  EXPECT_EQ(StatusCodeName(StatusCode::kInvalidArgument), "InvalidArgument");
  EXPECT_EQ(StatusCodeName(StatusCode::kIoError), "IoError");
  EXPECT_EQ(StatusCodeName(StatusCode::kDeadlineExceeded), "DeadlineExceeded");
  EXPECT_EQ(StatusCodeName(StatusCode::kInternal), "Internal");
  EXPECT_EQ(Status::FailedPrecondition("x").ToString(), "FailedPrecondition: x");
  EXPECT_EQ(Status::Unavailable("x").ToString(), "Unavailable: x");
}

TEST(StatusTest, WithContextPrefixesErrorsOnly) {
  EXPECT_EQ(Status::IoError("disk full").WithContext("writing graph.db").message(),
            "writing graph.db: disk full");
  EXPECT_EQ(Status::IoError("disk full").WithContext("w").code(), StatusCode::kIoError);
  EXPECT_TRUE(Status::Ok().WithContext("anything").ok());
  EXPECT_EQ(Status::Ok().WithContext("anything").message(), "");
}

Result<int> Half(int x) {
  if (x % 2 != 0) return Status::InvalidArgument("odd");
  return x / 2;
}

Result<int> Quarter(int x) {
  KOPE_ASSIGN_OR_RETURN(int half, Half(x));
  KOPE_ASSIGN_OR_RETURN(int quarter, Half(half));
  return quarter;
}

Status CheckEven(int x) {
  KOPE_RETURN_IF_ERROR(Half(x).status());
  return Status::Ok();
}

TEST(ResultTest, HoldsValueOrStatus) {
  Result<int> ok = Half(8);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 4);
  EXPECT_TRUE(ok.status().ok());
  Result<int> bad = Half(3);
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

TEST(ResultTest, MacrosPropagate) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_EQ(Quarter(6).status().message(), "odd");  // 6 / 2 = 3 is odd
  EXPECT_TRUE(CheckEven(4).ok());
  EXPECT_EQ(CheckEven(5).code(), StatusCode::kInvalidArgument);
}

TEST(ResultTest, MoveOnlyValues) {
  Result<std::unique_ptr<std::string>> r(std::make_unique<std::string>("kernel"));
  ASSERT_TRUE(r.ok());
  std::unique_ptr<std::string> taken = std::move(r).value();
  EXPECT_EQ(*taken, "kernel");
  EXPECT_EQ(r->get(), nullptr);
}

}  // namespace
}  // namespace kope
