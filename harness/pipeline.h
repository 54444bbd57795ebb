// SPDX-License-Identifier: LGPL-2.1-or-later
// Pipelines for the tests and the bench: one built from a description and
// owned, run to its end with what its bus said, and appsrc / appsink access.
#pragma once

#include <gst/gst.h>

#include <string>
#include <vector>

namespace harness {

// An error or warning as posted: who posted it, the message for users and the
// debug text (where cudagray says what to do).
struct BusMessage {
  std::string source, text, debug;
  bool is_error = false;
  std::string domain;  // the GError's domain and code, e.g. "gst-stream-error-quark" 1
  int code = 0;
};

// An ERROR or WARNING message, read.
BusMessage read_message(GstMessage *message);

// Pops every message of the given types (errors, warnings or both) in order.
// gst_bus_pop_filtered drops what does not match, so ask for both at once
// when both matter.
std::vector<BusMessage> pop_messages(GstBus *bus, GstMessageType types);

// Errors and warnings, kept apart.
struct BusLog {
  std::vector<BusMessage> errors, warnings;
  BusLog() = default;
  explicit BusLog(GstBus *bus);   // pops both from bus
  void add(GstMessage *message);  // an error or a warning
};

// "[source] text | debug" per message, each on a line of its own.
std::string describe(const std::vector<BusMessage> &messages);

// A pipeline from a description, owned with its bus; set to NULL when it
// goes. Throws std::runtime_error when the description does not parse.
class Pipeline {
 public:
  explicit Pipeline(const std::string &description);
  ~Pipeline();
  Pipeline(const Pipeline &) = delete;
  Pipeline &operator=(const Pipeline &) = delete;

  GstElement *get() const { return pipeline_; }
  GstBus *bus() const { return bus_; }
  // The element named name, owned by the pipeline; nullptr when none.
  GstElement *by_name(const char *name) const;
  GstStateChangeReturn play() const;
  // Waits at most timeout for EOS or an error: GST_MESSAGE_EOS,
  // GST_MESSAGE_ERROR or 0. The error and the warnings before it go to log;
  // without a log, warnings stay on the bus.
  GstMessageType wait_end(GstClockTime timeout, BusLog *log = nullptr) const;

  // appsrc "name": pushes buffer (taken), and ends the stream.
  GstFlowReturn push(const char *appsrc, GstBuffer *buffer) const;
  void end_of_stream(const char *appsrc) const;
  // appsink "name": its next sample within timeout, or nullptr at EOS or
  // timeout. The caller unrefs it.
  GstSample *pull(const char *appsink, GstClockTime timeout) const;

 private:
  GstElement *pipeline_ = nullptr;
  GstBus *bus_ = nullptr;
};

// What a pipeline said on its bus from PLAYING to its end.
struct PipelineRun {
  bool reached_eos = false;
  std::vector<std::string> errors, warnings;  // the messages' text
};

// Plays description to EOS or its first error. Throws std::runtime_error
// when it does not parse or does not end within timeout.
PipelineRun run_pipeline(const std::string &description, GstClockTime timeout = 20 * GST_SECOND);

}  // namespace harness
