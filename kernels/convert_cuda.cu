// SPDX-License-Identifier: LGPL-2.1-or-later
// convert_cuda: a frame's kernel launch (the kernels: convert_cuda.cuh).
#include "cudagray/convert_cuda.h"

#include "convert_cuda.cuh"

namespace cudagray {

namespace {

template <class Layout, class Op>
void launch_resample(const Conversion &c, const InputFrame &in, const GrayFrame &out, Op op,
                     cudaStream_t stream) {
  if (c.method == ScaleMethod::Area) {
    const dim3 grid((c.out_width + kAreaColumns - 1) / kAreaColumns,
                    (c.out_height + kAreaRows - 1) / kAreaRows);
    const int band_columns = area_band_columns<Layout>(c);
    area_kernel<Layout>
        <<<grid, kAreaThreads, kAreaRows * band_columns * sizeof(uint32_t), stream>>>(
            in.plane[0], in.stride[0], in.plane[1], in.stride[1], in.plane[2], in.stride[2],
            out.data, out.stride, c, band_columns, reads_wide<Layout>(in),
            QuotientRounder(resample_denominator(c)), op);
  } else {
    const dim3 grid((c.out_width + kSampleColumns - 1) / kSampleColumns,
                    (c.out_height + kSampleRows - 1) / kSampleRows);
    sample_kernel<Layout><<<grid, dim3(kSampleColumns, kSampleRows), 0, stream>>>(
        in.plane[0], in.stride[0], in.plane[1], in.stride[1], in.plane[2], in.stride[2], out.data,
        out.stride, c, QuotientRounder(resample_denominator(c)), op);
  }
}

}  // namespace

cudaError_t convert_cuda(const Conversion &c, const InputFrame &device_in,
                         const GrayFrame &device_out, const Weights &w, cudaStream_t stream) {
  std::string why;
  if (!valid_conversion(c, &why)) return cudaErrorInvalidValue;
  const SourceFrame in = source_frame(c, device_in);
  dispatch_layout(c.layout, [&](auto layout) {
    using Layout = decltype(layout);
    if (c.resamples()) {
      dispatch_to_gray(layout, 16, c.limited_range, w, [&](auto op) {
        launch_resample<Layout>(c, device_in, device_out, op, stream);
      });
      return;
    }
    dispatch_to_gray(layout, c.out_depth, c.limited_range, w, [&](auto op) {
      if constexpr (Layout::kFamily == LayoutFamily::Bayer)
        launch_bayer<Layout>(in, device_out, op, stream);
      else
        launch<Layout>(in, device_out, op, stream);
    });
  });
  return cudaGetLastError();
}

}  // namespace cudagray
