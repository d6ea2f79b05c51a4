import Foundation
import HearthCore
import HearthDocuments
import HearthStoreConformance
import Testing

@testable import HearthServer

/// The console's pure parts: sessions (expiry, capacity, tokens) and the live query view.
/// The pages, the proxy and the security checks are driven through a browser in
/// tests/conformance/test_console.py.
struct ConsoleSessionTests {
    let principal = ConsolePrincipal(name: "ops@example.com", method: "password")

    @Test func aSessionHasUnguessableIdsAndItsOwnCSRFToken() async throws {
        let sessions = ConsoleSessions()
        let (id, session) = try await sessions.create(principal)
        let (other, _) = try await sessions.create(principal)
        #expect(id != other)
        #expect(id != session.csrfToken)
        #expect(Base64.urlDecode(id)?.count == 32)
        #expect(try await sessions.session(id)?.principal == principal)
        let forged = (id.first == "A" ? "B" : "A") + id.dropFirst()
        #expect(try await sessions.session(forged) == nil)
    }

    @Test func theStoreNeverSeesTheSessionId() async throws {
        let store = InMemoryConsoleSessionStore()
        let sessions = ConsoleSessions(store: store)
        let start = Date()
        let (id, _) = try await sessions.create(principal, now: start)
        // Only the SHA-256 of the id (hex) finds it in the store.
        let key = ConsoleSessions.key(id)
        #expect(key.count == 64 && key != id)
        #expect(try await store.touch(key: id, now: start, limits: sessions.limits) == nil)
        #expect(try await store.touch(key: key, now: start, limits: sessions.limits)?.name == principal.name)
    }

    @Test func twoServersOverOneStoreShareSessions() async throws {
        let store = InMemoryConsoleSessionStore()
        let a = ConsoleSessions(store: store), b = ConsoleSessions(store: store)
        let (id, session) = try await a.create(principal)
        #expect(try await b.session(id)?.csrfToken == session.csrfToken)
        try await b.end(id)
        #expect(try await a.session(id) == nil)
    }

    @Test func idleAndAbsoluteTimeoutsEndSessions() async throws {
        let sessions = ConsoleSessions(limits: ConsoleSessionLimits(idleTimeout: 60, absoluteTimeout: 300))
        let start = Date(timeIntervalSince1970: 1_000_000)
        let (id, _) = try await sessions.create(principal, now: start)
        // Each use restarts the idle clock…
        #expect(try await sessions.session(id, now: start.addingTimeInterval(50)) != nil)
        #expect(try await sessions.session(id, now: start.addingTimeInterval(100)) != nil)
        #expect(try await sessions.session(id, now: start.addingTimeInterval(150)) != nil)
        // …but not the absolute one.
        #expect(try await sessions.session(id, now: start.addingTimeInterval(301)) == nil)
        let (idle, _) = try await sessions.create(principal, now: start)
        #expect(try await sessions.session(idle, now: start.addingTimeInterval(61)) == nil)
        // An ended session stays ended.
        #expect(try await sessions.session(idle, now: start) == nil)
    }

    @Test func signOutEndsTheSession() async throws {
        let sessions = ConsoleSessions()
        let (id, _) = try await sessions.create(principal)
        try await sessions.end(id)
        #expect(try await sessions.session(id) == nil)
    }

    @Test func theOldestSessionGivesWayWhenFull() async throws {
        let sessions = ConsoleSessions(limits: ConsoleSessionLimits(capacity: 3))
        let start = Date()
        var ids: [String] = []
        for i in 0..<4 { ids.append(try await sessions.create(principal, now: start.addingTimeInterval(Double(i))).id) }
        #expect(try await sessions.session(ids[0], now: start.addingTimeInterval(5)) == nil)
        for id in ids.dropFirst() { #expect(try await sessions.session(id, now: start.addingTimeInterval(5)) != nil) }
    }

    @Test func repeatedFailuresSlowSignInDown() {
        let sessions = ConsoleSessions()
        let now = Date(timeIntervalSince1970: 6_000)
        let waits = (0..<8).map { _ in sessions.recordFailure(now: now) }
        #expect(waits.prefix(5).allSatisfy { $0 == .zero })
        #expect(waits[5] == .seconds(1) && waits[7] == .seconds(3))
        // A new minute starts afresh.
        #expect(sessions.recordFailure(now: now.addingTimeInterval(60)) == .zero)
    }
}

/// ``InMemoryConsoleSessionStore`` against the suite every console session store passes.
struct InMemoryConsoleSessionStoreTests {
    @Test(arguments: ConsoleSessionStoreConformance.all)
    func conformance(_ scenario: ConsoleSessionStoreConformance.Case) async throws {
        try await scenario.run { InMemoryConsoleSessionStore() }
    }
}

struct ConsoleListenViewTests {
    let database = DatabaseName(project: "p", database: "(default)")

    func doc(_ path: String, _ n: Int64, _ time: Int64) -> Document {
        Document(path: ResourcePath(parsing: path), fields: ["n": .integer(n)],
                 createTime: Timestamp(seconds: time, nanos: 0), updateTime: Timestamp(seconds: time, nanos: 0))
    }

    @Test func snapshotsComeOnlyWhenConsistentAndChanged() throws {
        let query = Query(collectionId: "tasks", orderBy: [Query.Order(try FieldPath(parsing: "n"), descending: true)])
        let normalized = try NormalizedQuery(query, database: database)
        let json = FirestoreJSON(database: database)
        var view = ListenView()
        // Documents before the target is current: no snapshot yet.
        let early = view.apply([.document(doc("tasks/a", 1, 1), targetIDs: [1], removedTargetIDs: [])], normalized, json)
        #expect(early == nil)
        let firstEvent = view.apply(
            [.document(doc("tasks/b", 2, 1), targetIDs: [1], removedTargetIDs: []), .targetChange(.current, targetIDs: [1]),
             .targetChange(.noChange, targetIDs: [], readTime: Timestamp(seconds: 2, nanos: 0))],
            normalized, json)
        let first = try #require(firstEvent)
        #expect(first.hasPrefix("event: snapshot\ndata: "))
        // Ordered by n descending: b before a.
        let b = try #require(first.range(of: "tasks/b")), a = try #require(first.range(of: "tasks/a"))
        #expect(b.lowerBound < a.lowerBound)
        // A heartbeat without changes: nothing to send.
        let tick = view.apply([.targetChange(.noChange, targetIDs: [], readTime: Timestamp(seconds: 3, nanos: 0))], normalized, json)
        #expect(tick == nil)
        // A delete, then consistency: a snapshot without it.
        let secondEvent = view.apply(
            [.documentDelete(ResourcePath(parsing: "tasks/b"), removedTargetIDs: [1], readTime: Timestamp(seconds: 4, nanos: 0)),
             .targetChange(.noChange, targetIDs: [], readTime: Timestamp(seconds: 4, nanos: 0))],
            normalized, json)
        let second = try #require(secondEvent)
        #expect(!second.contains("tasks/b") && second.contains("tasks/a"))
    }
}
