import Foundation
import HearthAuth
import HearthCore
import HearthDocuments
import HearthRules
import HearthSQLite
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing

@testable import HearthServer

/// A Firestore REST responder over an in-memory engine, with optional rules, for
/// HummingbirdTesting's `.router` framework.
struct TestFirestore {
    static let project = "demo-hearth"
    static let root = "/v1/projects/demo-hearth/databases/(default)/documents"

    let engine: DocumentEngine
    let tokens: TokenService
    let rules: RulesStore
    let emulator: Bool
    let adminToken: String?

    init(emulator: Bool = true, adminToken: String? = nil, rules text: String? = nil) async throws {
        engine = try await DocumentEngine(store: try SQLiteDocumentStore.inMemory())
        tokens = TokenService(projectID: Self.project, keyRing: try KeyRing(directory: nil), allowUnsigned: emulator)
        rules = RulesStore()
        self.emulator = emulator
        self.adminToken = adminToken
        if let text { rules.setFileRules(RulesStore.Loaded(try Ruleset.compile(text), origin: "test")) }
    }

    func app() -> some ApplicationProtocol {
        let logger = Logger(label: "test")
        return Application(
            responder: FirestoreRESTResponder(
                engine: engine, authenticator: Authenticator(emulator: emulator, adminToken: adminToken, tokens: tokens),
                security: FirestoreSecurity(rules: rules, emulator: emulator, engine: engine, logger: logger), logger: logger))
    }

    /// An RS256 ID token signed by this server's keys.
    func signedToken(uid: String, claims: JSON? = nil) throws -> String {
        let account = Account(uid: uid, email: nil, emailVerified: false, createdAt: 0, validSince: 0)
        return try tokens.mintIDToken(for: account, signInProvider: "custom", authTime: tokens.clock.seconds, extraClaims: claims)
    }

    /// An unsigned (`alg: none`) ID token, as the emulators accept.
    static func unsignedToken(uid: String, claims: [(String, JSON)] = []) -> String {
        func b64(_ j: JSON) -> String {
            Data(j.serializedBytes()).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        let header = JSON.object([("alg", .string("none")), ("typ", .string("JWT"))])
        let payload = JSON.object([("sub", .string(uid)), ("user_id", .string(uid)), ("aud", .string(project))] + claims)
        return b64(header) + "." + b64(payload) + "."
    }

    /// Seeds documents as an admin (bypassing rules).
    func seed(_ docs: [String: [String: Value]]) async throws {
        _ = try await engine.commit(
            DatabaseName(project: Self.project, database: "(default)"),
            docs.map { Write.set(ResourcePath(parsing: $0.key), $0.value) })
    }

    func stored(_ path: String) async throws -> Document? {
        try await engine.get(DatabaseName(project: Self.project, database: "(default)"), ResourcePath(parsing: path)).0
    }
}
