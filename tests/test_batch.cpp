// SPDX-License-Identifier: LGPL-2.1-or-later
// Batches (cudagray/batch.h, docs/batch.md): every element against the
// documented normalisation, written again here without kernels/ (binary32
// operations in the documented order, binary16 by a search of every finite
// half), each slot's gray from convert_cpu of its own conversion (held to
// the gray formulas by test_kernels and test_scale); the CUDA batch equal
// to the CPU one bit for bit (skipped without a GPU, saying why).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "common.h"
#include "cudagray/batch.h"
#include "normalise.h"
#ifdef CUDAGRAY_TEST_HAVE_CUDA
#include <cuda_runtime.h>

#include "cudagray/convert_cuda.h"
#endif

using namespace cudagray;
using namespace cudagray::test;

namespace {

// ------------------------------------------------ the documented formula

// binary16 of a finite or infinite double, rounded to nearest, ties to the
// even code, by searching the finite halves in order: the nearest, or the
// two equally near; past the largest (65504), from the midpoint to the next
// power (65520) on, infinity.
uint16_t half_reference(double v) {
  static const std::vector<double> magnitudes = [] {
    std::vector<double> m;
    for (uint32_t code = 0; code < 0x7C00; ++code) {
      const uint32_t e = code >> 10, f = code & 0x3FF;
      m.push_back(e == 0 ? std::ldexp(f, -24) : std::ldexp(1024 + f, static_cast<int>(e) - 25));
    }
    return m;
  }();
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  const double a = std::fabs(v);
  if (a >= 65520.0) return sign | 0x7C00;
  const auto above = std::lower_bound(magnitudes.begin(), magnitudes.end(), a);
  if (above == magnitudes.end()) return sign | 0x7BFF;
  auto code = static_cast<uint16_t>(above - magnitudes.begin());
  if (*above != a && code > 0) {
    const double up = *above - a, down = a - magnitudes[code - 1];
    if (down < up || (down == up && (code & 1))) --code;
  }
  return sign | code;
}

// The float32 value of gray g: (g / full_scale - mean) / std, each
// operation a binary32 one rounded to nearest (volatile: nothing kept
// wider, nothing fused).
float normalised_reference(uint32_t g, float full_scale, float mean, float std) {
  volatile float t = static_cast<float>(g);
  t = t / full_scale;
  t = t - mean;
  t = t / std;
  return t;
}

// The bytes of the element of gray g.
std::vector<uint8_t> element_reference(const BatchFormat &f, uint32_t g) {
  if (f.dtype == BatchDType::UInt8) return {static_cast<uint8_t>(g)};
  const float v = normalised_reference(g, f.gray_depth == 16 ? 65535.0f : 255.0f, f.mean, f.std);
  std::vector<uint8_t> bytes(f.dtype == BatchDType::Float16 ? 2 : 4);
  if (f.dtype == BatchDType::Float16) {
    const uint16_t h = half_reference(v);
    std::memcpy(bytes.data(), &h, 2);
  } else {
    std::memcpy(bytes.data(), &v, 4);
  }
  return bytes;
}

const char *dtype_name(BatchDType d) {
  return d == BatchDType::UInt8 ? "uint8" : d == BatchDType::Float16 ? "float16" : "float32";
}

std::string describe(const BatchFormat &f) {
  return std::to_string(f.width) + "x" + std::to_string(f.height) + " " + dtype_name(f.dtype) +
         " GRAY" + std::to_string(f.gray_depth) + " mean " + std::to_string(f.mean) + " std " +
         std::to_string(f.std);
}

// --------------------------------------------------------------- batches

// A batch's slots with the frames they read (host memory).
struct TestBatch {
  BatchFormat format;
  std::vector<TestFrame> frames;  // one per slot; an absent slot's is empty
  std::vector<BatchSlot> slots;

  // The slots, reading frames at the given bases (host or device copies).
  std::vector<BatchSlot> slots_at(const std::vector<const uint8_t *> &bases) const {
    std::vector<BatchSlot> at = slots;
    for (size_t i = 0; i < at.size(); ++i)
      if (at[i].present) at[i].frame = frames[i].view(bases[i]);
    return at;
  }
};

// A random conversion of f to the batch's size: a crop, a destination
// anywhere inside (letterbox bars on any side, or none), a method, and (for
// luma) either range.
Conversion random_slot_conversion(const TestFrame &f, const BatchFormat &format,
                                  ScaleMethod method) {
  Conversion c = f.conversion(
      format.gray_depth, layout_info(f.layout).family == LayoutFamily::Luma && random_int(0, 1));
  c.method = method;
  c.out_width = format.width;
  c.out_height = format.height;
  switch (random_int(0, 3)) {
    case 0:  // the whole frame, filling the slot
      c.dest = Rect{0, 0, format.width, format.height};
      break;
    case 1:  // letterboxed: bars on both sides of one axis
      c.dest = Rect{0, 0, format.width, format.height};
      if (format.width > 2 && random_int(0, 1))
        c.dest.width = random_int(1, format.width - 2),
        c.dest.x = random_int(1, format.width - c.dest.width - 1);
      else if (format.height > 2)
        c.dest.height = random_int(1, format.height - 2),
        c.dest.y = random_int(1, format.height - c.dest.height - 1);
      break;
    default:  // cropped and placed anywhere
      c.crop.width = random_int(1, f.width);
      c.crop.height = random_int(1, f.height);
      c.crop.x = random_int(0, f.width - c.crop.width);
      c.crop.y = random_int(0, f.height - c.crop.height);
      c.dest.width = random_int(1, format.width);
      c.dest.height = random_int(1, format.height);
      c.dest.x = random_int(0, format.width - c.dest.width);
      c.dest.y = random_int(0, format.height - c.dest.height);
  }
  return c;
}

// A batch of `count` slots of random frames (layouts from `layouts`, sizes
// up to max_in, padded or 16-byte aligned rows), absent with probability
// 1/4 where absent is true.
TestBatch random_batch(const BatchFormat &format, int count,
                       const std::vector<PixelLayout> &layouts, ScaleMethod method, int max_in,
                       bool absent, Rows rows = Rows::Padded) {
  TestBatch b{format, {}, {}};
  for (int i = 0; i < count; ++i) {
    BatchSlot s;
    s.present = !(absent && random_int(0, 3) == 0);
    if (s.present) {
      const PixelLayout layout = layouts[random_int(0, static_cast<int>(layouts.size()) - 1)];
      b.frames.push_back(random_frame(layout, random_int(1, max_in), random_int(1, max_in), rows));
      s.conversion = random_slot_conversion(b.frames.back(), format, method);
    } else {
      b.frames.emplace_back();
    }
    b.slots.push_back(s);
  }
  for (int i = 0; i < count; ++i)  // where the frames ended up
    if (b.slots[i].present) b.slots[i].frame = b.frames[i].view();
  return b;
}

constexpr uint8_t kGuard = 0x5A;
constexpr size_t kGuardBytes = 64;

// A batch's memory with guard bytes before and after it, and `offset`
// bytes of misalignment.
struct BatchBuffer {
  std::vector<uint8_t> bytes;
  size_t offset, size;
  BatchBuffer(size_t batch_bytes, size_t misalign = 0)
      : bytes(batch_bytes + 2 * kGuardBytes + misalign, kGuard),
        offset(kGuardBytes + misalign),
        size(batch_bytes) {}
  uint8_t *data() { return bytes.data() + offset; }
  const uint8_t *data() const { return bytes.data() + offset; }
  ::testing::AssertionResult guards_untouched() const {
    for (size_t i = 0; i < bytes.size(); ++i)
      if ((i < offset || i >= offset + size) && bytes[i] != kGuard)
        return ::testing::AssertionFailure()
               << "byte " << static_cast<long>(i - offset) << " from the batch's start written";
    return ::testing::AssertionSuccess();
  }
};

// Every element of batch b at out against the formula over each slot's gray
// (convert_cpu of its conversion; an absent slot's gray 0 everywhere).
::testing::AssertionResult matches_formula(const TestBatch &b, const uint8_t *out,
                                           const Weights &w) {
  const BatchFormat &f = b.format;
  const size_t esize = dtype_bytes(f.dtype), elements = static_cast<size_t>(f.width) * f.height;
  // the element of each gray value, computed once
  std::vector<std::vector<uint8_t>> table(f.gray_depth == 16 ? 65536 : 256);
  for (uint32_t g = 0; g < table.size(); ++g) table[g] = element_reference(f, g);
  int wrong = 0;
  std::string first;
  for (size_t i = 0; i < b.slots.size(); ++i) {
    GrayImage gray(f.width, f.height, 0, f.gray_depth);
    std::fill(gray.bytes.begin(), gray.bytes.end(), 0);
    if (b.slots[i].present) convert_cpu(b.slots[i].conversion, b.frames[i].view(), gray.frame(), w);
    const uint8_t *slot = out + i * elements * esize;
    for (int y = 0; y < f.height; ++y)
      for (int x = 0; x < f.width; ++x) {
        const unsigned g = gray.at(x, y);
        const uint8_t *e = slot + (static_cast<size_t>(y) * f.width + x) * esize;
        if (std::memcmp(e, table[g].data(), esize) != 0 && wrong++ < 3) {
          uint32_t got = 0, want = 0;
          std::memcpy(&got, e, esize);
          std::memcpy(&want, table[g].data(), esize);
          first += " slot " + std::to_string(i) + (b.slots[i].present ? "" : " (absent)") + " (" +
                   std::to_string(x) + "," + std::to_string(y) + ") gray " + std::to_string(g) +
                   ": bits " + std::to_string(got) + " want " + std::to_string(want);
        }
      }
  }
  if (wrong == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << describe(f) << ": " << wrong << " elements wrong:" << first;
}

const BatchDType kDTypes[] = {BatchDType::UInt8, BatchDType::Float16, BatchDType::Float32};
const ScaleMethod kMethods[] = {ScaleMethod::Nearest, ScaleMethod::Bilinear, ScaleMethod::Area};

// Means and stds a model uses (ImageNet's gray, [-1, 1], none) and ones at
// the edges of binary32 and binary16: results past 65504 (infinite in
// float16), subnormal ones, a negative std.
const std::pair<float, float> kMeanStd[] = {{0.0f, 1.0f},     {0.449f, 0.226f}, {0.5f, 0.5f},
                                            {0.485f, 0.229f}, {-3.0f, -0.01f},  {0.25f, 1e-6f},
                                            {0.1f, 3e35f},    {1.0f, 1e-38f},   {0.0f, 7.0f}};

BatchFormat format_of(int width, int height, BatchDType dtype, int depth, float mean = 0,
                      float std = 1) {
  BatchFormat f;
  f.width = width, f.height = height, f.dtype = dtype, f.gray_depth = depth;
  f.mean = mean, f.std = std;
  return f;
}

// A frame holding every code of `layout` (8 or 16-bit luma, full range) in
// random order, as a size-preserving slot of a batch.
TestFrame every_code_frame(PixelLayout layout, int width, int height, int codes) {
  TestFrame f = random_frame(layout, width, height, Rows::Padded);
  std::vector<uint32_t> order(codes);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng());
  const int bytes = codes > 256 ? 2 : 1;
  for (int i = 0; i < codes; ++i) {
    uint8_t *p = &f.bytes[f.offset[0] + (i / width) * f.stride[0] + (i % width) * bytes];
    p[0] = static_cast<uint8_t>(order[i]);
    if (bytes == 2) p[1] = static_cast<uint8_t>(order[i] >> 8);
  }
  return f;
}

}  // namespace

// binary16 from binary32, against the search over every finite half: ties at
// every bit a rounding can stop at, the edges of the subnormals and of
// overflow, infinities and zeros of both signs, and random values of every
// exponent.
TEST(BatchHalf, RoundsToNearestEvenAsTheSearch) {
  std::vector<uint32_t> bits = {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u,
                                0x477FE000u, 0x477FEFFFu, 0x477FF000u, 0x477FF001u,
                                0x33000000u, 0x33000001u, 0x387FE000u, 0x387FF000u,
                                0x38800000u, 0x337FFFFFu, 0x7F7FFFFFu, 0x00000001u};
  for (uint32_t exponent = 0; exponent < 255; ++exponent)
    for (int k = 0; k < 24; ++k) {
      // a random significand cut at bit k: exactly half way (bit k - 1 set,
      // the rest 0), just below, just above, and random below bit k
      const uint32_t high = (static_cast<uint32_t>(rng()()) & 0x7FFFFFu) >> k << k;
      const uint32_t half = k ? 1u << (k - 1) : 0;
      for (uint32_t low :
           {half, half ? half - 1 : 0u, half + 1, static_cast<uint32_t>(rng()()) & ((1u << k) - 1)})
        for (uint32_t sign : {0u, 0x80000000u})
          bits.push_back(sign | exponent << 23 | ((high | low) & 0x7FFFFFu));
    }
  int wrong = 0;
  for (uint32_t b : bits) {
    float v;
    std::memcpy(&v, &b, 4);
    const uint16_t got = half_bits(v), want = half_reference(v);
    if (got != want && wrong++ < 5)
      ADD_FAILURE() << "float bits 0x" << std::hex << b << " (" << v << "): half 0x" << got
                    << " want 0x" << want;
  }
  EXPECT_EQ(wrong, 0) << "of " << bits.size();
}

// Every gray value, GRAY8 (all 256) and GRAY16 (all 65536), each dtype and
// several means and stds: the batch equals the formula element by element.
TEST(BatchCpu, EveryGrayValueOfEveryDepthAndDType) {
  const Weights w = standard_weights(Matrix::BT709);
  for (int depth : {8, 16}) {
    const int codes = depth == 16 ? 65536 : 256, width = depth == 16 ? 256 : 16;
    const PixelLayout layout = depth == 16 ? PixelLayout::Luma16 : PixelLayout::Luma;
    for (BatchDType dtype : kDTypes) {
      if (dtype == BatchDType::UInt8 && depth == 16) continue;
      for (const auto &[mean, std] : kMeanStd) {
        if (dtype == BatchDType::UInt8 && (mean != 0.0f || std != 1.0f)) continue;
        const BatchFormat f = format_of(width, codes / width, dtype, depth, mean, std);
        TestBatch b{f, {}, {}};
        for (int slot = 0; slot < 2; ++slot) {
          b.frames.push_back(every_code_frame(layout, f.width, f.height, codes));
          BatchSlot s;
          s.present = true;
          s.conversion = b.frames.back().conversion(depth);
          s.frame = b.frames.back().view();
          b.slots.push_back(s);
        }
        BatchBuffer out(batch_bytes(f, 2));
        convert_batch_cpu(f, b.slots.data(), 2, out.data(), w);
        EXPECT_TRUE(matches_formula(b, out.data(), w));
        EXPECT_TRUE(out.guards_untouched()) << describe(f);
      }
    }
  }
}

// The formula's own values at a few points, so that a reference and an
// implementation wrong alike still fail: g = 0, 255, 65535 at mean 0.5,
// std 0.25 are -2, 2 and 2 exactly, and 128 / 255 is binary32's
// 0x3F008081 (0.501960813999176025390625).
TEST(BatchCpu, KnownValues) {
  EXPECT_EQ(normalised_reference(0, 255.0f, 0.5f, 0.25f), -2.0f);
  EXPECT_EQ(normalised_reference(255, 255.0f, 0.5f, 0.25f), 2.0f);
  EXPECT_EQ(normalised_reference(65535, 65535.0f, 0.5f, 0.25f), 2.0f);
  const float v = normalised_reference(128, 255.0f, 0.0f, 1.0f);
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  EXPECT_EQ(bits, 0x3F008081u);
  EXPECT_EQ(half_reference(1.0), 0x3C00);
  EXPECT_EQ(half_reference(65504.0), 0x7BFF);
  EXPECT_EQ(half_reference(65519.99), 0x7BFF);
  EXPECT_EQ(half_reference(65520.0), 0x7C00);
  EXPECT_EQ(half_reference(std::ldexp(1.0, -24)), 0x0001);
  EXPECT_EQ(half_reference(std::ldexp(1.0, -25)), 0x0000);  // a tie: to the even 0
  EXPECT_EQ(half_reference(std::ldexp(3.0, -25)), 0x0002);  // a tie: to the even 2
  EXPECT_EQ(half_reference(-2.0), 0xC000);
  // One 1x1 GRAY8 slot of code 51 at mean 0.2 std 0.5: 51 / 255 rounds to
  // the binary32 nearest 0.2, which is 0.2f, so the element is 0 exactly.
  const BatchFormat f = format_of(1, 1, BatchDType::Float32, 8, 0.2f, 0.5f);
  TestFrame frame = random_frame(PixelLayout::Luma, 1, 1, Rows::Tight);
  frame.bytes[0] = 51;
  BatchSlot s;
  s.present = true;
  s.conversion = frame.conversion(8);
  s.frame = frame.view();
  float out = -1;
  convert_batch_cpu(f, &s, 1, &out, standard_weights(Matrix::BT601));
  EXPECT_EQ(out, 0.0f);
}

// Slots of every layout, sizes and crops, letterboxed and placed anywhere,
// absent ones among them, every method, each dtype and gray depth, batch
// sizes from 1x1 to 4097x3: every element equals the formula over the
// slot's gray, and nothing outside the batch is written.
TEST(BatchCpu, MixedSlotsEveryElementMatchesTheFormula) {
  const std::vector<PixelLayout> layouts = every_layout();
  const Weights w = weights_of(kWeightChoices[random_int(0, 4)]);
  const std::vector<Size> sizes = {{1, 1}, {2, 3}, {17, 9}, {64, 48}, {641, 481}, {4097, 3}};
  for (const Size &size : sizes)
    for (BatchDType dtype : kDTypes)
      for (int depth : {8, 16}) {
        if (dtype == BatchDType::UInt8 && depth == 16) continue;
        const auto [mean, std] =
            dtype == BatchDType::UInt8
                ? std::pair<float, float>{0.0f, 1.0f}
                : kMeanStd[random_int(0, static_cast<int>(std::size(kMeanStd)) - 1)];
        const BatchFormat f = format_of(size.width, size.height, dtype, depth, mean, std);
        const bool large = size.width * size.height > 10000;
        const int count = large ? 3 : random_int(1, 6);
        const TestBatch b =
            random_batch(f, count, layouts, kMethods[random_int(0, 2)], large ? 700 : 40, true);
        BatchBuffer out(batch_bytes(f, count), random_int(0, 3));
        convert_batch_cpu(f, b.slots.data(), count, out.data(), w);
        EXPECT_TRUE(matches_formula(b, out.data(), w));
        EXPECT_TRUE(out.guards_untouched()) << describe(f);
      }
}

// A batch of absent slots only: black frames, the value of gray 0.
TEST(BatchCpu, AbsentSlotsAreBlack) {
  for (BatchDType dtype : kDTypes) {
    const BatchFormat f = dtype == BatchDType::UInt8 ? format_of(5, 3, dtype, 8)
                                                     : format_of(5, 3, dtype, 16, 0.449f, 0.226f);
    const TestBatch b{f, {TestFrame{}, TestFrame{}}, {BatchSlot{}, BatchSlot{}}};
    BatchBuffer out(batch_bytes(f, 2));
    convert_batch_cpu(f, b.slots.data(), 2, out.data(), standard_weights(Matrix::BT601));
    EXPECT_TRUE(matches_formula(b, out.data(), standard_weights(Matrix::BT601)));
    if (dtype == BatchDType::Float32) {
      float first;
      std::memcpy(&first, out.data(), 4);
      EXPECT_EQ(first, -0.449f / 0.226f);
    }
  }
}

// What valid_batch refuses, in words a user can act on; a refused batch
// writes nothing.
TEST(BatchCpu, RefusedBatchesSayWhyAndWriteNothing) {
  TestFrame frame = random_frame(PixelLayout::RGB, 8, 6);
  BatchSlot slot;
  slot.present = true;
  slot.conversion = frame.conversion(16);
  slot.frame = frame.view();
  const BatchFormat ok = format_of(8, 6, BatchDType::Float16, 16, 0.5f, 0.25f);
  struct Case {
    BatchFormat f;
    int count;
    std::string why;
  };
  BatchFormat uint8_mean = format_of(8, 6, BatchDType::UInt8, 8, 0.5f, 0.25f);
  BatchFormat uint8_deep = format_of(8, 6, BatchDType::UInt8, 16);
  BatchFormat zero_std = ok, nan_mean = ok, inf_std = ok, depth = ok, size = ok, other = ok;
  zero_std.std = 0.0f;
  nan_mean.mean = std::numeric_limits<float>::quiet_NaN();
  inf_std.std = std::numeric_limits<float>::infinity();
  depth.gray_depth = 12;
  size.width = 0;
  other.width = 9;
  const std::vector<Case> cases = {
      {ok, 0, "a batch of 0 slots: 1 to 64 are possible"},
      {ok, 65, "a batch of 65 slots: 1 to 64 are possible"},
      {size, 1, "batch size 0x6 is outside 1x1 to 16384x16384"},
      {depth, 1, "gray depth 12 is neither 8 nor 16"},
      {nan_mean, 1, "mean nan is not a finite number"},
      {zero_std, 1, "std 0 is not a finite number other than 0"},
      {inf_std, 1, "std inf is not a finite number other than 0"},
      {uint8_deep, 1, "uint8 holds GRAY8: gray depth 16 needs float16 or float32"},
      {uint8_mean, 1, "uint8 holds the gray itself: mean 0.5 and std 0.25 need float16 or float32"},
      {other, 1, "slot 0: output size 8x6 is not the batch's 9x6"},
      {format_of(8, 6, BatchDType::Float32, 8), 1,
       "slot 0: output depth 16 is not the batch's gray depth 8"},
  };
  std::vector<BatchSlot> slots(65, slot);
  for (const Case &c : cases) {
    std::string why;
    EXPECT_FALSE(valid_batch(c.f, slots.data(), c.count, &why));
    EXPECT_EQ(why, c.why);
    BatchBuffer out(std::max<size_t>(batch_bytes(c.f, c.count), 1));
    convert_batch_cpu(c.f, slots.data(), c.count, out.data(), standard_weights(Matrix::BT601));
    EXPECT_TRUE(std::all_of(out.bytes.begin(), out.bytes.end(), [](uint8_t v) {
      return v == kGuard;
    })) << c.why;
  }
  // a slot's own conversion, named by its place
  slots[1].conversion.crop.width = 9;
  std::string why;
  EXPECT_FALSE(valid_batch(ok, slots.data(), 2, &why));
  EXPECT_EQ(why, "slot 1: crop 9x6 at (0, 0) is empty or not inside the 8x6 input");
  // absent slots need no conversion
  slots[1].present = false;
  EXPECT_TRUE(valid_batch(ok, slots.data(), 2, &why)) << why;
}

// The CPU maker: convert_batch_cpu's batch; refusals say why.
TEST(BatchMakerCpu, MakesConvertBatchCpusBatch) {
  const Weights w = weights_of(kWeightChoices[random_int(0, 4)]);
  const BatchFormat f = format_of(641, 481, BatchDType::Float16, 16, 0.449f, 0.226f);
  const TestBatch b = random_batch(f, 3, every_layout(), kMethods[random_int(0, 2)], 700, true);
  std::unique_ptr<BatchMaker> maker = make_cpu_batch_maker();
  EXPECT_STREQ(maker->name(), "cpu");
  EXPECT_FALSE(maker->uses_device_memory());
  BatchBuffer made(batch_bytes(f, 3), 1);
  std::string why;
  ASSERT_TRUE(maker->make(f, b.slots.data(), 3, made.data(), false, w, &why)) << why;
  EXPECT_TRUE(made.guards_untouched());
  EXPECT_TRUE(matches_formula(b, made.data(), w));

  EXPECT_FALSE(maker->make(f, b.slots.data(), 3, made.data(), true, w, &why));
  EXPECT_EQ(why, "the CPU makes batches of frames in host memory, into host memory");
  std::vector<BatchSlot> on_device = b.slots;
  on_device[0] = BatchSlot{true, b.slots[0].conversion, b.frames[0].view()};
  on_device[0].frame.on_device = true;
  why.clear();
  EXPECT_FALSE(maker->make(f, on_device.data(), 3, made.data(), false, w, &why));
  EXPECT_EQ(why, "the CPU makes batches of frames in host memory, into host memory");
  BatchBuffer untouched(batch_bytes(f, 1));
  EXPECT_FALSE(maker->make(format_of(4, 4, BatchDType::UInt8, 16), b.slots.data(), 1,
                           untouched.data(), false, w, &why));
  EXPECT_EQ(why, "uint8 holds GRAY8: gray depth 16 needs float16 or float32");
  EXPECT_TRUE(std::all_of(untouched.bytes.begin(), untouched.bytes.end(),
                          [](uint8_t v) { return v == kGuard; }));
}

#ifdef CUDAGRAY_TEST_HAVE_CUDA

namespace {

#define ASSERT_CUDA(call) ASSERT_EQ((call), cudaSuccess) << #call

// Device memory, freed at scope end.
struct DeviceBytes {
  void *data = nullptr;
  explicit DeviceBytes(size_t bytes) {
    EXPECT_EQ(cudaMalloc(&data, std::max<size_t>(bytes, 1)), cudaSuccess);
  }
  ~DeviceBytes() { cudaFree(data); }
  DeviceBytes(const DeviceBytes &) = delete;
  DeviceBytes &operator=(const DeviceBytes &) = delete;
  uint8_t *bytes() const { return static_cast<uint8_t *>(data); }
};

// Batch b made on the GPU (device copies of its frames, same offsets and
// strides) into a device buffer between guards, brought back whole.
void batch_on_device(const TestBatch &b, const Weights &w, BatchBuffer *out) {
  std::vector<std::unique_ptr<DeviceBytes>> frames;
  std::vector<const uint8_t *> bases;
  for (const TestFrame &f : b.frames) {
    frames.push_back(std::make_unique<DeviceBytes>(f.bytes.size()));
    if (!f.bytes.empty()) {
      ASSERT_CUDA(
          cudaMemcpy(frames.back()->data, f.bytes.data(), f.bytes.size(), cudaMemcpyHostToDevice));
    }
    bases.push_back(frames.back()->bytes());
  }
  DeviceBytes device(out->bytes.size());
  ASSERT_CUDA(
      cudaMemcpy(device.data, out->bytes.data(), out->bytes.size(), cudaMemcpyHostToDevice));
  // A copy from pageable memory returns before its DMA lands, and the
  // batch's non-blocking stream does not wait for the legacy stream's work
  ASSERT_CUDA(cudaDeviceSynchronize());
  cudaStream_t stream;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const std::vector<BatchSlot> slots = b.slots_at(bases);
  ASSERT_CUDA(convert_batch_cuda(b.format, slots.data(), static_cast<int>(slots.size()),
                                 device.bytes() + out->offset, w, stream));
  ASSERT_CUDA(cudaStreamSynchronize(stream));
  ASSERT_CUDA(cudaStreamDestroy(stream));
  ASSERT_CUDA(
      cudaMemcpy(out->bytes.data(), device.data, out->bytes.size(), cudaMemcpyDeviceToHost));
}

// The CPU batch of b and the GPU one, byte for byte, guards included.
void expect_cuda_equals_cpu(const TestBatch &b, const Weights &w) {
  const int count = static_cast<int>(b.slots.size());
  const size_t align = dtype_bytes(b.format.dtype);
  BatchBuffer cpu(batch_bytes(b.format, count), align), gpu(batch_bytes(b.format, count), align);
  convert_batch_cpu(b.format, b.slots.data(), count, cpu.data(), w);
  batch_on_device(b, w, &gpu);
  int differ = 0;
  for (size_t i = 0; i < cpu.bytes.size(); ++i) differ += cpu.bytes[i] != gpu.bytes[i];
  EXPECT_EQ(differ, 0) << describe(b.format) << ": bytes differ between CPU and CUDA";
  EXPECT_TRUE(gpu.guards_untouched()) << describe(b.format);
  if (differ) {
    EXPECT_TRUE(matches_formula(b, gpu.data(), w)) << "the CUDA batch";
  }
}

}  // namespace

class CudaBatch : public ::testing::Test {
 protected:
  void SetUp() override { SKIP_WITHOUT_GPU(); }
};

// One layout a batch (one launch), each layout in turn, each method, dtype
// and gray depth, padded and aligned rows, absent slots among them.
TEST_F(CudaBatch, EachLayoutEqualsTheCpu) {
  const Weights w = weights_of(kWeightChoices[random_int(0, 4)]);
  for (PixelLayout layout : every_layout())
    for (ScaleMethod method : kMethods) {
      const BatchDType dtype = kDTypes[random_int(0, 2)];
      const int depth = dtype == BatchDType::UInt8 ? 8 : 8 << random_int(0, 1);
      const auto [mean, std] =
          dtype == BatchDType::UInt8
              ? std::pair<float, float>{0.0f, 1.0f}
              : kMeanStd[random_int(0, static_cast<int>(std::size(kMeanStd)) - 1)];
      const BatchFormat f =
          format_of(random_int(1, 70), random_int(1, 50), dtype, depth, mean, std);
      SCOPED_TRACE(std::string(layout_info(layout).name) + " method " +
                   std::to_string(static_cast<int>(method)));
      expect_cuda_equals_cpu(random_batch(f, random_int(1, 5), {layout}, method, 90, true,
                                          random_int(0, 1) ? Rows::Padded : Rows::Aligned16),
                             w);
    }
}

// Mixed layouts and methods in one batch; odd batch sizes up to 641x481 and
// 4097x3 from frames up to 1921x1081; 64 slots; nothing but absent slots.
TEST_F(CudaBatch, MixedBatchesEqualTheCpu) {
  const Weights w = weights_of(kWeightChoices[random_int(0, 4)]);
  const std::vector<PixelLayout> layouts = every_layout();
  for (const Size &size : std::vector<Size>{{1, 1}, {641, 481}, {4097, 3}, {640, 640}, {33, 17}})
    for (BatchDType dtype : kDTypes) {
      const int depth = dtype == BatchDType::UInt8 ? 8 : 8 << random_int(0, 1);
      const BatchFormat f = dtype == BatchDType::UInt8
                                ? format_of(size.width, size.height, dtype, depth)
                                : format_of(size.width, size.height, dtype, depth, 0.449f, 0.226f);
      TestBatch b = random_batch(f, 4, layouts, kMethods[random_int(0, 2)], 1921, true);
      // a second method family among the slots: one more launch
      const TestBatch more = random_batch(f, 2, layouts, kMethods[random_int(0, 2)], 300, false);
      b.frames.insert(b.frames.end(), more.frames.begin(), more.frames.end());
      b.slots.insert(b.slots.end(), more.slots.begin(), more.slots.end());
      for (size_t i = 0; i < b.slots.size(); ++i)
        if (b.slots[i].present) b.slots[i].frame = b.frames[i].view();
      expect_cuda_equals_cpu(b, w);
    }
  const BatchFormat f = format_of(31, 7, BatchDType::Float16, 16, 0.5f, 0.5f);
  expect_cuda_equals_cpu(random_batch(f, kMaxBatchSlots, layouts, ScaleMethod::Area, 50, true), w);
  expect_cuda_equals_cpu(
      random_batch(f, kMaxBatchSlots, {PixelLayout::Luma}, ScaleMethod::Bilinear, 50, true), w);
  const TestBatch absent{
      f, {TestFrame{}, TestFrame{}, TestFrame{}}, {BatchSlot{}, BatchSlot{}, BatchSlot{}}};
  expect_cuda_equals_cpu(absent, w);
}

namespace {

// The kernels convert_batch_cuda launches for batch b (frames anywhere:
// nothing runs), counted from a CUDA graph captured from its stream.
int kernel_launches(const TestBatch &b) {
  std::vector<const uint8_t *> bases(b.frames.size(), nullptr);
  DeviceBytes frame(1 << 20), out(batch_bytes(b.format, static_cast<int>(b.slots.size())));
  for (auto &base : bases) base = frame.bytes();
  const std::vector<BatchSlot> slots = b.slots_at(bases);
  cudaStream_t stream;
  EXPECT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  EXPECT_EQ(convert_batch_cuda(b.format, slots.data(), static_cast<int>(slots.size()), out.data,
                               standard_weights(Matrix::BT601), stream),
            cudaSuccess);
  EXPECT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  size_t count = 0;
  EXPECT_EQ(cudaGraphGetNodes(graph, nullptr, &count), cudaSuccess);
  std::vector<cudaGraphNode_t> nodes(count);
  EXPECT_EQ(cudaGraphGetNodes(graph, nodes.data(), &count), cudaSuccess);
  int kernels = 0;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type;
    EXPECT_EQ(cudaGraphNodeGetType(node, &type), cudaSuccess);
    kernels += type == cudaGraphNodeTypeKernel;
  }
  EXPECT_EQ(static_cast<int>(count), kernels) << "nodes other than kernels";
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
  return kernels;
}

}  // namespace

// One launch for a batch of one layout and method family, absent slots
// included; one more for each further layout or family.
TEST_F(CudaBatch, OneLaunchForEachLayoutAndMethodFamily) {
  const BatchFormat f = format_of(640, 640, BatchDType::Float16, 16, 0.449f, 0.226f);
  EXPECT_EQ(kernel_launches(random_batch(f, 16, {PixelLayout::Luma}, ScaleMethod::Area, 64, true)),
            1);
  EXPECT_EQ(kernel_launches(random_batch(f, kMaxBatchSlots, {PixelLayout::RGBx},
                                         ScaleMethod::Bilinear, 64, true)),
            1);
  TestBatch mixed = random_batch(f, 4, {PixelLayout::Luma}, ScaleMethod::Nearest, 64, false);
  mixed.slots[1].conversion.method = ScaleMethod::Bilinear;  // the same family
  EXPECT_EQ(kernel_launches(mixed), 1);
  mixed.slots[2].conversion.method = ScaleMethod::Area;
  EXPECT_EQ(kernel_launches(mixed), 2);
  const TestBatch other = random_batch(f, 1, {PixelLayout::RGB}, ScaleMethod::Nearest, 64, false);
  mixed.frames.push_back(other.frames[0]);
  mixed.slots.push_back(other.slots[0]);
  EXPECT_EQ(kernel_launches(mixed), 3);
  const TestBatch absent{f, {TestFrame{}, TestFrame{}}, {BatchSlot{}, BatchSlot{}}};
  EXPECT_EQ(kernel_launches(absent), 1);
}

// Refused: what valid_batch refuses, and a batch not aligned to its element.
TEST_F(CudaBatch, RefusedBatchesLaunchNothing) {
  const BatchFormat f = format_of(4, 4, BatchDType::Float32, 16);
  DeviceBytes out(batch_bytes(f, 1) + 4);
  BatchSlot absent;
  EXPECT_EQ(
      convert_batch_cuda(f, &absent, 1, out.bytes() + 2, standard_weights(Matrix::BT601), nullptr),
      cudaErrorInvalidValue);
  EXPECT_EQ(
      convert_batch_cuda(f, &absent, 0, out.bytes(), standard_weights(Matrix::BT601), nullptr),
      cudaErrorInvalidValue);
  EXPECT_EQ(
      convert_batch_cuda(f, &absent, 1, out.bytes() + 4, standard_weights(Matrix::BT601), nullptr),
      cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

namespace {

// Batch b by a CUDA maker: frames from host memory, or device copies of
// them (alternating, or all of one kind), into host or device memory.
enum class FramesIn { Host, Device, Both };

void expect_maker_equals_cpu(BatchMaker *maker, const TestBatch &b, const Weights &w,
                             FramesIn frames_in, bool out_on_device) {
  const int count = static_cast<int>(b.slots.size());
  std::vector<std::unique_ptr<DeviceBytes>> copies;
  std::vector<BatchSlot> slots = b.slots;
  for (int i = 0; i < count; ++i) {
    if (!slots[i].present) continue;
    if (frames_in == FramesIn::Host || (frames_in == FramesIn::Both && i % 2 == 0)) continue;
    const TestFrame &f = b.frames[i];
    copies.push_back(std::make_unique<DeviceBytes>(f.bytes.size()));
    ASSERT_CUDA(
        cudaMemcpy(copies.back()->data, f.bytes.data(), f.bytes.size(), cudaMemcpyHostToDevice));
    slots[i].frame = f.view(copies.back()->bytes());
    slots[i].frame.on_device = true;
  }
  const size_t align = dtype_bytes(b.format.dtype);
  BatchBuffer cpu(batch_bytes(b.format, count), align), made(batch_bytes(b.format, count), align);
  convert_batch_cpu(b.format, b.slots.data(), count, cpu.data(), w);
  std::string why;
  if (out_on_device) {
    DeviceBytes device(made.bytes.size());
    ASSERT_CUDA(
        cudaMemcpy(device.data, made.bytes.data(), made.bytes.size(), cudaMemcpyHostToDevice));
    // the copies' DMA, before the maker's non-blocking stream reads (batch_on_device)
    ASSERT_CUDA(cudaDeviceSynchronize());
    ASSERT_TRUE(
        maker->make(b.format, slots.data(), count, device.bytes() + made.offset, true, w, &why))
        << why;
    ASSERT_CUDA(
        cudaMemcpy(made.bytes.data(), device.data, made.bytes.size(), cudaMemcpyDeviceToHost));
  } else {
    ASSERT_CUDA(cudaDeviceSynchronize());
    ASSERT_TRUE(maker->make(b.format, slots.data(), count, made.data(), false, w, &why)) << why;
  }
  EXPECT_EQ(cpu.bytes, made.bytes) << describe(b.format) << ": bytes differ between CPU and CUDA";
}

}  // namespace

// The maker the element uses: every layout, from host and device frames,
// into host and device memory, buffers reused across batches of changing
// sizes; each batch equal to the CPU's, guards included.
TEST_F(CudaBatch, MakerEqualsTheCpuFromHostAndDeviceFrames) {
  std::string why;
  std::unique_ptr<BatchMaker> maker = make_cuda_batch_maker(&why);
  ASSERT_TRUE(maker) << why;
  EXPECT_STREQ(maker->name(), "cuda");
  EXPECT_TRUE(maker->uses_device_memory());
  const Weights w = weights_of(kWeightChoices[random_int(0, 4)]);
  const std::vector<PixelLayout> layouts = every_layout();
  for (size_t i = 0; i < layouts.size(); ++i) {
    const BatchDType dtype = kDTypes[i % 3];
    const BatchFormat f = dtype == BatchDType::UInt8
                              ? format_of(random_int(1, 70), random_int(1, 50), dtype, 8)
                              : format_of(random_int(1, 70), random_int(1, 50), dtype,
                                          8 << random_int(0, 1), 0.485f, 0.229f);
    SCOPED_TRACE(layout_info(layouts[i]).name);
    const TestBatch b = random_batch(
        f, random_int(1, 4), {layouts[i], layouts[(i * 7) % layouts.size()]},
        kMethods[random_int(0, 2)], 120, true, random_int(0, 1) ? Rows::Padded : Rows::Aligned16);
    expect_maker_equals_cpu(maker.get(), b, w, static_cast<FramesIn>(i % 3), i % 2 == 1);
  }
  const BatchFormat f = format_of(640, 640, BatchDType::Float16, 16, 0.449f, 0.226f);
  expect_maker_equals_cpu(maker.get(),
                          random_batch(f, 16, {PixelLayout::Luma}, ScaleMethod::Area, 1921, true),
                          w, FramesIn::Both, true);
}

// Frames still being written on their producer's stream when the batch is
// asked for: the batch reads them after that work, with no host wait of the
// producer's.
TEST_F(CudaBatch, MakerWaitsForTheProducersStream) {
  std::string why;
  std::unique_ptr<BatchMaker> maker = make_cuda_batch_maker(&why);
  ASSERT_TRUE(maker) << why;
  const Weights w = standard_weights(Matrix::BT601);
  const BatchFormat f = format_of(640, 640, BatchDType::Float32, 16, 0.5f, 0.5f);
  for (int round = 0; round < 5; ++round) {
    const TestBatch b = random_batch(f, 4, {PixelLayout::Luma, PixelLayout::RGBx},
                                     ScaleMethod::Bilinear, 1921, false);
    cudaStream_t producer;
    ASSERT_CUDA(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking));
    std::vector<std::unique_ptr<DeviceBytes>> copies;
    std::vector<void *> pinned;
    std::vector<BatchSlot> slots = b.slots;
    for (size_t i = 0; i < slots.size(); ++i) {
      const TestFrame &frame = b.frames[i];
      void *host = nullptr;
      ASSERT_CUDA(cudaMallocHost(&host, frame.bytes.size()));
      std::memcpy(host, frame.bytes.data(), frame.bytes.size());
      pinned.push_back(host);
      copies.push_back(std::make_unique<DeviceBytes>(frame.bytes.size()));
      ASSERT_CUDA(cudaMemsetAsync(copies.back()->data, 0xA5, frame.bytes.size(), producer));
      ASSERT_CUDA(cudaMemcpyAsync(copies.back()->data, host, frame.bytes.size(),
                                  cudaMemcpyHostToDevice, producer));
      slots[i].frame = frame.view(copies.back()->bytes());
      slots[i].frame.on_device = true;
      slots[i].frame.producer_stream = producer;
    }
    BatchBuffer cpu(batch_bytes(f, 4)), made(batch_bytes(f, 4));
    convert_batch_cpu(f, b.slots.data(), 4, cpu.data(), w);
    ASSERT_TRUE(maker->make(f, slots.data(), 4, made.data(), false, w, &why)) << why;
    EXPECT_EQ(cpu.bytes, made.bytes) << "round " << round;
    ASSERT_CUDA(cudaStreamSynchronize(producer));
    ASSERT_CUDA(cudaStreamDestroy(producer));
    for (void *host : pinned) cudaFreeHost(host);
  }
}

#endif  // CUDAGRAY_TEST_HAVE_CUDA
