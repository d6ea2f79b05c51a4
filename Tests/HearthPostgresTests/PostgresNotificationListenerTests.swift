import Foundation
import HearthCore
import PostgresNIO
import Synchronization
import Testing

@testable import HearthPostgres

/// ``PostgresNotificationListener``: what the change feed across replicas is built on.
@Suite(.enabled(if: TestPostgres.available, "PostgreSQL is not installed and HEARTH_TEST_POSTGRES_URL is not set"))
struct PostgresNotificationListenerTests {
    typealias Event = PostgresNotificationListener.Event

    /// The events a listener handed on, in order.
    final class Events: Sendable {
        let events = Mutex<[Event]>([])

        func append(_ event: Event) { events.withLock { $0.append(event) } }
        var all: [Event] { events.withLock { $0 } }

        /// Waits (up to 20 s) until `condition` holds for the events so far.
        func wait(_ what: String, until condition: ([Event]) -> Bool) async throws {
            let deadline = ContinuousClock.now + .seconds(20)
            while !condition(all) {
                guard ContinuousClock.now < deadline else {
                    Issue.record("timed out waiting for \(what); events: \(all)")
                    throw CancellationError()
                }
                try await Task.sleep(for: .milliseconds(20))
            }
        }

        var notifications: [String] {
            all.compactMap { if case .notification(let payload) = $0 { payload } else { nil } }
        }
    }

    struct Refused: Error {}

    /// A listener on `channel` of `backend`'s database, running until the returned task is cancelled.
    func listen(_ backend: PostgresBackend, _ channel: String, _ events: Events) -> Task<Void, Never> {
        let listener = PostgresNotificationListener(
            settings: backend.settings, channel: channel, logger: TestPostgres.logger, initialRetryDelay: .milliseconds(20)
        ) { event in events.append(event) }
        return Task { await listener.run() }
    }

    func notify(_ backend: PostgresBackend, _ channel: String, _ payload: String, rollBack: Bool = false) async throws {
        try await backend.writeCommitted { session in
            try await session.execute("SELECT pg_notify(\(channel), \(payload))")
            if rollBack { throw Refused() }
        }
    }

    @Test("Notifications of committed transactions arrive once each, in commit order; those of rolled-back ones never")
    func committedOnlyInOrder() async throws {
        let backend = try await TestPostgres.shared.freshBackend()
        let events = Events()
        let task = listen(backend, "hearth_test", events)
        defer { task.cancel() }
        try await events.wait("LISTEN") { $0 == [.listening] }

        for i in 0..<20 {
            try await notify(backend, "hearth_test", "c\(i)")
            await #expect(throws: (any Error).self) { try await notify(backend, "hearth_test", "r\(i)", rollBack: true) }
        }
        // Another channel's notifications are not this listener's.
        try await notify(backend, "other_channel", "x")
        // Concurrent committers: each payload once (in the order they committed, which is theirs to race).
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<16 { group.addTask { try await notify(backend, "hearth_test", "p\(i)") } }
            try await group.waitForAll()
        }
        try await notify(backend, "hearth_test", "end")
        try await events.wait("every notification") { $0.last == .notification("end") }

        let received = events.notifications
        #expect(Array(received.prefix(20)) == (0..<20).map { "c\($0)" }, "sequential commits in commit order, no rolled-back one")
        #expect(Set(received.dropFirst(20).dropLast()) == Set((0..<16).map { "p\($0)" }))
        #expect(received.count == 20 + 16 + 1, "each exactly once")
        #expect(events.all.first == .listening && events.all.filter { $0 == .listening }.count == 1)
    }

    @Test("A terminated listening connection reconnects, says so (the consumer catches up), and hears what follows")
    func reconnectsAfterTermination() async throws {
        let backend = try await TestPostgres.shared.freshBackend()
        let events = Events()
        let task = listen(backend, "hearth_test", events)
        defer { task.cancel() }
        try await events.wait("LISTEN") { $0 == [.listening] }
        try await notify(backend, "hearth_test", "before")
        try await events.wait("the first notification") { $0.last == .notification("before") }

        let terminated = try await backend.writeCommitted { session in
            try await session.rows(
                """
                SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                WHERE datname = current_database() AND query LIKE 'LISTEN%' AND pid <> pg_backend_pid()
                """
            ).count
        }
        #expect(terminated == 1)
        try await events.wait("the second LISTEN") { all in all.filter { $0 == .listening }.count == 2 }
        try await notify(backend, "hearth_test", "after")
        try await events.wait("the notification after the reconnect") { $0.last == .notification("after") }
        #expect(events.all == [.listening, .notification("before"), .listening, .notification("after")])
    }

    @Test("Cancelling the service ends it promptly, while connected or while retrying")
    func cancellationEndsIt() async throws {
        let backend = try await TestPostgres.shared.freshBackend()
        let events = Events()
        let task = listen(backend, "hearth_test", events)
        try await events.wait("LISTEN") { $0 == [.listening] }
        task.cancel()
        await task.value

        // A database that cannot be reached: it retries until cancelled, never throws.
        var unreachable = backend.settings
        unreachable.database = "hearth_no_such_database"
        let failing = PostgresNotificationListener(
            settings: unreachable, channel: "hearth_test", logger: TestPostgres.logger, initialRetryDelay: .milliseconds(20)
        ) { event in events.append(event) }
        let retrying = Task { await failing.run() }
        try await Task.sleep(for: .milliseconds(200))
        retrying.cancel()
        await retrying.value
        #expect(events.all == [.listening])
    }
}
