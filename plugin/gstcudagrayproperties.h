// SPDX-License-Identifier: LGPL-2.1-or-later
/* The element's properties: the backend and matrix enums, the property specs
 * with their documentation, and the values they hold. */
#pragma once

#include <gst/gst.h>

#include "cudagray/backend.h"
#include "cudagray/weights.h"

/* The backend property: where frames are converted. */
typedef enum {
  GST_CUDA_GRAY_BACKEND_AUTO,
  GST_CUDA_GRAY_BACKEND_CUDA,
  GST_CUDA_GRAY_BACKEND_CPU,
} GstCudaGrayBackend;

/* The matrix property: the luma coefficients of RGB input. */
typedef enum {
  GST_CUDA_GRAY_MATRIX_BT601,
  GST_CUDA_GRAY_MATRIX_BT709,
  GST_CUDA_GRAY_MATRIX_BT2020,
  GST_CUDA_GRAY_MATRIX_CUSTOM,
} GstCudaGrayMatrix;

/* The method property: how gray is resampled to the output's size
 * (cudagray::ScaleMethod, resample.h defines each). */
typedef enum {
  GST_CUDA_GRAY_METHOD_NEAREST,
  GST_CUDA_GRAY_METHOD_BILINEAR,
  GST_CUDA_GRAY_METHOD_AREA,
} GstCudaGrayMethod;

/* What the properties hold, and the figures the stats property reports;
 * guarded by the element's object lock. */
struct GstCudaGrayProperties {
  GstCudaGrayBackend backend;
  gint cuda_device_id;
  GstCudaGrayMatrix matrix;
  cudagray::Coefficients custom;
  /* weights text set before start that does not parse: start fails on it */
  gchar *invalid_weights;
  guint max_inflight;
  GstCudaGrayMethod method;
  gboolean add_borders;
  cudagray::TimingStats stats;
  gint stats_in_flight;
  gint stats_device_id;
};

/* Sets the defaults; gst_cuda_gray_properties_clear frees what props holds. */
void gst_cuda_gray_properties_init(GstCudaGrayProperties *props);
void gst_cuda_gray_properties_clear(GstCudaGrayProperties *props);

/* Which properties an element has: cudagray all of them; cudagraybatch
 * those that say how a frame becomes gray (backend, cuda-device-id, matrix, weights, method,
 * add-borders), one definition for both. */
typedef enum {
  GST_CUDA_GRAY_PROPERTIES_ALL,
  GST_CUDA_GRAY_PROPERTIES_CONVERSION,
} GstCudaGrayPropertySet;

/* The property ids these use are 1 to GST_CUDA_GRAY_PROPERTIES_LAST: an
 * element's own properties take the ids after it. */
#define GST_CUDA_GRAY_PROPERTIES_LAST 8

/* Installs the properties of set on the element's class and marks their
 * enums as plugin API. */
void gst_cuda_gray_properties_install(GObjectClass *klass, GstCudaGrayPropertySet set);

/* The element's set_property and get_property, over props. */
void gst_cuda_gray_properties_set(GstElement *element, GstCudaGrayProperties *props, guint prop_id,
                                  const GValue *value, GParamSpec *pspec);
void gst_cuda_gray_properties_get(GstElement *element, GstCudaGrayProperties *props, guint prop_id,
                                  GValue *value, GParamSpec *pspec);

/* At start: posts the error for weights text that did not parse and returns
 * FALSE; TRUE when there is none. */
gboolean gst_cuda_gray_properties_check_weights(GstElement *element, GstCudaGrayProperties *props);

/* The resampling method chosen; call with the object lock held. */
cudagray::ScaleMethod gst_cuda_gray_properties_method(const GstCudaGrayProperties *props);

/* The Q16 weights for the current matrix; call with the object lock held. */
cudagray::Weights gst_cuda_gray_properties_weights(const GstCudaGrayProperties *props);
