import Foundation
import HearthApp
import HearthServer
import Logging

/// A `hearth serve --emulator` in this process, on ports the OS picks, for the duration of `body`.
enum LiveServer {
    static func with(configure: (inout ServerConfiguration, URL) throws -> Void = { _, _ in }, _ body: @Sendable ([String: Int]) async throws -> Void) async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-client-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        var config = ServerConfiguration()
        config.dataDirectory = dir.path
        config.emulator = true
        config.ports = ["auth": 0, "firestore": 0, "storage": 0, "s3": 0, "database": 0, "api": 0]
        try configure(&config, dir)
        var logger = Logger(label: "hearth.client-tests")
        logger.logLevel = .critical  // cancelling the server at the end logs its listeners' shutdown as errors
        let server = try await CompositionRoot.openServer(config, logger: logger)
        let (ready, readyContinuation) = AsyncStream.makeStream(of: [String: Int].self)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run { ports in readyContinuation.yield(ports) } }
            var iterator = ready.makeAsyncIterator()
            guard let ports = await iterator.next() else { return }
            defer { group.cancelAll() }
            try await body(ports)
        }
    }
}
