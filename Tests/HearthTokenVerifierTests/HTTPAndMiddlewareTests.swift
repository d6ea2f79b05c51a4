import AsyncHTTPClient
import Foundation
import HearthAuth
import HearthCore
import HearthTokenVerifier
import HearthTokenVerifierHummingbird
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

struct AppContext: TokenVerifierRequestContext {
    var coreContext: CoreRequestContextStorage
    var verifiedToken: VerifiedToken?
    init(source: Source) { coreContext = .init(source: source) }
}

@Suite struct HTTPAndMiddlewareTests {
    /// A key server on 127.0.0.1 (OS-picked port) publishing a document with a max-age.
    func keyServer(_ document: [UInt8]) -> some ApplicationProtocol {
        let router = Router()
        router.get("keys") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/json", .cacheControl: "public, max-age=1234, must-revalidate"],
                body: .init(byteBuffer: ByteBuffer(bytes: document)))
        }
        router.get("missing") { _, _ in Response(status: .notFound) }
        return Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
    }

    @Test(arguments: ["jwks", "x509"])
    func fetchesKeysOverHTTP(_ format: String) async throws {
        let issuer = try Issuer()
        let doc = format == "jwks" ? issuer.jwks : issuer.x509
        try await keyServer(doc).test(.live) { client in
            let port = try #require(client.port)
            let source = HTTPPublicKeySource(url: URL(string: "http://127.0.0.1:\(port)/keys")!)
            let set = try await source.fetchKeys()
            #expect(set.maxAge == 1234)
            #expect(set.keys.count == issuer.keyRing.publishedKeys.count)
            let verifier = TokenVerifier(configuration: .init(projectID: Issuer.project), source: source, now: issuer.clock.now)
            #expect(try await verifier.verify(try issuer.token(uid: "live")).uid == "live")
            let missing = HTTPPublicKeySource(url: URL(string: "http://127.0.0.1:\(port)/missing")!)
            await #expect(throws: TokenVerificationError.self) { try await missing.fetchKeys() }
        }
    }

    func protectedApp(_ issuer: Issuer, optional: Bool = false) -> some ApplicationProtocol {
        let verifier = issuer.verifier(source: CountingKeySource(document: issuer.jwks, maxAge: 600))
        let router = Router(context: AppContext.self)
        router.add(middleware: TokenVerifierMiddleware(verifier: verifier, optional: optional))
        router.get("me") { _, context in
            guard let token = context.verifiedToken else { return "anonymous" }
            return "\(token.uid) \(token.signInProvider ?? "-")"
        }
        return Application(router: router)
    }

    @Test func middlewareAcceptsAndRejects() async throws {
        let issuer = try Issuer()
        let good = try issuer.token(uid: "carol")
        try await protectedApp(issuer).test(.router) { client in
            try await client.execute(uri: "/me", method: .get, headers: [.authorization: "Bearer \(good)"]) { r in
                #expect(r.status == .ok)
                #expect(String(buffer: r.body) == "carol password")
            }
            for header in [nil, "Bearer \(good.tamperedSignature)", "Basic abc", "Bearer", "Bearer \(try issuer.token([("aud", .string("x"))]))"] {
                var headers = HTTPFields()
                if let header { headers[.authorization] = header }
                try await client.execute(uri: "/me", method: .get, headers: headers) { r in
                    #expect(r.status == .unauthorized)
                    #expect(r.headers[.contentType]?.hasPrefix("application/json") == true)
                    let body = try JSON.parse(Array(buffer: r.body))
                    #expect(body["error"]?["status"]?.stringValue == "UNAUTHENTICATED")
                    #expect(body["error"]?["message"]?.stringValue?.isEmpty == false)
                }
            }
        }
    }

    @Test func optionalMiddlewareLetsAnonymousThrough() async throws {
        let issuer = try Issuer()
        try await protectedApp(issuer, optional: true).test(.router) { client in
            try await client.execute(uri: "/me", method: .get) { r in
                #expect(String(buffer: r.body) == "anonymous")
            }
            try await client.execute(uri: "/me", method: .get, headers: [.authorization: "Bearer junk"]) { r in
                #expect(r.status == .unauthorized)
            }
        }
    }
}
