import Foundation

import HearthClientAuth
import HearthClientCore
import HearthServer
@testable import HearthClientFirestore

/// The server the Firestore client tests talk to. The same tests run against both:
///
/// - by default, an in-process `hearth serve --emulator` (`LiveServer`);
/// - with `HEARTH_CLIENT_TARGET=emulator` and `HEARTH_CLIENT_FIRESTORE_EMULATOR=host:port`, Google's
///   Cloud Firestore emulator (tests/conformance/test_swift_client_emulator.py starts one and runs
///   these suites). Auth still comes from the in-process Hearth: the emulator accepts its ID
///   tokens for the same project id, and each test gets a project of its own there, so tests that
///   run in parallel (and earlier runs) never see each other's documents.
enum FirestoreTestTarget {
    static var emulator: (host: String, port: Int)? {
        let env = ProcessInfo.processInfo.environment
        guard env["HEARTH_CLIENT_TARGET"] == "emulator" else { return nil }
        guard let hostPort = env["HEARTH_CLIENT_FIRESTORE_EMULATOR"], let colon = hostPort.lastIndex(of: ":"),
            let port = Int(hostPort[hostPort.index(after: colon)...])
        else {
            preconditionFailure("HEARTH_CLIENT_TARGET=emulator needs HEARTH_CLIENT_FIRESTORE_EMULATOR=host:port")
        }
        return (String(hostPort[..<colon]), port)
    }

    static var isEmulator: Bool { emulator != nil }

    /// Runs `body` with a `Firestore` (and the `Auth` of the same app) on the chosen target.
    static func withFirestore(_ body: @Sendable @escaping (Firestore, Auth) async throws -> Void) async throws {
        let emulator = emulator
        let project = emulator == nil ? "demo-hearth" : "demo-sdk-\(UUID().uuidString.prefix(8).lowercased())"
        try await LiveServer.with(configure: { config, _ in config.project = project }) { ports in
            var options = HearthOptions(projectID: project)
            options.authPort = ports["auth"]!
            options.firestorePort = ports["firestore"]!
            let name = "firestore-\(UUID().uuidString)"
            HearthApp.configure(name: name, options: options)
            let app = HearthApp.app(name: name)!
            let auth = Auth.auth(app: app, userStore: FileAuthUserStore(directory: FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)))
            let db = Firestore.firestore(app: app)
            if let emulator { db.useEmulator(withHost: emulator.host, port: emulator.port) }
            // Each test's offline cache in a directory of its own, removed afterwards.
            let settings = db.settings
            let cacheDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-cache-\(UUID().uuidString)")
            settings.cacheDirectory = cacheDirectory
            db.settings = settings
            defer { try? FileManager.default.removeItem(at: cacheDirectory) }
            try await body(db, auth)
            await db.terminate()
        }
    }
}
