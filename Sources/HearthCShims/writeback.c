#if defined(__linux__)
#define _GNU_SOURCE
#include <fcntl.h>
#endif
#include "HearthCShims.h"

int hearth_start_writeback(int fd, int64_t offset, int64_t length) {
#if defined(__linux__)
    return sync_file_range(fd, (off_t)offset, (off_t)length, SYNC_FILE_RANGE_WRITE);
#else
    (void)fd;
    (void)offset;
    (void)length;
    return 0;
#endif
}

int hearth_set_direct_io(int fd, int on) {
#if defined(__linux__)
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0) return -1;
    flags = on ? (flags | O_DIRECT) : (flags & ~O_DIRECT);
    return fcntl(fd, F_SETFL, flags) == 0 ? 0 : -1;
#else
    (void)fd;
    (void)on;
    return -1;
#endif
}
