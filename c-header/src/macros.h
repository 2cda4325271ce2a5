/* ------------------------------------------------------------------------------------------
 * The macros (hand-written in c-header/src/macros.h, appended to the generated part).
 *
 * Usage:
 *
 *     #include "replay.h"
 *     int main(void) {
 *         if (replay_init_from_env() != 0) { ... replay is off; the program may go on ... }
 *         struct timespec ts;
 *         REPLAY_CALL_OUT(&ts, clock_gettime, CLOCK_MONOTONIC, &ts);
 *         ssize_t n = REPLAY_READ(buf, read, fd, buf, sizeof buf);
 *         int r = REPLAY_VALUE(rand());
 *         return replay_shutdown();
 *     }
 *
 * Build: cc app.c -Ic-header/include target/release/libreplay_c.a -lpthread -ldl -lm
 * Run:   REPLAY_MODE=record REPLAY_LOG=app.replay ./app
 *        REPLAY_MODE=replay REPLAY_LOG=app.replay ./app
 *
 * Each macro records one event of kind "c.<func>" ("c.value" for REPLAY_VALUE) at call site
 * "file:line", verified in replay by a digest of the site and the function name (or the
 * expression text). In record the call runs and its result is logged; a macro used while
 * another one's call is running on the same thread (inside `func`) runs live and is not an
 * event. In replay the call does NOT run: the macro returns the recorded result, sets errno
 * to the recorded errno and fills the recorded bytes. With replay off a macro costs one
 * predictable branch. The macros need GCC or Clang (statement expressions, __typeof__).
 * `func` must return an integer type of at most 8 bytes (not a pointer, not void).
 * With -pedantic before C23, a function without arguments (REPLAY_CALL(rand)) draws "ISO C99
 * requires at least one argument for the ... in a variadic macro"; REPLAY_VALUE(rand())
 * records the same value without it.
 * ---------------------------------------------------------------------------------------- */

/* Non-zero while a record or replay session is active; the macros test it first, so with
 * replay off a macro costs one predictable branch. Set only by replay_init_from_env and
 * replay_shutdown: read it, never write it. */
extern int replay_active;

#define REPLAY__STR2(x) #x
#define REPLAY__STR(x) REPLAY__STR2(x)

#if defined(__clang__)
#define REPLAY__COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define REPLAY__COMPILER "gcc " __VERSION__
#else
#define REPLAY__COMPILER ""
#endif

/* Passes the compiler's version for the log header; (replay_init_from_env)() calls the
 * function itself. */
#define replay_init_from_env() replay_init_with_info(REPLAY__COMPILER)

/* Initializer of a macro use's `static replay_site`: kind, and what identifies the call.
 * The site is this line of this file. For your own macros. */
#define REPLAY_SITE_INIT(kind_text, what)                                                     \
    { .ready = 0, .kind = 0, .site = 0, .reserved = 0, .digest = 0, .kind_name = (kind_text), \
      .site_name = __FILE__ ":" REPLAY__STR(__LINE__), .func = (what), .caller = __func__ }

/* Whether x is float/double (GCC/Clang type class 8 = real), a signed type, a scalar the
 * macros can carry (integer, char, enum, bool, real: not pointers, structs or arrays). */
#define REPLAY__IS_FLOAT(x) (__builtin_classify_type(x) == 8)
#define REPLAY__IS_SIGNED(x) ((__typeof__(x))-1 < (__typeof__(x))1)
#define REPLAY__IS_SCALAR(x)                                                                  \
    (__builtin_classify_type(x) >= 1 && __builtin_classify_type(x) <= 4) ||                   \
        __builtin_classify_type(x) == 8
#define REPLAY__VTYPE(x)                                                                      \
    (REPLAY__IS_FLOAT(x) ? REPLAY_VALUE_FLOAT                                                 \
                         : REPLAY__IS_SIGNED(x) ? REPLAY_VALUE_SIGNED : REPLAY_VALUE_UNSIGNED)

static inline uint64_t replay__f64_bits(double d) {
    uint64_t b;
    __builtin_memcpy(&b, &d, sizeof b);
    return b;
}

static inline double replay__bits_f64(uint64_t b) {
    double d;
    __builtin_memcpy(&d, &b, sizeof d);
    return d;
}

#define REPLAY__TO_BITS(x)                                                                    \
    (REPLAY__IS_FLOAT(x) ? replay__f64_bits((double)(x))                                      \
                         : REPLAY__IS_SIGNED(x) ? (uint64_t)(int64_t)(x) : (uint64_t)(x))
#define REPLAY__FROM_BITS(x, b)                                                               \
    (REPLAY__IS_FLOAT(x) ? (__typeof__(x))replay__bits_f64(b)                                 \
                         : REPLAY__IS_SIGNED(x) ? (__typeof__(x))(int64_t)(b) : (__typeof__(x))(b))

/* The room at a REPLAY_READ buffer: sizeof for an array, unknown (SIZE_MAX) for a pointer. */
#define REPLAY__CAP(buf)                                                                      \
    (__builtin_types_compatible_p(__typeof__(buf), __typeof__(&(buf)[0])) ? SIZE_MAX : sizeof(buf))

/* REPLAY_VALUE(expr): the value of a scalar expression (integer, enum, bool, float, double;
 * at most 8 bytes), recorded; in replay the recorded value, and `expr` is NOT evaluated.
 * The expression text is part of the verified inputs. */
#define REPLAY_VALUE(expr)                                                                    \
    __extension__({                                                                           \
        __typeof__(((void)0, (expr))) replay__v;                                              \
        _Static_assert(sizeof(replay__v) <= 8, "REPLAY_VALUE takes a scalar of at most 8 bytes"); \
        _Static_assert(REPLAY__IS_SCALAR(replay__v),                                          \
                       "REPLAY_VALUE takes an integer or floating-point value, not a pointer");  \
        if (__builtin_expect(replay_active, 0)) {                                             \
            static replay_site replay__s = REPLAY_SITE_INIT("c.value", #expr);                \
            int replay__m = replay_enter(&replay__s);                                         \
            if (replay__m == REPLAY_ENTER_REPLAY) {                                           \
                uint64_t replay__b;                                                           \
                if (replay_replay_value(&replay__s, REPLAY__VTYPE(replay__v), sizeof(replay__v), \
                                        &replay__b))                                          \
                    replay__v = REPLAY__FROM_BITS(replay__v, replay__b);                      \
                else                                                                          \
                    replay__v = (expr);                                                       \
            } else if (replay__m == REPLAY_ENTER_RECORD) {                                    \
                replay__v = (expr);                                                           \
                replay_record_value(&replay__s, REPLAY__VTYPE(replay__v), REPLAY__TO_BITS(replay__v)); \
            } else {                                                                          \
                replay__v = (expr);                                                           \
            }                                                                                 \
        } else {                                                                              \
            replay__v = (expr);                                                               \
        }                                                                                     \
        replay__v;                                                                            \
    })

/* The common body of REPLAY_CALL, REPLAY_CALL_OUT and REPLAY_READ. */
#define REPLAY__CALL(how, buf, cap, func, ...)                                                \
    __extension__({                                                                           \
        __typeof__(func(__VA_ARGS__)) replay__r;                                              \
        _Static_assert(sizeof(replay__r) <= 8 && __builtin_classify_type(replay__r) >= 1 &&   \
                           __builtin_classify_type(replay__r) <= 4,                           \
                       "the function must return an integer type of at most 8 bytes");        \
        if (__builtin_expect(replay_active, 0)) {                                             \
            static replay_site replay__s = REPLAY_SITE_INIT("c." #func, #func);               \
            int replay__m = replay_enter(&replay__s);                                         \
            if (replay__m == REPLAY_ENTER_REPLAY) {                                           \
                int64_t replay__ret;                                                          \
                int replay__err;                                                              \
                if (replay_replay_ret(&replay__s, (how), (void *)(buf), (cap), &replay__ret,  \
                                      &replay__err)) {                                        \
                    replay__r = (__typeof__(replay__r))replay__ret;                           \
                    errno = replay__err;                                                      \
                } else {                                                                      \
                    replay__r = func(__VA_ARGS__);                                            \
                }                                                                             \
            } else if (replay__m == REPLAY_ENTER_RECORD) {                                    \
                replay__r = func(__VA_ARGS__);                                                \
                int replay__err = errno;                                                      \
                replay_record_ret(&replay__s, (how), (int64_t)replay__r, replay__err,         \
                                  (const void *)(buf), (cap));                                \
                errno = replay__err;                                                          \
            } else {                                                                          \
                replay__r = func(__VA_ARGS__);                                                \
            }                                                                                 \
        } else {                                                                              \
            replay__r = func(__VA_ARGS__);                                                    \
        }                                                                                     \
        replay__r;                                                                            \
    })

/* REPLAY_CALL(func, args...): func(args...) with its return value and errno recorded; in
 * replay func is not called, the recorded value is returned and errno set to the recorded
 * errno. */
#define REPLAY_CALL(func, ...) REPLAY__CALL(REPLAY_HOW_CALL, (void *)0, 0, func, __VA_ARGS__)

/* REPLAY_CALL_OUT(out_ptr, func, args...): also the `sizeof *out_ptr` bytes at out_ptr, as
 * filled by the call (e.g. REPLAY_CALL_OUT(&ts, clock_gettime, CLOCK_MONOTONIC, &ts)). */
#define REPLAY_CALL_OUT(out_ptr, func, ...)                                                   \
    REPLAY__CALL(REPLAY_HOW_OUT, (out_ptr), sizeof *(out_ptr), func, __VA_ARGS__)

/* REPLAY_READ(buf, func, args...): also the first `ret` bytes of buf when the call returns
 * ret > 0: read, recv, pread, fread with size 1, getrandom. If buf is an array, replay
 * checks that the recorded bytes fit it. */
#define REPLAY_READ(buf, func, ...) REPLAY__CALL(REPLAY_HOW_READ, (buf), REPLAY__CAP(buf), func, __VA_ARGS__)

/* ------------------------------------------------------------------------------------------
 * The schedule: locks, condition waits, thread creation (see c-header/src/sched.rs).
 *
 * REPLAY_MUTEX_LOCK(m), REPLAY_MUTEX_UNLOCK(m): pthread_mutex_lock/unlock. Every acquisition
 * (uncontended too) is an event `c.mutex_lock`, in the lock's order of acquisition; in replay
 * each acquisition waits for its recorded turn, so the critical sections of every lock run
 * in their recorded order. Locks are identified by their order of first use in the
 * recording, not their address; replay_lock_name(&m, "accounts") names one for reports.
 * A recorded order that can no longer be followed (the holder of a lock waits for a turn
 * the recording has after this acquisition, or any wait outlasts the timeout option) is a
 * divergence naming the lock and the threads, never a silent deadlock. Unlocks are not
 * events. Every lock and unlock of a mutex shared by threads must go through the macros
 * (a plain pthread_mutex_lock on it is not ordered).
 *
 * REPLAY_COND_WAIT(c, m), REPLAY_COND_TIMEDWAIT(c, m, abstime): the wait's return and the
 * re-acquisition of m are recorded; replay does not wait on the condition (it returns in
 * its recorded turn, as a spurious wake-up would: re-check the predicate, as POSIX says),
 * and a timed wait that timed out returns ETIMEDOUT at once. Signals and broadcasts are
 * not events (REPLAY_COND_SIGNAL/BROADCAST are the plain calls, under chaos a scheduling
 * point).
 *
 * REPLAY_THREAD_CREATE(&t, attr, func, arg): pthread_create; the thread is named
 * "<creator>/<n>" (the creator's n-th thread, from 1; the thread that called
 * replay_init_from_env is "main") unless it calls replay_thread_name first, so threads are
 * matched between record and replay by program order.
 *
 * REPLAY_MUTEX_DESTROY(m): forgets m (a mutex made later at the same address is a new lock),
 * then pthread_mutex_destroy.
 * ---------------------------------------------------------------------------------------- */

#define REPLAY_MUTEX_LOCK(m)                                                                  \
    __extension__({                                                                           \
        pthread_mutex_t *replay__mx = (m);                                                    \
        int replay__rc;                                                                       \
        if (__builtin_expect(replay_active, 0)) {                                             \
            static replay_site replay__s = REPLAY_SITE_INIT("c.mutex_lock", "pthread_mutex_lock"); \
            replay__rc = replay_mutex_lock(&replay__s, replay__mx);                           \
        } else {                                                                              \
            replay__rc = pthread_mutex_lock(replay__mx);                                      \
        }                                                                                     \
        replay__rc;                                                                           \
    })

#define REPLAY_MUTEX_UNLOCK(m)                                                                \
    __extension__({                                                                           \
        pthread_mutex_t *replay__mx = (m);                                                    \
        __builtin_expect(replay_active, 0) ? replay_mutex_unlock(replay__mx)                  \
                                           : pthread_mutex_unlock(replay__mx);                \
    })

#define REPLAY_MUTEX_DESTROY(m)                                                               \
    __extension__({                                                                           \
        pthread_mutex_t *replay__mx = (m);                                                    \
        if (__builtin_expect(replay_active, 0)) replay_mutex_forget(replay__mx);              \
        pthread_mutex_destroy(replay__mx);                                                    \
    })

/* The common body of REPLAY_COND_WAIT and REPLAY_COND_TIMEDWAIT. */
#define REPLAY__COND(kind_text, c, m, abstime)                                                \
    __extension__({                                                                           \
        pthread_cond_t *replay__cv = (c);                                                     \
        pthread_mutex_t *replay__mx = (m);                                                    \
        const struct timespec *replay__ts = (abstime);                                        \
        int replay__rc;                                                                       \
        if (__builtin_expect(replay_active, 0)) {                                             \
            static replay_site replay__s = REPLAY_SITE_INIT(kind_text, kind_text);            \
            replay__rc = replay_cond_wait(&replay__s, replay__cv, replay__mx, replay__ts);    \
        } else if (replay__ts) {                                                              \
            replay__rc = pthread_cond_timedwait(replay__cv, replay__mx, replay__ts);          \
        } else {                                                                              \
            replay__rc = pthread_cond_wait(replay__cv, replay__mx);                           \
        }                                                                                     \
        replay__rc;                                                                           \
    })

#define REPLAY_COND_WAIT(c, m) REPLAY__COND("c.cond_wait", c, m, (const struct timespec *)0)
#define REPLAY_COND_TIMEDWAIT(c, m, abstime) REPLAY__COND("c.cond_timedwait", c, m, abstime)

#define REPLAY_COND_SIGNAL(c) pthread_cond_signal(c)
#define REPLAY_COND_BROADCAST(c) pthread_cond_broadcast(c)

#define REPLAY_THREAD_CREATE(thread, attr, func, arg)                                         \
    __extension__({                                                                           \
        pthread_t *replay__t = (thread);                                                      \
        const pthread_attr_t *replay__a = (attr);                                             \
        void *(*replay__f)(void *) = (func);                                                  \
        int replay__rc;                                                                       \
        if (__builtin_expect(replay_active, 0)) {                                             \
            static replay_site replay__s = REPLAY_SITE_INIT("c.pthread_create", #func);       \
            replay__rc = replay_thread_create(&replay__s, replay__t, replay__a, replay__f, (arg)); \
        } else {                                                                              \
            replay__rc = pthread_create(replay__t, replay__a, replay__f, (arg));              \
        }                                                                                     \
        replay__rc;                                                                           \
    })

/* ------------------------------------------------------------------------------------------
 * Time compresses: sleeps are events (kinds c.nanosleep, c.clock_nanosleep, c.usleep,
 * c.sleep) with their return value and errno (and *rem when given); in replay they return
 * the recorded result at once, so a program that slept a minute replays in moments, its
 * replayed clock reads (REPLAY_CALL_OUT(&ts, clock_gettime, ...)) still saying a minute
 * passed. Under chaos each is a scheduling point.
 * ---------------------------------------------------------------------------------------- */

#define REPLAY_NANOSLEEP(req, rem)                                                            \
    __extension__({                                                                           \
        struct timespec *replay__rem = (rem);                                                 \
        REPLAY__CALL(REPLAY_HOW_OUT, replay__rem, replay__rem ? sizeof *replay__rem : 0,      \
                     nanosleep, (req), replay__rem);                                          \
    })

#define REPLAY_CLOCK_NANOSLEEP(clock, flags, req, rem)                                        \
    __extension__({                                                                           \
        struct timespec *replay__rem = (rem);                                                 \
        REPLAY__CALL(REPLAY_HOW_OUT, replay__rem, replay__rem ? sizeof *replay__rem : 0,      \
                     clock_nanosleep, (clock), (flags), (req), replay__rem);                  \
    })

#define REPLAY_USLEEP(usec) REPLAY__CALL(REPLAY_HOW_CALL, (void *)0, 0, usleep, (usec))
#define REPLAY_SLEEP(seconds) REPLAY__CALL(REPLAY_HOW_CALL, (void *)0, 0, sleep, (seconds))
