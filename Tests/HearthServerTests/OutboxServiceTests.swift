import Foundation
import HearthAuth
import HearthCore
import Logging
import ServiceLifecycle
import Testing

@testable import HearthServer

/// The auth emails' outbox as a `Service` of a `ServiceGroup`: emails queued when graceful
/// shutdown begins are dealt with (sent, or kept in the outbox folder) before the service
/// returns; once it has stopped, an email goes to the folder at once. None is lost.
@Suite struct OutboxServiceTests {
    static func code(_ index: Int) -> OOBCode {
        OOBCode(
            code: "c\(index)" + String(repeating: "x", count: 20), requestType: .passwordReset, email: "user\(index)@example.com", uid: nil,
            continueURL: nil, createdAt: 1_700_000_000_000 + Int64(index), expiresAt: 1_700_003_600_000)
    }

    static func kept(_ directory: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0.hasSuffix(".json") && !$0.hasPrefix(".") }
    }

    @Test func emailsQueuedAtGracefulShutdownAreDealtWithBeforeTheServiceReturns() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-outbox-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        // Nothing listens on port 1: each send fails at once and its email is kept in the folder.
        let smtp = SMTPMailer(host: "127.0.0.1", port: 1, security: .none, username: nil, password: nil, caFile: nil, from: "noreply@example.com")
        var logger = Logger(label: "hearth.outbox-tests")
        logger.logLevel = .critical
        let outbox = Outbox(directory: directory, smtp: smtp, appName: "demo", logger: logger)

        // Not running yet: nothing to hand the email to, so it is kept at once.
        outbox.deliver(Self.code(0), link: "https://example.com/0", emulator: true)
        #expect(Self.kept(directory).count == 1)

        let group = ServiceGroup(configuration: .init(services: [outbox], logger: logger))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            while !outbox.queue.isOpen { try await Task.sleep(for: .milliseconds(5)) }
            for index in 1...3 { outbox.deliver(Self.code(index), link: "https://example.com/\(index)", emulator: true) }
            await group.triggerGracefulShutdown()
            try await tasks.next()
        }
        #expect(outbox.queue.isOpen == false)
        #expect(Self.kept(directory).count == 4, "every email queued before the shutdown is in the outbox folder")

        outbox.deliver(Self.code(4), link: "https://example.com/4", emulator: true)
        #expect(Self.kept(directory).count == 5)
    }

    @Test func withoutSMTPTheServiceOnlyWaitsForTheShutdown() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-outbox-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let outbox = Outbox(directory: directory, logger: Logger(label: "hearth.outbox-tests"))
        let group = ServiceGroup(configuration: .init(services: [outbox], logger: Logger(label: "hearth.outbox-tests")))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            outbox.deliver(Self.code(1), link: "https://example.com/1", emulator: true)
            #expect(Self.kept(directory).count == 1)
            await group.triggerGracefulShutdown()
            try await tasks.next()
        }
    }
}
