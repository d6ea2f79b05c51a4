import Foundation
import HearthCore
import HearthDocuments
import HearthSQLite
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing

@testable import HearthServer

/// The REST transport in-process (HummingbirdTesting's router framework): routing, access
/// policy, error shapes. Behaviour through the official client is in tests/conformance.
struct FirestoreRESTTests {
    static let root = "/v1/projects/demo-hearth/databases/(default)/documents"

    func app(emulator: Bool = true, adminToken: String? = nil) async throws -> some ApplicationProtocol {
        try await TestFirestore(emulator: emulator, adminToken: adminToken).app()
    }

    func json(_ buffer: ByteBuffer) throws -> JSON { try JSON.parse(buffer.readableBytesView) }

    func expectGoogleError(_ response: TestResponse, _ status: String, _ code: Int, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(Int(response.status.code) == code, sourceLocation: sourceLocation)
        let body = try json(response.body)
        #expect(body["error"]?["status"]?.stringValue == status, sourceLocation: sourceLocation)
        #expect(body["error"]?["code"] == .number(code), sourceLocation: sourceLocation)
        #expect(body["error"]?["message"]?.stringValue?.isEmpty == false, sourceLocation: sourceLocation)
    }

    @Test func createGetDelete() async throws {
        try await app().test(.router) { client in
            let created = try await client.execute(
                uri: "\(Self.root)/users?documentId=alice", method: .post,
                body: ByteBuffer(string: #"{"fields":{"n":{"integerValue":"7"},"s":{"stringValue":"x"}}}"#))
            #expect(created.status == .ok)
            let got = try await client.execute(uri: "\(Self.root)/users/alice", method: .get)
            let doc = try json(got.body)
            #expect(doc["name"]?.stringValue == "projects/demo-hearth/databases/(default)/documents/users/alice")
            #expect(doc["fields"]?["n"]?["integerValue"]?.stringValue == "7")
            #expect(try await client.execute(uri: "\(Self.root)/users/alice", method: .delete).status == .ok)
            try expectGoogleError(try await client.execute(uri: "\(Self.root)/users/alice", method: .get), "NOT_FOUND", 404)
        }
    }

    @Test func productionModeRefusesClientsAndAcceptsTheAdminToken() async throws {
        try await app(emulator: false, adminToken: "s3cret").test(.router) { client in
            try expectGoogleError(try await client.execute(uri: "\(Self.root)/users/a", method: .get), "PERMISSION_DENIED", 403)
            // `owner` means nothing in production: an unknown credential is UNAUTHENTICATED.
            try expectGoogleError(
                try await client.execute(uri: "\(Self.root)/users/a", method: .get, headers: [.authorization: "Bearer owner"]),
                "UNAUTHENTICATED", 401)
            try expectGoogleError(
                try await client.execute(uri: "\(Self.root)/users/a", method: .get, headers: [.authorization: "Bearer s3cret"]),
                "NOT_FOUND", 404)
        }
    }

    @Test func emulatorClearEndpointEmptiesOneDatabase() async throws {
        try await app().test(.router) { client in
            for db in ["(default)", "other-db"] {
                _ = try await client.execute(
                    uri: "/v1/projects/demo-hearth/databases/\(db)/documents/c?documentId=d", method: .post, body: ByteBuffer(string: "{}"))
            }
            let cleared = try await client.execute(uri: "/emulator/v1/projects/demo-hearth/databases/(default)/documents", method: .delete)
            #expect(cleared.status == .ok)
            #expect(try await client.execute(uri: "\(Self.root)/c/d", method: .get).status == .notFound)
            #expect(try await client.execute(uri: "/v1/projects/demo-hearth/databases/other-db/documents/c/d", method: .get).status == .ok)
        }
    }

    @Test func emulatorEndpointsDoNotExistInProduction() async throws {
        try await app(emulator: false, adminToken: "t").test(.router) { client in
            try expectGoogleError(
                try await client.execute(
                    uri: "/emulator/v1/projects/demo-hearth/databases/(default)/documents", method: .delete,
                    headers: [.authorization: "Bearer t"]),
                "NOT_FOUND", 404)
        }
    }

    @Test(arguments: [
        ("{bad json", "INVALID_ARGUMENT"),
        (#"{"fields":{"a":{"integerValue":"x"}}}"#, "INVALID_ARGUMENT"),
        (#"{"fields":{"a":{"integerValue":"1","stringValue":"b"}}}"#, "INVALID_ARGUMENT"),
        (#"{"fieldz":{}}"#, "INVALID_ARGUMENT"),
        (#"{"fields":{"a":{"timestampValue":"2020-13-01T00:00:00Z"}}}"#, "INVALID_ARGUMENT"),
        (#"{"fields":{"a":{"bytesValue":"***"}}}"#, "INVALID_ARGUMENT"),
        (#"{"fields":{"a":{"geoPointValue":{"latitude":91,"longitude":0}}}}"#, "INVALID_ARGUMENT"),
    ])
    func malformedBodiesAreRejectedAndWriteNothing(body: String, status: String) async throws {
        try await app().test(.router) { client in
            let r = try await client.execute(uri: "\(Self.root)/c?documentId=d", method: .post, body: ByteBuffer(string: body))
            try expectGoogleError(r, status, 400)
            #expect(try await client.execute(uri: "\(Self.root)/c/d", method: .get).status == .notFound)
        }
    }

    @Test(arguments: ["\(root)/c/__x__", "\(root)/c/..", "\(root)/c//d", "/v1/projects/p/databases/BAD_DB/documents/c/d"])
    func badPathsAreInvalidArgument(uri: String) async throws {
        try await app().test(.router) { client in
            try expectGoogleError(try await client.execute(uri: uri, method: .get), "INVALID_ARGUMENT", 400)
        }
    }

    @Test func unknownRoutesAreGoogleNotFound() async throws {
        try await app().test(.router) { client in
            try expectGoogleError(try await client.execute(uri: "/v2/nothing", method: .get), "NOT_FOUND", 404)
            try expectGoogleError(try await client.execute(uri: "\(Self.root):frobnicate", method: .post), "NOT_FOUND", 404)
        }
    }

    @Test func commitOfMoreThan500WritesIsRejectedWhole() async throws {
        try await app().test(.router) { client in
            let writes = (0..<501).map { #"{"update":{"name":"projects/demo-hearth/databases/(default)/documents/c/d\#($0)"}}"# }
            let r = try await client.execute(
                uri: "\(Self.root):commit", method: .post, body: ByteBuffer(string: #"{"writes":[\#(writes.joined(separator: ","))]}"#))
            try expectGoogleError(r, "INVALID_ARGUMENT", 400)
            #expect(try await client.execute(uri: "\(Self.root)/c/d0", method: .get).status == .notFound)
        }
    }

    @Test func readyFileIsWrittenAtomicallyWithEveryPort() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-ready-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("ready.json").path
        let ready = ReadyFile(path: path, expected: ["firestore", "auth"], logger: Logger(label: "test"), onReady: { _ in })
        ready.bound("firestore", 1234)
        #expect(!FileManager.default.fileExists(atPath: path))
        ready.bound("auth", 5678)
        let json = try JSON.parse(Array(try Data(contentsOf: URL(fileURLWithPath: path))))
        #expect(json == .object([("auth", .number("5678")), ("firestore", .number("1234"))]))
    }
}
