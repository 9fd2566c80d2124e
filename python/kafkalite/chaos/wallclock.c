/* A stepped wall clock for one process, loaded with LD_PRELOAD: CLOCK_REALTIME (and what
 * reads it: gettimeofday, time) is moved by the offset in whole milliseconds written in
 * the file named by KAFKALITE_WALLCLOCK_FILE, re-read at most every 10 ms, so a running
 * process sees a step as an NTP step would make it. Every other clock, CLOCK_MONOTONIC
 * first, passes through untouched.
 *
 * Why not libfaketime: 0.9.10 (Debian 12) with FAKETIME_DONT_FAKE_MONOTONIC=1 rewrites a
 * CLOCK_MONOTONIC TIMER_ABSTIME deadline given to clock_nanosleep into a negative time,
 * so every Python time.sleep() fails with EINVAL, and the broker is a Python process. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);

static _Atomic long long offset_ms;
static _Atomic long long checked_at_ns = -1;

static clock_gettime_fn real_clock_gettime(void) {
    static _Atomic(clock_gettime_fn) real;
    clock_gettime_fn f = atomic_load(&real);
    if (f == NULL) {
        f = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
        atomic_store(&real, f);
    }
    return f;
}

/* The offset, from the file when the last look is more than 10 ms old (monotonic). A
 * missing or unreadable file keeps the last value. */
static long long current_offset_ms(void) {
    struct timespec mono;
    real_clock_gettime()(CLOCK_MONOTONIC, &mono);
    long long now_ns = (long long)mono.tv_sec * 1000000000LL + mono.tv_nsec;
    long long last = atomic_load(&checked_at_ns);
    if (last >= 0 && now_ns - last < 10000000LL) {
        return atomic_load(&offset_ms);
    }
    atomic_store(&checked_at_ns, now_ns);
    const char *path = getenv("KAFKALITE_WALLCLOCK_FILE");
    if (path == NULL) {
        return 0;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return atomic_load(&offset_ms);
    }
    char buf[32];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n > 0) {
        buf[n] = '\0';
        char *end;
        long long v = strtoll(buf, &end, 10);
        if (end != buf) {
            atomic_store(&offset_ms, v);
        }
    }
    return atomic_load(&offset_ms);
}

static void shift(struct timespec *ts, long long ms) {
    long long ns = (long long)ts->tv_nsec + (ms % 1000) * 1000000LL;
    ts->tv_sec += (time_t)(ms / 1000 + ns / 1000000000LL);
    ns %= 1000000000LL;
    if (ns < 0) {
        ns += 1000000000LL;
        ts->tv_sec -= 1;
    }
    ts->tv_nsec = (long)ns;
}

int clock_gettime(clockid_t clock, struct timespec *ts) {
    int rc = real_clock_gettime()(clock, ts);
    if (rc == 0 && (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE)) {
        shift(ts, current_offset_ms());
    }
    return rc;
}

/* glibc declares tv nonnull, yet callers may pass NULL (only tz wanted): keep the check. */
#pragma GCC diagnostic ignored "-Wnonnull-compare"
int gettimeofday(struct timeval *tv, void *tz) {
    (void)tz;
    struct timespec ts;
    int rc = clock_gettime(CLOCK_REALTIME, &ts);
    if (rc == 0 && tv != NULL) {
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
    }
    return rc;
}

time_t time(time_t *out) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (out != NULL) {
        *out = ts.tv_sec;
    }
    return ts.tv_sec;
}
