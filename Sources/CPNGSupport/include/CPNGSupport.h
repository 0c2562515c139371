// CPNGSupport: PNG encoding and decoding in memory through libpng, with every libpng error
// caught by setjmp inside C so that no longjmp ever crosses a Swift frame.

#ifndef CPNGSUPPORT_H
#define CPNGSUPPORT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Status codes returned by the functions below.
enum {
    CPNG_OK = 0,
    /// libpng reported an error; the message buffer says which.
    CPNG_ERROR_LIBPNG = 1,
    /// Memory could not be allocated.
    CPNG_ERROR_MEMORY = 2,
    /// The arguments were invalid (dimensions, channel count, compression level).
    CPNG_ERROR_ARGUMENT = 3,
    /// The input is not a PNG (bad signature).
    CPNG_ERROR_SIGNATURE = 4,
    /// The header declares dimensions larger than the data present can hold, or than the limits.
    CPNG_ERROR_DIMENSIONS = 5,
};

/// Size of the message buffers passed to the functions below.
#define CPNG_MESSAGE_CAPACITY 256

/// Encodes 8-bit pixels (1 = grey, 3 = RGB, 4 = RGBA channels, rows packed top to bottom)
/// as a PNG in memory.
///
/// On success `*out_bytes` points to `*out_size` bytes allocated with malloc, which the caller
/// frees with `cpng_free`. On failure nothing is allocated and `message` holds a sentence.
int cpng_encode(const uint8_t *pixels, uint32_t width, uint32_t height, int channels,
                int compression_level, uint8_t **out_bytes, size_t *out_size, char *message);

/// Decodes a PNG held in memory into 8-bit pixels: grey, RGB or RGBA.
///
/// Palette images become RGB (RGBA with transparency), 16-bit samples are scaled to 8 bits,
/// grey with alpha becomes RGBA, and low bit depths are expanded. On success `*out_pixels`
/// points to `width * height * channels` bytes allocated with malloc, which the caller frees
/// with `cpng_free`. Dimensions whose raw data could not come from `size` bytes of input, or
/// larger than `max_pixels`, are rejected before any pixel memory is allocated.
int cpng_decode(const uint8_t *bytes, size_t size, uint64_t max_pixels, uint8_t **out_pixels,
                uint32_t *out_width, uint32_t *out_height, int *out_channels, char *message);

/// Frees memory returned by `cpng_encode` or `cpng_decode`.
void cpng_free(void *pointer);

/// The libpng version linked at run time, for example "1.6.39".
const char *cpng_libpng_version(void);

#ifdef __cplusplus
}
#endif

#endif
