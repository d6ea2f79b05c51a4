#include "HearthCShims.h"

#include <string.h>

#if defined(__x86_64__) || defined(__i386__)

int hearth_crc32c_hardware_available(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2") ? 1 : 0;
}

// Compiled for SSE4.2 regardless of the target's baseline; only called after the check above.
__attribute__((target("sse4.2")))
uint32_t hearth_crc32c_hardware_update(uint32_t state, const void *bytes, size_t count) {
    const unsigned char *p = (const unsigned char *)bytes;
    // Byte steps up to 8-byte alignment, then 8 bytes per instruction, then the tail.
    while (count > 0 && ((uintptr_t)p & 7) != 0) {
        state = __builtin_ia32_crc32qi(state, *p++);
        count--;
    }
#if defined(__x86_64__)
    uint64_t c = state;
    while (count >= 32) {
        uint64_t a, b, d, e;
        memcpy(&a, p, 8);
        memcpy(&b, p + 8, 8);
        memcpy(&d, p + 16, 8);
        memcpy(&e, p + 24, 8);
        c = __builtin_ia32_crc32di(c, a);
        c = __builtin_ia32_crc32di(c, b);
        c = __builtin_ia32_crc32di(c, d);
        c = __builtin_ia32_crc32di(c, e);
        p += 32;
        count -= 32;
    }
    while (count >= 8) {
        uint64_t a;
        memcpy(&a, p, 8);
        c = __builtin_ia32_crc32di(c, a);
        p += 8;
        count -= 8;
    }
    state = (uint32_t)c;
#endif
    while (count >= 4) {
        uint32_t a;
        memcpy(&a, p, 4);
        state = __builtin_ia32_crc32si(state, a);
        p += 4;
        count -= 4;
    }
    while (count > 0) {
        state = __builtin_ia32_crc32qi(state, *p++);
        count--;
    }
    return state;
}

#elif defined(__aarch64__) && (defined(__linux__) || defined(__APPLE__))

#if defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif

int hearth_crc32c_hardware_available(void) {
    return (getauxval(AT_HWCAP) & HWCAP_CRC32) ? 1 : 0;
}
#else
// Every Apple arm64 CPU has the CRC extension.
int hearth_crc32c_hardware_available(void) { return 1; }
#endif

__attribute__((target("crc")))
uint32_t hearth_crc32c_hardware_update(uint32_t state, const void *bytes, size_t count) {
    const unsigned char *p = (const unsigned char *)bytes;
    while (count > 0 && ((uintptr_t)p & 7) != 0) {
        state = __builtin_arm_crc32cb(state, *p++);
        count--;
    }
    while (count >= 8) {
        uint64_t a;
        memcpy(&a, p, 8);
        state = __builtin_arm_crc32cd(state, a);
        p += 8;
        count -= 8;
    }
    while (count > 0) {
        state = __builtin_arm_crc32cb(state, *p++);
        count--;
    }
    return state;
}

#else

int hearth_crc32c_hardware_available(void) { return 0; }

uint32_t hearth_crc32c_hardware_update(uint32_t state, const void *bytes, size_t count) {
    (void)bytes;
    (void)count;
    return state;
}

#endif
