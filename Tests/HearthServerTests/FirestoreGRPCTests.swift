import Foundation
import HearthCore
import HearthFirestoreProto
import Hummingbird
import HummingbirdTesting
import HTTPTypes
import Logging
import NIOCore
import SwiftProtobuf
import Testing

@testable import HearthServer

/// The gRPC responder in process (HummingbirdTesting's router framework): frames in, frames and
/// trailers out, statuses for engine errors and bad input.
@Suite("Firestore gRPC responder")
struct FirestoreGRPCTests {
    static let database = "projects/demo-hearth/databases/(default)"
    static let documents = database + "/documents"

    func app(_ f: TestFirestore) -> some ApplicationProtocol {
        let logger = Logger(label: "test")
        let authenticator = Authenticator(emulator: f.emulator, adminToken: f.adminToken, tokens: f.tokens)
        let security = FirestoreSecurity(rules: f.rules, emulator: f.emulator, engine: f.engine, logger: logger)
        return Application(
            responder: FirestoreResponder(
                rest: FirestoreRESTResponder(engine: f.engine, authenticator: authenticator, security: security, logger: logger),
                grpc: FirestoreGRPCService(engine: f.engine, authenticator: authenticator, security: security, logger: logger)
                    .responder(logger: logger)))
    }

    struct Reply {
        var status: String?
        var message: String?
        var messages: [[UInt8]]
    }

    static func call(_ client: some TestClientProtocol, _ method: String, _ body: [UInt8], framed: Bool = true, auth: String? = "Bearer owner") async throws -> Reply {
        var headers: HTTPFields = [.contentType: "application/grpc"]
        if let auth { headers[.authorization] = auth }
        let payload = framed ? GRPCFraming.frame(body) : ByteBuffer(bytes: body)
        return try await client.execute(uri: "/google.firestore.v1.Firestore/\(method)", method: .post, headers: headers, body: payload) { response in
            #expect(response.status == .ok)
            #expect(response.headers[.contentType] == "application/grpc")
            var d = GRPCMessageDeframer()
            d.append(response.body)
            var messages: [[UInt8]] = []
            while let m = try d.next() { messages.append(m) }
            let trailers = response.trailerHeaders ?? [:]
            return Reply(
                status: trailers[GRPCStatus.statusName], message: trailers[GRPCStatus.messageName].map(GRPCStatus.percentDecode),
                messages: messages)
        }
    }

    @Test func commitThenGet() async throws {
        let f = try await TestFirestore()
        try await app(f).test(.router) { client in
            var write = Google_Firestore_V1_Write()
            var doc = Google_Firestore_V1_Document()
            doc.name = Self.documents + "/users/alice"
            var v = Google_Firestore_V1_Value()
            v.stringValue = "Alice"
            doc.fields = ["name": v]
            write.update = doc
            var commit = Google_Firestore_V1_CommitRequest()
            commit.database = Self.database
            commit.writes = [write]
            let committed = try await Self.call(client, "Commit", try commit.serializedBytes())
            #expect(committed.status == "0")
            let response = try Google_Firestore_V1_CommitResponse(serializedBytes: try #require(committed.messages.first))
            #expect(response.writeResults.count == 1 && response.hasCommitTime)

            var get = Google_Firestore_V1_GetDocumentRequest()
            get.name = Self.documents + "/users/alice"
            let got = try await Self.call(client, "GetDocument", try get.serializedBytes())
            #expect(got.status == "0")
            let document = try Google_Firestore_V1_Document(serializedBytes: try #require(got.messages.first))
            #expect(document.fields["name"]?.stringValue == "Alice")

            get.name = Self.documents + "/users/bob"
            let missing = try await Self.call(client, "GetDocument", try get.serializedBytes())
            #expect(missing.status == "5")
            #expect(missing.message == "Document \"\(Self.documents)/users/bob\" not found.")
            #expect(missing.messages.isEmpty)
        }
    }

    @Test func badInputStatuses() async throws {
        let f = try await TestFirestore()
        try await app(f).test(.router) { client in
            #expect(try await Self.call(client, "GetDocument", [0xFF, 0xFF, 0xFF]).status == "3")
            #expect(try await Self.call(client, "NoSuchMethod", []).status == "12")
            // A Listen stream's first message must name the database.
            #expect(try await Self.call(client, "Listen", []).status == "3")
            var get = Google_Firestore_V1_GetDocumentRequest()
            get.name = Self.documents + "/odd"
            #expect(try await Self.call(client, "GetDocument", try get.serializedBytes()).status == "3")
            get.name = Self.documents + "/users/x"
            #expect(try await Self.call(client, "GetDocument", try get.serializedBytes(), auth: "Bearer nonsense").status == "16")
            // Truncated frame, compressed frame, two messages for a unary call.
            #expect(try await Self.call(client, "GetDocument", [0, 0, 0, 0, 9, 1], framed: false).status == "13")
            #expect(try await Self.call(client, "GetDocument", [1, 0, 0, 0, 0], framed: false).status == "12")
            let one: [UInt8] = try get.serializedBytes()
            let two = Array(GRPCFraming.frame(one).readableBytesView) + Array(GRPCFraming.frame(one).readableBytesView)
            #expect(try await Self.call(client, "GetDocument", two, framed: false).status == "3")
        }
    }

    @Test func rulesDenyOverGRPC() async throws {
        let f = try await TestFirestore(rules: """
            rules_version = '2';
            service cloud.firestore { match /databases/{db}/documents { match /users/{uid} { allow read: if request.auth.uid == uid; } } }
            """)
        try await app(f).test(.router) { client in
            var get = Google_Firestore_V1_GetDocumentRequest()
            get.name = Self.documents + "/users/bob"
            let token = "Bearer " + TestFirestore.unsignedToken(uid: "alice")
            let denied = try await Self.call(client, "GetDocument", try get.serializedBytes(), auth: token)
            #expect(denied.status == "7")
            get.name = Self.documents + "/users/alice"
            #expect(try await Self.call(client, "GetDocument", try get.serializedBytes(), auth: token).status == "5")
        }
    }
}

/// The generic gRPC plumbing with a method table of its own: deadlines and streaming order.
@Suite("gRPC responder plumbing")
struct GRPCResponderTests {
    struct Wrapper: HTTPResponder {
        typealias Context = BasicRequestContext
        let grpc: GRPCResponder
        func respond(to request: Request, context: Context) async throws -> Response { grpc.respond(to: request) }
    }

    static func app(_ methods: [String: GRPCHandler]) -> some ApplicationProtocol {
        Application(responder: Wrapper(grpc: GRPCResponder(service: "test.Service", methods: methods, logger: Logger(label: "test"))))
    }

    @Test func deadlineEndsTheCall() async throws {
        // Returns OK if it is ever allowed to finish: DEADLINE_EXCEEDED can only come from the deadline.
        let slow: GRPCHandler = { _, _, _ in try await Task.sleep(for: .seconds(3600)) }
        try await Self.app(["Slow": slow]).test(.router) { client in
            let headers: HTTPFields = [.contentType: "application/grpc", HTTPField.Name("grpc-timeout")!: "200m"]
            try await client.execute(uri: "/test.Service/Slow", method: .post, headers: headers, body: GRPCFraming.frame([UInt8]())) { response in
                #expect(response.trailerHeaders?[GRPCStatus.statusName] == "4")
                #expect(response.trailerHeaders?[GRPCStatus.messageName] == "Deadline Exceeded")
            }
        }
    }

    @Test func streamedMessagesKeepTheirOrderAndEndWithTheStatus() async throws {
        let counter: GRPCHandler = { _, reader, sender in
            var n = 0
            while let m = try await reader.next(Google_Protobuf_Empty.self) {
                _ = m
                n += 1
                var v = Google_Protobuf_Int32Value()
                v.value = Int32(n)
                try sender.send(v)
            }
            throw HearthError(.aborted, "done after \(n)")
        }
        try await Self.app(["Count": counter]).test(.router) { client in
            var body = ByteBuffer()
            for _ in 0..<5 { GRPCFraming.frame([UInt8](), into: &body) }
            try await client.execute(uri: "/test.Service/Count", method: .post, headers: [.contentType: "application/grpc+proto"], body: body) { response in
                var d = GRPCMessageDeframer()
                d.append(response.body)
                var values: [Int32] = []
                while let m = try d.next() { values.append(try Google_Protobuf_Int32Value(serializedBytes: m).value) }
                #expect(values == [1, 2, 3, 4, 5])
                #expect(response.trailerHeaders?[GRPCStatus.statusName] == "10")
                #expect(response.trailerHeaders?[GRPCStatus.messageName] == "done after 5")
            }
        }
    }
}
