// SPDX-License-Identifier: LGPL-2.1-or-later
// The weights property's text: what gst_cuda_gray_parse_weights accepts, what it
// says when it refuses, and that formatting reads back exactly.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "gstcudagrayweights.h"

using cudagray::Coefficients;

TEST(WeightsText, AcceptsThreeNumbers) {
  Coefficients k;
  std::string error;
  ASSERT_TRUE(gst_cuda_gray_parse_weights("0.21,0.72,0.07", &k, &error)) << error;
  EXPECT_EQ(k.r, 0.21);
  EXPECT_EQ(k.g, 0.72);
  EXPECT_EQ(k.b, 0.07);
  ASSERT_TRUE(gst_cuda_gray_parse_weights(" 1 ,\t2e-1, 64", &k, &error)) << error;
  EXPECT_EQ(k.r, 1.0);
  EXPECT_EQ(k.g, 0.2);
  EXPECT_EQ(k.b, 64.0);
}

TEST(WeightsText, RejectsWithReason) {
  const std::pair<const char *, const char *> cases[] = {
      {"", "expected three comma-separated numbers \"R,G,B\", got \"\""},
      {"0.3,0.6", "expected three comma-separated numbers \"R,G,B\", got \"0.3,0.6\""},
      {"0.3,0.6,0.1,0", "expected three comma-separated numbers \"R,G,B\", got \"0.3,0.6,0.1,0\""},
      {"red,0.6,0.1", "\"red\" is not a number in \"red,0.6,0.1\""},
      {"0.3,,0.1", "\"\" is not a number in \"0.3,,0.1\""},
      {"0.3,0.6,0.1x", "\"0.1x\" is not a number in \"0.3,0.6,0.1x\""},
      {"-0.1,0.6,0.5", "weight \"-0.1\" is outside 0..64"},
      {"0.3,nan,0.1", "weight \"nan\" is outside 0..64"},
      {"inf,0.6,0.1", "weight \"inf\" is outside 0..64"},
      {"0.3,0.6,64.5", "weight \"64.5\" is outside 0..64"},
  };
  for (const auto &[text, expected] : cases) {
    Coefficients k{9, 9, 9};
    std::string error;
    EXPECT_FALSE(gst_cuda_gray_parse_weights(text, &k, &error)) << text;
    EXPECT_EQ(error, expected);
    EXPECT_EQ(k.r, 9);  // untouched on failure
  }
}

TEST(WeightsText, FormatRoundTrips) {
  EXPECT_EQ(gst_cuda_gray_format_weights({0.299, 0.587, 0.114}), "0.299,0.587,0.114");
  EXPECT_EQ(gst_cuda_gray_format_weights({1, 0, 0.0722}), "1,0,0.0722");
  Coefficients k;
  std::string error;
  const Coefficients odd{0.1 + 0.2, 1.0 / 3.0, 64};
  ASSERT_TRUE(gst_cuda_gray_parse_weights(gst_cuda_gray_format_weights(odd).c_str(), &k, &error))
      << error;
  EXPECT_EQ(k.r, odd.r);
  EXPECT_EQ(k.g, odd.g);
  EXPECT_EQ(k.b, odd.b);
}
