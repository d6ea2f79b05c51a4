#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

#if canImport(Glibc) || canImport(Musl)
// glibc declares pthread_getattr_np only under _GNU_SOURCE, which the Glibc module does not
// define; bind the symbol directly (pointer and integer arguments, same ABI).
@_silgen_name("pthread_getattr_np")
private func hearth_pthread_getattr_np(_ thread: pthread_t, _ attr: UnsafeMutablePointer<pthread_attr_t>) -> Int32
#endif

/// Knows how much stack the current thread has left, so recursive code (parser, checker,
/// evaluator) can stop with a diagnostic or a denial instead of overflowing — whatever the
/// build mode (debug frames are several times larger) and the thread's stack size.
///
/// Callers ask only once recursion is already deep (see ``deep``), and the thread's stack
/// bounds are looked up once per thread and cached in thread-local storage: on Linux,
/// `pthread_getattr_np` reads `/proc/self/maps` for the main thread.
enum StackGuard {
    /// Stop when less than this much stack remains.
    static let margin = 128 * 1024
    /// Recursion depth below which callers need not ask (debug builds use about 7 KiB of
    /// stack per expression level, so this must stay small).
    static let deep = 8

    private static let key: pthread_key_t = {
        var k = pthread_key_t()
        pthread_key_create(&k, nil)
        return k
    }()

    /// The lowest usable address of this thread's stack plus the margin; 0 when unknown.
    static var limit: UInt {
        if let cached = pthread_getspecific(key) { return UInt(bitPattern: cached) &- 1 }
        var low: UInt = 0
        #if canImport(Glibc) || canImport(Musl)
        var attr = pthread_attr_t()
        if hearth_pthread_getattr_np(pthread_self(), &attr) == 0 {
            var addr: UnsafeMutableRawPointer?
            var size = 0
            if pthread_attr_getstack(&attr, &addr, &size) == 0, let addr { low = UInt(bitPattern: addr) }
            pthread_attr_destroy(&attr)
        }
        #elseif canImport(Darwin)
        let top = UInt(bitPattern: pthread_get_stackaddr_np(pthread_self()))
        let size = UInt(pthread_get_stacksize_np(pthread_self()))
        low = top > size ? top - size : 0
        #endif
        let value = low == 0 ? 0 : low + UInt(margin)
        pthread_setspecific(key, UnsafeRawPointer(bitPattern: value &+ 1))  // +1 keeps 0 distinguishable
        return value
    }

    /// Whether the caller may recurse further.
    @inline(never)
    static func hasRoom() -> Bool {
        let limit = Self.limit
        guard limit != 0 else { return true }
        var marker: UInt8 = 0
        return withUnsafeMutablePointer(to: &marker) { UInt(bitPattern: $0) > limit }
    }
}
