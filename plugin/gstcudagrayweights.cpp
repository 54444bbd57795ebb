// SPDX-License-Identifier: LGPL-2.1-or-later
/* The weights property's text, both ways. */
#include "gstcudagrayweights.h"

#include <charconv>
#include <cmath>

bool gst_cuda_gray_parse_weights(const char *text, cudagray::Coefficients *out,
                                 std::string *error) {
  const std::string s = text ? text : "";
  double values[3];
  size_t pos = 0;
  for (int i = 0; i < 3; ++i) {
    const size_t end = i < 2 ? s.find(',', pos) : s.size();
    if (end == std::string::npos || (i == 2 && s.find(',', pos) != std::string::npos)) {
      *error = "expected three comma-separated numbers \"R,G,B\", got \"" + s + "\"";
      return false;
    }
    std::string field = s.substr(pos, end - pos);
    field.erase(0, field.find_first_not_of(" \t"));
    field.erase(field.find_last_not_of(" \t") + 1);
    const char *first = field.c_str(), *last = first + field.size();
    auto [ptr, ec] = std::from_chars(first, last, values[i]);
    if (field.empty() || ec != std::errc() || ptr != last) {
      *error = "\"" + field + "\" is not a number in \"" + s + "\"";
      return false;
    }
    if (!std::isfinite(values[i]) || values[i] < 0.0 ||
        values[i] > cudagray::kMaxCustomCoefficient) {
      *error = "weight \"" + field + "\" is outside 0.." +
               std::to_string(static_cast<int>(cudagray::kMaxCustomCoefficient));
      return false;
    }
    if (values[i] == 0.0) values[i] = 0.0;  // "-0" reads back as "0"
    pos = end + 1;
  }
  *out = {values[0], values[1], values[2]};
  return true;
}

std::string gst_cuda_gray_format_weights(const cudagray::Coefficients &k) {
  std::string text;
  for (double v : {k.r, k.g, k.b}) {
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    if (!text.empty()) text += ',';
    text.append(buf, ec == std::errc() ? end : buf);
  }
  return text;
}
