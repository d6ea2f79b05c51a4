import Foundation
import HearthCore
import HearthDocuments
import Testing

@testable import HearthServer

/// The console's pure parts: sessions (expiry, capacity, tokens) and the live query view.
/// The pages, the proxy and the security checks are driven through a browser in
/// tests/conformance/test_console.py.
struct ConsoleSessionTests {
    let principal = ConsolePrincipal(name: "ops@example.com", method: "password")

    @Test func aSessionHasUnguessableIdsAndItsOwnCSRFToken() {
        let sessions = ConsoleSessions()
        let (id, session) = sessions.create(principal)
        let (other, _) = sessions.create(principal)
        #expect(id != other)
        #expect(id != session.csrfToken)
        #expect(Base64.urlDecode(id)?.count == 32)
        #expect(sessions.session(id)?.principal == principal)
        let forged = (id.first == "A" ? "B" : "A") + id.dropFirst()
        #expect(sessions.session(forged) == nil)
    }

    @Test func idleAndAbsoluteTimeoutsEndSessions() {
        let sessions = ConsoleSessions(idleTimeout: 60, absoluteTimeout: 300)
        let start = Date(timeIntervalSince1970: 1_000_000)
        let (id, _) = sessions.create(principal, now: start)
        // Each use restarts the idle clock…
        #expect(sessions.session(id, now: start.addingTimeInterval(50)) != nil)
        #expect(sessions.session(id, now: start.addingTimeInterval(100)) != nil)
        #expect(sessions.session(id, now: start.addingTimeInterval(150)) != nil)
        // …but not the absolute one.
        #expect(sessions.session(id, now: start.addingTimeInterval(301)) == nil)
        let (idle, _) = sessions.create(principal, now: start)
        #expect(sessions.session(idle, now: start.addingTimeInterval(61)) == nil)
        // An ended session stays ended.
        #expect(sessions.session(idle, now: start) == nil)
    }

    @Test func signOutEndsTheSession() {
        let sessions = ConsoleSessions()
        let (id, _) = sessions.create(principal)
        sessions.end(id)
        #expect(sessions.session(id) == nil)
    }

    @Test func theOldestSessionGivesWayWhenFull() {
        let sessions = ConsoleSessions(capacity: 3)
        let start = Date()
        let ids = (0..<4).map { i in sessions.create(principal, now: start.addingTimeInterval(Double(i))).id }
        #expect(sessions.session(ids[0], now: start.addingTimeInterval(5)) == nil)
        for id in ids.dropFirst() { #expect(sessions.session(id, now: start.addingTimeInterval(5)) != nil) }
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
