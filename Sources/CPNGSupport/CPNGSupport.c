// PNG encoding and decoding in memory through libpng.
//
// libpng reports errors by calling an error function that must not return; ours records the
// message and longjmps back to a setjmp that lives in this file. Every setjmp is in a small
// "guarded" function whose caller owns the resources (in a state struct reached through a
// pointer), so the caller can free them after an error without relying on the values of local
// variables modified after setjmp. No longjmp ever leaves this file.
//
// See: libpng-manual.txt, "Setting up error handling" and "Customizing input/output".

#include "CPNGSupport.h"

#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// A deflate stream cannot expand by more than 1032:1 (a 258-byte match coded in 2 bits), so
// the raw image data of a PNG is bounded by this many times the bytes present, plus slack for
// tiny images.
#define CPNG_MAX_INFLATE_RATIO 1040u
#define CPNG_INFLATE_SLACK 4096u

// MARK: - Errors

typedef struct {
    char *message;
} cpng_error_context;

static void cpng_set_message(char *message, const char *text) {
    if (message != NULL) {
        snprintf(message, CPNG_MESSAGE_CAPACITY, "%s", text);
    }
}

static void cpng_error_fn(png_structp png, png_const_charp text) {
    cpng_error_context *context = (cpng_error_context *)png_get_error_ptr(png);
    if (context != NULL) {
        cpng_set_message(context->message, text != NULL ? text : "unknown libpng error");
    }
    png_longjmp(png, 1);
}

static void cpng_warning_fn(png_structp png, png_const_charp text) {
    // Warnings (for example a bad CRC in an ancillary chunk) do not stop the work.
    (void)png;
    (void)text;
}

// MARK: - Encoding

typedef struct {
    cpng_error_context error;
    uint8_t *buffer;
    size_t size;
    size_t capacity;
    png_bytep *rows;
    int out_of_memory;
} cpng_encode_state;

static void cpng_write_fn(png_structp png, png_bytep data, png_size_t length) {
    cpng_encode_state *state = (cpng_encode_state *)png_get_io_ptr(png);
    if (length > SIZE_MAX - state->size) {
        state->out_of_memory = 1;
        png_error(png, "PNG output is too large");
    }
    size_t needed = state->size + length;
    if (needed > state->capacity) {
        size_t capacity = state->capacity < 4096 ? 4096 : state->capacity;
        while (capacity < needed) {
            capacity = capacity > SIZE_MAX / 2 ? needed : capacity * 2;
        }
        uint8_t *grown = (uint8_t *)realloc(state->buffer, capacity);
        if (grown == NULL) {
            state->out_of_memory = 1;
            png_error(png, "out of memory while writing PNG data");
        }
        state->buffer = grown;
        state->capacity = capacity;
    }
    memcpy(state->buffer + state->size, data, length);
    state->size = needed;
}

static void cpng_flush_fn(png_structp png) {
    (void)png;
}

static int cpng_encode_guarded(png_structp png, png_infop info, cpng_encode_state *state,
                               const uint8_t *pixels, uint32_t width, uint32_t height,
                               int channels, int compression_level) {
    if (setjmp(png_jmpbuf(png))) {
        return state->out_of_memory ? CPNG_ERROR_MEMORY : CPNG_ERROR_LIBPNG;
    }
    int color_type = channels == 1   ? PNG_COLOR_TYPE_GRAY
                     : channels == 3 ? PNG_COLOR_TYPE_RGB
                                     : PNG_COLOR_TYPE_RGB_ALPHA;
    png_set_write_fn(png, state, cpng_write_fn, cpng_flush_fn);
    png_set_IHDR(png, info, width, height, 8, color_type, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_compression_level(png, compression_level);
    png_write_info(png, info);

    size_t row_bytes = (size_t)width * (size_t)channels;
    state->rows = (png_bytep *)malloc((size_t)height * sizeof(png_bytep));
    if (state->rows == NULL) {
        state->out_of_memory = 1;
        png_error(png, "out of memory for PNG row pointers");
    }
    for (uint32_t y = 0; y < height; y++) {
        // libpng does not write through row pointers when encoding; the cast drops const only.
        state->rows[y] = (png_bytep)(pixels + (size_t)y * row_bytes);
    }
    png_write_image(png, state->rows);
    png_write_end(png, NULL);
    return CPNG_OK;
}

int cpng_encode(const uint8_t *pixels, uint32_t width, uint32_t height, int channels,
                int compression_level, uint8_t **out_bytes, size_t *out_size, char *message) {
    cpng_set_message(message, "");
    if (out_bytes == NULL || out_size == NULL) {
        cpng_set_message(message, "no output pointers were given");
        return CPNG_ERROR_ARGUMENT;
    }
    *out_bytes = NULL;
    *out_size = 0;
    if (pixels == NULL || width == 0 || height == 0 || width > PNG_UINT_31_MAX ||
        height > PNG_UINT_31_MAX) {
        cpng_set_message(message, "image dimensions must be between 1 and 2^31 - 1");
        return CPNG_ERROR_ARGUMENT;
    }
    if (channels != 1 && channels != 3 && channels != 4) {
        cpng_set_message(message, "channel count must be 1 (grey), 3 (RGB) or 4 (RGBA)");
        return CPNG_ERROR_ARGUMENT;
    }
    if (compression_level < 0 || compression_level > 9) {
        cpng_set_message(message, "compression level must be between 0 and 9");
        return CPNG_ERROR_ARGUMENT;
    }

    cpng_encode_state state;
    memset(&state, 0, sizeof state);
    state.error.message = message;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &state.error,
                                              cpng_error_fn, cpng_warning_fn);
    if (png == NULL) {
        cpng_set_message(message, "libpng could not create a write structure");
        return CPNG_ERROR_MEMORY;
    }
    png_infop info = png_create_info_struct(png);
    if (info == NULL) {
        png_destroy_write_struct(&png, NULL);
        cpng_set_message(message, "libpng could not create an info structure");
        return CPNG_ERROR_MEMORY;
    }
    int status = cpng_encode_guarded(png, info, &state, pixels, width, height, channels,
                                     compression_level);
    png_destroy_write_struct(&png, &info);
    free(state.rows);
    if (status != CPNG_OK) {
        free(state.buffer);
        return status;
    }
    *out_bytes = state.buffer;
    *out_size = state.size;
    return CPNG_OK;
}

// MARK: - Decoding

typedef struct {
    cpng_error_context error;
    const uint8_t *bytes;
    size_t size;
    size_t offset;
    uint8_t *pixels;
    png_bytep *rows;
    int rejected;
    int out_of_memory;
} cpng_decode_state;

static void cpng_read_fn(png_structp png, png_bytep data, png_size_t length) {
    cpng_decode_state *state = (cpng_decode_state *)png_get_io_ptr(png);
    if (length > state->size - state->offset) {
        png_error(png, "PNG data is truncated");
    }
    memcpy(data, state->bytes + state->offset, length);
    state->offset += length;
}

static int cpng_decode_guarded(png_structp png, png_infop info, cpng_decode_state *state,
                               uint64_t max_pixels, uint32_t *out_width, uint32_t *out_height,
                               int *out_channels) {
    if (setjmp(png_jmpbuf(png))) {
        if (state->rejected) {
            return CPNG_ERROR_DIMENSIONS;
        }
        return state->out_of_memory ? CPNG_ERROR_MEMORY : CPNG_ERROR_LIBPNG;
    }
    png_set_read_fn(png, state, cpng_read_fn);
    png_read_info(png, info);

    png_uint_32 width = 0;
    png_uint_32 height = 0;
    int bit_depth = 0;
    int color_type = 0;
    int interlace = 0;
    png_get_IHDR(png, info, &width, &height, &bit_depth, &color_type, &interlace, NULL, NULL);

    // Bound every allocation by the data present before making it.
    uint64_t bits_per_pixel = (uint64_t)png_get_channels(png, info) * (uint64_t)bit_depth;
    uint64_t raw_row_bytes = ((uint64_t)width * bits_per_pixel + 7) / 8 + 1;
    uint64_t raw_bytes = raw_row_bytes * (uint64_t)height;
    uint64_t inflatable = (uint64_t)state->size * CPNG_MAX_INFLATE_RATIO + CPNG_INFLATE_SLACK;
    if (raw_bytes > inflatable) {
        state->rejected = 1;
        char text[CPNG_MESSAGE_CAPACITY];
        snprintf(text, sizeof text,
                 "PNG header declares %ux%u pixels, more than %zu bytes of data can hold",
                 (unsigned)width, (unsigned)height, state->size);
        png_error(png, text);
    }
    if ((uint64_t)width * (uint64_t)height > max_pixels) {
        state->rejected = 1;
        char text[CPNG_MESSAGE_CAPACITY];
        snprintf(text, sizeof text, "PNG image of %ux%u pixels exceeds the limit of %llu pixels",
                 (unsigned)width, (unsigned)height, (unsigned long long)max_pixels);
        png_error(png, text);
    }

    // Normalise every PNG flavour to 8-bit grey, RGB or RGBA.
    int has_transparency = png_get_valid(png, info, PNG_INFO_tRNS) != 0;
    if (color_type == PNG_COLOR_TYPE_PALETTE) {
        png_set_palette_to_rgb(png);
    }
    if (color_type == PNG_COLOR_TYPE_GRAY && bit_depth < 8) {
        png_set_expand_gray_1_2_4_to_8(png);
    }
    if (has_transparency) {
        png_set_tRNS_to_alpha(png);
    }
    if (bit_depth == 16) {
        png_set_scale_16(png);
    }
    if (color_type == PNG_COLOR_TYPE_GRAY_ALPHA ||
        (color_type == PNG_COLOR_TYPE_GRAY && has_transparency)) {
        png_set_gray_to_rgb(png);
    }
    png_set_interlace_handling(png);
    png_read_update_info(png, info);

    int channels = png_get_channels(png, info);
    size_t row_bytes = png_get_rowbytes(png, info);
    if (png_get_bit_depth(png, info) != 8 || (channels != 1 && channels != 3 && channels != 4) ||
        row_bytes != (size_t)width * (size_t)channels) {
        png_error(png, "PNG pixel format could not be converted to 8-bit grey, RGB or RGBA");
    }
    state->pixels = (uint8_t *)malloc(row_bytes * (size_t)height);
    state->rows = (png_bytep *)malloc((size_t)height * sizeof(png_bytep));
    if (state->pixels == NULL || state->rows == NULL) {
        state->out_of_memory = 1;
        png_error(png, "out of memory for PNG pixels");
    }
    for (png_uint_32 y = 0; y < height; y++) {
        state->rows[y] = state->pixels + (size_t)y * row_bytes;
    }
    png_read_image(png, state->rows);
    png_read_end(png, NULL);

    *out_width = width;
    *out_height = height;
    *out_channels = channels;
    return CPNG_OK;
}

int cpng_decode(const uint8_t *bytes, size_t size, uint64_t max_pixels, uint8_t **out_pixels,
                uint32_t *out_width, uint32_t *out_height, int *out_channels, char *message) {
    cpng_set_message(message, "");
    if (out_pixels == NULL || out_width == NULL || out_height == NULL || out_channels == NULL) {
        cpng_set_message(message, "no output pointers were given");
        return CPNG_ERROR_ARGUMENT;
    }
    *out_pixels = NULL;
    *out_width = 0;
    *out_height = 0;
    *out_channels = 0;
    if (bytes == NULL || size < 8 || png_sig_cmp(bytes, 0, 8) != 0) {
        cpng_set_message(message, "data does not start with the PNG signature");
        return CPNG_ERROR_SIGNATURE;
    }

    cpng_decode_state state;
    memset(&state, 0, sizeof state);
    state.error.message = message;
    state.bytes = bytes;
    state.size = size;
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &state.error, cpng_error_fn,
                                             cpng_warning_fn);
    if (png == NULL) {
        cpng_set_message(message, "libpng could not create a read structure");
        return CPNG_ERROR_MEMORY;
    }
    png_infop info = png_create_info_struct(png);
    if (info == NULL) {
        png_destroy_read_struct(&png, NULL, NULL);
        cpng_set_message(message, "libpng could not create an info structure");
        return CPNG_ERROR_MEMORY;
    }
    int status = cpng_decode_guarded(png, info, &state, max_pixels, out_width, out_height,
                                     out_channels);
    png_destroy_read_struct(&png, &info, NULL);
    free(state.rows);
    if (status != CPNG_OK) {
        free(state.pixels);
        *out_width = 0;
        *out_height = 0;
        *out_channels = 0;
        return status;
    }
    *out_pixels = state.pixels;
    return CPNG_OK;
}

void cpng_free(void *pointer) {
    free(pointer);
}

const char *cpng_libpng_version(void) {
    return png_get_libpng_ver(NULL);
}
