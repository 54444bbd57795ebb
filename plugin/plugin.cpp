/* Registers the cudagray element. */
#include "gstcudagray.h"

static gboolean
plugin_init (GstPlugin * plugin)
{
  return GST_ELEMENT_REGISTER (cudagray, plugin);
}

GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, cudagray,
    "Converts RGB-family video to GRAY8 on an NVIDIA GPU",
    plugin_init, VERSION, "LGPL", PACKAGE, ORIGIN)
