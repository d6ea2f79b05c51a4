import HearthCore
import Testing

@testable import HearthDatabase

/// `WriteOptions.dryRun` (onDisconnect operations are checked when registered): the write is
/// planned and judged, nothing is stored and nothing reaches the change feed.
@Suite struct DatabaseEngineDryRunTests {
    @Test func aDryRunStoresNothingAndPublishesNothing() async throws {
        let f = EngineFixture()
        try await f.set("/a", #"{"x":1}"#)
        let recorder = RecordingSubscriber()
        _ = f.engine.feed.subscribe(namespace: f.ns, recorder)
        let dry = DatabaseEngine.WriteOptions(dryRun: true)
        let outcome = try await f.engine.set(
            namespace: f.ns, path: path("/a/y"), value: try JSON.parse(#"{"at":{".sv":"timestamp"}}"#), auth: .admin, options: dry)
        guard case .written(let node, _) = outcome else {
            Issue.record("expected a planned write")
            return
        }
        #expect(node.plainJSON().serialized() == #"{"at":1700000000000}"#)
        _ = try await f.engine.update(namespace: f.ns, path: path("/a"), values: [("x", .null), ("z", .number("2"))], auth: .admin, options: dry)
        #expect(try await f.get("/a") == #"{"x":1}"#)
        #expect(recorder.changes.withLock { $0.isEmpty })
    }

    @Test func aDryRunStillChecksDataAndRules() async throws {
        let f = EngineFixture(emulator: false)  // production defaults: nobody but the admin
        let dry = DatabaseEngine.WriteOptions(dryRun: true)
        await #expect(throws: DatabaseError.self) {
            _ = try await f.engine.set(namespace: f.ns, path: path("/a"), value: .number("1"), auth: .unauthenticated, options: dry)
        }
        await #expect(throws: DatabaseError.self) {
            _ = try await f.engine.set(namespace: f.ns, path: path("/a"), value: try JSON.parse(#"{"b$":1}"#), auth: .admin, options: dry)
        }
        _ = try await f.engine.set(namespace: f.ns, path: path("/a"), value: .number("1"), auth: .admin, options: dry)
        #expect(try await f.get("/a") == "null")
    }
}
