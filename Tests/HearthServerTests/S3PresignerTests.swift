import Foundation
import HearthCore
import HearthSQLite
import HearthStorage
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing

@testable import HearthServer

/// The library's presigner against Hearth's own S3 endpoint: what a backend hands out works.
struct S3PresignerTests {
    func withS3(_ body: @escaping @Sendable (ObjectStore, S3Presigner, any TestClientProtocol) async throws -> Void) async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-s3-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try ObjectStore.open(directory: dir)
        try await store.createBucket("media")
        let key = try await store.createAccessKey()
        let app = Application(responder: S3RESTResponder(store: store, emulator: false, logger: Logger(label: "test")))
        try await app.test(.live) { client in
            // HummingbirdTesting's live client sends `Host: localhost` (no port), so that is the signed host.
            let presigner = S3Presigner(
                endpoint: URL(string: "http://localhost")!, region: "us-east-1", accessKeyID: key.id, secretAccessKey: key.secret)
            try await body(store, presigner, client)
        }
    }

    static func target(_ url: URL) -> String { url.path(percentEncoded: true) + "?" + (url.query(percentEncoded: true) ?? "") }

    @Test func presignedPutAndGetWorkAndTamperingFails() async throws {
        try await withS3 { store, presigner, client in
            let put = try presigner.presignedURL(method: "PUT", bucket: "media", key: "users/u1/a b.png", expires: 300)
            let r = try await client.execute(uri: Self.target(put), method: .put, body: ByteBuffer(string: "png bytes"))
            #expect(r.status == .ok, "\(String(buffer: r.body))")
            #expect(try await store.bytes(try #require(try await store.object("media", "users/u1/a b.png"))) == Array("png bytes".utf8))
            let get = try presigner.presignedURL(method: "GET", bucket: "media", key: "users/u1/a b.png", expires: 300)
            let g = try await client.execute(uri: Self.target(get), method: .get)
            #expect(g.status == .ok && String(buffer: g.body) == "png bytes")
            let other = Self.target(get).replacingOccurrences(of: "a%20b.png", with: "c.png")
            let t = try await client.execute(uri: other, method: .get)
            #expect(t.status == .forbidden && String(buffer: t.body).contains("SignatureDoesNotMatch"))
        }
    }

    @Test func presignedPostUploadsWithinItsPolicy() async throws {
        try await withS3 { store, presigner, client in
            let post = try presigner.presignedPost(
                bucket: "media", key: "uploads/${filename}", expires: 300, conditions: [.contentLengthRange(1, 20)])
            func form(_ file: String) -> ByteBuffer {
                var s = ""
                for (k, v) in post.fields.sorted(by: { $0.key < $1.key }) {
                    s += "--XYZ\r\nContent-Disposition: form-data; name=\"\(k)\"\r\n\r\n\(v)\r\n"
                }
                s += "--XYZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f.txt\"\r\nContent-Type: text/plain\r\n\r\n\(file)\r\n--XYZ--\r\n"
                return ByteBuffer(string: s)
            }
            let ok = try await client.execute(
                uri: post.url.path(), method: .post, headers: [.contentType: "multipart/form-data; boundary=XYZ"], body: form("small"))
            #expect(ok.status == .noContent)
            #expect(try await store.object("media", "uploads/f.txt")?.size == 5)
            let big = try await client.execute(
                uri: post.url.path(), method: .post, headers: [.contentType: "multipart/form-data; boundary=XYZ"],
                body: form(String(repeating: "x", count: 50)))
            #expect(big.status == .badRequest && String(buffer: big.body).contains("EntityTooLarge"))
        }
    }
}
