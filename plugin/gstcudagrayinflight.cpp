// SPDX-License-Identifier: LGPL-2.1-or-later
/* The frames-in-flight policy: how many frames the element keeps in
 * flight (max-inflight, the backend's choice, one for a live upstream or
 * reverse playback), how much room gray passed through gets, and the
 * latency that adds. */
#include "gstcudagrayinflight.h"

#include "gstcudagrayrenegotiation.h"

GST_DEBUG_CATEGORY_EXTERN(gst_cuda_gray_debug);
#define GST_CAT_DEFAULT gst_cuda_gray_debug

static gboolean upstream_is_live(GstBaseTransform *trans) {
  GstQuery *query = gst_query_new_latency();
  gboolean live = FALSE;
  if (gst_pad_peer_query(GST_BASE_TRANSFORM_SINK_PAD(trans), query))
    gst_query_parse_latency(query, &live, NULL, NULL);
  gst_query_unref(query);
  return live;
}

/* Gray passed through that the output holds before upstream waits. It
 * holds nothing of the backend's and leaves as soon as the output task gets
 * to it; with room for one, the streaming thread waited for the task at
 * every buffer (50 us a buffer on a 2-core machine, 2 us with 16). */
#define PASSTHROUGH_ROOM 16

/* How many frames may be in flight, and the latency that adds: one at a
 * time in reverse playback, where a frame held would leave after an event
 * that came after it but is stamped before it (downstream, GstValidate
 * among them, expects serialized events in timestamp order), else
 * max-inflight or the backend's choice. */
int gst_cuda_gray_limit_frames_in_flight(GstCudaGray *self, const GstVideoInfo *in_info,
                                         gboolean passthrough) {
  GST_OBJECT_LOCK(self);
  const guint max_inflight = self->props.max_inflight;
  GST_OBJECT_UNLOCK(self);
  GstBaseTransform *trans = GST_BASE_TRANSFORM(self);
  const int in_flight = self->converter->set_frames_in_flight(
      self->reverse_playback ? 1 : max_inflight, passthrough, upstream_is_live(trans));
  /* a frame can wait behind max-inflight - 1 others when the GPU falls behind */
  const GstClockTime waiting =
      in_info->fps_n > 0
          ? gst_util_uint64_scale((in_flight - 1) * GST_SECOND, in_info->fps_d, in_info->fps_n)
          : 0;
  self->output->set_limit(passthrough ? PASSTHROUGH_ROOM : in_flight,
                          !passthrough && in_flight == 1, waiting);
  return in_flight;
}

/* A segment that turns playback around sets the frames in flight again,
 * once the frames of the old direction are out. */
void gst_cuda_gray_follow_playback_direction(GstCudaGray *self, GstEvent *segment_event) {
  const GstSegment *segment;
  gst_event_parse_segment(segment_event, &segment);
  const gboolean reverse = segment->rate < 0;
  if (reverse == self->reverse_playback) return;
  self->reverse_playback = reverse;
  /* the next segment comes after a flush */
  if (gst_cuda_gray_wait_on_output(self, &GstCudaGrayOutput::drain) == GST_FLOW_FLUSHING) return;
  GstCaps *caps = gst_pad_get_current_caps(GST_BASE_TRANSFORM_SINK_PAD(self));
  GstVideoInfo in_info;
  if (caps && gst_video_info_from_caps(&in_info, caps)) {
    const int in_flight = gst_cuda_gray_limit_frames_in_flight(
        self, &in_info, gst_base_transform_is_passthrough(GST_BASE_TRANSFORM(self)));
    GST_INFO_OBJECT(self, "%s playback: up to %d frames in flight", reverse ? "reverse" : "forward",
                    in_flight);
  }
  if (caps) gst_caps_unref(caps);
}
