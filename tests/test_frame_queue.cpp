// SPDX-License-Identifier: LGPL-2.1-or-later
// The frames in flight and their one owner: GstCudaGrayFrame maps a frame's
// input and output buffers (and names what is wrong with a buffer that does
// not hold its frame); GstCudaGrayOutputQueue hands frames from the streaming
// thread to the output task in order, holds upstream back at its limit, and
// unmaps every frame it drops. No element, no GPU.
#include <atomic>
#include <memory>
#include <thread>

#include "element_harness.h"
#include "gstcudagrayoutputqueue.h"
#include "probes.h"

using namespace cudagray;
using namespace cudagray::test;

namespace {

constexpr int kWidth = 33, kHeight = 17;

int refcount(GstBuffer *buf) { return GST_MINI_OBJECT_REFCOUNT_VALUE(buf); }

// A mapped frame of a random padded RGB input and a fresh GRAY8 output; the
// caller keeps a reference to both buffers.
struct Buffers {
  TestFrame frame = random_frame(PixelLayout::RGB, kWidth, kHeight);
  GstBuffer *in = buffer_for(frame);
  GstBuffer *out = gst_buffer_new_allocate(nullptr, GST_ROUND_UP_4(kWidth) * kHeight, nullptr);
  ~Buffers() {
    gst_buffer_unref(in);
    gst_buffer_unref(out);
  }
  std::unique_ptr<GstCudaGrayFrame> map() const {
    GstVideoInfo info;
    gst_video_info_set_format(&info, GST_VIDEO_FORMAT_RGB, kWidth, kHeight);
    auto f = std::make_unique<GstCudaGrayFrame>();
    std::string why;
    EXPECT_EQ(f->map(nullptr, in, &info, same_size_conversion(PixelLayout::RGB, kWidth, kHeight),
                     out, FALSE, &why),
              GST_CUDA_GRAY_MAP_OK)
        << why;
    return f;
  }
};

}  // namespace

// The kernels see the planes where the video meta puts them, and converting
// into the mapped output gives the reference.
TEST(GstCudaGrayFrame, ShowsTheKernelsThePlanesOfTheMeta) {
  Buffers b;
  std::unique_ptr<GstCudaGrayFrame> f = b.map();
  EXPECT_EQ(f->input().stride[0], b.frame.stride[0]);
  GstMapInfo map;
  ASSERT_TRUE(gst_buffer_map(b.in, &map, GST_MAP_READ));
  EXPECT_EQ(0, memcmp(f->input().plane[0], map.data + b.frame.offset[0], kWidth * 3));
  gst_buffer_unmap(b.in, &map);
  EXPECT_FALSE(f->output().on_device);
  convert_cpu(b.frame.conversion(), f->input(), f->output(), weights_of(kWeightChoices[0]));
  GstBuffer *out = f->release_output();
  EXPECT_EQ(out, b.out);
  EXPECT_TRUE(
      same_pixels(gray_of(out, kWidth, kHeight), cpu_reference(b.frame, kWeightChoices[0])));
  EXPECT_EQ(refcount(b.in), 2) << "the input stays mapped until the frame goes";
  f.reset();
  EXPECT_EQ(refcount(b.in), 1);
  gst_buffer_unref(out);
}

// A short buffer: the element's words, and nothing left mapped.
TEST(GstCudaGrayFrame, ShortBufferIsNamedAndNotMapped) {
  GstVideoInfo info;
  gst_video_info_set_format(&info, GST_VIDEO_FORMAT_RGB, kWidth, kHeight);
  GstBuffer *in = gst_buffer_new_allocate(nullptr, 100, nullptr);
  GstBuffer *out = gst_buffer_new_allocate(nullptr, GST_ROUND_UP_4(kWidth) * kHeight, nullptr);
  GstCudaGrayFrame f;
  std::string why;
  EXPECT_EQ(f.map(nullptr, in, &info, same_size_conversion(PixelLayout::RGB, kWidth, kHeight), out,
                  FALSE, &why),
            GST_CUDA_GRAY_MAP_BAD_INPUT);
  EXPECT_EQ(why, "plane 0 (offset 0, stride 100) needs 1699 bytes, the buffer has 100");
  EXPECT_EQ(refcount(in), 1);
  EXPECT_EQ(refcount(out), 1);
  gst_buffer_unref(in);
  gst_buffer_unref(out);
}

// CUDA memory output negotiated, but a system-memory buffer handed over: the
// output is refused in the element's words, and nothing stays mapped.
TEST(GstCudaGrayFrame, OutputInOtherMemoryThanNegotiatedIsRefused) {
  Buffers b;
  GstVideoInfo info;
  gst_video_info_set_format(&info, GST_VIDEO_FORMAT_RGB, kWidth, kHeight);
  std::string why;
  {
    GstCudaGrayFrame f;
    EXPECT_EQ(f.map(nullptr, b.in, &info, same_size_conversion(PixelLayout::RGB, kWidth, kHeight),
                    b.out, TRUE, &why),
              GST_CUDA_GRAY_MAP_BAD_OUTPUT);
    EXPECT_EQ(why,
              "the output buffer is not CUDA memory of the element's CUDA context that can be "
              "mapped for writing");
  }
  EXPECT_EQ(refcount(b.in), 1);
  EXPECT_EQ(refcount(b.out), 1);
}

// Frames come out in the order they went in; once out and gone, nothing of
// theirs is held (the output buffer handed over, the input let go).
TEST(OutputQueue, PopsInOrderAndLetsGo) {
  Buffers a, b, c;
  GstCudaGrayOutputQueue queue;
  for (Buffers *x : {&a, &b, &c}) {
    queue.push(GstCudaGrayOutputItem(x->map()));
    EXPECT_EQ(refcount(x->in), 2);  // the queue's mapping holds it
  }
  EXPECT_EQ(queue.frames(), 3u);
  size_t held = 3;
  for (Buffers *x : {&a, &b, &c}) {
    ASSERT_TRUE(queue.wait_for_item());
    GstBuffer *out = queue.take_oldest().frame().release_output();
    EXPECT_EQ(out, x->out);
    EXPECT_EQ(refcount(x->in), 1);
    EXPECT_EQ(refcount(x->out), 2);  // ours and the one handed over
    gst_buffer_unref(out);
    EXPECT_EQ(queue.frames(), held) << "held until pushed";
    queue.pushed(GST_FLOW_OK);
    EXPECT_EQ(queue.frames(), --held);
  }
  EXPECT_EQ(queue.frames(), 0u);
  EXPECT_EQ(queue.drain(), GST_FLOW_OK);
}

// Dropping every frame unmaps and lets go of every buffer.
TEST(OutputQueue, DiscardAllLetsGoOfEveryBuffer) {
  Buffers a, b;
  GstCudaGrayOutputQueue queue;
  queue.push(GstCudaGrayOutputItem(a.map()));
  queue.push(GstCudaGrayOutputItem(b.map()));
  EXPECT_EQ(queue.discard_all(nullptr), 2u);
  for (Buffers *x : {&a, &b}) {
    EXPECT_EQ(refcount(x->in), 1);
    EXPECT_EQ(refcount(x->out), 1);
    GstMapInfo map;  // no mapping left: it maps for writing again
    ASSERT_TRUE(gst_buffer_map(x->out, &map, GST_MAP_WRITE));
    gst_buffer_unmap(x->out, &map);
  }
  EXPECT_EQ(queue.frames(), 0u);
}

// Upstream waits at the limit until the output task has pushed one: a
// frame being pushed still counts, so wait_for_room returns only after
// pushed() said how the push went, with one frame held, however the
// threads are scheduled. A wait that ends sooner is seen in a round where
// the waiting thread runs ahead: it returns before `released` is set, or
// with two frames held; of 200 rounds, some are such rounds.
TEST(OutputQueue, WaitsForRoomUntilAFrameIsPushed) {
  for (int round = 0; round < 200; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    Buffers a, b;
    GstCudaGrayOutputQueue queue;
    queue.push(GstCudaGrayOutputItem(a.map()));
    queue.push(GstCudaGrayOutputItem(b.map()));
    std::atomic<bool> released{false}, released_at_return{false};
    Count started;
    GstFlowReturn ret = GST_FLOW_ERROR;
    gsize held_at_return = 0;
    std::thread streaming([&] {
      ++started;
      ret = queue.wait_for_room(2);
      released_at_return = released.load();
      held_at_return = queue.frames();
    });
    EXPECT_TRUE(wait_for(started, 1, 20000));
    GstBuffer *out = queue.take_oldest().frame().release_output();
    released = true;
    queue.pushed(GST_FLOW_OK);
    must_return_within(20, "wait_for_room after a frame was pushed", [&] { streaming.join(); });
    EXPECT_EQ(ret, GST_FLOW_OK);
    EXPECT_TRUE(released_at_return.load()) << "returned before the frame being pushed was pushed";
    EXPECT_EQ(held_at_return, 1u) << "returned with the limit of frames held";
    gst_buffer_unref(out);
    queue.discard_all(nullptr);
    if (HasFailure()) return;
  }
}

// Flushing wakes both threads; a failed push stops the output and is what
// upstream and a drain are told, until reset, while events still go out.
// Both waits end FLUSHING whether they began before or after the flush; a
// flush that wakes no one hangs a round where they began before it.
TEST(OutputQueue, FlushingAndFailedPushesStopTheWaits) {
  Buffers a;
  GstCudaGrayOutputQueue queue;
  for (int round = 0; round < 200; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    queue.reset();
    Count started;
    bool item = true;
    GstFlowReturn room = GST_FLOW_OK;
    std::thread output([&] {
      ++started;
      item = queue.wait_for_item();
    });
    std::thread streaming([&] {
      ++started;
      room = queue.wait_for_room(0);
    });
    EXPECT_TRUE(wait_for(started, 2, 20000));
    queue.set_flushing(TRUE);
    must_return_within(20, "the waits of both threads after the flush", [&] {
      output.join();
      streaming.join();
    });
    EXPECT_FALSE(item);
    EXPECT_EQ(room, GST_FLOW_FLUSHING);
    if (HasFailure()) return;
  }
  queue.reset();
  queue.push(GstCudaGrayOutputItem(a.map()));
  gst_buffer_unref(queue.take_oldest().frame().release_output());
  queue.pushed(GST_FLOW_NOT_LINKED);
  EXPECT_EQ(queue.wait_for_room(4), GST_FLOW_NOT_LINKED);
  EXPECT_EQ(queue.drain(), GST_FLOW_NOT_LINKED);
  // a stopped output still takes events (an EOS must reach downstream)
  EXPECT_EQ(queue.push(GstCudaGrayOutputItem::serialized(gst_event_new_eos())), GST_FLOW_OK);
  EXPECT_TRUE(queue.wait_for_item());
  queue.reset();
  EXPECT_EQ(queue.drain(), GST_FLOW_OK);
}

// A NOT_LINKED output (cudagray's src pad unlinked) pushes again once
// downstream asks for a renegotiation (a relink sends RECONFIGURE), as
// gstqueue forgets its NOT_LINKED; other failures stay until reset.
TEST(OutputQueue, NotLinkedIsForgottenOnRelink) {
  Buffers a, b;
  GstCudaGrayOutputQueue queue;
  queue.push(GstCudaGrayOutputItem(a.map()));
  gst_buffer_unref(queue.take_oldest().frame().release_output());
  queue.pushed(GST_FLOW_NOT_LINKED);
  EXPECT_EQ(queue.wait_for_room(4), GST_FLOW_NOT_LINKED);
  EXPECT_TRUE(queue.resume_after_relink());
  EXPECT_EQ(queue.wait_for_room(4), GST_FLOW_OK);
  EXPECT_EQ(queue.flow(), GST_FLOW_OK);
  EXPECT_FALSE(queue.resume_after_relink()) << "nothing to resume";
  queue.push(GstCudaGrayOutputItem(b.map()));
  gst_buffer_unref(queue.take_oldest().frame().release_output());
  queue.pushed(GST_FLOW_EOS);
  EXPECT_FALSE(queue.resume_after_relink());
  EXPECT_EQ(queue.wait_for_room(4), GST_FLOW_EOS);
}

// A frame handed over while flushing may still be converting on the GPU:
// it is kept, still mapped, until discard_all (after the backend let go),
// and FLUSHING returned; an event is dropped at once.
TEST(OutputQueue, FrameHandedOverWhileFlushingStaysMappedUntilDiscarded) {
  Buffers a;
  GstCudaGrayOutputQueue queue;
  queue.set_flushing(TRUE);
  EXPECT_EQ(queue.push(GstCudaGrayOutputItem(a.map())), GST_FLOW_FLUSHING);
  EXPECT_EQ(refcount(a.in), 2) << "unmapped while its conversion may be queued";
  EXPECT_EQ(refcount(a.out), 2);
  EXPECT_EQ(queue.push(GstCudaGrayOutputItem::serialized(gst_event_new_eos())), GST_FLOW_FLUSHING);
  EXPECT_FALSE(queue.wait_for_item()) << "flushing: nothing is pushed";
  EXPECT_EQ(queue.discard_all(nullptr), 1u);
  EXPECT_EQ(refcount(a.in), 1);
  EXPECT_EQ(refcount(a.out), 1);
}

// A frame refused by downstream (its output pushed, and refused) gives
// back its input to be converted again, with the DISCONT flag its output
// had; a buffer passed through gives back itself.
TEST(OutputQueue, ItemGivesBackItsInputAndItsDiscont) {
  for (const bool discont : {false, true}) {
    Buffers a;
    if (discont) GST_BUFFER_FLAG_SET(a.out, GST_BUFFER_FLAG_DISCONT);
    GstCudaGrayOutputItem item(a.map());
    gst_buffer_unref(item.frame().release_output());  // pushed, and refused
    bool was_discont = !discont;
    GstBuffer *input = item.take_input(&was_discont);
    EXPECT_EQ(input, a.in);
    EXPECT_EQ(was_discont, discont);
    EXPECT_FALSE(item.is_frame()) << "the item is left empty";
    gst_buffer_unref(input);
  }
  GstBuffer *passed = gst_buffer_new_allocate(nullptr, 16, nullptr);
  GST_BUFFER_FLAG_SET(passed, GST_BUFFER_FLAG_DISCONT);
  GstCudaGrayOutputItem item = GstCudaGrayOutputItem::ready(passed);
  bool was_discont = false;
  EXPECT_EQ(item.take_input(&was_discont), passed);
  EXPECT_TRUE(was_discont);
  gst_buffer_unref(passed);
}

// Converting them again failed: the frames are dropped, the flow error
// stays for upstream.
TEST(OutputQueue, AFailedRenegotiationDropsTheFramesAndStopsTheOutput) {
  Buffers a;
  GstCudaGrayOutputQueue queue;
  queue.push(GstCudaGrayOutputItem(a.map()));
  queue.refuse(queue.take_oldest());
  std::deque<GstCudaGrayOutputItem> items;
  ASSERT_TRUE(queue.take_refused(&items));
  queue.put_back_converted(std::move(items), GST_FLOW_NOT_NEGOTIATED);
  EXPECT_EQ(queue.frames(), 0u);
  EXPECT_EQ(queue.wait_for_room(4), GST_FLOW_NOT_NEGOTIATED);
}

// A refused frame waits for the streaming thread to serve the
// renegotiation (room and drain say so): it takes what is held, once; its
// drain in set_caps then finds nothing held; what it puts back goes out
// first, before anything queued meanwhile.
TEST(OutputQueue, OneThreadServesARefusal) {
  Buffers a;
  GstCudaGrayOutputQueue queue;
  queue.push(GstCudaGrayOutputItem(a.map()));
  GstCudaGrayOutputItem refused = queue.take_oldest();
  queue.refuse(std::move(refused));
  EXPECT_EQ(queue.wait_for_room(4), GST_CUDA_GRAY_FLOW_RENEGOTIATE);
  EXPECT_EQ(queue.drain(), GST_CUDA_GRAY_FLOW_RENEGOTIATE);
  std::deque<GstCudaGrayOutputItem> items;
  ASSERT_TRUE(queue.take_refused(&items));
  ASSERT_EQ(items.size(), 1u);
  std::deque<GstCudaGrayOutputItem> other;
  EXPECT_FALSE(queue.take_refused(&other)) << "taken twice";
  EXPECT_EQ(queue.drain(), GST_FLOW_OK) << "nothing is held while they are converted again";
  queue.push(GstCudaGrayOutputItem::serialized(gst_event_new_eos()));
  queue.put_back_converted(std::move(items), GST_FLOW_OK);
  EXPECT_EQ(queue.frames(), 1u);
  ASSERT_TRUE(queue.wait_for_item());
  EXPECT_TRUE(queue.take_oldest().converting()) << "the frame converted again goes first";
  queue.pushed(GST_FLOW_OK);
  EXPECT_TRUE(queue.take_oldest().is_event());
  queue.pushed(GST_FLOW_OK);
  EXPECT_EQ(queue.frames(), 0u);
}
