import HearthCore
@testable import HearthDocuments
import Testing

/// The cache's ordering rules, step by step (the racing end-to-end version is in
/// TransactionTests).
@Suite("Document cache")
struct DocumentCacheTests {
    let p = path("c/d")

    func doc(_ v: Int64, at seconds: Int64) -> Document {
        let t = Timestamp(seconds: seconds, nanos: 0)
        return Document(path: p, fields: ["v": .integer(v)], createTime: t, updateTime: t)
    }

    func cachedValue(_ cache: DocumentCache) -> Value?? {
        cache.lookup("(default)", p).map { $0?.fields["v"] }
    }

    @Test("A document being written is not served from the cache until its commit is installed")
    func inFlightMisses() {
        let cache = DocumentCache()
        let first = cache.beginWrite("(default)", [p])
        cache.committed(first, [(p, doc(1, at: 1))], at: Timestamp(seconds: 1, nanos: 0))
        #expect(cachedValue(cache) == .some(.integer(1)))

        // The second commit is durable in storage (a storage reader sees 2) but not yet
        // installed: the cache must not answer 1 any more.
        let second = cache.beginWrite("(default)", [p])
        #expect(cachedValue(cache) == nil)
        #expect(cache.lookup("(default)", path("c/other")) == nil)
        cache.committed(second, [(p, doc(2, at: 2))], at: Timestamp(seconds: 2, nanos: 0))
        #expect(cachedValue(cache) == .some(.integer(2)))
    }

    @Test("Overlapping commits keep the document uncached until the last one ends, and the newest version wins")
    func overlapping() {
        let cache = DocumentCache()
        let a = cache.beginWrite("(default)", [p])
        let b = cache.beginWrite("(default)", [p])
        cache.committed(b, [(p, doc(3, at: 3))], at: Timestamp(seconds: 3, nanos: 0))
        #expect(cachedValue(cache) == nil)
        cache.committed(a, [(p, doc(2, at: 2))], at: Timestamp(seconds: 2, nanos: 0))
        #expect(cachedValue(cache) == .some(.integer(3)))
    }

    @Test("A failed commit drops its documents instead of trusting the old entry")
    func abortDrops() {
        let cache = DocumentCache()
        let first = cache.beginWrite("(default)", [p])
        cache.committed(first, [(p, doc(1, at: 1))], at: Timestamp(seconds: 1, nanos: 0))
        cache.abortWrite(cache.beginWrite("(default)", [p]))
        #expect(cachedValue(cache) == nil)
    }

    @Test("A read that overlapped a commit does not fill; one that did not does")
    func fills() {
        let cache = DocumentCache()
        let stale = cache.beginRead()
        let w = cache.beginWrite("(default)", [path("c/x")])
        #expect(cache.beginRead() == nil)
        cache.committed(w, [], at: Timestamp(seconds: 1, nanos: 0))
        cache.fill("(default)", [(p, doc(0, at: 0))], epoch: stale)
        #expect(cachedValue(cache) == nil)
        cache.fill("(default)", [(p, doc(1, at: 1))], epoch: cache.beginRead())
        #expect(cachedValue(cache) == .some(.integer(1)))
    }

    @Test("Clearing a database hides all of its documents while it runs and empties them after")
    func clearing() {
        let cache = DocumentCache()
        let w = cache.beginWrite("(default)", [p])
        cache.committed(w, [(p, doc(1, at: 1))], at: Timestamp(seconds: 1, nanos: 0))
        let clear = cache.beginWrite("(default)", nil)
        #expect(cachedValue(cache) == nil)
        cache.cleared(clear)
        #expect(cachedValue(cache) == nil)
    }
}
