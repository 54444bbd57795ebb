// SPDX-License-Identifier: LGPL-2.1-or-later
// Pipelines run to their end, bus logs, appsrc and appsink.
#include "pipeline.h"

#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>

#include <stdexcept>

namespace harness {

BusMessage read_message(GstMessage *message) {
  GError *error = nullptr;
  gchar *debug = nullptr;
  const bool is_error = GST_MESSAGE_TYPE(message) == GST_MESSAGE_ERROR;
  if (is_error)
    gst_message_parse_error(message, &error, &debug);
  else
    gst_message_parse_warning(message, &error, &debug);
  BusMessage read;
  read.source = GST_OBJECT_NAME(GST_MESSAGE_SRC(message));
  read.text = error ? error->message : "unknown";
  read.debug = debug ? debug : "";
  read.is_error = is_error;
  if (error) {
    read.domain = g_quark_to_string(error->domain);
    read.code = error->code;
    g_error_free(error);
  }
  g_free(debug);
  return read;
}

std::vector<BusMessage> pop_messages(GstBus *bus, GstMessageType types) {
  std::vector<BusMessage> found;
  while (GstMessage *message = gst_bus_pop_filtered(bus, types)) {
    found.push_back(read_message(message));
    gst_message_unref(message);
  }
  return found;
}

BusLog::BusLog(GstBus *bus) {
  for (BusMessage &m : pop_messages(bus, GstMessageType(GST_MESSAGE_ERROR | GST_MESSAGE_WARNING)))
    (m.is_error ? errors : warnings).push_back(std::move(m));
}

void BusLog::add(GstMessage *message) {
  BusMessage m = read_message(message);
  (m.is_error ? errors : warnings).push_back(std::move(m));
}

std::string describe(const std::vector<BusMessage> &messages) {
  std::string text;
  for (const BusMessage &m : messages) text += "\n  [" + m.source + "] " + m.text + " | " + m.debug;
  return text;
}

Pipeline::Pipeline(const std::string &description) {
  GError *error = nullptr;
  pipeline_ = gst_parse_launch(description.c_str(), &error);
  if (!pipeline_) {
    const std::string why = error ? error->message : "unknown error";
    g_clear_error(&error);
    throw std::runtime_error("cannot parse \"" + description + "\": " + why);
  }
  g_clear_error(&error);  // a recoverable error (a link left for later) comes with a pipeline
  bus_ = gst_element_get_bus(pipeline_);
}

Pipeline::~Pipeline() {
  gst_element_set_state(pipeline_, GST_STATE_NULL);
  gst_object_unref(bus_);
  gst_object_unref(pipeline_);
}

GstElement *Pipeline::by_name(const char *name) const {
  GstElement *element = gst_bin_get_by_name(GST_BIN(pipeline_), name);
  if (element) gst_object_unref(element);  // the bin keeps it alive
  return element;
}

GstStateChangeReturn Pipeline::play() const {
  return gst_element_set_state(pipeline_, GST_STATE_PLAYING);
}

GstMessageType Pipeline::wait_end(GstClockTime timeout, BusLog *log) const {
  const auto types =
      GstMessageType(GST_MESSAGE_EOS | GST_MESSAGE_ERROR | (log ? GST_MESSAGE_WARNING : 0));
  for (;;) {
    GstMessage *message = gst_bus_timed_pop_filtered(bus_, timeout, types);
    if (!message) return GstMessageType(0);
    const GstMessageType type = GST_MESSAGE_TYPE(message);
    if (type != GST_MESSAGE_EOS && log) log->add(message);
    gst_message_unref(message);
    if (type != GST_MESSAGE_WARNING) return type;
  }
}

GstFlowReturn Pipeline::push(const char *appsrc, GstBuffer *buffer) const {
  return gst_app_src_push_buffer(GST_APP_SRC(by_name(appsrc)), buffer);
}

void Pipeline::end_of_stream(const char *appsrc) const {
  gst_app_src_end_of_stream(GST_APP_SRC(by_name(appsrc)));
}

GstSample *Pipeline::pull(const char *appsink, GstClockTime timeout) const {
  return gst_app_sink_try_pull_sample(GST_APP_SINK(by_name(appsink)), timeout);
}

PipelineRun run_pipeline(const std::string &description, GstClockTime timeout) {
  const Pipeline pipeline(description);
  pipeline.play();  // a failure to start posts an error, read below
  BusLog log;
  const GstMessageType end = pipeline.wait_end(timeout, &log);
  if (!end) throw std::runtime_error("pipeline did not finish within the timeout: " + description);
  PipelineRun run;
  run.reached_eos = end == GST_MESSAGE_EOS;
  for (const BusMessage &m : log.errors) run.errors.push_back(m.text);
  for (const BusMessage &m : log.warnings) run.warnings.push_back(m.text);
  return run;
}

}  // namespace harness
