// SPDX-License-Identifier: LGPL-2.1-or-later
// A place to convert frames, CPU or CUDA, behind one interface: the element
// picks one at start and never asks how it works.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "cudagray/conversion.h"
#include "cudagray/device.h"
#include "cudagray/frame.h"
#include "cudagray/weights.h"

namespace cudagray {

// Running figures of a backend, for the element's stats property. On CUDA,
// measured with events: device time is the kernel(s), upload and download the
// host-device copies (first start to last end of each frame's strips). On the
// CPU, device time is the conversion time.
struct TimingStats {
  uint64_t frames = 0;
  // The times are over the timed frames: every frame on the CPU; on CUDA
  // the first and every 16th after it (timing events cost the GPU's copies).
  uint64_t timed_frames = 0;
  double device_us_mean = 0, device_us_min = 0, device_us_max = 0;
  // over the timed frames that were uploaded, and downloaded
  double upload_us_mean = 0, download_us_mean = 0;
  // Frames whose input or output was not pinned and went through staging.
  uint64_t staged_inputs = 0, staged_outputs = 0;
  // Frames read straight from GPU memory (no upload).
  uint64_t device_inputs = 0;
  // Frames written straight into GPU memory (no download).
  uint64_t device_outputs = 0;
};

// What a backend needs from the element around it; the element asks, and
// never looks at which backend it holds.
struct BackendNeeds {
  // Frames worth keeping in flight for a non-live upstream when the user
  // leaves it to the element, and the most the backend can use (1: it
  // converts each frame as it is submitted).
  int auto_in_flight = 1;
  int max_in_flight = 1;
  // Host frames are copied fastest from and into pinned memory (see
  // alloc_pinned in device.h): the element offers pinned buffers upstream
  // and downstream.
  bool pinned_host_memory = false;
  // It reads frames in GPU memory where they are (InputFrame::on_device).
  bool reads_device_memory = false;
  // It writes results into GPU memory (GrayFrame::on_device), no download.
  bool writes_device_memory = false;
};

// Frames are finished in the order they were submitted.
// Threads: submit, configure and discard_all come from one thread;
// finish_oldest may run on a second thread at the same time as submit
// (never two finish_oldest at once); configure and discard_all run with
// nothing else in the backend.
class Backend {
 public:
  virtual ~Backend() = default;
  // For messages only: "cpu" or "cuda".
  virtual const char *name() const = 0;
  virtual BackendNeeds needs() const = 0;
  // Called when the conversion changes, with nothing in flight; sizes
  // buffers for up to c.max_in_flight frames at once (at least 1). Every
  // device buffer is allocated here: none for uploads when
  // c.inputs_on_device (frames in GPU memory, InputFrame::on_device), none
  // for downloads when c.outputs_on_device (results written into GPU memory,
  // GrayFrame::on_device). A frame or result in host memory after that is
  // refused until configure is called again without the flag. A
  // conversion of the same frames into the same results, whose crop,
  // placement or method alone change, allocates nothing. false and why
  // when c is not valid (valid_conversion) or the buffers cannot be had.
  virtual bool configure(const Conversion &c, std::string *error) = 0;
  // Starts the configured conversion of a frame (in host memory, or on the
  // GPU when in.on_device) into a gray frame (in host memory, or on the GPU
  // when out.on_device); both must stay valid until the frame is finished. At
  // most max_in_flight unfinished.
  virtual bool submit(const InputFrame &in, const GrayFrame &out, const Weights &w,
                      std::string *error) = 0;
  // Waits for the oldest unfinished frame; its output then holds the result.
  virtual bool finish_oldest(std::string *error) = 0;
  // Forgets every unfinished frame, after the device has let go of them.
  virtual void discard_all() = 0;
  virtual int in_flight() const = 0;
  // The CUDA device the backend converts on, or -1 for the CPU.
  virtual int device_id() const = 0;
  virtual TimingStats stats() const = 0;
};

std::unique_ptr<Backend> make_cpu_backend();
// The CUDA backend, working in one CUDA context: the one context makes
// current, which the backend enters around its making and each of its calls
// on whichever thread; with an empty switch, the one current on the calling
// thread (a device's primary context from open_cuda_device, or one the
// caller pushed), which every later call must then have current. nullptr and
// why when it cannot be made.
std::unique_ptr<Backend> make_cuda_backend(std::string *error, CudaContextSwitch context = {});

}  // namespace cudagray
