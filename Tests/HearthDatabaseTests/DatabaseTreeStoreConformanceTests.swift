import Foundation
import HearthCore
import HearthSQLite
import Testing

@testable import HearthDatabase

/// Every ``DatabaseTreeStore`` backend runs the same scenarios.
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case memory, sqlite

    var testDescription: String { rawValue }

    func make() throws -> any DatabaseTreeStore {
        switch self {
        case .memory: return InMemoryDatabaseTreeStore()
        case .sqlite:
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("rtdb-store-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            return try SQLiteDatabaseTreeStore(path: dir.appendingPathComponent("database.sqlite").path)
        }
    }
}

func path(_ text: String) -> DatabasePath { DatabasePath(text.split(separator: "/").map(String.init)) }
func leaf(_ p: String, _ value: String) -> DatabaseLeaf { DatabaseLeaf(path: path(p), value: value) }

@Suite struct DatabaseTreeStoreConformanceTests {
    @Test(arguments: StoreKind.allCases)
    func subtreeIsExactlyTheNodeAndItsDescendants(_ kind: StoreKind) async throws {
        let store = try kind.make()
        let commit = DatabaseTreeCommit(
            namespace: "ns", expectedRevision: 0, clearedSubtrees: [], clearedLeaves: [],
            writtenLeaves: [leaf("a/b", "1"), leaf("a/c/d", "\"x\""), leaf("ab", "2"), leaf("a!", "3"), leaf("b", "true")])
        #expect(try await store.apply(commit) == 1)
        let a = try await store.subtree(namespace: "ns", at: path("a"))
        #expect(a.revision == 1)
        #expect(Set(a.leaves) == [leaf("a/b", "1"), leaf("a/c/d", "\"x\"")])
        let all = try await store.subtree(namespace: "ns", at: .root)
        #expect(all.leaves.count == 5)
        #expect(try await store.subtree(namespace: "other", at: .root).leaves.isEmpty)
        #expect(try await store.subtree(namespace: "other", at: .root).revision == 0)
    }

    @Test(arguments: StoreKind.allCases)
    func applyChecksTheRevisionAndRemovesBeforeWriting(_ kind: StoreKind) async throws {
        let store = try kind.make()
        _ = try await store.apply(DatabaseTreeCommit(
            namespace: "ns", expectedRevision: 0, clearedSubtrees: [], clearedLeaves: [], writtenLeaves: [leaf("a/b", "1"), leaf("x", "5")]))
        // A stale revision changes nothing.
        #expect(try await store.apply(DatabaseTreeCommit(
            namespace: "ns", expectedRevision: 0, clearedSubtrees: [.root], clearedLeaves: [], writtenLeaves: [])) == nil)
        #expect(try await store.subtree(namespace: "ns", at: .root).leaves.count == 2)
        // Clear a subtree and a scalar, write under both.
        #expect(try await store.apply(DatabaseTreeCommit(
            namespace: "ns", expectedRevision: 1, clearedSubtrees: [path("a")], clearedLeaves: [path("x")],
            writtenLeaves: [leaf("a", "7"), leaf("x/y", "8")])) == 2)
        let all = try await store.subtree(namespace: "ns", at: .root)
        #expect(Set(all.leaves) == [leaf("a", "7"), leaf("x/y", "8")])
        #expect(try await store.leaves(namespace: "ns", at: [path("a"), path("x"), path("x/y")]) == [leaf("a", "7"), leaf("x/y", "8")])
    }

    @Test(arguments: StoreKind.allCases)
    func rulesAreKeptPerNamespace(_ kind: StoreKind) async throws {
        let store = try kind.make()
        #expect(try await store.rules(namespace: "ns") == nil)
        try await store.setRules("{\"rules\":{}}", namespace: "ns")
        #expect(try await store.rules(namespace: "ns") == "{\"rules\":{}}")
        #expect(try await store.rules(namespace: "other") == nil)
        #expect(try await store.subtree(namespace: "ns", at: .root).revision == 0)
    }

    @Test(arguments: StoreKind.allCases)
    func engineRoundTripsThroughTheStore(_ kind: StoreKind) async throws {
        let engine = DatabaseEngine(store: try kind.make(), authorizer: DefaultDatabaseAuthorizer(emulator: true))
        let value = try JSON.parse(#"{"users":{"alice":{"name":"Alice","age":30,".priority":2},"bob":true},"n":1.5}"#)
        _ = try await engine.set(namespace: "ns", path: .root, value: value, auth: .admin)
        let read = try await engine.read(namespace: "ns", path: .root, auth: .admin)
        #expect(read.node.plainJSON().serialized() == #"{"n":1.5,"users":{"alice":{"age":30,"name":"Alice"},"bob":true}}"#)
        #expect(read.node.exportJSON()["users"]?["alice"]?[".priority"] == .number("2"))
    }
}
