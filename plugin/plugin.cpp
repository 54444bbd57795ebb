// SPDX-License-Identifier: LGPL-2.1-or-later
/* Registers the cudagray and cudagraybatch elements. */
#include "gstcudagray.h"
#include "gstcudagraybatch.h"

static gboolean plugin_init(GstPlugin *plugin) {
  return GST_ELEMENT_REGISTER(cudagray, plugin) && GST_ELEMENT_REGISTER(cudagraybatch, plugin);
}

#ifdef CUDAGRAY_FAULT_INJECTION
#include "cudagray/fault_injection.h"

/* Test builds only (-Dfault-injection=enabled): the plugin links its own
 * copy of the kernels, and the tests arm faults in it through this symbol
 * (tests/test_faults.cpp). */
extern "C" GST_PLUGIN_EXPORT void cudagray_inject_cuda_fault(const char *spec) {
  cudagray::inject_cuda_fault(spec ? spec : "");
}
#endif

GST_PLUGIN_DEFINE(
    GST_VERSION_MAJOR, GST_VERSION_MINOR, cudagray,
    "Converts RGB-family, YUV and Bayer video to GRAY8 or GRAY16 on an NVIDIA GPU or the CPU",
    plugin_init, VERSION, "LGPL", PACKAGE, ORIGIN)
