/* A GstAllocator of pinned host memory. Its memories are plain system
 * memories (mappable anywhere) whose bytes come from cudaHostAlloc and go
 * back with cudaFreeHost when the last reference drops. */
#include "gstcudagraypinned.h"

#include <string>

#include "gray.h"

GST_DEBUG_CATEGORY_STATIC (gst_cuda_gray_pinned_debug);
#define GST_CAT_DEFAULT gst_cuda_gray_pinned_debug

typedef struct
{
  GstAllocator parent;
} GstCudaGrayPinnedAllocator;

typedef struct
{
  GstAllocatorClass parent_class;
} GstCudaGrayPinnedAllocatorClass;

G_DEFINE_TYPE (GstCudaGrayPinnedAllocator, gst_cuda_gray_pinned_allocator,
    GST_TYPE_ALLOCATOR);

static GstMemory *
gst_cuda_gray_pinned_alloc (GstAllocator * allocator, gsize size,
    GstAllocationParams * params)
{
  const gsize align = params->align | 63;       /* at least a cache line */
  const gsize maxsize = params->prefix + size + params->padding + align;
  std::string error;
  auto *data = static_cast < guint8 * >(cudagray::alloc_pinned (maxsize,
          &error));
  if (!data) {
    GST_WARNING ("cannot allocate %" G_GSIZE_FORMAT " pinned bytes: %s",
        maxsize, error.c_str ());
    return NULL;
  }
  const gsize offset =
      ((((guintptr) data + params->prefix + align) & ~(guintptr) align) -
      (guintptr) data);
  if (params->flags & GST_MEMORY_FLAG_ZERO_PREFIXED)
    memset (data, 0, offset);
  if (params->flags & GST_MEMORY_FLAG_ZERO_PADDED)
    memset (data + offset + size, 0, maxsize - offset - size);
  return gst_memory_new_wrapped ((GstMemoryFlags) params->flags, data, maxsize,
      offset, size, data, cudagray::free_pinned);
}

static void
gst_cuda_gray_pinned_allocator_class_init (GstCudaGrayPinnedAllocatorClass *
    klass)
{
  GST_ALLOCATOR_CLASS (klass)->alloc = gst_cuda_gray_pinned_alloc;
  GST_DEBUG_CATEGORY_INIT (gst_cuda_gray_pinned_debug, "cudagraypinned", 0,
      "pinned host memory for cudagray");
}

static void
gst_cuda_gray_pinned_allocator_init (GstCudaGrayPinnedAllocator * self)
{
  GstAllocator *allocator = GST_ALLOCATOR (self);
  allocator->mem_type = GST_CUDA_GRAY_PINNED_ALLOCATOR_NAME;
  /* memories come from alloc() only: never call the generic mem functions */
  GST_OBJECT_FLAG_SET (allocator, GST_ALLOCATOR_FLAG_CUSTOM_ALLOC);
}

GstAllocator *
gst_cuda_gray_pinned_allocator_get (void)
{
  static gsize registered = 0;
  if (g_once_init_enter (&registered)) {
    gpointer allocator =
        g_object_new (gst_cuda_gray_pinned_allocator_get_type (), NULL);
    gst_allocator_register (GST_CUDA_GRAY_PINNED_ALLOCATOR_NAME,
        GST_ALLOCATOR (gst_object_ref_sink (allocator)));
    g_once_init_leave (&registered, 1);
  }
  return gst_allocator_find (GST_CUDA_GRAY_PINNED_ALLOCATOR_NAME);
}
