import HearthCore
import NIOCore
import Synchronization
import Testing

@testable import HearthDatabase
@testable import HearthServer

@Suite("Realtime Database listener renderings")
struct DatabaseRenderCacheTests {
    static func set(_ revision: Int64, _ keys: [String], _ value: Double) -> DatabaseChange {
        DatabaseChange(namespace: "ns", revision: revision, kind: .set(path: DatabasePath(keys), node: DatabaseNode(value: .number(value))))
    }

    @Test func rendersOncePerChangeAndLocation() {
        let calls = Mutex(0)
        let cache = DatabaseRenderCache<String>(capacity: 2) { change, location in
            calls.withLock { $0 += 1 }
            return "\(change.revision)@\(location)"
        }
        let first = Self.set(1, ["fan", "v"], 1)
        for _ in 0..<1000 { #expect(cache.rendering(first, at: DatabasePath(["fan"])) == "1@/fan") }
        #expect(calls.withLock { $0 } == 1)
        #expect(cache.rendering(first, at: DatabasePath(["fan", "v"])) == "1@/fan/v")
        #expect(calls.withLock { $0 } == 2)
        // A third key evicts the oldest, which is then rendered again.
        _ = cache.rendering(Self.set(2, ["fan", "v"], 2), at: DatabasePath(["fan"]))
        _ = cache.rendering(first, at: DatabasePath(["fan"]))
        #expect(calls.withLock { $0 } == 4)
    }

    @Test func eventStreamBytesAreEveryEventInOrder() {
        let change = DatabaseChange(
            namespace: "ns", revision: 3,
            kind: .update(path: DatabasePath(["fan"]), children: [
                (DatabasePath(["a", "x"]), DatabaseNode(value: .number(1))), (DatabasePath(["b"]), DatabaseNode(value: .string("y"))),
            ]))
        let bytes = DatabaseRESTResponder.events(for: change, at: DatabasePath(["fan"]))
        #expect(String(buffer: bytes) == """
            event: put\ndata: {"path":"/a/x","data":1}\n\nevent: put\ndata: {"path":"/b","data":"y"}\n\n
            """)
        #expect(String(buffer: DatabaseRESTResponder.events(for: Self.set(4, ["fan", "v"], 5), at: DatabasePath(["fan"]))) == """
            event: put\ndata: {"path":"/v","data":5}\n\n
            """)
        #expect(DatabaseRESTResponder.events(for: Self.set(5, ["other"], 1), at: DatabasePath(["fan"])).readableBytes == 0)
    }
}
