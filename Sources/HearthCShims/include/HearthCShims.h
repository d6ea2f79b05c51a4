// Small C helpers for HearthStorage.
//
// Hardware CRC-32C (Castagnoli): SSE4.2 `crc32` on x86-64, the ARMv8 CRC extension on
// AArch64. Callers check `hearth_crc32c_hardware_available()` once and keep the portable
// Swift implementation for everything else.
#ifndef HEARTH_C_SHIMS_H
#define HEARTH_C_SHIMS_H

#include <stddef.h>
#include <stdint.h>

/// 1 if this CPU has CRC-32C instructions this build can use, else 0.
int hearth_crc32c_hardware_available(void);

/// Continues a CRC-32C over `count` bytes at `bytes`. `state` is the running register
/// (start with 0xFFFFFFFF, complement at the end), as in the software implementation.
/// Must only be called when `hearth_crc32c_hardware_available()` returned 1.
uint32_t hearth_crc32c_hardware_update(uint32_t state, const void *bytes, size_t count);

/// Asks the kernel to start writing `length` bytes at `offset` of `fd` to disk now, without
/// waiting (Linux `sync_file_range(SYNC_FILE_RANGE_WRITE)`), so that a later fsync has less
/// left to do. Not a durability guarantee; a no-op where unsupported. Returns 0 or -1.
int hearth_start_writeback(int fd, int64_t offset, int64_t length);

/// Turns direct I/O (Linux `O_DIRECT`: writes go from the caller's buffer to the device, not
/// through the page cache) on (`on` = 1) or off for `fd`. Direct writes need buffers,
/// offsets and lengths aligned to the device's block size. Returns 0, or -1 where the file
/// system or platform does not support it (the caller keeps buffered writes).
int hearth_set_direct_io(int fd, int on);

/// Runs MD5's compression function over `blocks` 64-byte blocks at `data`, updating `state`
/// (A, B, C, D). Padding and length are the caller's. Any alignment.
void hearth_md5_blocks(uint32_t state[4], const void *data, size_t blocks);

/// 1 if this build compiled `hearth_md5_blocks` with optimization (it is then faster than
/// the library MD5), else 0.
int hearth_md5_optimized(void);

#endif
