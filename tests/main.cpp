// SPDX-License-Identifier: LGPL-2.1-or-later
// Test entry point: GStreamer initialised once, before any test. A program
// whose every case skipped exits 77, which meson reports as SKIP rather than
// OK (the cases that need a GPU, on a machine without one).
#include <gst/gst.h>
#include <gtest/gtest.h>

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  gst_init(&argc, &argv);
  const int status = RUN_ALL_TESTS();
  const ::testing::UnitTest &run = *::testing::UnitTest::GetInstance();
  const bool all_skipped =
      run.test_to_run_count() > 0 && run.skipped_test_count() == run.test_to_run_count();
  return status == 0 && all_skipped ? 77 : status;
}
